/*
 * SQLite export in the shape of Nsight Systems' export where the concepts
 * match (table and column names, ns times, strings through StringIds,
 * serialized process/thread ids), plus cutrace's own tables. The schema is
 * documented column by column in docs/export.md; this file must keep to it.
 *
 * Times are ns since the export's time zero, the job's earliest record
 * (decoder/export/export.h), on the job clock: none is negative. Process
 * and thread ids are serialized as Nsight Systems does, so its recipes
 * apply: PID = globalPid / 0x1000000 % 0x1000000, TID = globalTid %
 * 0x1000000; the bits from 48 up hold the trace's index + 1 (in RANKS),
 * which keeps equal pids of different hosts apart. Columns Nsight Systems
 * has and the trace does not record are NULL, never invented.
 *
 * Rows are inserted with prepared statements in one transaction, one trace
 * at a time; indexes for the usual joins are created at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/util/demangle.h"
#include "decoder/export/export.h"
#include "decoder/util/names.h"
#include "decoder/read/tracefile.h"
#include "decoder/export/sqlite_int.h"

static const char schema[] =
    "PRAGMA journal_mode=OFF;PRAGMA synchronous=OFF;PRAGMA locking_mode=EXCLUSIVE;"
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);"
    "CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER NOT NULL);"
    "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalPid INTEGER NOT NULL, name TEXT NOT NULL,"
    " value TEXT NOT NULL);"
    "CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, uuid TEXT NOT NULL,"
    " totalMemory INTEGER NOT NULL, smCount INTEGER NOT NULL, cuDevice INTEGER NOT NULL,"
    " globalPid INTEGER NOT NULL, rank INTEGER NOT NULL, host TEXT NOT NULL);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL,"
    " correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL, demangledName INTEGER NOT NULL,"
    " shortName INTEGER NOT NULL, mangledName INTEGER NOT NULL, launchType INTEGER,"
    " registersPerThread INTEGER, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,"
    " gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,"
    " blockZ INTEGER NOT NULL, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER NOT NULL,"
    " graphNodeId INTEGER, source TEXT NOT NULL);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL,"
    " correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER, graphNodeId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL,"
    " correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " memKind INTEGER, graphNodeId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL,"
    " end INTEGER NOT NULL, deviceId INTEGER, contextId INTEGER, streamId INTEGER NOT NULL,"
    " correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL, syncType INTEGER NOT NULL,"
    " eventId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalTid INTEGER NOT NULL, correlationId INTEGER NOT NULL, nameId INTEGER NOT NULL,"
    " returnValue INTEGER NOT NULL, streamId INTEGER NOT NULL);"
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
    " text TEXT, globalTid INTEGER NOT NULL, domainId INTEGER NOT NULL);"
    "CREATE TABLE NCCL_OPS (start INTEGER NOT NULL, end INTEGER NOT NULL, gpuStart INTEGER,"
    " gpuEnd INTEGER, gpuSource TEXT, globalTid INTEGER NOT NULL, rank INTEGER NOT NULL,"
    " op TEXT NOT NULL, commHash TEXT NOT NULL, seq INTEGER NOT NULL, count INTEGER NOT NULL,"
    " dtype TEXT NOT NULL, bytes INTEGER NOT NULL, redop TEXT NOT NULL, root INTEGER,"
    " peer INTEGER, streamId INTEGER NOT NULL, groupId INTEGER NOT NULL,"
    " correlationId INTEGER NOT NULL, commRank INTEGER NOT NULL, nranks INTEGER NOT NULL,"
    " lib TEXT NOT NULL);";

/* The rest of cutrace's own tables (NCCL's account of its ops from the
 * profiler plugin, docs/nccl.md; I/O; ranks; iterations): a string of its
 * own, as C limits a literal's length. */
