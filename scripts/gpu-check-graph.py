#!/usr/bin/env python3
"""A forked CUDA graph's critical path and a what-if on it, checked against
a real run (examples/graph_fork.c). Run by scripts/gpu-check on a real GPU
(CUPTI's graph node ids and clone callback), and by the test
`graph-example` on the simulated device (tests/e2e/meson.build).

usage: gpu-check-graph.py CUTRACE GRAPH_FORK OUT_DIR [RUNS]

1. graph_fork (ITER replays, g_branch 3 ms) under `cutrace run`, not
   annotated: `critical-path --json` must find its steps, say that every
   GPU op of the replays follows the graph's own edges
   (cuda_graph_ops == cuda_graph_ops_with_edges == 5 a replay), and put
   g_branch and g_body on the path but not g_side, which overlaps both on
   the launch stream and has 1.5 ms of slack. Stream order alone cannot
   tell that g_body waited for g_branch and not for g_side.
2. `whatif --scale kernel=g_branch*=0.333333` must move the path onto
   g_side and predict the median step of a real run with g_branch 1 ms
   (graph_fork ITER 1000) within 3 % (the issue's figure). Each side is the
   mean of its fastest 3 of RUNS recordings (default 3): interference only
   adds time.

Prints what it measured; exit status 0 when every check holds.
"""
import json
import shutil
import os
import subprocess
import sys

ITER = 30
TOL = 0.03
NODES = 5


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def record(cutrace, example, d, branch_us):
    # a folder of its own: an earlier run's traces there would be another
    # run, which cutrace refuses to merge with this one
    shutil.rmtree(d, ignore_errors=True)
    run([cutrace, "run", "-o", d, "--", example, str(ITER), str(branch_us)])
    return d


def on_path(cp, name):
    return sum(s["duration_us"] for s in cp["segments"] if (s.get("name") or "").startswith(name))


def fastest(v, k=3):
    v = sorted(v)[:k]
    return sum(v) / len(v)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cutrace, example, out = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    os.makedirs(out, exist_ok=True)
    bad, pred, real = [], [], []
    for i in range(runs):
        rec = record(cutrace, example, os.path.join(out, f"graph-{i}"), 3000)
        cp = json.loads(run([cutrace, "critical-path", "--json", rec]))
        g, ge = cp["cuda_graph_ops"], cp["cuda_graph_ops_with_edges"]
        if i == 0:
            print(f"  steps {cp['steps']}, median step {cp['step_p50_us']:.1f} us; graph ops {g}, "
                  f"following the graph's edges {ge}; on the path: g_branch "
                  f"{on_path(cp, 'g_branch'):.0f} us, g_body {on_path(cp, 'g_body'):.0f} us, "
                  f"g_side {on_path(cp, 'g_side'):.0f} us")
        # unannotated: the steps are found from the repeating replays, all
        # but possibly the first and the last
        if cp["steps"] < ITER - 2 or g != ge or g < NODES * cp["steps"]:
            bad.append(f"run {i}: {cp['steps']} steps, {g} graph ops, {ge} with edges")
        if on_path(cp, "g_branch") <= 0 or on_path(cp, "g_body") <= 0 or on_path(cp, "g_side") > 0:
            bad.append(f"run {i}: the recorded path is not head, branch, body, tail")
        w = json.loads(run([cutrace, "whatif", "--json", "--scale", "kernel=g_branch*=0.333333",
                            rec]))
        if on_path(w["critical_path"], "g_side") <= 0 or on_path(w["critical_path"], "g_branch") > 0:
            bad.append(f"run {i}: the predicted path did not move onto g_side")
        pred.append(w["predicted_step_us"])
        truth = record(cutrace, example, os.path.join(out, f"graph-truth-{i}"), 1000)
        real.append(json.loads(run([cutrace, "critical-path", "--json", truth]))["step_p50_us"])
    p, t = fastest(pred), fastest(real)
    err = abs(p - t) / t
    print(f"  g_branch 3 -> 1 ms: predicted step {p:.1f} us, real {t:.1f} us, error "
          f"{100 * err:.2f} % (tolerance {100 * TOL:.0f} %); runs: predicted "
          f"{[round(x) for x in pred]}, real {[round(x) for x in real]}")
    if err > TOL:
        bad.append(f"prediction error {100 * err:.2f} % > {100 * TOL:.0f} %")
    for b in bad:
        print("  " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
