#!/usr/bin/env python3
"""Compares what cutrace and torch.profiler saw of the same PyTorch loop
(examples/torch_train.py run twice, once under each), over the steady steps
(ProfilerStep#2 and later: the first steps warm up cuBLAS and NCCL):

  - kernels per stream: count (must be equal) and total GPU time (within
    10 % + 0.1 ms per step: two runs of the same loop, each profiler adding
    its own host overhead but not GPU work);
  - NCCL ops: cutrace's nccl records against torch's nccl:* operators.

usage: gpu-check-compare.py CUTRACE_DUMP_JSONL KINETO_TRACE.json STEPS
Prints a table; exits 1 on a mismatch beyond the tolerances.
"""
import collections
import json
import re
import sys

FIRST_STEADY = 2


def step_of(name):
    m = re.match(r"ProfilerStep#(\d+)$", name or "")
    return int(m.group(1)) if m else None


def cutrace_side(path):
    steps, gpu, nccl = [], [], []
    for line in open(path):
        r = json.loads(line)
        if r["kind"] == "nvtx" and r.get("type") == "range":
            n = step_of(r.get("message"))
            if n is not None:
                steps.append((r["start_ns"], r["end_ns"], n))
        elif r["kind"] == "gpu" and r["type"] == "kernel" and "api_start_ns" in r:
            gpu.append((r["api_start_ns"], r["stream"], r["gpu_end_ns"] - r["gpu_start_ns"], r["name"]))
        elif r["kind"] == "nccl":
            nccl.append(r["start_ns"])

    def steady(t):
        return any(a <= t <= b and n >= FIRST_STEADY for a, b, n in steps)

    per = collections.defaultdict(lambda: [0, 0.0])
    for t, stream, dur, _ in gpu:
        if steady(t):
            per[stream][0] += 1
            per[stream][1] += dur / 1000.0
    return per, sum(1 for t in nccl if steady(t)), len(steps)


def kineto_side(path):
    ev = json.load(open(path))["traceEvents"]
    steps = []
    launch_ts = {}
    kernels = []
    nccl_ops = []
    for e in ev:
        if e.get("ph") != "X":
            continue
        cat, name, args = e.get("cat"), e.get("name", ""), e.get("args", {})
        if cat == "user_annotation":
            n = step_of(name)
            if n is not None:
                steps.append((e["ts"], e["ts"] + e["dur"], n))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launch_ts[args["correlation"]] = e["ts"]
        elif cat == "kernel":
            kernels.append((args.get("correlation"), args.get("stream"), e["dur"], name))
        elif cat == "cpu_op" and name.startswith("nccl:"):
            nccl_ops.append(e["ts"])

    def steady(t):
        return t is not None and any(a <= t <= b and n >= FIRST_STEADY for a, b, n in steps)

    per = collections.defaultdict(lambda: [0, 0.0])
    for corr, stream, dur, _ in kernels:
        if steady(launch_ts.get(corr)):
            per[stream][0] += 1
            per[stream][1] += dur
    return per, sum(1 for t in nccl_ops if steady(t)), len(steps)


def main():
    cpath, kpath, nsteps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    c, cn, csteps = cutrace_side(cpath)
    k, kn, ksteps = kineto_side(kpath)
    bad = 0
    print(f"  steps seen: cutrace {csteps}, torch.profiler {ksteps} (steady from #{FIRST_STEADY})")
    if csteps < nsteps or ksteps < nsteps:
        print("  MISMATCH: steps missing (NVTX injection or profiler steps)")
        bad += 1
    steady = nsteps - FIRST_STEADY
    print(f"  {'stream':>8} {'kernels':>9} {'(torch)':>9} {'GPU ms':>10} {'(torch)':>10}  verdict")
    for s in sorted(set(c) | set(k), key=lambda v: int(v) if str(v).isdigit() else 0):
        cc, ct = c.get(s, [0, 0.0])
        kc, kt = k.get(s, [0, 0.0])
        tol = 0.10 * max(ct, kt) + 100.0 * steady
        ok = cc == kc and abs(ct - kt) <= tol
        bad += not ok
        print(f"  {s!s:>8} {cc:>9} {kc:>9} {ct / 1000:>10.3f} {kt / 1000:>10.3f}  "
              f"{'ok' if ok else 'MISMATCH'}")
    ok = cn == kn and cn > 0
    bad += not ok
    print(f"  NCCL ops: cutrace {cn}, torch.profiler {kn}: {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