static const char schema_own[] =
    "CREATE TABLE NCCL_INFO (start INTEGER NOT NULL, globalPid INTEGER NOT NULL,"
    " rank INTEGER NOT NULL, correlationId INTEGER NOT NULL, algo TEXT, proto TEXT,"
    " channels INTEGER, warps INTEGER, p2p INTEGER NOT NULL, copyEngine INTEGER NOT NULL);"
    "CREATE TABLE NCCL_PROXY_OPS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalTid INTEGER NOT NULL, rank INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
    " channel INTEGER NOT NULL, peer INTEGER NOT NULL, direction TEXT NOT NULL,"
    " steps INTEGER NOT NULL, bytes INTEGER NOT NULL, gpuWait INTEGER NOT NULL,"
    " peerWait INTEGER NOT NULL, net INTEGER NOT NULL, flush INTEGER NOT NULL,"
    " netBusy INTEGER NOT NULL, nSteps INTEGER NOT NULL, chunkSize INTEGER NOT NULL);"
    "CREATE TABLE NCCL_CHANNELS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalPid INTEGER NOT NULL, rank INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
    " channel INTEGER NOT NULL);"
    "CREATE TABLE NCCL_NET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalTid INTEGER NOT NULL, rank INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
    " channel INTEGER NOT NULL, peer INTEGER NOT NULL, direction TEXT NOT NULL,"
    " transport TEXT NOT NULL, device INTEGER, qp INTEGER NOT NULL, wrs INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL, busy INTEGER NOT NULL, otherWrs INTEGER NOT NULL,"
    " otherBytes INTEGER NOT NULL);"
    "CREATE TABLE NCCL_KERNEL_PHASES (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalPid INTEGER NOT NULL, rank INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
    " channel INTEGER NOT NULL, phase TEXT NOT NULL);"
    "CREATE TABLE NCCL_TAGS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL,"
    " rank INTEGER NOT NULL, correlationId INTEGER NOT NULL, tag INTEGER NOT NULL);"
    "CREATE TABLE NCCL_PROXY_STEPS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalTid INTEGER NOT NULL, rank INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
    " channel INTEGER NOT NULL, peer INTEGER NOT NULL, direction TEXT NOT NULL,"
    " step INTEGER NOT NULL, bytes INTEGER NOT NULL, gpuWaitStart INTEGER,"
    " gpuWait INTEGER NOT NULL, peerWaitStart INTEGER, peerWait INTEGER NOT NULL,"
    " netStart INTEGER, net INTEGER NOT NULL, flushStart INTEGER, flush INTEGER NOT NULL);"
    "CREATE TABLE IO_SPANS (start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " globalTid INTEGER NOT NULL, rank INTEGER NOT NULL, op TEXT NOT NULL, fd INTEGER NOT NULL,"
    " fdType TEXT NOT NULL, path TEXT NOT NULL, bytes INTEGER NOT NULL, result INTEGER NOT NULL,"
    " offset INTEGER);"
    "CREATE TABLE RANKS (rank INTEGER NOT NULL, host TEXT NOT NULL, globalPid INTEGER NOT NULL,"
    " pid INTEGER NOT NULL, path TEXT NOT NULL, shiftNs INTEGER NOT NULL, skewNs INTEGER NOT NULL);"
    "CREATE TABLE ITERATIONS (rank INTEGER NOT NULL, iteration INTEGER NOT NULL,"
    " start INTEGER NOT NULL, end INTEGER NOT NULL, source TEXT NOT NULL);"
    "CREATE TABLE ITERATION_METRICS (rank INTEGER NOT NULL, iteration INTEGER NOT NULL,"
    " duration INTEGER NOT NULL, compute INTEGER NOT NULL, comm INTEGER NOT NULL,"
    " memory INTEGER NOT NULL, idle INTEGER NOT NULL, exposedComm INTEGER NOT NULL,"
    " bubble INTEGER NOT NULL);";

/* Nsight Systems' enumerations with its ids, names and labels: id = the
 * value in the columns that reference them (CUPTI's numbering for copy
 * kinds and sync types). Then the rows' transaction begins. */
static const char enums[] =
    "CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
    "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES"
    " (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'),(1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),"
    " (2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'),(3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array'),"
    " (4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host'),(5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array'),"
    " (6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device'),(7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array'),"
    " (8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device'),(9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host'),"
    " (10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer'),"
    " (11,'CUDA_MEMCPY_KIND_UVM_HTOD','Unified Host-to-Device'),"
    " (12,'CUDA_MEMCPY_KIND_UVM_DTOH','Unified Device-to-Host'),"
    " (13,'CUDA_MEMCPY_KIND_UVM_DTOD','Unified Device-to-Device');"
    "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
    "INSERT INTO ENUM_CUDA_MEM_KIND VALUES"
    " (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),"
    " (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),"
    " (3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),"
    " (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),"
    " (6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'),"
    " (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');"
    "CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);"
    "INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES"
    " (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),"
    " (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),"
    " (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait sync'),"
    " (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),"
    " (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');"
    "CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT,"
    " label TEXT);"
    "INSERT INTO ENUM_CUDA_KERNEL_LAUNCH_TYPE VALUES"
    " (0,'CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN','Unknown'),(1,'CUDA_KERNEL_LAUNCH_TYPE_REGULAR','"
    "Regular'),"
    " (2,'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE','Coop Single Device');"
    "BEGIN;";

