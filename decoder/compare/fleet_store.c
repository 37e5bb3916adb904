/*
 * The fleet store's two back ends behind one interface (fleet_store.h):
 * SQLite through its C API, PostgreSQL through libpq (when meson found its
 * headers: CT_HAVE_LIBPQ; loaded on first use, fleet_libpq.h), the schema's DDL per version and the
 * migrations between them. What the tables hold is documented in docs/fleet.md ("Store").
 *
 * This file must never print, never record where a store was opened from,
 * and never put a connection string (or anything libpq was given) in a
 * message: a password refused by ct_fdb_check_credentials is shown masked.
 */
#include "decoder/compare/fleet_store.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>
#ifdef CT_HAVE_LIBPQ
#include "decoder/compare/fleet_libpq.h"
#endif

#define MAXP 64 /* parameters of one statement, columns of one bulk table */

struct ct_fdb {
    int pg;
    sqlite3 *lite;
#ifdef CT_HAVE_LIBPQ
    PGconn *conn;
#endif
    char msg[512];
    /* bulk rows: SQLite's reused insert, or PostgreSQL's COPY buffer */
    struct ct_fdb_stmt *bulk;
    int bulk_cols;
    char *buf;
    size_t len, cap;
};

struct ct_fdb_stmt {
    struct ct_fdb *db;
    sqlite3_stmt *lite;
#ifdef CT_HAVE_LIBPQ
    char *sql;
    PGresult *res;
    int row, nrows;
    char *val[MAXP]; /* bound parameters as text, NULL for SQL NULL */
    int nparams;
#endif
};

int ct_fdb_is_postgres(const char *spec)
{
    return spec && (!strncmp(spec, "postgresql://", 13) || !strncmp(spec, "postgres://", 11));
}

int ct_fdb_have_postgres(void)
{
#ifdef CT_HAVE_LIBPQ
    return 1;
#else
    return 0;
#endif
}

const char *ct_fdb_backend(const struct ct_fdb *db)
{
    return db->pg ? "postgresql" : "sqlite";
}

const char *ct_fdb_errmsg(struct ct_fdb *db)
{
    return db->msg;
}

/* ------------------------------------------------------------ credentials */

/* spec with a URL's password (user:PASSWORD@) and any password=VALUE
 * parameter replaced by "***", into out. */
static void masked(const char *spec, char *out, size_t n)
{
    size_t o = 0;
    const char *p = spec, *auth = strstr(spec, "://");
    const char *at = NULL, *colon = NULL;
    if (auth) {
        auth += 3;
        const char *end = auth + strcspn(auth, "/?");
        for (const char *q = auth; q < end; q++)
            if (*q == '@')
                at = q;
        colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    }
    while (*p && o + 4 < n) {
        if (colon && p == colon + 1) {
            o += (size_t)snprintf(out + o, n - o, "***");
            p = at;
            continue;
        }
        if (!strncasecmp(p, "password=", 9) && (p == spec || !isalnum((unsigned char)p[-1]))) {
            o += (size_t)snprintf(out + o, n - o, "password=***");
            p += 9 + strcspn(p + 9, "& ");
            continue;
        }
        out[o++] = *p++;
    }
    out[o < n ? o : n - 1] = 0;
}

