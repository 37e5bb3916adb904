#!/usr/bin/env python3
"""Queries a `cutrace export --format sqlite` database with python3's sqlite3
module and checks it against the decoder's own figures.

usage: check_sqlite.py DB REPORT.json DUMP.jsonl...

  - total kernel time per (process, stream) equals the sum over the
    `cutrace dump --json` gpu records of type kernel, to the ns (times are
    shifted per trace, never scaled);
  - every kernel joins its driver call by correlationId within its process
    (Nsight Systems' recipe: RUNTIME.globalTid / 0x1000000 = KERNEL.globalPid
    / 0x1000000), and the call is a launch (of the kernel, or of its graph);
  - NCCL_OPS holds one row per dump nccl record (count per op);
  - ITERATION_METRICS equals `cutrace report --json`'s per-iteration figures
    (ns vs µs with three decimals: exact);
  - the tables and indexes of docs/export.md exist;
  - Nsight Systems' shape: the ENUM_* tables hold Nsight Systems' ids,
    names and labels (copy kinds, memory kinds, sync types, launch types),
    and every copyKind, syncType and launchType joins its table;
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION has one row per CUPTI
    synchronization record of the dump, joined to its call by
    correlationId, with the type its call's name says (cuEventSynchronize
    1, cuStreamWaitEvent 2, cuStreamSynchronize 3, cuCtxSynchronize 4);
    kernels have launchType 1 when cuLaunchKernel launched them, 2 for
    cuLaunchCooperativeKernel, NULL otherwise, graphNodeId the graph node
    the dump's graph_node record names for them (NULL when none), and
    contextId, registersPerThread, staticSharedMemory NULL (not recorded);
  - no start or end in any table is negative (time 0 is the job's earliest
    record).
"""
import collections
import json
import sqlite3
import sys

fails = []


def check(what, ok, detail=""):
    if not ok:
        fails.append(f"{what}: {detail}")


db = sqlite3.connect(sys.argv[1])
rep = json.load(open(sys.argv[2]))
dumps = sys.argv[3:]

tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
for t in ("StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
          "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
          "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "META_DATA_EXPORT", "ENUM_CUDA_MEMCPY_OPER",
          "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE", "ENUM_CUDA_KERNEL_LAUNCH_TYPE",
          "TARGET_INFO_GPU", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME",
          "NCCL_OPS", "IO_SPANS", "RANKS", "ITERATIONS", "ITERATION_METRICS"):
    check("table", t in tables, t)
idx = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
check("indexes", {"kernel_corr", "runtime_corr", "kernel_start", "nccl_corr"} <= idx, idx)

want = collections.Counter()
want_nccl = collections.Counter()
want_io = 0
for d in dumps:
    for line in open(d):
        r = json.loads(line)
        if r["kind"] == "gpu" and r["type"] == "kernel":
            want[(r["pid"], r["stream"])] += r["gpu_end_ns"] - r["gpu_start_ns"]
        elif r["kind"] == "nccl":
            want_nccl[r["op"]] += 1
        elif r["kind"] == "io":
            want_io += 1

got = collections.Counter()
for pid, stream, total in db.execute(
        "SELECT globalPid / 0x1000000 % 0x1000000, streamId, SUM(end - start) "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY globalPid, streamId"):
    got[(pid, stream)] += total
check("kernel time per stream", got == want, f"{dict(got)} != {dict(want)}")
check("kernels present", sum(want.values()) > 0, "no kernels in the dumps")

nk, joined, launches = db.execute(
    "SELECT COUNT(*), COUNT(r.correlationId), "
    "SUM(n.value LIKE 'cuLaunch%' OR n.value LIKE 'cuGraphLaunch%') "
    "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
    "ON r.correlationId = k.correlationId AND r.globalTid / 0x1000000 = k.globalPid / 0x1000000 "
    "LEFT JOIN StringIds n ON n.id = r.nameId").fetchone()
check("API<->kernel join", nk > 0 and joined == nk and launches == nk,
      f"{nk} kernels, {joined} joined, {launches} to a cuLaunch* or cuGraphLaunch*")
ok_order = db.execute(
    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
    "ON r.correlationId = k.correlationId AND r.globalTid / 0x1000000 = k.globalPid / 0x1000000 "
    "WHERE r.start <= k.start").fetchone()[0]
check("launch before kernel", ok_order == nk, f"{ok_order} of {nk}")
names = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                   "JOIN StringIds d ON d.id = k.demangledName "
                   "JOIN StringIds s ON s.id = k.shortName").fetchone()[0]
check("kernel names in StringIds", names == nk, f"{names} of {nk}")

got_nccl = collections.Counter(dict(db.execute("SELECT op, COUNT(*) FROM NCCL_OPS GROUP BY op")))
check("NCCL ops", got_nccl == want_nccl, f"{dict(got_nccl)} != {dict(want_nccl)}")
got_io = db.execute("SELECT COUNT(*) FROM IO_SPANS").fetchone()[0]
check("I/O spans", got_io == want_io, f"{got_io} != {want_io}")

nranks = db.execute("SELECT COUNT(DISTINCT rank) FROM RANKS").fetchone()[0]
check("ranks", nranks == len(rep["ranks"]), f"{nranks} != {len(rep['ranks'])}")
for rk in rep["ranks"]:
    rows = db.execute("SELECT iteration, duration, compute, comm, memory, idle, exposedComm, "
                      "bubble FROM ITERATION_METRICS WHERE rank = ? ORDER BY iteration",
                      (rk["rank"],)).fetchall()
    check(f"rank {rk['rank']} iterations", len(rows) == len(rk["iterations"]),
          f"{len(rows)} != {len(rk['iterations'])}")
    for row, it in zip(rows, rk["iterations"]):
        exp = (it["index"], it["duration_us"], it["compute_us"], it["comm_us"], it["memory_us"],
               it["idle_us"], it["exposed_comm_us"], it["bubble_us"])
        gotv = (row[0],) + tuple(round(v / 1000, 3) for v in row[1:])
        check(f"rank {rk['rank']} iteration {it['index']}", gotv == exp, f"{gotv} != {exp}")

