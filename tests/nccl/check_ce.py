#!/usr/bin/env python3
"""Communication the NCCL kernel does not carry (docs/nccl.md, "Copy-engine
collectives" and "Communication kernels"): a 2-rank all-reduce job
(tests/nccl/w_links.c) under `cutrace run`, its all-reduce on copy engines
(FAKEGPU_NCCL_CE=1: a copy on the stream, no kernel, NCCL's v6 CeColl
events) and the same job with NCCL's kernel; then the job launching a
kernel named like vLLM's custom all-reduce, with the built-in table and
with a table that drops it; and a bad --comm-kernels file for every
analysis command.

usage: check_ce.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                      CT_FAKE_CUPTI)

Truth (tests/fakegpu/README.md, "Links and the ring"): 6 steps, each a 40 ms
compute kernel, then one AllReduce of 16 Mi float32 (S = 64 MiB) over 2
ranks at 4 GB/s: a ring of K = 2 steps of S/2 = 32 MiB, 8.388608 ms each,
so the transfer is T = 16.777216 ms and busbw = S x 2(n-1)/n / T = 4 GB/s;
a 10 ms side kernel on a second stream starts when the compute kernel
ends, i.e. when the all-reduce starts on that rank, so it lies inside it
(the op lasts at least T > 10 ms): overlap = 6 x 10 ms exactly, exposed =
comm - overlap. The all-reduce starts when the compute kernel ends only if
the host has enqueued it by then: the compute kernel lasts 40 ms so that a
host descheduled on the busy 2-CPU machine still enqueues it in time (a
2 ms one was overtaken by a 17 ms stall of the host). Skipped under qemu-user.

Where each all-reduce starts on each rank is the end of that rank's compute
kernel, which the trace records exactly (the simulated GPU's virtual
CLOCK_MONOTONIC, read by the fake CUPTI; both ranks share that clock); the
ranks' hosts, descheduled on the busy 2-CPU test machine, launch their
steps up to tens of ms apart, so each op waits for the later rank: by the
simulator's rule it ends at the later start + T on both ranks. So the truth
of a rank's communication time is the sum over ops of (later start + T -
its start), of busbw S / p50 of those durations (x 2(n-1)/n = 1), of
exposed communication comm - 6 x 10 ms, of idle time the window (first
compute start to last all-reduce end) less each step's span (its compute
start to its all-reduce's end); all are computed here from the
compute kernels' ends in `cutrace dump`, not from the all-reduce's own
records, which are what is being checked. Tolerance 0.5 %: the figures are
exact up to the report's rounding (0.001 us), the nanosecond rounding of
the simulated transfer, and the sub-microsecond jitter of GPU times through
the fake CUPTI's timestamp conversion (an op's recorded start up to ~0.5 us
before its predecessor's recorded end); idle time, near 0 when the host
runs ahead, within 2 us per step for that jitter. With and without the knob the jobs differ only in
what carries the all-reduce (and in their hosts' timing): each matches its
own truth, the transfer inferred from arrivals (end - later start) is T in
both, and compute time is the same. The custom all-reduce kernel (3 ms,
right after the all-reduce on its stream, nothing beside it) adds exactly
6 x 3 ms to communication and exposed communication, and with a
`no-builtin` table those 18 ms go to compute instead.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from outcome import check, finish, scratch

COMPUTE_US = 40000
# The truth below is the simulator's schedule from the recorded compute
# kernels' ends, which holds when the host enqueues each step's all-reduce
# and side kernel before its compute kernel ends. Under qemu-user
# (CT_EMULATED) the emulated host does not, even with 400 ms kernels (a CI
# run: rank 1's communication 107.8 ms against 100.7, overlap 67.1 against
# 60): a timing test of the simulator in real time, left out there as the
# labelled jobs are (tests/cross/aarch64.sh).
if os.environ.get("CT_EMULATED"):
    print("nccl-ce: skipped under qemu (the simulator's real-time schedule)")
    sys.exit(0)
T_US = 2 * 33554432 / 4e9 * 1e6  # 16777.216
STEPS = 6
SIDE_US = 10000.0


def near(what, got, want, rel, absolute=0.002):
    # absolute: by default the JSON's rounding to 0.001 us, of a difference of two
    check(what, got is not None and abs(got - want) <= max(abs(want) * rel, absolute),
          f"got {got}, want {want} +- {rel * 100:.1f} % (or {absolute} us)")


def job(name, extra):
    d = tempfile.mkdtemp(prefix=f"ce-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": str(STEPS),
                "W_LINKS_COUNTS": "16777216", "W_LINKS_SIDE_US": str(int(SIDE_US)),
                "W_LINKS_COMPUTE_US": str(COMPUTE_US)})
    for k in ("FAKEGPU_NCCL_LINKS", "FAKEGPU_NCCL_CE", "W_LINKS_CUSTOM_US", "W_LINKS_AHEAD"):
        env.pop(k, None)
    env.update(extra)
    traces = os.path.join(d, "traces")
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", traces, "--",
                        os.environ["CT_W_LINKS"], "launch", "2"],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    return traces


def report(traces, *opts):
    r = subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", *opts, traces],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        sys.exit(f"report failed: {r.stderr}")
    return json.loads(r.stdout)


def ranks(rep):
    return {r["rank"]: r for r in rep["ranks"]}


def truth(traces):
    """Per rank, the durations of its all-reduces by the simulator's rule,
    from the ends of its compute kernels (docstring), and their ends; the
    compute kernels' starts."""
    starts, cstarts = {}, {}
    for f in sorted(os.listdir(traces)):
        m = re.search(r"-r(\d+)-", f)
        if not m or not f.endswith(".cutrace"):
            continue
        d = subprocess.run([os.environ["CT_CUTRACE"], "dump", os.path.join(traces, f)],
                           capture_output=True, text=True, timeout=120)
        lines = [line for line in d.stdout.splitlines()
                 if line.startswith("kind=gpu ") and " name=w_compute__" in line]
        starts[int(m.group(1))] = sorted(int(re.search(r" end_ns=(\d+)", line).group(1))
                                         for line in lines)
        cstarts[int(m.group(1))] = sorted(int(re.search(r" start_ns=(\d+)", line).group(1))
                                          for line in lines)
    check("truth: 2 ranks of 6 steps", sorted(starts) == [0, 1] and
          all(len(v) == STEPS for v in starts.values()), str(starts))
    if sorted(starts) != [0, 1] or any(len(v) != STEPS for v in starts.values()):
        return None
    dur = {r: [] for r in starts}
    ends = []
    for k in range(STEPS):
        end = max(starts[r][k] for r in starts) + T_US * 1e3
        ends.append(end)
        for r in starts:
            dur[r].append((end - starts[r][k]) / 1e3)
    return dur, ends, cstarts