static const char indexes[] =
    "CREATE INDEX kernel_corr ON CUPTI_ACTIVITY_KIND_KERNEL (globalPid, correlationId);"
    "CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL (start);"
    "CREATE INDEX memcpy_corr ON CUPTI_ACTIVITY_KIND_MEMCPY (globalPid, correlationId);"
    "CREATE INDEX memset_corr ON CUPTI_ACTIVITY_KIND_MEMSET (globalPid, correlationId);"
    "CREATE INDEX sync_corr ON CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (globalPid, correlationId);"
    "CREATE INDEX runtime_corr ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId);"
    "CREATE INDEX runtime_start ON CUPTI_ACTIVITY_KIND_RUNTIME (start);"
    "CREATE INDEX nvtx_start ON NVTX_EVENTS (start);"
    "CREATE INDEX nccl_corr ON NCCL_OPS (correlationId);"
    "CREATE INDEX nccl_start ON NCCL_OPS (start);"
    "CREATE INDEX nccl_info_corr ON NCCL_INFO (globalPid, correlationId);"
    "CREATE INDEX nccl_proxy_corr ON NCCL_PROXY_OPS (rank, correlationId);"
    "CREATE INDEX nccl_channel_corr ON NCCL_CHANNELS (rank, correlationId);"
    "CREATE INDEX nccl_net_corr ON NCCL_NET (rank, correlationId);"
    "CREATE INDEX nccl_phase_corr ON NCCL_KERNEL_PHASES (rank, correlationId);"
    "CREATE INDEX nccl_tag_corr ON NCCL_TAGS (rank, correlationId);"
    "CREATE INDEX nccl_tag_tag ON NCCL_TAGS (tag);"
    "CREATE INDEX nccl_step_corr ON NCCL_PROXY_STEPS (rank, correlationId);"
    "CREATE INDEX io_start ON IO_SPANS (start);";

static const char *const stmt_sql[ST_COUNT] = {
    [ST_STR] = "INSERT INTO StringIds VALUES (?,?)",
    [ST_ENV] = "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?,?,?)",
    [ST_GPU_INFO] = "INSERT INTO TARGET_INFO_GPU VALUES (?,?,?,?,?,?,?,?,?)",
    /* Parenthesised: clang's -Wstring-concatenation reads an unbracketed
       two-literal element as a missing comma. */
    [ST_KERNEL] = ("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
                   "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
    [ST_MEMCPY] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_MEMSET] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,?,?,?)",
    [ST_SYNC] = "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_RUNTIME] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?)",
    [ST_NVTX] = "INSERT INTO NVTX_EVENTS VALUES (?,?,?,?,?,?)",
    [ST_NCCL] = "INSERT INTO NCCL_OPS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_NCCL_INFO] = "INSERT INTO NCCL_INFO VALUES (?,?,?,?,?,?,?,?,?,?)",
    [ST_NCCL_PROXY] = ("INSERT INTO NCCL_PROXY_OPS VALUES "
                       "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
    [ST_NCCL_CHANNEL] = "INSERT INTO NCCL_CHANNELS VALUES (?,?,?,?,?,?)",
    [ST_NCCL_NET] = "INSERT INTO NCCL_NET VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_NCCL_PHASE] = "INSERT INTO NCCL_KERNEL_PHASES VALUES (?,?,?,?,?,?,?)",
    [ST_NCCL_TAG] = "INSERT INTO NCCL_TAGS VALUES (?,?,?,?,?)",
    [ST_NCCL_STEP] = "INSERT INTO NCCL_PROXY_STEPS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_IO] = "INSERT INTO IO_SPANS VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    [ST_RANK] = "INSERT INTO RANKS VALUES (?,?,?,?,?,?,?)",
    [ST_ITER] = "INSERT INTO ITERATIONS VALUES (?,?,?,?,?)",
    [ST_ITER_M] = "INSERT INTO ITERATION_METRICS VALUES (?,?,?,?,?,?,?,?,?)",
};

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The StringIds id of s (inserted on first use); 0 on failure. */
static int64_t str_id(struct sqlite_writer *w, const char *s)
{
    struct strtab *T = &w->strs;
    if (2 * (T->n + 1) > T->cap) {
        size_t cap = T->cap ? T->cap * 2 : 1024;
        char **ns = calloc(cap, sizeof(*ns));
        int64_t *ni = calloc(cap, sizeof(*ni));
        if (!ns || !ni) {
            free(ns);
            free(ni);
            return 0;
        }
        for (size_t i = 0; i < T->cap; i++) {
            if (!T->s[i])
                continue;
            size_t j = fnv(T->s[i]) & (cap - 1);
            while (ns[j])
                j = (j + 1) & (cap - 1);
            ns[j] = T->s[i];
            ni[j] = T->id[i];
        }
        free(T->s);
        free(T->id);
        T->s = ns;
        T->id = ni;
        T->cap = cap;
    }
    size_t j = fnv(s) & (T->cap - 1);
    while (T->s[j]) {
        if (!strcmp(T->s[j], s))
            return T->id[j];
        j = (j + 1) & (T->cap - 1);
    }
    char *d = strdup(s);
    if (!d)
        return 0;
    T->s[j] = d;
    T->id[j] = (int64_t)++T->n;
    sqlite3_bind_int64(w->st[ST_STR], 1, T->id[j]);
    sqlite3_bind_text(w->st[ST_STR], 2, s, -1, SQLITE_STATIC);
    step(w, ST_STR);
    return T->id[j];
}

