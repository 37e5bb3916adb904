#!/usr/bin/env python3
"""Iterations of Kineto traces whose step annotations were removed.

For each multi-step trace in tests/data/kineto whose steps repeat, writes a
copy without its ProfilerStep#N events and checks that `cutrace report
--json` finds the iterations from the repeating work alone: source "period",
a confidence in (0, 1], the annotated count within one (a partial step at
either end), every boundary within 2 % of the median annotated step; and
that the text report names the source of its iterations. The multi-step
traces whose steps do not repeat give no iterations. Then a trace whose work
never repeats: no iterations, confidence null with a note, no step time
(null; the text says so).
Prints each boundary's distance to the nearest annotated one, in % of the
median annotated step (docs/report.md gives these figures).

usage: check_unannotated.py CUTRACE DATA_DIR
"""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

TRACES = [
    "trace_diff/control/control.json.gz",
    "negative_queue_length_values_check/rank0.json.gz",
    "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "df_index_resolver/df_index_resolver.json.gz",
    "trace_diff/test/test.json.gz",
    "nccl_parser_config/nccl_data.json.gz",
    "trace_filter/sampled_rank-0.json.gz",
    "trace_filter/sampled_rank-1.json.gz",
    "timeline_analysis/sampled_rank-0.json.gz",
]
# Multi-step traces whose steps do not repeat: nothing to find, and nothing
# may be invented (trace_compare: a step of 10 ops, then one of 6 others;
# the MI250 toy: its second step is empty)
UNLIKE = [
    "trace_compare/base/base.json.gz",
    "trace_compare/test/test.json.gz",
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]


def report(cutrace, path, *opts):
    out = subprocess.run([cutrace, "report", "--json", "--rank-iterations", *opts, path], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["ranks"][0]


def text(cutrace, path):
    return subprocess.run([cutrace, "report", path], check=True, capture_output=True,
                          text=True).stdout


def main():
    cutrace, data = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rel in TRACES:
            src = os.path.join(data, rel)
            d = json.load(gzip.open(src))
            d["traceEvents"] = [e for e in d["traceEvents"]
                                if not str(e.get("name", "")).startswith("ProfilerStep#")]
            bare = os.path.join(tmp, os.path.basename(rel).replace(".gz", ""))
            with open(bare, "w") as f:
                json.dump(d, f)
            # every annotated step (HTA's mode drops the last one and moves
            # the time origin with its own GPU rows: both runs in one mode)
            want = report(cutrace, src, "--no-hta")
            got = report(cutrace, bare, "--no-hta")
            dflt = report(cutrace, bare)
            ws = [i["start_us"] for i in want["iterations"]]
            gs = [i["start_us"] for i in got["iterations"]]
            med = statistics.median(b - a for a, b in zip(ws, ws[1:]))
            err = [min(abs(g - w) for w in ws) / med * 100 for g in gs]
            ok = (want["iteration_source"] == "ranges" and got["iteration_source"] == "period"
                  and want["iteration_confidence"] == 1
                  and 0 < got["iteration_confidence"] <= 1 and abs(len(gs) - len(ws)) <= 1
                  and max(err) <= 2.0 and dflt["iteration_source"] == "period"
                  and abs(len(dflt["iterations"]) - len(ws)) <= 1)
            # the text report says where its iterations came from
            ok = ok and "Iterations from step ranges on every rank" in text(cutrace, src)
            ok = ok and ("Iterations of rank %d: %d found from the work that repeats"
                         % (got["rank"], len(gs)) in text(cutrace, bare))
            print("%s %s: annotated %d, found %d (confidence %.3f), boundary offsets %s %% of "
                  "the median step" % ("ok" if ok else "FAIL", rel, len(ws), len(gs),
                                       got["iteration_confidence"] or 0,
                                       " ".join("%.1f" % e for e in err)))
            failed += not ok
        for rel in UNLIKE:
            d = json.load(gzip.open(os.path.join(data, rel)))
            d["traceEvents"] = [e for e in d["traceEvents"]
                                if not str(e.get("name", "")).startswith("ProfilerStep#")]
            bare = os.path.join(tmp, "unlike.json")
            with open(bare, "w") as f:
                json.dump(d, f)
            got = report(cutrace, bare)
            ok = got["iteration_source"] == "none" and got["iterations"] == []
            print("%s %s: steps that do not repeat, source %s, %d found" % (
                "ok" if ok else "FAIL", rel, got["iteration_source"], len(got["iterations"])))
            failed += not ok
        # work that never repeats (the first 30 kernels of a trace, each
        # renamed apart): no iterations, said so, and no step time
        d = json.load(gzip.open(os.path.join(data, TRACES[0])))
        ev = [e for e in d["traceEvents"]
              if not str(e.get("name", "")).startswith("ProfilerStep#")]
        kernels = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])[:30]
        corr = {e["args"].get("correlation") for e in kernels}
        for i, e in enumerate(kernels):
            e["name"] = "unique_kernel_%d" % i
        d["traceEvents"] = [e for e in ev if e.get("ph") != "X" or (
            e.get("cat") in ("cuda_runtime", "cuda_driver")
            and e.get("args", {}).get("correlation") in corr)] + kernels
        bare = os.path.join(tmp, "unique.json")
        with open(bare, "w") as f:
            json.dump(d, f)
        got = report(cutrace, bare)
        job = json.loads(subprocess.run([cutrace, "report", "--json", bare], check=True,
                                        capture_output=True, text=True).stdout)["job"]
        t = text(cutrace, bare)
        ok = (got["iteration_source"] == "none" and got["iteration_confidence"] is None
              and got["iteration_note"] and got["iterations"] == []
              and job["step_p50_us"] is None and "no iterations: no step time" in t
              and "whole-window figures only" in t)
        print("%s work that never repeats: source %s, confidence %s, step p50 %s" % (
            "ok" if ok else "FAIL", got["iteration_source"], got["iteration_confidence"],
            job["step_p50_us"]))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
