/*
 * The fleet store (`cutrace fleet`, docs/fleet.md): one schema behind two
 * back ends, an SQLite file (the default: a path) and a PostgreSQL database
 * (a postgresql:// or postgres:// URL, through libpq) that many hosts add to
 * at once. The rest of the fleet code speaks SQL written once for both:
 * standard types (TEXT, BIGINT, DOUBLE PRECISION), placeholders $1, $2, ...
 * in order of appearance (SQLite reads them as named parameters, numbered as
 * they appear), INSERT ... ON CONFLICT DO NOTHING RETURNING, and no
 * aggregate whose last bits depend on the server: sums are made in C, so
 * both back ends give identical answers.
 *
 * Credentials (issue "fleet credentials"): a PostgreSQL password is never
 * taken from the command line. A URL or conninfo that holds one is refused
 * (ct_fdb_check_credentials) before libpq sees it; the connection comes from
 * libpq's own mechanisms (PGPASSFILE, PGSERVICE/PGSERVICEFILE, PGPASSWORD,
 * ~/.pgpass). The store never records where it was opened from, and no
 * message of this file repeats the connection string.
 *
 * Functions return 0 (or a count, where said) or a negative errno with err
 * holding one message; they never print and never exit. A store is used by
 * one thread at a time.
 */
#ifndef CT_FLEET_STORE_H
#define CT_FLEET_STORE_H

#include <stddef.h>
#include <stdint.h>

/* The schema's version (docs/fleet.md, "Store"): the tables and columns
 * fleet_store.c creates. A store of an older version is migrated on open,
 * one version at a time, inside one transaction; a newer one is refused. */
#define CT_FLEET_SCHEMA_VERSION 2

struct ct_fdb;
struct ct_fdb_stmt;

/* 1 when spec names a PostgreSQL database (a postgresql:// or postgres://
 * URL), 0 for an SQLite file. */
int ct_fdb_is_postgres(const char *spec);

/* 1 when this build has PostgreSQL support (libpq found by meson). */
int ct_fdb_have_postgres(void);

/*
 * -EACCES with err saying how to pass the password instead when spec holds
 * a password (user:PASSWORD@ in a URL, a password= parameter); 0 otherwise.
 * err never holds the password: the spec is shown with it masked.
 */
int ct_fdb_check_credentials(const char *spec, const char *opt, char *err, size_t errlen);

/*
 * Opens the store spec. CT_FDB_CREATE: make an SQLite file that does not
 * exist (fleet add); otherwise a missing file is -ENOENT. The schema is
 * made when the store has none, migrated when older (-EPROTO when newer
 * than this cutrace), unless CT_FDB_RAW (tests: ct_fdb_create_schema). -ENOTSUP for a PostgreSQL
 * spec in a build without libpq, -EACCES for a spec with a password, -ECONNREFUSED when the server
 * refuses (err: libpq's reason).
 */
#define CT_FDB_CREATE 1
#define CT_FDB_RAW    2
int ct_fdb_open(const char *spec, int flags, struct ct_fdb **db, char *err, size_t errlen);
void ct_fdb_close(struct ct_fdb *db);
/* "sqlite" or "postgresql" */
const char *ct_fdb_backend(const struct ct_fdb *db);

/* Runs SQL without results (several statements for SQLite, one for
 * PostgreSQL). */
int ct_fdb_exec(struct ct_fdb *db, const char *sql, char *err, size_t errlen);
/* A write transaction (SQLite: BEGIN IMMEDIATE, waiting for other
 * writers), its commit and its rollback (which reports nothing). */
int ct_fdb_begin(struct ct_fdb *db, char *err, size_t errlen);
int ct_fdb_commit(struct ct_fdb *db, char *err, size_t errlen);
void ct_fdb_rollback(struct ct_fdb *db);

/*
 * A statement with parameters $1..$n. Bind (1-based), then step: 1 per
 * result row, 0 when done, negative on error (message in ct_fdb_errmsg).
 * Columns are 0-based; a NULL column reads as NULL text, NAN, and
 * INT64_MIN. reset clears the results and the bindings for the next use.
 * A double that is not finite binds as NULL.
 */
int ct_fdb_prepare(struct ct_fdb *db, const char *sql, struct ct_fdb_stmt **st, char *err,
                   size_t errlen);
void ct_fdb_bind_text(struct ct_fdb_stmt *st, int i, const char *v);
void ct_fdb_bind_i64(struct ct_fdb_stmt *st, int i, int64_t v);
void ct_fdb_bind_double(struct ct_fdb_stmt *st, int i, double v);
void ct_fdb_bind_null(struct ct_fdb_stmt *st, int i);
int ct_fdb_step(struct ct_fdb_stmt *st);
const char *ct_fdb_col_text(struct ct_fdb_stmt *st, int i);
int64_t ct_fdb_col_i64(struct ct_fdb_stmt *st, int i);
double ct_fdb_col_double(struct ct_fdb_stmt *st, int i);
void ct_fdb_reset(struct ct_fdb_stmt *st);
void ct_fdb_finalize(struct ct_fdb_stmt *st);
const char *ct_fdb_errmsg(struct ct_fdb *db);

/*
 * Bulk rows into one table, inside a transaction: PostgreSQL's COPY, an
 * SQLite statement reused. Each row gives ncols values as text (NULL for
 * SQL NULL); a value that looks like a number is stored as one by the
 * column's type. Between begin and end no other statement may run.
 */
int ct_fdb_bulk_begin(struct ct_fdb *db, const char *table, const char *const *cols, int ncols,
                      char *err, size_t errlen);
int ct_fdb_bulk_row(struct ct_fdb *db, const char *const *vals);
int ct_fdb_bulk_end(struct ct_fdb *db, char *err, size_t errlen);

/* The schema's DDL for version v (1..CT_FLEET_SCHEMA_VERSION) made on an
 * empty store: for the tests of migration, which build an older store. */
int ct_fdb_create_schema(struct ct_fdb *db, int version, char *err, size_t errlen);
/* The store's schema version, 0 when it has none. */
int ct_fdb_schema_version(struct ct_fdb *db, char *err, size_t errlen);

#endif