int ct_fdb_check_credentials(const char *spec, const char *opt, char *err, size_t errlen)
{
    int has = 0;
    const char *auth = strstr(spec, "://");
    if (auth) {
        auth += 3;
        const char *end = auth + strcspn(auth, "/?"), *at = NULL;
        for (const char *q = auth; q < end; q++)
            if (*q == '@')
                at = q;
        has = at && memchr(auth, ':', (size_t)(at - auth)) != NULL;
    }
    for (const char *p = spec; !has && (p = strcasestr(p, "password")); p += 8) {
        const char *q = p + 8;
        while (*q == ' ')
            q++;
        has = *q == '=' && (p == spec || !isalnum((unsigned char)p[-1]));
    }
    if (!has)
        return 0;
    char m[512];
    masked(spec, m, sizeof(m));
    snprintf(err, errlen,
             "%s %s: refused: a password on the command line is readable by every user of "
             "this machine (/proc/PID/cmdline) and stays in shell history. Give the URL "
             "without it and the password through libpq: a password file (PGPASSFILE=FILE, "
             "mode 0600, lines HOST:PORT:DATABASE:USER:PASSWORD; ~/.pgpass by default), a "
             "service (PGSERVICE=NAME in PGSERVICEFILE), or PGPASSWORD in the environment",
             opt, m);
    return -EACCES;
}

/* ------------------------------------------------------------ open/close */

static int lite_exec(struct ct_fdb *db, const char *sql, char *err, size_t errlen)
{
    char *e = NULL;
    if (sqlite3_exec(db->lite, sql, NULL, NULL, &e) != SQLITE_OK) {
        snprintf(err, errlen, "SQLite: %s", e ? e : sqlite3_errmsg(db->lite));
        sqlite3_free(e);
        return -EIO;
    }
    return 0;
}

#ifdef CT_HAVE_LIBPQ
/* libpq's message without its trailing newline. */
static void pg_msg(const char *m, char *err, size_t errlen)
{
    snprintf(err, errlen, "PostgreSQL: %s", m && *m ? m : "unknown error");
    size_t n = strlen(err);
    while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
        err[--n] = 0;
}

static void notice_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* "relation already exists, skipping" and the like */
}

static int pg_exec(struct ct_fdb *db, const char *sql, char *err, size_t errlen)
{
    PGresult *r = ct_pq.exec(db->conn, sql);
    ExecStatusType s = ct_pq.resultStatus(r);
    int rc = 0;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        pg_msg(ct_pq.resultErrorMessage(r), err, errlen);
        rc = -EIO;
    }
    ct_pq.clear(r);
    return rc;
}
#endif

int ct_fdb_exec(struct ct_fdb *db, const char *sql, char *err, size_t errlen)
{
#ifdef CT_HAVE_LIBPQ
    if (db->pg)
        return pg_exec(db, sql, err, errlen);
#endif
    return lite_exec(db, sql, err, errlen);
}

int ct_fdb_begin(struct ct_fdb *db, char *err, size_t errlen)
{
    return ct_fdb_exec(db, db->pg ? "BEGIN" : "BEGIN IMMEDIATE", err, errlen);
}

int ct_fdb_commit(struct ct_fdb *db, char *err, size_t errlen)
{
    return ct_fdb_exec(db, "COMMIT", err, errlen);
}

void ct_fdb_rollback(struct ct_fdb *db)
{
    char e[64];
    ct_fdb_exec(db, "ROLLBACK", e, sizeof(e));
}

static int migrate(struct ct_fdb *db, char *err, size_t errlen);

