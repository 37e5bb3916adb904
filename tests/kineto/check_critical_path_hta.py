#!/usr/bin/env python3
"""Checks `cutrace critical-path --json` on HTA's critical-path samples against HTA.

usage: check_critical_path_hta.py CUTRACE DATA_DIR

HTA's lightweight critical path (0.6.1) is single-rank and weighs some edges 0
(nesting and thread-order DEPENDENCY edges, SYNC_DEPENDENCY edges), so its
total is not a span of time; cutrace's path covers every ns of its steps. The
checks are on what both define the same way (docs/critical-path.md, "Against
HTA"). The traces have integer-µs timestamps and durations, which both tools
use as they are (HTA's ns->µs rounding is the identity on integers, cutrace
keeps ns): every edge weight is an exact integer number of µs on both sides, so
a difference is a difference of definition, never of arithmetic. Hence the
tolerances are 0 except where a definition differs, as argued there.

1. simple_add over the whole trace, against HTA's own output
   (critical_path/end_to_end/simple_add/output: the input trace with the path
   overlaid, events on it carrying args.critical = 1, its non-operator edges
   as `critical_path` flows):
   * the GPU ops on the path, by (name, stream): the same count and the same
     summed duration, exactly (16 memcpys, 5 kernels, 1 memset);
   * launch: HTA's kernel-launch-delay edges on the path (17, 1572 µs) are
     cutrace's launch segments, exactly;
   * HTA weighs 0 the 158 DEPENDENCY edges on its path, which span 142220
     µs of host time, and the 17 SYNC_DEPENDENCY edges, which span 378 µs of
     wake-ups (cutrace's host and sync);
   * windows: cutrace's path ends at the last GPU op's end (its steps end
     there); HTA's goes on over the host work after it, to a cudaFree
     437512 µs later.
2. simple_add and alexnet over HTA's window, the annotation
   "[param|pytorch.model.alex_net|0|0|0|measure|forward]" instance 1, against
   HTA's summary() per bound_by class (hta_reference_values.json, bonus):
   * the cutrace step that matches it (found by repeating work: the traces
     have no ProfilerStep) lies inside that annotation;
   * gpu_compute_bound = compute + memory (HTA counts the memset as a
     kernel), exactly;
   * gpu_kernel_launch_overhead = launch, exactly;
   * gpu_kernel_kernel_overhead = gpu_gap within 1 µs per cross-stream hop
     of the path: a hop is an event wait, which HTA weighs 0
     (SYNC_DEPENDENCY) and cutrace carries at its measured gap; the waiting
     kernel is dispatched within one timestamp quantum (1 µs) of the wait's
     release. A path on streams S has at most 2 (|S| - 1) hops here (alexnet
     goes from stream 7 to 20 and back once: 2 µs; simple_add stays on 7: 0);
   * every other µs of difference is on the CPU side: cutrace's host + sync
     minus HTA's cpu_bound equals cutrace's step minus HTA's total, less the
     GPU residual above, and is >= 0 (HTA drops the host time on
     zero-weight DEPENDENCY edges, cutrace counts it as host).
3. cuda_event_sync_multi_stream (one rank, no steps: cutrace finds 3 by
   repeating work), the Stream Wait Event edge. The trace, in µs from the
   profiler's start (its Trace row, ts 1712867402305721):
     kernel 1 ampere_sgemm_128x64_nn, stream 20, corr 27: 42979 + 123
     cudaEventRecord corr 1385: 61945 (no stream arg; the wait names it)
     Stream Wait Event: stream 24 waits on stream 20, record corr 1385: 61962
     cudaMemsetAsync 62299 -> Memset (stream 24) 62313 + 1
     cudaLaunchKernel 62314 -> kernel 3 ampere_sgemm_128x64_nn (stream 24)
       62329 + 123
     cudaDeviceSynchronize 62445 + 20 (returns 62465, 13 µs after kernel 3)
   HTA's edge (its test_critical_path_analysis_event_sync_multistream): the
   last kernel launched on stream 20 before the record (kernel 1) -> the
   first op on stream 24 after the wait (the memset), weight 0.
   * As measured, that edge is not on HTA's path: the memset's start is
     reached along the host chain at 62313, along the edge at 43102 + 0.
     cutrace agrees: the launch edge binds, and no stream-20 op is on its path.
   * Replayed with every ampere_sgemm_128x64_nn 200x longer (24600 µs),
     kernel 1 ends at 42979 + 24600 = 67579, after the memset's launch: the
     edge becomes the longest way to the memset (HTA's definition puts the
     path through it), so kernel 1 (stream 20, 24600 µs) and kernel 3
     (stream 24) must both be on the path, and the run ends when kernel 3
     and then the sync do. cutrace's replay lets each point follow its
     latest source by its measured latency (docs/critical-path.md): the
     memset starts 14 µs after kernel 1 (its measured gap after its launch,
     62299 -> 62313) at 67593 and ends at 67594, kernel 3 starts 15 µs after
     it (62314 -> 62329) and lasts 24600, the sync returns 13 µs after it:
     the path grows by 67579 + 14 + 1 + 15 + 24600 + 13 - 62465 = 29757 µs,
     exactly (integer µs). Without the edge kernel 3 would keep its start
     (62329), a growth of 62329 + 24600 + 13 - 62465 = 24477 µs.
"""
import collections
import gzip
import json
import os
import subprocess
import sys