static int64_t raw_id(struct sqlite_writer *w, uint64_t sid)
{
    if (sid >= w->t->rd.nstrs)
        return str_id(w, ct_trace_str(w->t, sid));
    if (!w->raw_ids[sid])
        w->raw_ids[sid] = str_id(w, ct_trace_str(w->t, sid));
    return w->raw_ids[sid];
}

/* The readable name of a kernel, and its last component without template
 * arguments or namespaces (Nsight Systems' shortName). */
static void kernel_ids(struct sqlite_writer *w, uint64_t sid, int64_t *dem, int64_t *shrt)
{
    int cache = sid < w->t->rd.nstrs;
    if (cache && w->dem_ids[sid]) {
        *dem = w->dem_ids[sid];
        *shrt = w->short_ids[sid];
        return;
    }
    char buf[1024];
    ct_demangle(ct_trace_str(w->t, sid), buf, sizeof(buf));
    *dem = str_id(w, buf);
    char *lt = strchr(buf, '<');
    if (lt)
        *lt = 0;
    char *p = buf, *c;
    while ((c = strstr(p, "::")))
        p = c + 2;
    *shrt = str_id(w, p);
    if (cache) {
        w->dem_ids[sid] = *dem;
        w->short_ids[sid] = *shrt;
    }
}

static int cupti_copy_kind(uint64_t k)
{
    switch (k) {
    case CT_COPY_HTOD: return 1;
    case CT_COPY_DTOH: return 2;
    case CT_COPY_DTOD: return 8;
    case CT_COPY_HTOH: return 9;
    case CT_COPY_PEER: return 10;
    default: return 0;
    }
}

/* Nsight Systems' launchType (ENUM_CUDA_KERNEL_LAUNCH_TYPE) from the entry
 * point that launched a kernel, where that alone tells: cuLaunchKernelEx's
 * attributes (cooperative or not) and a graph's nodes are not recorded. */
static int launch_type(const char *call, int64_t *type)
{
    if (!strcmp(call, "cuLaunchKernel") || !strcmp(call, "cuLaunchKernel_ptsz"))
        *type = 1; /* regular */
    else if (!strcmp(call, "cuLaunchCooperativeKernel") ||
             !strcmp(call, "cuLaunchCooperativeKernel_ptsz"))
        *type = 2; /* cooperative, single device */
    else
        return 0;
    return 1;
}

/* CUPTI's synchronization type (ENUM_CUPTI_SYNC_TYPE) of the call that
 * waited, by its entry point; 0 (unknown) for any other. */
static int64_t sync_type(const char *call)
{
    static const struct {
        const char *prefix;
        int64_t type;
    } t[] = {{"cuEventSynchronize", 1},
             {"cuStreamWaitEvent", 2},
             {"cuStreamSynchronize", 3},
             {"cuCtxSynchronize", 4}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strncmp(call, t[i].prefix, strlen(t[i].prefix)))
            return t[i].type;
    return 0;
}