int ct_fdb_open(const char *spec, int flags, struct ct_fdb **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ct_fdb *db = calloc(1, sizeof(*db));
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (ct_fdb_is_postgres(spec)) {
        int rc = ct_fdb_check_credentials(spec, "--db", err, errlen);
        if (rc) {
            free(db);
            return rc;
        }
#ifdef CT_HAVE_LIBPQ
        if ((rc = ct_libpq_load(err, errlen))) {
            free(db);
            return rc;
        }
        db->pg = 1;
        db->conn = ct_pq.connectdb(spec);
        if (!db->conn || ct_pq.status(db->conn) != CONNECTION_OK) {
            pg_msg(db->conn ? ct_pq.errorMessage(db->conn) : "out of memory", err, errlen);
            ct_pq.finish(db->conn);
            free(db);
            return -ECONNREFUSED;
        }
        ct_pq.setNoticeProcessor(db->conn, notice_quiet, NULL);
        /* doubles out in their shortest exact form (the default from
         * PostgreSQL 12 on; older servers need it said) */
        if ((rc = pg_exec(db, "SET extra_float_digits = 3", err, errlen))) {
            ct_fdb_close(db);
            return rc;
        }
#else
        snprintf(err, errlen,
                 "--db: this cutrace was built without PostgreSQL support (libpq was not "
                 "found when it was configured: install libpq-dev, scripts/setup does, and "
                 "run meson setup again); an SQLite file (--db FILE) works in every build");
        free(db);
        return -ENOTSUP;
#endif
    } else {
        struct stat st;
        if (!(flags & CT_FDB_CREATE) && stat(spec, &st)) {
            snprintf(err, errlen, "%s: no such fleet store (cutrace fleet add makes one)", spec);
            free(db);
            return -ENOENT;
        }
        int of = SQLITE_OPEN_READWRITE | ((flags & CT_FDB_CREATE) ? SQLITE_OPEN_CREATE : 0);
        if (sqlite3_open_v2(spec, &db->lite, of, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", spec,
                     db->lite ? sqlite3_errmsg(db->lite) : "out of memory");
            sqlite3_close(db->lite);
            free(db);
            return -EIO;
        }
        /* many `fleet add` at once on one file: wait for the writer */
        sqlite3_busy_timeout(db->lite, 600000);
        /* The switch to WAL takes the file's exclusive lock, and SQLite
           answers BUSY at once, without the busy handler, where waiting
           could deadlock (two `fleet add` creating one store): wait here,
           as long as the busy timeout, for the other to finish. */
        int rc;
        for (int tries = 0;; tries++) {
            rc = lite_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", err, errlen);
            int ec = sqlite3_errcode(db->lite) & 0xff;
            if (!rc || (ec != SQLITE_BUSY && ec != SQLITE_LOCKED) || tries >= 30000)
                break;
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        }
        if (rc) {
            char m[400];
            snprintf(m, sizeof(m), "%s", err);
            snprintf(err, errlen, "%s: not an SQLite fleet store: %s", spec, m);
            ct_fdb_close(db);
            return rc;
        }
    }
    if (!(flags & CT_FDB_RAW)) {
        int rc = migrate(db, err, errlen);
        if (rc) {
            ct_fdb_close(db);
            return rc;
        }
    }
    *out = db;
    return 0;
}

void ct_fdb_close(struct ct_fdb *db)
{
    if (!db)
        return;
#ifdef CT_HAVE_LIBPQ
    if (db->pg)
        ct_pq.finish(db->conn);
#endif
    if (db->lite)
        sqlite3_close(db->lite);
    free(db->buf);
    free(db);
}

/* ------------------------------------------------------------ statements */

int ct_fdb_prepare(struct ct_fdb *db, const char *sql, struct ct_fdb_stmt **out, char *err,
                   size_t errlen)
{
    struct ct_fdb_stmt *st = calloc(1, sizeof(*st));
    *out = NULL;
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    st->db = db;
#ifdef CT_HAVE_LIBPQ
    if (db->pg) {
        st->sql = strdup(sql);
        if (!st->sql) {
            free(st);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        for (const char *p = sql; (p = strchr(p, '$')); p++) {
            int k = atoi(p + 1);
            st->nparams = k > st->nparams ? k : st->nparams;
        }
        if (st->nparams > MAXP) {
            free(st->sql);
            free(st);
            snprintf(err, errlen, "internal: more than %d parameters", MAXP);
            return -EINVAL;
        }
        *out = st;
        return 0;
    }
#endif
    if (sqlite3_prepare_v2(db->lite, sql, -1, &st->lite, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "SQLite: %s", sqlite3_errmsg(db->lite));
        free(st);
        return -EIO;
    }
    *out = st;
    return 0;
}

#ifdef CT_HAVE_LIBPQ
static void pg_set(struct ct_fdb_stmt *st, int i, char *v)
{
    if (i < 1 || i > MAXP) {
        free(v);
        return;
    }
    free(st->val[i - 1]);
    st->val[i - 1] = v;
}
#endif

void ct_fdb_bind_text(struct ct_fdb_stmt *st, int i, const char *v)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        pg_set(st, i, v ? strdup(v) : NULL);
        return;
    }
