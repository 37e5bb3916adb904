/*
 * libpq, loaded when a PostgreSQL fleet store is first opened
 * (fleet_libpq.c). cutrace is not linked against libpq: linking it made every
 * command, `cutrace report` included, map and relocate libpq's twenty
 * libraries (TLS, Kerberos, LDAP) at start, about 10 ms of CPU per run, for a
 * store most runs never open (docs/performance.md).
 */
#ifndef CT_FLEET_LIBPQ_H
#define CT_FLEET_LIBPQ_H

#include <stddef.h>

#include <libpq-fe.h>

/* The libpq functions the fleet store calls, by libpq's own names less
 * the PQ prefix. */
struct ct_libpq {
    PGconn *(*connectdb)(const char *conninfo);
    ConnStatusType (*status)(const PGconn *conn);
    char *(*errorMessage)(const PGconn *conn);
    void (*finish)(PGconn *conn);
    PQnoticeProcessor (*setNoticeProcessor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
    PGresult *(*exec)(PGconn *conn, const char *query);
    PGresult *(*execParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                            const char *const *paramValues, const int *paramLengths,
                            const int *paramFormats, int resultFormat);
    ExecStatusType (*resultStatus)(const PGresult *res);
    char *(*resultErrorMessage)(const PGresult *res);
    int (*ntuples)(const PGresult *res);
    int (*getisnull)(const PGresult *res, int tup_num, int field_num);
    char *(*getvalue)(const PGresult *res, int tup_num, int field_num);
    void (*clear)(PGresult *res);
    int (*putCopyData)(PGconn *conn, const char *buffer, int nbytes);
    int (*putCopyEnd)(PGconn *conn, const char *errormsg);
    PGresult *(*getResult)(PGconn *conn);
};

/* Filled by ct_libpq_load; valid only after it returned 0. */
extern struct ct_libpq ct_pq;

/* Loads libpq once (later calls answer from the first): 0, or -ENOTSUP with
 * a message for a user who has no libpq installed. */
int ct_libpq_load(char *err, size_t errlen);

#endif