/* A GPU record's row; i its index in the trace (its graph node). */
static void gpu_row(struct sqlite_writer *w, const struct ct_record *r, size_t i)
{
    const uint64_t *f = r->f;
    const struct ct_record *call = ct_trace_call(w->t, f[CT_GPU_CORR]);
    int api = call && call->kind == CT_REC_API;
    enum stmt k;
    if (f[CT_GPU_TYPE] == CT_GPU_KERNEL)
        k = ST_KERNEL;
    else if (f[CT_GPU_TYPE] == CT_GPU_MEMCPY)
        k = ST_MEMCPY;
    else if (f[CT_GPU_TYPE] == CT_GPU_MEMSET)
        k = ST_MEMSET;
    else if (f[CT_GPU_TYPE] == CT_GPU_SYNC)
        k = ST_SYNC;
    else
        return; /* NCCL intervals: NCCL_OPS.gpuStart/gpuEnd */
    /* columns 1-7 are the same in the four tables; contextId (4) is not
     * recorded: NULL */
    b_i(w, k, 1, T(w, f[CT_GPU_START]));
    b_i(w, k, 2, T(w, f[CT_GPU_END]));
    if (k != ST_SYNC)
        b_i(w, k, 3, (int64_t)f[CT_GPU_DEVICE]);
    else if (api && (int64_t)call->f[CT_API_DEVICE] >= 0) /* CUPTI's has none */
        b_i(w, k, 3, (int64_t)call->f[CT_API_DEVICE]);
    b_i(w, k, 5, (int64_t)f[CT_GPU_STREAM]);
    b_i(w, k, 6, (int64_t)f[CT_GPU_CORR]);
    b_i(w, k, 7, w->gpid);
    int node = w->gnode && w->gnode[i];
    if (k == ST_KERNEL) {
        int64_t dem, shrt, lt;
        kernel_ids(w, f[CT_GPU_NAME], &dem, &shrt);
        b_i(w, k, 8, dem);
        b_i(w, k, 9, shrt);
        b_i(w, k, 10, raw_id(w, f[CT_GPU_NAME]));
        if (api && launch_type(ct_trace_str(w->t, call->f[CT_API_NAME]), &lt))
            b_i(w, k, 11, lt);
        /* registersPerThread (12) and staticSharedMemory (19): not recorded */
        int launch = api && call->f[CT_API_FAMILY] == CT_FAM_LAUNCH;
        for (int d = 0; d < 6; d++) /* grid and block */
            b_i(w, k, 13 + d, launch ? (int64_t)call->f[CT_API_GRID_X + d] : 0);
        b_i(w, k, 20, launch ? (int64_t)call->f[CT_API_SHMEM] : 0);
        if (node)
            b_i(w, k, 21, (int64_t)w->gnode[i]);
        b_t(w, k, 22, ct_name_gpu_source(f[CT_GPU_SOURCE]));
    } else if (k == ST_SYNC) {
        uint64_t ev;
        b_i(w, k, 8, api ? sync_type(ct_trace_str(w->t, call->f[CT_API_NAME])) : 0);
        if (api && ct_api_event(call->f, &ev))
            b_i(w, k, 9, (int64_t)ev);
    } else {
        b_i(w, k, 8, (int64_t)f[CT_GPU_BYTES]);
        /* srcKind/dstKind (10, 11) and memKind (9): not recorded */
        if (k == ST_MEMCPY)
            b_i(w, k, 9, cupti_copy_kind(f[CT_GPU_COPY_KIND]));
        if (node)
            b_i(w, k, k == ST_MEMCPY ? 12 : 10, (int64_t)w->gnode[i]);
    }
    step(w, k);
}

/*
 * The executable graph node each GPU record of t ran as, from the graph
 * node metadata that follows it (cutrace/format.h CT_SCOPE_GRAPH_NODE: the
 * same thread's GPU record just before it, of the same time). NULL, with
 * *rc 0, when the trace has none; *rc -ENOMEM when out of memory.
 */
static uint64_t *graph_nodes(const struct ct_trace *t, int *rc)
{
    uint64_t *node = NULL;
    *rc = 0;
    for (size_t k = 0; k < t->n; k++) {
        const struct ct_record *m = &t->recs[k];
        if (m->kind != CT_REC_META || m->f[CT_META_SCOPE] != CT_SCOPE_GRAPH_NODE)
            continue;
        if (!node && !(node = calloc(t->n, sizeof(*node)))) {
            *rc = -ENOMEM;
            return NULL;
        }
        for (size_t j = k; j-- > 0 && t->recs[j].f[0] == m->f[0];)
            if (t->recs[j].kind == CT_REC_GPU && t->recs[j].tid == m->tid) {
                node[j] = m->f[CT_META_SCOPE_ID];
                break;
            }
    }
    return node;
}