cutrace, data = sys.argv[1], sys.argv[2]
cp_dir = os.path.join(data, "critical_path")
failures = []
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
WINDOW = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"


def check(ok, msg):
    if not ok:
        failures.append(msg)


def critical_path(path, *extra):
    p = subprocess.run([cutrace, "critical-path", "--json", "--top", "0"] + list(extra) + [path],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (path, p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def events(path):
    return [e for e in json.load(gzip.open(path))["traceEvents"]
            if e.get("ph") == "X" and "dur" in e and e.get("cat") != "Trace"]


def gpu_t0(evs):
    """The job's t0 of cutrace's JSON (start_us): the first GPU op's start."""
    return min(e["ts"] for e in evs if e["cat"] in GPU_CATS)


def name_key(name):
    """cutrace prints kernel names cut to a bounded length (a 400-character
    clamp kernel name loses its tail): names are compared on 120 characters,
    which tell every kernel of these traces apart."""
    return name[:120]


def gpu_segments(doc):
    out = collections.Counter()
    for s in doc["segments"]:
        if s["category"] in ("compute", "memory", "comm"):
            out[(name_key(s["name"]), s["stream"], "n")] += s["count"]
            out[(name_key(s["name"]), s["stream"], "us")] += s["duration_us"]
    return out


def cats(c, *names):
    return sum(c[n] for n in names)


# ---- 1. simple_add, whole trace, against HTA's overlaid output ----
e2e = os.path.join(cp_dir, "end_to_end", "simple_add")
doc = critical_path(os.path.join(e2e, "input", "trace.json.gz"))
ovl = json.load(gzip.open(os.path.join(e2e, "output", "overlaid_critical_path_trace.json.gz")))
ovx = [e for e in ovl["traceEvents"] if e.get("ph") == "X" and "dur" in e]
on_path = [e for e in ovx if e.get("args", {}).get("critical")]
hta_gpu = collections.Counter()
for e in on_path:
    if e["cat"] in GPU_CATS:
        hta_gpu[(name_key(e["name"]), e["args"]["stream"], "n")] += 1
        hta_gpu[(name_key(e["name"]), e["args"]["stream"], "us")] += e["dur"]
ours = gpu_segments(doc)
check(sum(v for k, v in hta_gpu.items() if k[2] == "n") == 22,
      "HTA's overlaid path: expected 22 GPU ops (16 memcpy, 5 kernels, 1 memset), got %s"
      % hta_gpu)
check(ours == hta_gpu, "simple_add whole trace: GPU ops on the path differ:\n cutrace %s\n HTA %s"
      % (sorted(ours.items()), sorted(hta_gpu.items())))
flows = [e for e in ovl["traceEvents"]
         if e.get("cat") == "critical_path" and e.get("ph") == "s"
         and e["args"]["type"] == "critical_path_kernel_launch_delay"]
hta_launch_us = sum(e["args"]["weight"] for e in flows)
launch_n = sum(s["count"] for s in doc["segments"] if s["category"] == "launch")
check(doc["categories"]["launch"] == hta_launch_us and launch_n == len(flows),
      "simple_add whole trace: launch %s µs in %d segments, HTA %s µs in %d edges"
      % (doc["categories"]["launch"], launch_n, hta_launch_us, len(flows)))
# what HTA weighs 0 on its path: the host time its DEPENDENCY edges span and
# the wake-ups its SYNC_DEPENDENCY edges span (cutrace: host and sync)
ends = {e["id"]: e["ts"] for e in ovl["traceEvents"]
        if e.get("cat") == "critical_path" and e.get("ph") == "f"}
zero = collections.Counter()
for e in ovl["traceEvents"]:
    if e.get("cat") == "critical_path" and e.get("ph") == "s" and e["args"]["weight"] == 0:
        zero[(e["args"]["type"], "n")] += 1
        zero[(e["args"]["type"], "us")] += ends[e["id"]] - e["ts"]
check(zero == {("critical_path_dependency", "n"): 158, ("critical_path_dependency", "us"): 142220,
               ("critical_path_sync_dependency", "n"): 17,
               ("critical_path_sync_dependency", "us"): 378},
      "simple_add: HTA's zero-weight edges on the path: %s" % zero)
t0 = gpu_t0(ovx)
gpu_end = max(e["ts"] + e["dur"] for e in ovx if e["cat"] in GPU_CATS)
last = doc["iterations"][-1]
check(t0 + last["start_us"] + last["length_us"] == gpu_end,
      "simple_add: cutrace's path should end at the last GPU op's end %d" % gpu_end)
last_on = max(on_path, key=lambda e: e["ts"] + e["dur"])
hta_end = last_on["ts"] + last_on["dur"]
check(last_on["cat"] == "cuda_runtime" and hta_end - gpu_end == 437512,
      "simple_add: HTA's path should end on host work 437512 µs after the last GPU op (%d): "
      "%s ends %d" % (gpu_end, last_on["name"], hta_end))

# ---- 2. HTA's window: summary() per class ----
ref = json.load(open(os.path.join(data, "hta_reference_values.json")))["bonus"]
for name in ("simple_add", "alexnet"):
    d = os.path.join(cp_dir, name)
    path = os.path.join(d, sorted(os.listdir(d))[0])
    evs = events(path)
    ann = sorted((e for e in evs if e["name"] == WINDOW), key=lambda e: e["ts"])[1]
    h = ref["cp_" + name]["by_bound_us"]
    doc = critical_path(path)
    t0 = gpu_t0(evs)
    inside = [it for it in doc["iterations"]
              if t0 + it["start_us"] >= ann["ts"]
              and t0 + it["start_us"] + it["length_us"] <= ann["ts"] + ann["dur"]]
    if len(inside) != 1:
        check(False, "%s: expected one cutrace step inside %s #1 [%d, %d], got %d"
              % (name, WINDOW, ann["ts"], ann["ts"] + ann["dur"], len(inside)))
        continue
    it = inside[0]
    c = it["categories"]
    gpu = cats(c, "compute", "memory")
    check(gpu == h["gpu_compute_bound"], "%s: compute + memory %s, HTA gpu_compute_bound %s"
          % (name, gpu, h["gpu_compute_bound"]))
    check(c["launch"] == h["gpu_kernel_launch_overhead"], "%s: launch %s, HTA %s"
          % (name, c["launch"], h["gpu_kernel_launch_overhead"]))
    skipped = critical_path(path, "--skip", str(it["index"]))
    streams = {s["stream"] for s in skipped["segments"]
               if s["category"] in ("compute", "memory") and s["stream"] is not None}
    if len(skipped["iterations"]) != 1:
        check(False, "%s: the step should be the last one" % name)
    hop_tol = 2 * (len(streams) - 1)
    kk = c["gpu_gap"] - h["gpu_kernel_kernel_overhead"]
    check(abs(kk) <= hop_tol, "%s: gpu_gap %s, HTA kernel-kernel %s (tolerance %d µs: %d streams)"
          % (name, c["gpu_gap"], h["gpu_kernel_kernel_overhead"], hop_tol, len(streams)))
    cpu = cats(c, "host", "sync") - h["cpu_bound"]
    whole = it["length_us"] - ref["cp_" + name]["total_weight_us"]
    other = cats(c, "comm", "peer_wait", "data_wait", "checkpoint")
    check(other == 0, "%s: unexpected categories %s" % (name, c))
    check(cpu >= 0 and cpu == whole - kk,
          "%s: host+sync - cpu_bound = %s should be >= 0 and the whole difference %s less the "
          "GPU residual %s" % (name, cpu, whole, kk))
    print("%s: step %.0f µs vs HTA %.0f; gpu %.0f/%.0f launch %.0f/%.0f gap %.0f/%.0f "
          "cpu %.0f/%.0f" % (name, it["length_us"], ref["cp_" + name]["total_weight_us"], gpu,
                             h["gpu_compute_bound"], c["launch"],
                             h["gpu_kernel_launch_overhead"], c["gpu_gap"],
                             h["gpu_kernel_kernel_overhead"], cats(c, "host", "sync"),
                             h["cpu_bound"]))

# ---- 3. cuda_event_sync_multi_stream: the stream-wait edge ----
ms = os.path.join(cp_dir, "cuda_event_sync_multi_stream", "event_sync_trace.json.gz")
evs = events(ms)
base = [e for e in json.load(gzip.open(ms))["traceEvents"] if e.get("cat") == "Trace"][0]["ts"]
by_corr = {(e["cat"], e["args"].get("correlation")): e for e in evs if "args" in e}
k1 = by_corr[("kernel", 27)]
check((k1["ts"] - base, k1["dur"], k1["args"]["stream"]) == (42979, 123, 20),
      "multi_stream: kernel 1 is not what the derivation says: %s" % k1)
wait = [e for e in evs if e["name"] == "Stream Wait Event"]
check(len(wait) == 1 and wait[0]["args"]["wait_on_cuda_event_record_corr_id"] == 1385
      and wait[0]["args"]["stream"] == 24 and wait[0]["args"]["wait_on_stream"] == 20,
      "multi_stream: the trace's stream wait is not the derivation's: %s" % wait)
plain = critical_path(ms)
scaled = critical_path(ms, "--scale", "kernel=ampere_sgemm_128x64_nn=200")
check(not any(s["stream"] == 20 for s in plain["segments"]),
      "multi_stream: as measured the wait edge should not be on the path: %s" % plain["segments"])
grow = scaled["path_us"] - plain["path_us"]
check(abs(grow - 29757) < 1e-3,
      "multi_stream: scaled path grows by %s µs, expected 29757 (24477 without the "
      "stream-wait edge)" % grow)
k_on = {(s["stream"], s["duration_us"]) for s in scaled["segments"]
        if s["category"] == "compute"}
check((20, 24600) in k_on and any(st == 24 for st, _ in k_on),
      "multi_stream: scaled path should hold kernel 1 (stream 20, 24600 µs) and kernel 3 "
      "(stream 24): %s" % sorted(k_on))
print("multi_stream: path %.0f -> %.0f µs scaled (+%.0f)" % (plain["path_us"], scaled["path_us"],
                                                            grow))

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
