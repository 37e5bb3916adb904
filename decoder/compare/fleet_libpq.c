/*
 * Loading libpq on first use (fleet_libpq.h says why it is not linked).
 * The library's soname is libpq.so.5 in every release since PostgreSQL 8.2;
 * the plain libpq.so (the -dev package's link) is tried after it.
 */
#include "decoder/compare/fleet_libpq.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct ct_libpq ct_pq;

static int load_state; /* 0 untried, 1 loaded, negative errno: failed */
static char load_msg[256];

/* One symbol into its slot; a missing one fails the whole load. */
static int want(void *lib, const char *name, void *slot)
{
    void *fn = dlsym(lib, name);
    if (!fn) {
        snprintf(load_msg, sizeof(load_msg),
                 "PostgreSQL: the libpq found has no %s (libpq 9.0 or later is needed)", name);
        return -ENOTSUP;
    }
    memcpy(slot, &fn, sizeof(fn));
    return 0;
}

static int load(void)
{
    void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libpq.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_msg, sizeof(load_msg),
                 "--db: a PostgreSQL store needs libpq, which could not be loaded (%s): install "
                 "libpq5 (scripts/setup does); an SQLite file (--db FILE) needs nothing more",
                 why ? why : "libpq.so.5 not found");
        return -ENOTSUP;
    }
    int rc = 0;
    rc = rc ? rc : want(lib, "PQconnectdb", &ct_pq.connectdb);
    rc = rc ? rc : want(lib, "PQstatus", &ct_pq.status);
    rc = rc ? rc : want(lib, "PQerrorMessage", &ct_pq.errorMessage);
    rc = rc ? rc : want(lib, "PQfinish", &ct_pq.finish);
    rc = rc ? rc : want(lib, "PQsetNoticeProcessor", &ct_pq.setNoticeProcessor);
    rc = rc ? rc : want(lib, "PQexec", &ct_pq.exec);
    rc = rc ? rc : want(lib, "PQexecParams", &ct_pq.execParams);
    rc = rc ? rc : want(lib, "PQresultStatus", &ct_pq.resultStatus);
    rc = rc ? rc : want(lib, "PQresultErrorMessage", &ct_pq.resultErrorMessage);
    rc = rc ? rc : want(lib, "PQntuples", &ct_pq.ntuples);
    rc = rc ? rc : want(lib, "PQgetisnull", &ct_pq.getisnull);
    rc = rc ? rc : want(lib, "PQgetvalue", &ct_pq.getvalue);
    rc = rc ? rc : want(lib, "PQclear", &ct_pq.clear);
    rc = rc ? rc : want(lib, "PQputCopyData", &ct_pq.putCopyData);
    rc = rc ? rc : want(lib, "PQputCopyEnd", &ct_pq.putCopyEnd);
    rc = rc ? rc : want(lib, "PQgetResult", &ct_pq.getResult);
    if (rc)
        dlclose(lib);
    return rc;
}

int ct_libpq_load(char *err, size_t errlen)
{
    /* The fleet commands are single-threaded where they open a store. */
    if (!load_state)
        load_state = load() ? -ENOTSUP : 1;
    if (load_state < 0) {
        snprintf(err, errlen, "%s", load_msg);
        return load_state;
    }
    return 0;
}