def p50(v):
    v = sorted(v)
    n = len(v)
    return (v[(n - 1) // 2] + v[n // 2]) / 2


def comm_figures(name, traces, rep, custom_us=0.0):
    """The all-reduce's figures against the truth (docstring)."""
    dur, ends, cstarts = truth(traces) or (None, None, None)
    coll = [c for c in rep["collectives"] if c["op"] == "AllReduce"]
    check(f"{name}: one AllReduce row", len(coll) == 1 and coll[0]["count"] == 2 * STEPS
          and coll[0]["bytes"] == 67108864, str(rep["collectives"]))
    if coll:
        near(f"{name}: transfer p50 us", coll[0]["transfer_p50_us"], T_US, 0.005)
        if dur:
            want = p50(dur[0] + dur[1])
            near(f"{name}: p50 us", coll[0]["p50_us"], want, 0.005)
            near(f"{name}: busbw", coll[0]["busbw_gbps"], 67108864 / (want * 1e3), 0.005)
    rs = ranks(rep)
    check(f"{name}: ranks", sorted(rs) == [0, 1], str(sorted(rs)))
    out = {}
    for k, r in rs.items():
        comm = r["comm_us"]
        if dur:
            near(f"{name}: rank {k} comm us", comm, sum(dur[k]) + STEPS * custom_us, 0.005)
            near(f"{name}: rank {k} exposed us", r["exposed_comm_us"],
                 sum(dur[k]) + STEPS * custom_us - STEPS * SIDE_US, 0.005)
        overlap = comm * r["overlap_pct"] / 100 if r.get("overlap_pct") is not None else None
        near(f"{name}: rank {k} overlap us", overlap, STEPS * SIDE_US, 0.005)
        if dur:
            # busy: each step from its compute kernel's start to the end of
            # its all-reduce (and custom kernel); idle: the rest of the
            # window, from the first compute start to the last end
            c = [x / 1e3 for x in cstarts[k]]
            e = [x / 1e3 + custom_us for x in ends]
            near(f"{name}: rank {k} idle us", r["idle_us"],
                 (e[-1] - c[0]) - sum(e[i] - c[i] for i in range(STEPS)), 0.005, 2.0 * STEPS)
        check(f"{name}: rank {k} no memory traffic", r["memory_us"] == 0, str(r["memory_us"]))
        ck = r.get("comm_kernels") or {}
        check(f"{name}: rank {k} comm kernels", ck.get("count") == (STEPS if custom_us else 0)
              and ck.get("bytes", -1) == (None if custom_us else 0) and
              abs(ck.get("gpu_us", -1) - STEPS * custom_us) <= 0.005 * STEPS * custom_us,
              str(ck))
        why = [u for u in r["unavailable"] if u["figure"] == "comm_kernels.bytes"]
        check(f"{name}: rank {k} says why the bytes are null", bool(why) == bool(custom_us),
              str(r["unavailable"]))
        out[k] = r
    return coll[0] if coll else None, out, dur


# 1. Copy engines against NCCL's kernel: the same communication figures.
ce = job("ce", {"FAKEGPU_NCCL_CE": "1"})
kern = job("kernel", {})
ce_coll, ce_ranks, _ = comm_figures("copy engines", ce, report(ce))
k_coll, k_ranks, _ = comm_figures("kernel", kern, report(kern))
if ce_coll and k_coll:
    near("transfer, copy engines vs kernel", ce_coll["transfer_p50_us"],
         k_coll["transfer_p50_us"], 0.005)
# The host ahead of the GPU: every step but the first starts on both ranks
# when the previous one ended, so 11 of the 12 op instances last exactly T:
# p50 = T and busbw = 4 GB/s, with and without the knob.
for name, extra in (("copy engines ahead", {"FAKEGPU_NCCL_CE": "1"}), ("kernel ahead", {})):
    t = job(name.replace(" ", "-"), dict(extra, W_LINKS_AHEAD="1"))
    c, _, _ = comm_figures(name, t, report(t))
    if c:
        near(f"{name}: p50 us = T", c["p50_us"], T_US, 0.005)
        near(f"{name}: busbw = 4 GB/s", c["busbw_gbps"], 4.0, 0.005)
for k in ce_ranks:
    if k in k_ranks:
        near(f"rank {k} compute, copy engines vs kernel", ce_ranks[k]["compute_us"],
             k_ranks[k]["compute_us"], 0.005)
# The same copies through cuMemcpyBatchAsync (NCCL 2.28 on CUDA 12.8 and
# later; FAKEGPU_NCCL_CE_BATCH=1): one batch API record per all-reduce,
# the same truth.
cb = job("ce-batch", {"FAKEGPU_NCCL_CE": "1", "FAKEGPU_NCCL_CE_BATCH": "1"})
comm_figures("copy engines, batch", cb, report(cb))
nb = 0
for f in sorted(os.listdir(cb)):
    d = subprocess.run([os.environ["CT_CUTRACE"], "dump", "--json", os.path.join(cb, f)],
                       capture_output=True, text=True, timeout=120).stdout
    nb += sum(1 for line in d.splitlines()
              if '"name":"cuMemcpyBatchAsync_v2"' in line and '"kind":"api"' in line and
              '"count":1' in line and '"bytes":67108864' in line)
check("copy engines, batch: one batch call per all-reduce", nb == 2 * STEPS, str(nb))
n = report(ce).get("nccl") or {}
check("copy engines: no proxy steps", n.get("proxy_records") == 0, str(n))
check("copy engines: NCCL's choice is CE", any(c.get("algo") == "CE" for c in
                                                n.get("collectives") or []), str(n))

# 2. A custom all-reduce kernel (no NCCL call) is communication; a table
#    without it makes it compute.
cu = job("custom", {"W_LINKS_CUSTOM_US": "3000"})
cu_coll, cu_ranks, cu_dur = comm_figures("custom", cu, report(cu), custom_us=3000.0)
table = os.path.join(scratch[-1], "table.txt")
with open(table, "w") as f:
    f.write("# nothing is communication but NCCL's own kernels\nno-builtin\n")
off_rep = report(cu, "--comm-kernels", table)
for k, r in ranks(off_rep).items():
    if cu_dur:
        near(f"custom off: rank {k} comm us", r["comm_us"], sum(cu_dur[k]), 0.005)
    if k in cu_ranks:
        near(f"custom off: rank {k} compute gains the kernel", r["compute_us"],
             cu_ranks[k]["compute_us"] + STEPS * 3000.0, 0.005)
        near(f"custom: rank {k} exposed gains the kernel", cu_ranks[k]["exposed_comm_us"],
             r["exposed_comm_us"] + STEPS * 3000.0, 0.005)

# 3. A bad table: every analysis command refuses it, naming the option.
bad = os.path.join(scratch[-1], "bad.txt")
with open(bad, "w") as f:
    f.write("my_kernel AllReduse\n")
for cmd in (["report"], ["diagnose"], ["export", "-o", os.path.join(scratch[-1], "x.json")],
            ["summarize", "-o", os.path.join(scratch[-1], "sum")], ["goodput"],
            ["critical-path"], ["whatif", "--scale", "op=AllReduce=0.5"], ["diff"]):
    operands = [cu, cu] if cmd == ["diff"] else [cu]
    r = subprocess.run([os.environ["CT_CUTRACE"], *cmd, "--comm-kernels", bad, *operands],
                       capture_output=True, text=True, timeout=120)
    check(f"{cmd[0]} refuses a bad table", r.returncode == 2 and "--comm-kernels" in r.stderr
          and "bad.txt:1: unknown op 'AllReduse'; allowed: AllReduce" in r.stderr,
          f"rc {r.returncode}: {r.stderr.strip()}")

finish()