static void record_row(struct sqlite_writer *w, const struct ct_record *r, size_t i)
{
    const uint64_t *f = r->f;
    enum stmt k;
    switch (r->kind) {
    case CT_REC_API:
        k = ST_RUNTIME;
        b_i(w, k, 1, T(w, f[CT_API_START]));
        b_i(w, k, 2, T(w, f[CT_API_END]));
        b_i(w, k, 3, w->gpid | r->tid);
        b_i(w, k, 4, (int64_t)f[CT_API_CORR]);
        b_i(w, k, 5, raw_id(w, f[CT_API_NAME]));
        b_i(w, k, 6, (int64_t)f[CT_API_RESULT]);
        b_i(w, k, 7, (int64_t)f[CT_API_STREAM]);
        step(w, k);
        break;
    case CT_REC_GPU:
        if (!ct_trace_gpu_superseded(w->t, r)) /* one row per op, from its best source */
            gpu_row(w, r, i);
        break;
    case CT_REC_NCCL:
    case CT_REC_NCCL_INFO:
    case CT_REC_NCCL_PROXY:
    case CT_REC_NCCL_CHANNEL:
    case CT_REC_NCCL_NET:
    case CT_REC_NCCL_PHASE:
    case CT_REC_NCCL_TAG: ct_sqlite_nccl_row(w, r); break;
    case CT_REC_NCCL_STEP: ct_sqlite_nccl_row(w, r); break;
    case CT_REC_IO:
        k = ST_IO;
        b_i(w, k, 1, T(w, f[CT_IO_START]));
        b_i(w, k, 2, T(w, f[CT_IO_END]));
        b_i(w, k, 3, w->gpid | r->tid);
        b_i(w, k, 4, w->src->rank);
        b_t(w, k, 5, ct_trace_str(w->t, f[CT_IO_OP]));
        b_i(w, k, 6, (int64_t)f[CT_IO_FD]);
        b_t(w, k, 7, ct_name_fd_type(f[CT_IO_FD_TYPE]));
        b_t(w, k, 8, ct_trace_str(w->t, f[CT_IO_PATH]));
        b_i(w, k, 9, (int64_t)f[CT_IO_BYTES]);
        b_i(w, k, 10, (int64_t)f[CT_IO_RESULT]);
        if ((int64_t)f[CT_IO_OFFSET] >= 0)
            b_i(w, k, 11, (int64_t)f[CT_IO_OFFSET]);
        step(w, k);
        break;
    case CT_REC_NVTX_RANGE:
    case CT_REC_NVTX_MARK: {
        int mark = r->kind == CT_REC_NVTX_MARK;
        k = ST_NVTX;
        /* Nsight Systems' event types: 34 mark, 59 push/pop range, 60 start/end range */
        b_i(w, k, 1, T(w, f[0]));
        if (!mark)
            b_i(w, k, 2, T(w, f[CT_NVTX_END]));
        b_i(w, k, 3, mark ? 34 : f[CT_NVTX_DEPTH] ? 59 : 60);
        b_t(w, k, 4, ct_trace_str(w->t, f[mark ? CT_MARK_MESSAGE : CT_NVTX_MESSAGE]));
        b_i(w, k, 5, w->gpid | r->tid);
        uint64_t dom = f[mark ? CT_MARK_DOMAIN : CT_NVTX_DOMAIN];
        b_i(w, k, 6, dom ? raw_id(w, dom) : 0);
        step(w, k);
        break;
    }
    default: break;
    }
}

static const char *meta_of(struct ct_trace *t, uint64_t scope, uint64_t id, const char *key)
{
    for (size_t i = 0; i < t->nmeta; i++) {
        const uint64_t *f = t->meta[i].f;
        if (f[CT_META_SCOPE] == scope && f[CT_META_SCOPE_ID] == id &&
            !strcmp(ct_reader_string(&t->rd, f[CT_META_KEY]), key))
            return ct_reader_string(&t->rd, f[CT_META_VALUE]);
    }
    return NULL;
}

