#!/usr/bin/env python3
"""Checks `cutrace report --json` on Kineto traces against HTA's numbers.

usage: check_hta.py CUTRACE DATA_DIR

For every target of DATA_DIR/hta_reference_values.json (HTA 0.6.1 run on the
same files), the report's per-rank "hta" object must equal HTA's temporal
breakdown, comm/comp overlap and per-stream idle breakdown:
  * µs values exactly (HTA's unit after its rounding; cutrace prints ns
    resolution, so a difference of 0.0005 µs would already show);
  * percentages and ratios to HTA's 2 decimals (tolerance 0.0051: both sides
    round the same double, the slack only absorbs float printing).
Targets where HTA raised (no GPU event) must load and report valid=false.
Then every other Kineto file under DATA_DIR must load without error (exit 0)
or say why it has no GPU data.
"""
import json
import os
import subprocess
import sys

cutrace, data = sys.argv[1], sys.argv[2]
ref = json.load(open(os.path.join(data, "hta_reference_values.json")))
failures = []
checked = 0


def fail(msg):
    failures.append(msg)


def close(a, b, tol):
    return a is None and b is None or (a is not None and b is not None and abs(a - b) <= tol)


def report(paths):
    p = subprocess.run([cutrace, "report", "--json"] + paths, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise RuntimeError("exit %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout), p.stderr


covered = set()
for name, t in sorted(ref["targets"].items()):
    paths = [os.path.join(data, f) for f in (t["explicit_files"] or [])]
    if not paths:
        paths = [os.path.join(data, t["trace_dir"])]
    for p in paths:
        covered.add(os.path.normpath(p))
    try:
        doc, err = report(paths)
    except Exception as e:  # noqa: BLE001 - report the failure, keep checking
        fail("%s: %s" % (name, e))
        continue
    ranks = {r["rank"]: r for r in doc["ranks"]}
    if isinstance(t["temporal"], dict):  # HTA raised: no GPU event
        for r in t["ranks"]:
            h = ranks.get(r, {}).get("hta")
            if h is None or h["valid"] or h["gpu_events"] != 0:
                fail("%s rank %d: expected no GPU events, got %s" % (name, r, h))
            checked += 1
        if "no GPU activity" not in err:
            fail("%s: expected a 'no GPU activity' note on stderr, got %r" % (name, err))
        continue
    for row in t["temporal"]:
        r = row["rank"]
        h = ranks.get(r, {}).get("hta")
        if h is None:
            fail("%s: rank %d missing" % (name, r))
            continue
        tp = h["temporal"]
        for mine, theirs, tol in [("kernel_time_us", "kernel_time(us)", 0),
                                  ("idle_us", "idle_time(us)", 0),
                                  ("compute_us", "compute_time(us)", 0),
                                  ("non_compute_us", "non_compute_time(us)", 0),
                                  ("idle_pct", "idle_time_pctg", 0.0051),
                                  ("compute_pct", "compute_time_pctg", 0.0051),
                                  ("non_compute_pct", "non_compute_time_pctg", 0.0051)]:
            checked += 1
            if not close(tp[mine], row[theirs], tol):
                fail("%s rank %d %s: cutrace %s, HTA %s" % (name, r, mine, tp[mine], row[theirs]))
        checked += 1
        if h["gpu_events"] != t["gpu_events_after_filter"][str(r)]:
            fail("%s rank %d gpu_events: cutrace %s, HTA %s" %
                 (name, r, h["gpu_events"], t["gpu_events_after_filter"][str(r)]))
    for row in t["comm_comp_overlap"]:
        r = row["rank"]
        h = ranks.get(r, {}).get("hta")
        checked += 1
        if h is None or not close(h["overlap_pct"], row["comp_comm_overlap_pctg"], 0.0051):
            fail("%s rank %d overlap_pct: cutrace %s, HTA %s" %
                 (name, r, h and h["overlap_pct"], row["comp_comm_overlap_pctg"]))
    if isinstance(t["idle_time_breakdown"], list):
        want = {(x["rank"], x["stream"], x["idle_category"]): x for x in t["idle_time_breakdown"]}
        got = {}
        for r, rk in ranks.items():
            for x in (rk.get("hta") or {}).get("idle_breakdown", []):
                got[(r, x["stream"], x["category"])] = x
        for k in sorted(set(want) | set(got)):
            checked += 1
            if k not in got or k not in want:
                fail("%s idle %s: only in %s" % (name, k, "HTA" if k in want else "cutrace"))
                continue
            if got[k]["idle_us"] != want[k]["idle_time"] or \
                    not close(got[k]["ratio"], want[k]["idle_time_ratio"], 0.0051):
                fail("%s idle %s: cutrace %s/%s, HTA %s/%s" %
                     (name, k, got[k]["idle_us"], got[k]["ratio"], want[k]["idle_time"],
                      want[k]["idle_time_ratio"]))

# every other Kineto file loads, or says why it has no GPU data
for root, _, files in os.walk(data):
    for f in sorted(files):
        p = os.path.normpath(os.path.join(root, f))
        if not (f.endswith(".json.gz") or f.endswith(".json")) or f == "hta_reference_values.json":
            continue
        if p in covered or os.path.dirname(p) in covered:
            continue
        for mode in ([], ["--no-hta"]):
            pr = subprocess.run([cutrace, "report", "--json"] + mode + [p], capture_output=True,
                                text=True, timeout=120)
            checked += 1
            if pr.returncode != 0:
                fail("%s %s: exit %d: %s" % (p, mode, pr.returncode, pr.stderr.strip()))
                continue
            doc = json.loads(pr.stdout)
            if not any(r["window_us"] > 0 for r in doc["ranks"]) and "no GPU" not in pr.stderr:
                fail("%s: no GPU data and no note why" % p)

for f in failures:
    print("FAIL", f)
print("%d checks, %d failures" % (checked, len(failures)))
sys.exit(1 if failures else 0)
