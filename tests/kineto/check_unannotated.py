#!/usr/bin/env python3
"""Iterations of Kineto traces whose step annotations were removed.

For each multi-step trace in tests/data/kineto, writes a copy without its
ProfilerStep#N events and checks that `cutrace report --json` finds the
iterations from the repeating work alone: source "period", a confidence in
(0, 1], and the annotated count within one (a partial step at either end);
and that the text report names the source of its iterations.
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
]


def report(cutrace, path):
    out = subprocess.run([cutrace, "report", "--json", path], check=True,
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
            want = report(cutrace, src)
            got = report(cutrace, bare)
            ws = [i["start_us"] for i in want["iterations"]]
            gs = [i["start_us"] for i in got["iterations"]]
            med = statistics.median(b - a for a, b in zip(ws, ws[1:]))
            err = [min(abs(g - w) for w in ws) / med * 100 for g in gs]
            ok = (want["iteration_source"] == "ranges" and got["iteration_source"] == "period"
                  and want["iteration_confidence"] == 1
                  and 0 < got["iteration_confidence"] <= 1 and abs(len(gs) - len(ws)) <= 1)
            # the text report says where its iterations came from
            ok = ok and "Iterations from step ranges on every rank" in text(cutrace, src)
            ok = ok and ("Iterations of rank %d: %d found from the work that repeats"
                         % (got["rank"], len(gs)) in text(cutrace, bare))
            print("%s %s: annotated %d, found %d (confidence %.3f), boundary offsets %s %% of "
                  "the median step" % ("ok" if ok else "FAIL", rel, len(ws), len(gs),
                                       got["iteration_confidence"] or 0,
                                       " ".join("%.1f" % e for e in err)))
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