/* RANKS, TARGET_INFO_SYSTEM_ENV and TARGET_INFO_GPU rows of one trace. */
static void trace_info(struct sqlite_writer *w, const struct ct_export_job *x, size_t idx)
{
    struct ct_trace *t = w->t;
    const struct ct_export_src *s = w->src;
    int64_t skew = 0;
    for (size_t r = 0; r < x->job.nranks; r++)
        if (x->job.ranks[r].rank == s->rank)
            skew = x->job.ranks[r].skew_ns;
    b_i(w, ST_RANK, 1, s->rank);
    b_t(w, ST_RANK, 2, s->host ? s->host : "");
    b_i(w, ST_RANK, 3, w->gpid);
    b_i(w, ST_RANK, 4, s->pid);
    b_t(w, ST_RANK, 5, s->path);
    b_i(w, ST_RANK, 6, s->shift);
    b_i(w, ST_RANK, 7, skew);
    step(w, ST_RANK);
    (void)idx;
    uint64_t seen_dev[64];
    size_t ndev = 0;
    for (size_t i = 0; i < t->nmeta; i++) {
        const uint64_t *f = t->meta[i].f;
        if (f[CT_META_SCOPE] == CT_SCOPE_PROCESS) {
            b_i(w, ST_ENV, 1, w->gpid);
            b_t(w, ST_ENV, 2, ct_trace_str(w->t, f[CT_META_KEY]));
            b_t(w, ST_ENV, 3, ct_trace_str(w->t, f[CT_META_VALUE]));
            step(w, ST_ENV);
        } else if (f[CT_META_SCOPE] == CT_SCOPE_DEVICE) {
            uint64_t d = f[CT_META_SCOPE_ID];
            size_t k = 0;
            while (k < ndev && seen_dev[k] != d)
                k++;
            if (k < ndev || ndev == 64)
                continue;
            seen_dev[ndev++] = d;
            const char *v;
            b_i(w, ST_GPU_INFO, 1, (int64_t)d);
            b_t(w, ST_GPU_INFO, 2, (v = meta_of(t, CT_SCOPE_DEVICE, d, "name")) ? v : "");
            b_t(w, ST_GPU_INFO, 3, (v = meta_of(t, CT_SCOPE_DEVICE, d, "uuid")) ? v : "");
            v = meta_of(t, CT_SCOPE_DEVICE, d, "total_memory");
            b_i(w, ST_GPU_INFO, 4, v ? strtoll(v, NULL, 10) : 0);
            v = meta_of(t, CT_SCOPE_DEVICE, d, "sm_count");
            b_i(w, ST_GPU_INFO, 5, v ? strtoll(v, NULL, 10) : 0);
            b_i(w, ST_GPU_INFO, 6, (int64_t)d);
            b_i(w, ST_GPU_INFO, 7, w->gpid);
            b_i(w, ST_GPU_INFO, 8, s->rank);
            b_t(w, ST_GPU_INFO, 9, s->host ? s->host : "");
            step(w, ST_GPU_INFO);
        }
    }
}

/* ITERATIONS and ITERATION_METRICS: the report's per-iteration figures. */
static void iteration_rows(struct sqlite_writer *w, const struct ct_export_job *x)
{
    const struct ct_report *rep = &x->rep;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *rr = &rep->rr[r];
        if (!ct_export_rank_on(&x->sel, rr->rank->rank))
            continue;
        for (size_t i = 0; i < rr->niters; i++) {
            const struct ct_iter *it = &rr->iters[i];
            const struct ct_iter_metrics *m = &rr->im[i];
            if (!ct_export_in(&x->sel, it->s - x->origin, it->e - x->origin))
                continue;
            b_i(w, ST_ITER, 1, rr->rank->rank);
            b_i(w, ST_ITER, 2, it->index);
            b_i(w, ST_ITER, 3, it->s - x->origin);
            b_i(w, ST_ITER, 4, it->e - x->origin);
            b_t(w, ST_ITER, 5, ct_iter_source_name(rr->iter_src));
            step(w, ST_ITER);
            int64_t v[9] = {rr->rank->rank, it->index, it->e - it->s,   m->compute, m->comm,
                            m->memory,      m->idle,   m->exposed_comm, m->bubble};
            for (int c = 0; c < 9; c++)
                b_i(w, ST_ITER_M, c + 1, v[c]);
            step(w, ST_ITER_M);
        }
    }
}

