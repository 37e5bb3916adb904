#!/usr/bin/env python3
"""NVSHMEM's on-stream collectives recorded as ops with their bytes
(docs/nccl.md, "Communication kernels"): a 4-PE job (tests/nvshmem/w_shmem.c)
on the fake libnvshmem_host (tests/fakegpu/fs_nvshmem.c) under `cutrace
run`, linked (the shim's wrappers record every call), then the same job
calling through dlsym on the library's handle (no wrapper sees the calls:
the old behaviour, communication kernels without bytes); and the linked job
under --gpu-timing events (an event pair around each call).

usage: check_shmem.py   (environment: CT_CUTRACE, CT_W_SHMEM, CT_W_SHMEM_DL,
                         CT_FAKEGPU_DIR, CT_FAKE_CUPTI, CT_SHIM,
                         CT_W_NOSHMEM)

First, a job without NVSHMEM probing for it by dlsym finds nothing (as
without cutrace), and finds it once libnvshmem_host is loaded; the shim's exports against NVSHMEM's documented host API: a wrapper
for every on-stream collective of every type its headers list, no other.

Truth (the fake's model, tests/fakegpu/README.md "Fake NVSHMEM"): at
FAKEGPU_NET_GBPS = 8, an op of B bytes (nccl-tests' size) over n PEs is one
kernel lasting B x f / 8 ns, f its bus factor: the sum-reduce of 4 Mi floats
(B = 16 MiB, f = 2(n-1)/n = 1.5) 3145.728 us, the alltoall of 256 Ki floats
per PE (B = 4 x 1 MiB, f = 3/4) 393.216 us, the broadcast of 512 Ki floats
on a 2-PE half (B = 2 MiB, f = 1) 262.144 us, the barrier 1 us (no bytes).
So every row's p50 is its kernel's duration and its busbw is 8 GB/s. Four
steps on every PE: 16 of each op per row, and 4 more broadcasts on the
halves made after the strided ones were destroyed (their handles reused:
the shim must register the new teams afresh, one hash per team on its
members, sequence from 0).

Tolerances: an op's GPU interval is its kernel's, as the fake CUPTI records
it: start and end pass through the CUPTI timestamp conversion with
sub-microsecond jitter (tests/nccl/check_ce.py measured up to ~0.5 us), so a
duration is exact within 1 us: p50 within 1 us absolute, busbw within 0.5 %
(1 us of the shortest op, 262 us, is 0.38 %). Sums over a rank's 4 steps
(communication time per class) within 4 x 1 us per op kind. Overlap is
checked against its truth from the recorded kernels themselves (the side
kernel's interval intersected with its step's reduce kernel), within 2 us
per step for the same jitter. Skipped under qemu-user (real-time
simulator) as the other jobs on the simulated device are.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

if os.environ.get("CT_EMULATED"):
    print("nvshmem: skipped under qemu (the simulator's real-time schedule)")
    sys.exit(0)

CUTRACE = os.environ["CT_CUTRACE"]
NPES, STEPS, GBPS = 4, 4, 8.0
NR, NA, NB = 4194304, 262144, 524288
T_RED = 4 * NR * 2 * (NPES - 1) / NPES / GBPS / 1e3  # us
T_A2A = 4 * NA * NPES * (NPES - 1) / NPES / GBPS / 1e3
T_BC = 4 * NB / GBPS / 1e3
T_BAR = 1.0
failures = []
scratch = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def near(what, got, want, tol):
    check(what, got is not None and abs(got - want) <= tol, f"got {got}, want {want} +- {tol}")


def job(name, exe, *run_opts):
    d = tempfile.mkdtemp(prefix=f"shmem-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": str(int(GBPS)), "W_SHMEM_STEPS": str(STEPS)})
    traces = os.path.join(d, "traces")
    p = subprocess.run([CUTRACE, "run", *run_opts, "-o", traces, "--", exe, "launch", str(NPES)],
                       env=env, capture_output=True, text=True, timeout=240)
    # w_shmem exits 4 when errno after an NVSHMEM call is not the EIO the
    # fake left: the linked job checks that the wrappers preserve errno
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    return traces


def report(traces):
    r = subprocess.run([CUTRACE, "report", "--json", traces], capture_output=True, text=True,
                       timeout=240)
    if r.returncode:
        sys.exit(f"report failed: {r.stderr}")
    return json.loads(r.stdout)


def dump(traces):
    """Per rank, the JSON records of its trace."""
    out = {}
    for f in sorted(os.listdir(traces)):
        m = re.search(r"-r(\d+)-", f)
        if not m or not f.endswith(".cutrace"):
            continue
        d = subprocess.run([CUTRACE, "dump", "--json", os.path.join(traces, f)],
                           capture_output=True, text=True, timeout=120)
        out[int(m.group(1))] = [json.loads(line) for line in d.stdout.splitlines()]
    return out


def kernels(recs, prefix):
    return sorted((r["gpu_start_ns"], r["gpu_end_ns"]) for r in recs
                  if r["kind"] == "gpu" and r.get("name", "").startswith(prefix))


def linked():
    traces = job("linked", os.environ["CT_W_SHMEM"])
    rep = report(traces)
    recs = dump(traces)
    check("linked: 4 ranks", sorted(recs) == list(range(NPES)), str(sorted(recs)))
    # the collectives table: NVSHMEM's rows, named as NVSHMEM's
    rows = {c["op"]: c for c in rep["collectives"]}
    check("linked: three rows, all NVSHMEM's", sorted(rows) == ["AllReduce", "AlltoAll", "Broadcast"]
          and all(c["lib"] == "nvshmem" for c in rep["collectives"]), str(rep["collectives"]))
    want = {"AllReduce": (4 * NR, NPES, T_RED), "AlltoAll": (4 * NA * NPES, NPES, T_A2A),
            "Broadcast": (4 * NB, 2, T_BC)}
    for op, (b, n, t) in want.items():
        c = rows.get(op)
        if not c:
            continue
        m = NPES * (STEPS + (op == "Broadcast"))  # one broadcast more, on the new halves
        check(f"linked: {op} bytes, ranks, count", c["bytes"] == b and c["nranks"] == n and
              c["count"] == m and c["matched"] == m, str(c))
        near(f"linked: {op} p50 us", c["p50_us"], t, 1.0)
        near(f"linked: {op} busbw", c["busbw_gbps"], GBPS, GBPS * 0.005)
    # the records: every call once, NVSHMEM's, with its bytes; its GPU
    # interval the kernel launched inside it
    hashes = {}
    for k, rs in recs.items():
        ops = [r for r in rs if r["kind"] == "nccl"]
        check(f"linked: rank {k} 17 ops, all NVSHMEM's", len(ops) == 4 * STEPS + 1 and
              all(r.get("lib") == "nvshmem" for r in ops), str(len(ops)))
        by = {}
        for r in ops:
            by.setdefault(r["op"], []).append(r)
        check(f"linked: rank {k} ops", {o: len(v) for o, v in by.items()} ==
              {"AllReduce": STEPS, "AlltoAll": STEPS, "Broadcast": STEPS + 1, "other": STEPS},
              str({o: len(v) for o, v in by.items()}))
        red = by.get("AllReduce", [])
        check(f"linked: rank {k} reduce fields", all(
            r["dtype"] == "float" and r["redop"] == "sum" and r["count"] == NR and
            r["bytes"] == 4 * NR and r["nranks"] == NPES and r["comm_rank"] == k for r in red),
            str(red[:1]))
        check(f"linked: rank {k} barrier has no bytes",
              all(r["bytes"] == 0 for r in by.get("other", [])), str(by.get("other", [])[:1]))
        bc = sorted(by.get("Broadcast", []), key=lambda r: r["start_ns"])
        check(f"linked: rank {k} broadcasts on its strided half", all(
            r["nranks"] == 2 and r["comm_rank"] == k // 2 and r["root"] == 0 for r in bc[:-1]),
            str(bc[:1]))
        # the last one on its contiguous half, whose team reuses a destroyed
        # handle: registered afresh (its rank, a new sequence)
        check(f"linked: rank {k} last broadcast on its new half", bc and
              bc[-1]["nranks"] == 2 and bc[-1]["comm_rank"] == k % 2 and bc[-1]["seq"] == 0,
              str(bc[-1:]))
        rk = kernels(rs, "nvshmemi_float_sum_rdxn_on_stream_kernel")
        gi = sorted((r.get("gpu_start_ns"), r.get("gpu_end_ns")) for r in red)
        check(f"linked: rank {k} reduce GPU interval is its kernel's", gi == rk and len(rk) == STEPS,
              f"{gi} vs {rk}")
        for r in ops:
            team = ("world", 0)
            if r["op"] == "Broadcast":
                team = ("new half", k // 2) if r is bc[-1] else ("strided half", k % 2)
            hashes.setdefault(team, set()).add(r["comm_hash"])
        # communication by class, no comm kernels left without bytes
        R = next(x for x in rep["ranks"] if x["rank"] == k)
        near(f"linked: rank {k} dp comm us", R["comm_by_kind"]["dp"]["comm_us"], STEPS * T_RED,
             STEPS * 1.0)
        near(f"linked: rank {k} other comm us", R["comm_by_kind"]["other"]["comm_us"],
             STEPS * (T_A2A + T_BC + T_BAR) + T_BC, (3 * STEPS + 1) * 1.0)
        ck = R["comm_kernels"]
        check(f"linked: rank {k} no comm kernels outside calls",
              ck["count"] == 0 and ck["bytes"] == 0, str(ck))
        check(f"linked: rank {k} no comm_kernels.bytes reason",
              not [u for u in R["unavailable"] if u["figure"] == "comm_kernels.bytes"],
              str(R["unavailable"]))
        side = kernels(rs, "w_side__")
        ov = sum(max(0, min(se, re_) - max(ss, rs_)) for (ss, se), (rs_, re_) in zip(side, rk))
        dp = R["comm_by_kind"]["dp"]
        got = dp["comm_us"] * dp["overlap_pct"] / 100 if dp["overlap_pct"] is not None else None
        near(f"linked: rank {k} dp overlap us", got, ov / 1e3, STEPS * 2.0)
    # one communicator per team, the same hash on every member
    check("linked: world, strided and new halves: one hash each, all distinct",
          all(len(v) == 1 for v in hashes.values()) and len(hashes) == 5 and
          len(set().union(*hashes.values())) == 5, str(hashes))
    # text report and exports name them as NVSHMEM's, never NCCL's
    t = subprocess.run([CUTRACE, "report", traces], capture_output=True, text=True, timeout=240)
    check("linked: text rows nvshmem:", "nvshmem:AllReduce" in t.stdout and
          "nvshmem:AlltoAll" in t.stdout and "nvshmem:Broadcast" in t.stdout, t.stdout[-800:])
    # summaries (version 12) keep the library
    sums = os.path.join(os.path.dirname(traces), "sums")
    t = subprocess.run([CUTRACE, "summarize", "-o", sums, traces], capture_output=True,
                       text=True, timeout=240)
    check("linked: summarize", t.returncode == 0, t.stderr)
    if t.returncode == 0:
        srep = report(sums)
        check("linked: summaries' rows NVSHMEM's, as the traces'",
              [(c["op"], c["lib"], c["bytes"], c["count"]) for c in srep["collectives"]] ==
              [(c["op"], c["lib"], c["bytes"], c["count"]) for c in rep["collectives"]],
              str(srep["collectives"]))
    # diff: NVSHMEM's collectives apart from NCCL's
    t = subprocess.run([CUTRACE, "diff", traces, traces], capture_output=True, text=True,
                       timeout=240)
    check("linked: diff metrics collective:nvshmem:", t.returncode == 0 and
          f"collective:nvshmem:AllReduce:{4 * NR}" in t.stdout and
          "collective:AllReduce:" not in t.stdout, t.stdout[-800:] + t.stderr[-300:])
    db = os.path.join(os.path.dirname(traces), "job.sqlite")
    e = subprocess.run([CUTRACE, "export", "--format", "sqlite", "-o", db, traces],
                       capture_output=True, text=True, timeout=240)
    check("linked: sqlite export", e.returncode == 0, e.stderr)
    if e.returncode == 0:
        con = sqlite3.connect(db)
        n = con.execute("SELECT lib, dtype, count(*) FROM NCCL_OPS GROUP BY lib, dtype").fetchall()
        check("linked: sqlite NCCL_OPS lib nvshmem", sorted(n) ==
              [("nvshmem", "float", (3 * STEPS + 1) * NPES), ("nvshmem", "mem", STEPS * NPES)],
              str(n))
        con.close()
    cj = os.path.join(os.path.dirname(traces), "job.json")
    e = subprocess.run([CUTRACE, "export", "--format", "chrome", "-o", cj, traces],
                       capture_output=True, text=True, timeout=240)
    check("linked: chrome export", e.returncode == 0, e.stderr)
    if e.returncode == 0:
        ev = json.load(open(cj))
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        names = [x.get("name", "") for x in ev]
        check("linked: perfetto slices nvshmem:AllReduce, no ncclAllReduce",
              names.count("nvshmem:AllReduce") >= NPES * STEPS and
              not any(n.startswith("nccl") for n in names), str(sorted(set(names))[:20]))


def events():
    """Under --gpu-timing events an op's GPU time is the event pair around
    its call on its stream: the same kernel, so the same truth."""
    rep = report(job("events", os.environ["CT_W_SHMEM"], "--gpu-timing", "events"))
    rows = {c["op"]: c for c in rep["collectives"]}
    check("events: three NVSHMEM rows", sorted(rows) == ["AllReduce", "AlltoAll", "Broadcast"]
          and all(c["lib"] == "nvshmem" and
                  c["count"] == NPES * (STEPS + (c["op"] == "Broadcast"))
                  for c in rep["collectives"]), str(rep["collectives"]))
    for op, t in (("AllReduce", T_RED), ("AlltoAll", T_A2A), ("Broadcast", T_BC)):
        if op in rows:
            near(f"events: {op} p50 us", rows[op]["p50_us"], t, 1.0)
            near(f"events: {op} busbw", rows[op]["busbw_gbps"], GBPS, GBPS * 0.005)


def unwrapped():
    traces = job("dlsym", os.environ["CT_W_SHMEM_DL"])
    rep = report(traces)
    recs = dump(traces)
    check("dlsym: no collectives row", rep["collectives"] == [], str(rep["collectives"]))
    per = T_RED + T_A2A + T_BC + T_BAR
    for k, rs in recs.items():
        check(f"dlsym: rank {k} no op records", not [r for r in rs if r["kind"] == "nccl"])
        R = next(x for x in rep["ranks"] if x["rank"] == k)
        ck = R["comm_kernels"]
        check(f"dlsym: rank {k} comm kernels without bytes", ck["count"] == 4 * STEPS + 1 and
              ck["bytes"] is None, str(ck))
        near(f"dlsym: rank {k} comm kernels us", ck["gpu_us"], STEPS * per + T_BC,
             (4 * STEPS + 1) * 1.0)
        check(f"dlsym: rank {k} says why the bytes are null",
              [u for u in R["unavailable"] if u["figure"] == "comm_kernels.bytes"],
              str(R["unavailable"]))
        near(f"dlsym: rank {k} dp comm us", R["comm_by_kind"]["dp"]["comm_us"], STEPS * T_RED,
             STEPS * 1.0)


# NVSHMEM's documented host lists (nvshmemx_coll_api.h over the type lists
# of nvshmem_api_macros.h), written out here apart from the shim's table
RMA = ["bfloat16", "half", "float", "double", "char", "short", "schar", "int", "long",
       "longlong", "uchar", "ushort", "uint", "ulong", "ulonglong", "int8", "int16", "int32",
       "int64", "uint8", "uint16", "uint32", "uint64", "size", "ptrdiff"]
BITWISE = ["uchar", "ushort", "uint", "ulong", "ulonglong", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "size"]
STANDARD = BITWISE + ["char", "schar", "short", "int", "long", "longlong", "bfloat16", "half",
                      "float", "double"]


def exports():
    """The shim exports a wrapper for exactly NVSHMEM's on-stream
    collectives (and nvshmem_team_destroy, for handle reuse)."""
    want = {"nvshmem_team_destroy", "nvshmemx_alltoallmem_on_stream",
            "nvshmemx_fcollectmem_on_stream", "nvshmemx_broadcastmem_on_stream",
            "nvshmemx_barrier_on_stream", "nvshmemx_team_sync_on_stream",
            "nvshmemx_barrier_all_on_stream", "nvshmemx_sync_all_on_stream"}
    for t in RMA:
        want |= {f"nvshmemx_{t}_{c}_on_stream" for c in ("alltoall", "fcollect", "broadcast")}
    for ops, types in ((("and", "or", "xor"), BITWISE), (("min", "max", "sum", "prod"), STANDARD)):
        for t in types:
            for o in ops:
                want |= {f"nvshmemx_{t}_{o}_reduce_on_stream",
                         f"nvshmemx_{t}_{o}_reducescatter_on_stream"}
    p = subprocess.run(["nm", "-D", "--defined-only", os.environ["CT_SHIM"]],
                       capture_output=True, text=True, timeout=60)
    if p.returncode:
        print(f"nvshmem: exports not checked (nm: {p.stderr.strip()})")
        return
    got = {line.split()[-1] for line in p.stdout.splitlines() if " nvshmem" in line}
    check("shim exports NVSHMEM's collectives", got == want,
          f"missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}, {len(want)} wanted")


def probes():
    """A job without NVSHMEM probing for it by dlsym finds nothing, as
    without cutrace (the shim's nvshmem* exports are hidden from probes);
    with libnvshmem_host loaded it finds every name."""
    for arg, want in (([], "found 0"), (["load"], "found 4")):
        d = tempfile.mkdtemp(prefix="shmem-probe-")
        scratch.append(d)
        env = dict(os.environ, LD_LIBRARY_PATH=os.environ["CT_FAKEGPU_DIR"])
        p = subprocess.run([CUTRACE, "run", "-o", os.path.join(d, "t"), "--",
                            os.environ["CT_W_NOSHMEM"], *arg], env=env, capture_output=True,
                           text=True, timeout=120)
        check(f"probes {arg}: {want}", p.returncode == 0 and want in p.stdout,
              f"rc {p.returncode}: {p.stdout} {p.stderr}")


try:
    probes()
    exports()
    linked()
    events()
    unwrapped()
finally:
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("nvshmem: ok")
