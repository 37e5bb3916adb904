#!/usr/bin/env python3
"""Graph coverage on the Kineto traces of tests/data/kineto that replay CUDA
graphs: `cutrace report --json --no-hta` gives each rank's graph_pct, the
share of GPU busy time (the union of kernels, copies and memsets) that ops
launched by cudaGraphLaunch (their correlation id is a graph launch's)
cover. Computed here from the JSON by the same definition; the two agree to
0.1 point (the report works in ns, the trace in fractional us).

usage: check_graphs.py CUTRACE DATA_DIR
"""
import gzip
import json
import os
import subprocess
import sys

TRACES = ["negative_queue_length_values_check/rank0.json.gz", "trace_diff/test/test.json.gz"]


def union(iv):
    total, end = 0.0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main():
    cutrace, data = sys.argv[1], sys.argv[2]
    failed = 0
    for rel in TRACES:
        path = os.path.join(data, rel)
        d = json.load(gzip.open(path))
        ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
        g = {e["args"]["correlation"] for e in ev
             if "GraphLaunch" in str(e.get("name")) and "correlation" in e.get("args", {})}
        gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e.get("dur", 0) > 0]
        busy = union([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
        graph = union([(e["ts"], e["ts"] + e["dur"]) for e in gpu
                       if e.get("args", {}).get("correlation") in g])
        want = 100 * graph / busy
        rep = json.loads(subprocess.run([cutrace, "report", "--json", "--no-hta", path],
                                        check=True, capture_output=True, text=True).stdout)
        got = rep["ranks"][0]["graph_pct"]
        ok = got is not None and abs(got - want) <= 0.1
        print("%s %s: graph_pct %s, from the trace %.3f" % ("ok" if ok else "FAIL", rel, got, want))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