#endif
    if (v)
        sqlite3_bind_text(st->lite, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st->lite, i);
}

void ct_fdb_bind_i64(struct ct_fdb_stmt *st, int i, int64_t v)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        char b[32];
        snprintf(b, sizeof(b), "%" PRId64, v);
        pg_set(st, i, strdup(b));
        return;
    }
#endif
    sqlite3_bind_int64(st->lite, i, v);
}

void ct_fdb_bind_double(struct ct_fdb_stmt *st, int i, double v)
{
    if (!isfinite(v)) {
        ct_fdb_bind_null(st, i);
        return;
    }
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        char b[40];
        snprintf(b, sizeof(b), "%.17g", v);
        pg_set(st, i, strdup(b));
        return;
    }
#endif
    sqlite3_bind_double(st->lite, i, v);
}

void ct_fdb_bind_null(struct ct_fdb_stmt *st, int i)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        pg_set(st, i, NULL);
        return;
    }
#endif
    sqlite3_bind_null(st->lite, i);
}

int ct_fdb_step(struct ct_fdb_stmt *st)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        if (!st->res) {
            st->res = ct_pq.execParams(st->db->conn, st->sql, st->nparams, NULL,
                                       (const char *const *)st->val, NULL, NULL, 0);
            ExecStatusType s = ct_pq.resultStatus(st->res);
            if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
                pg_msg(ct_pq.resultErrorMessage(st->res), st->db->msg, sizeof(st->db->msg));
                ct_pq.clear(st->res);
                st->res = NULL;
                return -EIO;
            }
            st->nrows = ct_pq.ntuples(st->res);
            st->row = -1;
        }
        return ++st->row < st->nrows ? 1 : 0;
    }
#endif
    int rc = sqlite3_step(st->lite);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    snprintf(st->db->msg, sizeof(st->db->msg), "SQLite: %s", sqlite3_errmsg(st->db->lite));
    return -EIO;
}

const char *ct_fdb_col_text(struct ct_fdb_stmt *st, int i)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg)
        return ct_pq.getisnull(st->res, st->row, i) ? NULL : ct_pq.getvalue(st->res, st->row, i);
#endif
    return (const char *)sqlite3_column_text(st->lite, i);
}

int64_t ct_fdb_col_i64(struct ct_fdb_stmt *st, int i)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        const char *v = ct_fdb_col_text(st, i);
        return v ? strtoll(v, NULL, 10) : INT64_MIN;
    }
#endif
    if (sqlite3_column_type(st->lite, i) == SQLITE_NULL)
        return INT64_MIN;
    return sqlite3_column_int64(st->lite, i);
}

double ct_fdb_col_double(struct ct_fdb_stmt *st, int i)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        const char *v = ct_fdb_col_text(st, i);
        return v ? strtod(v, NULL) : NAN;
    }
#endif
    if (sqlite3_column_type(st->lite, i) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(st->lite, i);
}

void ct_fdb_reset(struct ct_fdb_stmt *st)
{
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        ct_pq.clear(st->res);
        st->res = NULL;
        for (int i = 0; i < MAXP; i++) {
            free(st->val[i]);
            st->val[i] = NULL;
        }
        return;
    }
#endif
    sqlite3_reset(st->lite);
    sqlite3_clear_bindings(st->lite);
}

void ct_fdb_finalize(struct ct_fdb_stmt *st)
{
    if (!st)
        return;
#ifdef CT_HAVE_LIBPQ
    if (st->db->pg) {
        ct_fdb_reset(st);
        free(st->sql);
        free(st);
        return;
    }
#endif
    sqlite3_finalize(st->lite);
    free(st);
}