int ct_export_sqlite(const char *out, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen)
{
    struct sqlite_writer w = {0};
    int rc = 0;
    unlink(out); /* a new database, not an addition to an old one */
    if (sqlite3_open_v2(out, &w.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "-o %s: %s", out, w.db ? sqlite3_errmsg(w.db) : "out of memory");
        sqlite3_close(w.db);
        return -EIO;
    }
    char *msg = NULL;
    if (sqlite3_exec(w.db, schema, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(w.db, schema_own, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(w.db, enums, NULL, NULL, &msg) != SQLITE_OK)
        goto sql_error;
    for (int k = 0; k < ST_COUNT; k++)
        if (sqlite3_prepare_v2(w.db, stmt_sql[k], -1, &w.st[k], NULL) != SQLITE_OK)
            goto sql_error;
    {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(w.db, "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?)", -1,
                               &st, NULL) != SQLITE_OK)
            goto sql_error;
        sqlite3_bind_int64(st, 1, x->origin_realtime_ns);
        sqlite3_step(st);
        sqlite3_finalize(st);
        /* what time 0 is, and where `cutrace report`'s zero lies on it */
        char meta[256], zero[32] = "NULL"; /* no GPU op: the report has no zero */
        if (x->job.t0 >= x->origin)
            snprintf(zero, sizeof(zero), "'%" PRId64 "'", x->job.t0 - x->origin);
        snprintf(meta, sizeof(meta),
                 "INSERT INTO META_DATA_EXPORT VALUES ('CUTRACE_GENERATOR','cutrace export'),"
                 "('CUTRACE_TIME_ZERO','the job''s earliest record'),"
                 "('CUTRACE_REPORT_TIME_ZERO_NS',%s);",
                 zero);
        if (sqlite3_exec(w.db, meta, NULL, NULL, &msg) != SQLITE_OK)
            goto sql_error;
    }
    for (size_t i = 0; i < x->nsrc && !rc && !w.rc; i++) {
        if (!ct_export_rank_on(&x->sel, x->src[i].rank))
            continue; /* --ranks */
        struct ct_trace t;
        ct_progress_update(pr, "writing trace", i + 1, x->nsrc, 0);
        rc = ct_trace_load(&t, x->src[i].path, 1, err, errlen);
        if (rc)
            break;
        w.t = &t;
        w.src = &x->src[i];
        w.shift = x->src[i].shift;
        w.gpid =
            (int64_t)(((uint64_t)(i + 1) << 48) | ((uint64_t)(x->src[i].pid & 0xffffff) << 24));
        size_t ns = t.rd.nstrs + 1;
        w.raw_ids = calloc(ns, sizeof(int64_t));
        w.dem_ids = calloc(ns, sizeof(int64_t));
        w.short_ids = calloc(ns, sizeof(int64_t));
        int grc = 0;
        w.gnode = graph_nodes(&t, &grc);
        if (!w.raw_ids || !w.dem_ids || !w.short_ids || grc) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        } else {
            trace_info(&w, x, i);
            for (size_t k = 0; k < t.n && !w.rc; k++) {
                if ((k & 0xffff) == 0)
                    ct_progress_update(pr, "writing trace", i + 1, x->nsrc,
                                       100.0 * (double)k / (double)t.n);
                const struct ct_record *r = &t.recs[k];
                if (ct_export_rec_in(&x->sel, r, w.shift))
                    record_row(&w, r, k); /* else outside --window / --iterations */
            }
        }
        free(w.raw_ids);
        free(w.dem_ids);
        free(w.short_ids);
        free(w.gnode);
        w.gnode = NULL;
        ct_trace_free(&t);
    }
    if (!rc && !w.rc)
        iteration_rows(&w, x);
    if (!rc && w.rc) {
        snprintf(err, errlen, "-o %s: %s", out, sqlite3_errstr(w.rc));
        rc = -EIO;
    }
    if (!rc) {
        ct_progress_end(pr);
        ct_progress_phase("cutrace export", "building the indexes");
    }
    if (!rc && (sqlite3_exec(w.db, indexes, NULL, NULL, &msg) != SQLITE_OK ||
                sqlite3_exec(w.db, "COMMIT;", NULL, NULL, &msg) != SQLITE_OK))
        goto sql_error;
    goto out;
sql_error:
    snprintf(err, errlen, "-o %s: %s", out, msg ? msg : sqlite3_errmsg(w.db));
    rc = -EIO;
out:
    sqlite3_free(msg);
    for (int k = 0; k < ST_COUNT; k++)
        sqlite3_finalize(w.st[k]);
    if (sqlite3_close(w.db) != SQLITE_OK && !rc) {
        snprintf(err, errlen, "-o %s: error closing the database", out);
        rc = -EIO;
    }
    for (size_t i = 0; i < w.strs.cap; i++)
        free(w.strs.s[i]);
    free(w.strs.s);
    free(w.strs.id);
    return rc;
}
