#!/usr/bin/env python3
"""Bounds that always hold on Kineto input (docs/kineto.md, docs/goodput.md).

usage: check_bounds.py CUTRACE DATA_DIR

For every trace folder under DATA_DIR, `cutrace report --json` (HTA-compatible
and --no-hta) and `cutrace goodput --json`:
  * no NaN or Infinity anywhere (a figure that cannot be given is null);
  * no negative time: every "..._us" duration >= 0 (positions on the job's
    time axis, start_us/end_us/..., are not durations: a step's host start
    may precede the first GPU start, the axis' zero);
  * every percentage in [0, 100] and every ratio in [0, 1];
  * goodput: its parts and down time sum to covered_us, covered_us +
    uncovered_us = total_us, goodput_pct = productive / covered (or null
    with a reason in "unavailable").
Then two traces written here, with values worked out by hand:
  * 16 sub-µs memsets between two kernels (fractional ts: HTA's µs
    rounding): non-compute -16 µs, on which HTA fails an assertion: null in
    JSON with its reason in the rank's unavailable list, "-" in text;
  * one ProfilerStep name and a kernel launched before the capture: HTA
    keeps it (no filter), and no stderr line says a row was dropped.
And the stderr line that counts the last-step rule's drops, on trace_filter.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

cutrace, data = sys.argv[1], sys.argv[2]
failures = []
checked = 0
# positions on the job's time axis (from its first GPU start or first
# process start), and signed clock offsets: not durations
POSITIONS = {"start_us", "end_us", "t0_unix_us", "hang_since_us", "skew_us", "residual_us",
             "lateness_us"}


def fail(msg):
    failures.append(msg)


def no_nan(tok):
    raise ValueError("non-finite number %s in the JSON" % tok)


def run(args):
    p = subprocess.run([cutrace] + args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p.stdout, p.stderr


def walk(x, path, where):
    global checked
    if isinstance(x, dict):
        for k, v in x.items():
            walk(v, path + "." + k, where)
        return
    if isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, "%s[%d]" % (path, i), where)
        return
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return
    key = path.rsplit(".", 1)[-1].split("[")[0]
    checked += 1
    if key.endswith("_us") and key not in POSITIONS and x < 0:
        fail("%s: %s = %s: negative time" % (where, path, x))
    if (key.endswith("_pct") or key.endswith("pct")) and not 0 <= x <= 100:
        fail("%s: %s = %s: outside [0, 100] %%" % (where, path, x))
    if key == "ratio" and not 0 <= x <= 1:
        fail("%s: %s = %s: outside [0, 1]" % (where, path, x))


def goodput_sums(g, where):
    global checked
    checked += 1
    if g["total_us"] is None:
        return
    parts = g["parts"]
    known = [v for v in parts.values() if v is not None]
    if g["goodput_pct"] is None:
        if not g["unavailable"]:
            fail("%s: goodput null without a reason" % where)
        return
    if abs(sum(known) - g["covered_us"]) > 0.01 + 1e-6 * g["covered_us"]:
        fail("%s: parts sum to %.3f, covered %.3f" % (where, sum(known), g["covered_us"]))
    if abs(g["covered_us"] + g["uncovered_us"] - g["total_us"]) > 0.01:
        fail("%s: covered + uncovered != total: %s" % (where, g))
    want = 100 * g["productive_us"] / g["covered_us"]
    if abs(want - g["goodput_pct"]) > 0.006:
        fail("%s: goodput %.2f, productive / covered %.2f" % (where, g["goodput_pct"], want))


dirs = sorted({os.path.dirname(os.path.join(root, f)) for root, _, files in os.walk(data)
               for f in files if (f.endswith(".json") or f.endswith(".json.gz"))
               and f != "hta_reference_values.json"})
for d in dirs:
    name = os.path.relpath(d, data)
    for args in (["report", "--json", "--rank-iterations"], ["report", "--json", "--no-hta"],
                 ["goodput", "--json"]):
        where = "%s (%s)" % (name, " ".join(args))
        try:
            out, _ = run(args + [d])
            doc = json.loads(out, parse_constant=no_nan)
        except Exception as e:  # noqa: BLE001 - report, keep checking
            fail("%s: %s" % (where, e))
            continue
        walk(doc, "", where)
        g = doc if args[0] == "goodput" else doc.get("goodput")
        if g:
            goodput_sums(g, where)

# the stderr line of the last-step rule (trace_filter rank 0: 602 of 1204
# GPU rows launched in ProfilerStep#552, HTA keeps 602: hta.md §7)
tf = os.path.join(data, "trace_filter")
if os.path.isdir(tf):
    out, err = run(["report", "--json", tf])
    checked += 1
    want = ("sampled_rank-0.json.gz: kineto: HTA's last-step rule dropped 602 of 1204 GPU rows "
            "(602 launched at or after the start of the last step, ProfilerStep#552)")
    if want not in err:
        fail("trace_filter: no line %r on stderr: %r" % (want, err))
    h = {r["rank"]: r["hta"] for r in json.loads(out)["ranks"]}[0]
    if (h["gpu_rows"], h["dropped_last_step"], h["dropped_no_launch"]) != (1204, 602, 0):
        fail("trace_filter rank 0: gpu_rows/dropped %s" % h)

tmp = tempfile.mkdtemp(prefix="kineto-bounds-")
# 16 sub-µs memsets: [300.3 + 10 i, +0.5) rounds to [301 + 10 i, 300 + 10 i)
ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 90, "dur": 2,
       "args": {"correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 100.0, "dur": 100,
       "args": {"stream": 7, "correlation": 1}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 490, "dur": 2,
       "args": {"correlation": 2}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 500, "dur": 100,
       "args": {"stream": 7, "correlation": 2}}]
for i in range(16):
    ts = round(300.3 + 10 * i, 1)
    ev.append({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": ts, "dur": 0.5,
               "args": {"stream": 7, "correlation": 10 + i}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "ts": ts, "dur": 0.1,
               "args": {"correlation": 10 + i}})
memsets = os.path.join(tmp, "memsets.json")
with open(memsets, "w") as f:
    json.dump({"traceEvents": ev}, f)
out, err = run(["report", "--json", memsets])
r = json.loads(out, parse_constant=no_nan)["ranks"][0]
t = r["hta"]["temporal"]
checked += 1
# kernel time 500, union 184, idle 316, compute 200; non-compute -16: null
if (t["kernel_time_us"], t["idle_us"], t["compute_us"], t["non_compute_us"],
        t["non_compute_pct"]) != (500.0, 316.0, 200.0, None, None):
    fail("memsets: temporal %s" % t)
why = {u["figure"]: u["reason"] for u in r["unavailable"]}
nc = why.get("hta.temporal.non_compute_us", "")
if "would be -16 µs" not in nc or "non_compute_time >= 0" not in nc:
    fail("memsets: no reason for the null non-compute: %s" % why)
if "16 of 18 GPU rows last no time after HTA's µs rounding" not in err:
    fail("memsets: no stderr line for the rows the timeline leaves out: %r" % err)
text, _ = run(["report", memsets])
lines = text.splitlines()
hta = [i for i, l in enumerate(lines) if l.startswith("HTA-compatible")]
row = lines[hta[0] + 2].split() if hta and len(lines) > hta[0] + 2 else []
# rank, kernel_time, idle%, compute%, non-comp%, overlap%
if row[:5] != ["0", "500", "63.20", "40.00", "-"]:
    fail("memsets: the text's HTA row is not 500, 63.20, 40.00, -: %s" % row)

# one step name: nothing filtered, the kernel launched before the capture stays
one = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000},
       {"ph": "X", "cat": "kernel", "name": "early", "ts": 10, "dur": 50,
        "args": {"stream": 7, "correlation": 99}},
       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 100, "dur": 2,
        "args": {"correlation": 1}},
       {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 120, "dur": 100,
        "args": {"stream": 7, "correlation": 1}}]
onef = os.path.join(tmp, "one.json")
with open(onef, "w") as f:
    json.dump({"traceEvents": one}, f)
out, err = run(["report", "--json", onef])
h = json.loads(out)["ranks"][0]["hta"]
checked += 1
if (h["gpu_events"], h["temporal"]["kernel_time_us"], h["temporal"]["idle_us"]) != (2, 210.0, 60.0):
    fail("one step: %s" % h)
if "dropped" in err:
    fail("one step: a drop line on stderr: %r" % err)
for f in (memsets, onef):
    os.unlink(f)
os.rmdir(tmp)

for f in failures:
    print("FAIL", f)
print("%d checks, %d failures" % (checked, len(failures)))
sys.exit(1 if failures else 0)