/* ------------------------------------------------------------ bulk rows */

int ct_fdb_bulk_begin(struct ct_fdb *db, const char *table, const char *const *cols, int ncols,
                      char *err, size_t errlen)
{
    char sql[2048];
    size_t o = 0;
    if (ncols < 1 || ncols > MAXP) {
        snprintf(err, errlen, "internal: %d columns", ncols);
        return -EINVAL;
    }
    db->bulk_cols = ncols;
#ifdef CT_HAVE_LIBPQ
    if (db->pg) {
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "COPY %s (", table);
        for (int i = 0; i < ncols; i++)
            o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s%s", i ? "," : "", cols[i]);
        snprintf(sql + o, sizeof(sql) - o, ") FROM STDIN");
        PGresult *r = ct_pq.exec(db->conn, sql);
        int ok = ct_pq.resultStatus(r) == PGRES_COPY_IN;
        if (!ok)
            pg_msg(ct_pq.resultErrorMessage(r), err, errlen);
        ct_pq.clear(r);
        db->len = 0;
        return ok ? 0 : -EIO;
    }
#endif
    o += (size_t)snprintf(sql + o, sizeof(sql) - o, "INSERT INTO %s (", table);
    for (int i = 0; i < ncols; i++)
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s%s", i ? "," : "", cols[i]);
    o += (size_t)snprintf(sql + o, sizeof(sql) - o, ") VALUES (");
    for (int i = 0; i < ncols; i++)
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s$%d", i ? "," : "", i + 1);
    snprintf(sql + o, sizeof(sql) - o, ")");
    return ct_fdb_prepare(db, sql, &db->bulk, err, errlen);
}

#ifdef CT_HAVE_LIBPQ
static int put(struct ct_fdb *db, const char *s, size_t n)
{
    if (db->len + n + 1 > db->cap) {
        size_t c = db->cap ? db->cap * 2 : 1 << 16;
        while (c < db->len + n + 1)
            c *= 2;
        char *b = realloc(db->buf, c);
        if (!b)
            return -ENOMEM;
        db->buf = b;
        db->cap = c;
    }
    memcpy(db->buf + db->len, s, n);
    db->len += n;
    return 0;
}

static int flush_copy(struct ct_fdb *db)
{
    if (db->len && ct_pq.putCopyData(db->conn, db->buf, (int)db->len) != 1) {
        pg_msg(ct_pq.errorMessage(db->conn), db->msg, sizeof(db->msg));
        return -EIO;
    }
    db->len = 0;
    return 0;
}
#endif

/* SQLite stores a text that looks like a number as one in a numeric
 * column (type affinity), so binding text is enough there. */
int ct_fdb_bulk_row(struct ct_fdb *db, const char *const *vals)
{
#ifdef CT_HAVE_LIBPQ
    if (db->pg) {
        /* COPY's text format: tab-separated, \N for NULL, escapes for
         * backslash, tab, newline and carriage return */
        for (int i = 0; i < db->bulk_cols; i++) {
            if (i && put(db, "\t", 1))
                return -ENOMEM;
            const char *v = vals[i];
            if (!v) {
                if (put(db, "\\N", 2))
                    return -ENOMEM;
                continue;
            }
            for (; *v; v++) {
                const char *e = *v == '\\'   ? "\\\\"
                                : *v == '\t' ? "\\t"
                                : *v == '\n' ? "\\n"
                                : *v == '\r' ? "\\r"
                                             : NULL;
                if (e ? put(db, e, 2) : put(db, v, 1))
                    return -ENOMEM;
            }
        }
        if (put(db, "\n", 1))
            return -ENOMEM;
        return db->len >= 1 << 20 ? flush_copy(db) : 0;
    }
#endif
    for (int i = 0; i < db->bulk_cols; i++)
        ct_fdb_bind_text(db->bulk, i + 1, vals[i]);
    int rc = ct_fdb_step(db->bulk);
    ct_fdb_reset(db->bulk);
    return rc < 0 ? rc : 0;
}