# Nsight Systems' enumerations (its export's ids, names and labels)
enums = {
    "ENUM_CUDA_MEMCPY_OPER": {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host",
                              8: "Device-to-Device", 9: "Host-to-Host", 10: "Peer-to-Peer"},
    "ENUM_CUDA_MEM_KIND": {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
                           5: "Device Static", 6: "Managed Static", 7: "Unknown"},
    "ENUM_CUPTI_SYNC_TYPE": {0: "Unknown", 1: "Event sync", 2: "Stream wait sync",
                             3: "Stream sync", 4: "Context sync"},
    "ENUM_CUDA_KERNEL_LAUNCH_TYPE": {0: "Unknown", 1: "Regular", 2: "Coop Single Device"},
}
for t, want_rows in enums.items():
    rows = dict(db.execute(f"SELECT id, label FROM {t}")) if t in tables else {}
    check(f"{t} labels", all(rows.get(i) == v for i, v in want_rows.items()), rows)
check("copy kinds join", db.execute(
    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m LEFT JOIN ENUM_CUDA_MEMCPY_OPER e "
    "ON e.id = m.copyKind WHERE e.id IS NULL").fetchone()[0] == 0, "")
check("launch types join", db.execute(
    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN ENUM_CUDA_KERNEL_LAUNCH_TYPE e "
    "ON e.id = k.launchType WHERE k.launchType IS NOT NULL AND e.id IS NULL").fetchone()[0] == 0,
      "")

# synchronizations: CUPTI's records, with the call that waited
want_sync = collections.Counter()
want_node = collections.Counter()
gpu_by = {}
nodes = []
for d in dumps:
    for line in open(d):
        r = json.loads(line)
        if r["kind"] == "gpu":
            gpu_by[(r["pid"], r["tid"], r["start_ns"])] = r
            if r["type"] == "sync":
                want_sync[(r["pid"], r["correlation_id"], r.get("api", ""))] += 1
        elif r["kind"] == "meta" and r.get("scope") == "graph_node":
            nodes.append(r)
for m in nodes:  # the GPU record of the same thread and time it follows
    g = gpu_by.get((m["pid"], m["tid"], m["time_ns"]))
    check("graph node names a GPU record", g, m)
    if g and g["type"] == "kernel":
        want_node[(g["pid"], g["correlation_id"], int(m["graph_node_id"], 16))] += 1
SYNC_TYPE = {"cuEventSynchronize": 1, "cuStreamWaitEvent": 2, "cuStreamSynchronize": 3,
             "cuCtxSynchronize": 4}
got_sync = collections.Counter()
for pid, corr, name, typ, label in db.execute(
        "SELECT y.globalPid / 0x1000000 % 0x1000000, y.correlationId, n.value, y.syncType, "
        "e.label FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y "
        "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType "
        "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = y.correlationId "
        "AND r.globalTid / 0x1000000 = y.globalPid / 0x1000000 "
        "LEFT JOIN StringIds n ON n.id = r.nameId"):
    got_sync[(pid, corr, name or "")] += 1
    want_t = next((v for k, v in SYNC_TYPE.items() if (name or "").startswith(k)), 0)
    check("sync type from its call", typ == want_t, (name, typ, label))
check("SYNCHRONIZATION rows", got_sync == want_sync,
      f"{sum(got_sync.values())} rows, {sum(want_sync.values())} in the dumps")
bad_lt = db.execute(
    "SELECT n.value, k.launchType FROM CUPTI_ACTIVITY_KIND_KERNEL k "
    "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
    "AND r.globalTid / 0x1000000 = k.globalPid / 0x1000000 "
    "LEFT JOIN StringIds n ON n.id = r.nameId "
    "WHERE k.launchType IS NOT CASE WHEN n.value IN ('cuLaunchKernel', 'cuLaunchKernel_ptsz') "
    "THEN 1 WHEN n.value IN ('cuLaunchCooperativeKernel', 'cuLaunchCooperativeKernel_ptsz') "
    "THEN 2 END").fetchall()
check("launchType from the launch call", not bad_lt, bad_lt[:5])
got_node = collections.Counter(db.execute(
    "SELECT globalPid / 0x1000000 % 0x1000000, correlationId, graphNodeId "
    "FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL").fetchall())
check("graphNodeId", got_node == want_node,
      f"{sum(got_node.values())} kernels with a node, {sum(want_node.values())} in the dumps")
check("not recorded: NULL", db.execute(
    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE contextId IS NOT NULL OR "
    "registersPerThread IS NOT NULL OR staticSharedMemory IS NOT NULL").fetchone()[0] == 0, "")
for t in sorted(tables):
    cols = [r[1] for r in db.execute(f'PRAGMA table_info("{t}")')]
    if "start" in cols:
        neg = db.execute(f'SELECT COUNT(*) FROM "{t}" WHERE start < 0 OR "end" < 0'
                         if "end" in cols else f'SELECT COUNT(*) FROM "{t}" WHERE start < 0')
        check(f"{t}: no negative time", neg.fetchone()[0] == 0, "")

if fails:
    print("\n".join(fails[:30]))
    sys.exit(1)
print(f"sqlite check: ok ({nk} kernels, {sum(got_nccl.values())} NCCL ops, "
      f"{len(got)} streams, {sum(got_sync.values())} synchronizations, "
      f"{sum(got_node.values())} kernels of graph nodes)")
