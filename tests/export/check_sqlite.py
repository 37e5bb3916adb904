#!/usr/bin/env python3
"""Queries a `cutrace export --format sqlite` database with python3's sqlite3
module and checks it against the decoder's own figures.

usage: check_sqlite.py DB REPORT.json DUMP.jsonl...

  - total kernel time per (process, stream) equals the sum over the
    `cutrace dump --json` gpu records of type kernel, to the ns (times are
    shifted per trace, never scaled);
  - every kernel joins its driver call by correlationId within its process
    (Nsight Systems' recipe: RUNTIME.globalTid / 0x1000000 = KERNEL.globalPid
    / 0x1000000), and the call is a launch;
  - NCCL_OPS holds one row per dump nccl record (count per op);
  - ITERATION_METRICS equals `cutrace report --json`'s per-iteration figures
    (ns vs µs with three decimals: exact);
  - the tables and indexes of docs/export.md exist.
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
    "SELECT COUNT(*), COUNT(r.correlationId), SUM(n.value LIKE 'cuLaunch%') "
    "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
    "ON r.correlationId = k.correlationId AND r.globalTid / 0x1000000 = k.globalPid / 0x1000000 "
    "LEFT JOIN StringIds n ON n.id = r.nameId").fetchone()
check("API<->kernel join", nk > 0 and joined == nk and launches == nk,
      f"{nk} kernels, {joined} joined, {launches} to a cuLaunch*")
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

if fails:
    print("\n".join(fails[:30]))
    sys.exit(1)
print(f"sqlite check: ok ({nk} kernels, {sum(got_nccl.values())} NCCL ops, "
      f"{len(got)} streams)")