int ct_fdb_bulk_end(struct ct_fdb *db, char *err, size_t errlen)
{
#ifdef CT_HAVE_LIBPQ
    if (db->pg) {
        int rc = flush_copy(db);
        if (ct_pq.putCopyEnd(db->conn, rc ? "cutrace: a row could not be sent" : NULL) != 1 &&
            !rc) {
            pg_msg(ct_pq.errorMessage(db->conn), err, errlen);
            rc = -EIO;
        }
        PGresult *r;
        while ((r = ct_pq.getResult(db->conn))) {
            if (ct_pq.resultStatus(r) != PGRES_COMMAND_OK && !rc) {
                pg_msg(ct_pq.resultErrorMessage(r), err, errlen);
                rc = -EIO;
            }
            ct_pq.clear(r);
        }
        if (rc && !*err)
            snprintf(err, errlen, "%s", db->msg);
        return rc;
    }
#endif
    (void)err;
    (void)errlen;
    ct_fdb_finalize(db->bulk);
    db->bulk = NULL;
    return 0;
}

/* ------------------------------------------------------------ schema */

/*
 * Version 1: jobs and what they are made of (the rows' kinds, docs/diff.md
 * "Rows"), labels as (key, value) pairs, the GPU time split. Version 2
 * added the health counters (a health table; throttling is taken out of
 * the useful work when the store is read, against the GPU model's highest
 * clock over the whole store) and the jobs' per-step figures; the
 * migration adds them, NULL for the jobs already there (their throttling
 * and per-step figures are unknown, not 0: docs/fleet.md).
 */
#define D "DOUBLE PRECISION"
static const char *const schema_v1[] = {
    "CREATE TABLE IF NOT EXISTS fleet_meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS jobs ("
    "run_id TEXT PRIMARY KEY, job TEXT, run_name TEXT, source TEXT, run_start_utc TEXT, "
    "run_start_us BIGINT, added_utc TEXT, workload TEXT, workload_cmd TEXT, layout TEXT, "
    "cmdline TEXT, ranks BIGINT, hosts BIGINT, iterations BIGINT, host TEXT, gpu TEXT, "
    "driver TEXT, cuda_version TEXT, nccl_version TEXT, cutrace_version TEXT, "
    "step_p50_us " D ", step_p90_us " D ", step_p99_us " D ", window_us " D ", compute_us " D
    ", comm_us " D ", idle_us " D ", exposed_comm_us " D ", goodput_pct " D ", wall_us " D
    ", downtime_us " D ", attempts BIGINT, gpu_us " D ", useful_us " D ", startup_us " D
    ", restart_us " D ", checkpoint_us " D ", data_stall_us " D ", comm_part_us " D
    ", straggler_us " D ", idle_part_us " D ")",
    "CREATE TABLE IF NOT EXISTS labels (run_id TEXT, key TEXT, value TEXT, "
    "PRIMARY KEY (run_id, key, value))",
    "CREATE TABLE IF NOT EXISTS attempts (run_id TEXT, attempt BIGINT, restart_count BIGINT, "
    "ended TEXT, ranks BIGINT, lost_steps BIGINT, start_us " D ", end_us " D ", startup_us " D
    ", productive_us " D ", checkpoint_us " D ", restore_us " D ", lost_us " D ", hang_us " D
    ", data_stall_us " D ", idle_us " D ", shutdown_us " D ", unclassified_us " D
    ", PRIMARY KEY (run_id, attempt))",
    "CREATE TABLE IF NOT EXISTS ranks (run_id TEXT, rank BIGINT, host TEXT, iterations BIGINT, "
    "window_us " D ", compute_us " D ", comm_us " D ", memory_us " D ", idle_us " D
    ", exposed_comm_us " D ", bubble_us " D ", data_stall_us " D ", checkpoint_stall_us " D
    ", cuda_call_us " D ", sync_drain_us " D ", launch_overhead_us " D ", unexplained_us " D
    ", lateness_us " D ", slowness " D ", PRIMARY KEY (run_id, rank))",
    "CREATE TABLE IF NOT EXISTS iterations (run_id TEXT, rank BIGINT, iteration BIGINT, "
    "start_us " D ", duration_us " D ", compute_us " D ", comm_us " D ", memory_us " D
    ", idle_us " D ", exposed_comm_us " D ", bubble_us " D ")",
    "CREATE INDEX IF NOT EXISTS iterations_run ON iterations (run_id)",
    "CREATE TABLE IF NOT EXISTS kernels (run_id TEXT, name TEXT, count BIGINT, total_us " D
    ", p50_us " D ")",
    "CREATE INDEX IF NOT EXISTS kernels_run ON kernels (run_id)",
    "CREATE TABLE IF NOT EXISTS collectives (run_id TEXT, op TEXT, bytes BIGINT, nranks BIGINT, "
    "count BIGINT, matched BIGINT, p50_us " D ", transfer_p50_us " D ", wait_p50_us " D
    ", wait_total_us " D ", arrival_skew_p50_us " D ", algbw_gbps " D ", busbw_gbps " D ")",
    "CREATE INDEX IF NOT EXISTS collectives_run ON collectives (run_id)",
    NULL};

static const char *const schema_v2[] = {
    "CREATE TABLE IF NOT EXISTS health (run_id TEXT, rank BIGINT, host TEXT, device BIGINT, "
    "samples BIGINT, sm_clock_mhz " D ", sm_clock_max_mhz " D ", power_w " D ", power_limit_w " D
    ", temperature_c " D ", throttled_pct " D ", clock_policy TEXT, "
    "PRIMARY KEY (run_id, rank))",
    "ALTER TABLE jobs ADD COLUMN kept_share " D,
    "ALTER TABLE jobs ADD COLUMN step_mean_us " D,
    "ALTER TABLE jobs ADD COLUMN compute_step_us " D,
    "ALTER TABLE jobs ADD COLUMN exposed_comm_step_us " D,
    "ALTER TABLE jobs ADD COLUMN idle_step_us " D,
    "ALTER TABLE jobs ADD COLUMN data_stall_step_us " D,
    "ALTER TABLE jobs ADD COLUMN checkpoint_step_us " D,
    "ALTER TABLE jobs ADD COLUMN wait_step_us " D,
    NULL};
#undef D

static const char *const *const schemas[] = {NULL, schema_v1, schema_v2};

static int run_all(struct ct_fdb *db, const char *const *sql, char *err, size_t errlen)
{
    for (; *sql; sql++) {
        int rc = ct_fdb_exec(db, *sql, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int set_version(struct ct_fdb *db, int v, char *err, size_t errlen)
{
    struct ct_fdb_stmt *st;
    int rc = ct_fdb_prepare(db,
                            "INSERT INTO fleet_meta (key, value) VALUES ('schema_version', $1) "
                            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                            &st, err, errlen);
    if (rc)
        return rc;
    char b[16];
    snprintf(b, sizeof(b), "%d", v);
    ct_fdb_bind_text(st, 1, b);
    rc = ct_fdb_step(st);
    if (rc < 0)
        snprintf(err, errlen, "%s", db->msg);
    ct_fdb_finalize(st);
    if (rc >= 0) {
        rc = ct_fdb_exec(db,
                         "INSERT INTO fleet_meta (key, value) VALUES ('schema', 'cutrace.fleet') "
                         "ON CONFLICT (key) DO NOTHING",
                         err, errlen);
    }
    return rc < 0 ? rc : 0;
}

int ct_fdb_create_schema(struct ct_fdb *db, int version, char *err, size_t errlen)
{
    if (version < 1 || version > CT_FLEET_SCHEMA_VERSION) {
        snprintf(err, errlen, "internal: schema version %d", version);
        return -EINVAL;
    }
    int rc = ct_fdb_begin(db, err, errlen);
    for (int v = 1; !rc && v <= version; v++)
        rc = run_all(db, schemas[v], err, errlen);
    if (!rc)
        rc = set_version(db, version, err, errlen);
    if (!rc)
        rc = ct_fdb_commit(db, err, errlen);
    else
        ct_fdb_rollback(db);
    return rc;
}

int ct_fdb_schema_version(struct ct_fdb *db, char *err, size_t errlen)
{
    /* a store with no fleet_meta table has no schema yet */
    const char *probe = db->pg ? "SELECT to_regclass('fleet_meta') IS NOT NULL"
                               : "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                 "AND name = 'fleet_meta'";
    struct ct_fdb_stmt *st;
    int rc = ct_fdb_prepare(db, probe, &st, err, errlen);
    if (rc)
        return rc;
    rc = ct_fdb_step(st);
    const char *t = rc == 1 ? ct_fdb_col_text(st, 0) : NULL;
    int have = t && (!strcmp(t, "1") || !strcmp(t, "t"));
    ct_fdb_finalize(st);
    if (rc < 0) {
        snprintf(err, errlen, "%s", db->msg);
        return rc;
    }
    if (!have)
        return 0;
    rc = ct_fdb_prepare(db,
                        "SELECT key, value FROM fleet_meta WHERE key IN ('schema', "
                        "'schema_version') ORDER BY key",
                        &st, err, errlen);
    if (rc)
        return rc;
    int version = -1, named = 0;
    while ((rc = ct_fdb_step(st)) == 1) {
        const char *k = ct_fdb_col_text(st, 0), *v = ct_fdb_col_text(st, 1);
        if (k && v && !strcmp(k, "schema"))
            named = !strcmp(v, "cutrace.fleet");
        else if (k && v)
            version = atoi(v);
    }
    ct_fdb_finalize(st);
    if (rc < 0) {
        snprintf(err, errlen, "%s", db->msg);
        return rc;
    }
    if (!named || version < 1) {
        snprintf(err, errlen,
                 "not a cutrace fleet store (its fleet_meta table names no "
                 "cutrace.fleet schema)");
        return -EPROTO;
    }
    return version;
}

/* Creates or migrates the schema, one writer at a time (an advisory lock
 * on PostgreSQL, the write transaction on SQLite), so that hosts opening a
 * new shared store at once make it once. */
static int migrate(struct ct_fdb *db, char *err, size_t errlen)
{
    int rc = ct_fdb_begin(db, err, errlen);
    if (rc)
        return rc;
    if (db->pg && (rc = ct_fdb_exec(db, "SELECT pg_advisory_xact_lock(7307264841)", err, errlen)))
        goto fail;
    int v = ct_fdb_schema_version(db, err, errlen);
    if (v < 0) {
        rc = v;
        goto fail;
    }
    if (v > CT_FLEET_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "the fleet store has schema version %d, newer than this cutrace's %d: "
                 "use a newer cutrace",
                 v, CT_FLEET_SCHEMA_VERSION);
        rc = -EPROTO;
        goto fail;
    }
    if (v == CT_FLEET_SCHEMA_VERSION) {
        ct_fdb_rollback(db);
        return 0;
    }
    for (int k = v + 1; k <= CT_FLEET_SCHEMA_VERSION; k++)
        if ((rc = run_all(db, schemas[k], err, errlen)))
            goto fail;
    if ((rc = set_version(db, CT_FLEET_SCHEMA_VERSION, err, errlen)))
        goto fail;
    return ct_fdb_commit(db, err, errlen);
fail:
    ct_fdb_rollback(db);
    return rc;
}
