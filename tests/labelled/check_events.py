#!/usr/bin/env python3
"""Event-pair timing on the labelled jobs of tests/labelled/w_job.c: each
case runs twice, GPU-timed by the (simulated) CUPTI and by CUDA event pairs
(CUTRACE_GPU_TIMING=events), and `diagnose` must give the same findings.

usage: check_events.py CASE...   (environment as check_case.py's)

What must hold, and why to that tolerance:
  - each finding of one mode is a finding of the other at half the
    threshold (1 % of the step): a saving near the 2 % threshold moves with
    the host between any two runs, so one run reports it and another does
    not (check_light.py measured such a pair);
  - per-iteration compute and memory time, medians over the same steps,
    agree to 1 % + 50 us: the simulated device is exact, and an event pair
    differs from CUPTI by its anchor's error (under 2 us a pair in the shim
    tests) and, for a stream's first op after idle, by the launch call;
  - nothing is untimed or dropped in either mode, except tiny in events
    mode (500 back-to-back kernels a step, past the 512 pairs in flight a
    stream may hold): its untimed ops are counted, diagnose lists the
    idle-split findings under insufficient evidence, and its other findings
    are CUPTI's; its compute median is not compared (an event pair on an
    idle stream times the launch call: docs/recording.md, "GPU-side timing").
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_case as cc  # noqa: E402
from check_light import diagnose  # noqa: E402

CASES = {"dp": 2, "pipe": 4, "loader": 1, "ckpt": 1, "slow": 4, "tiny": 1, "drain": 1}
EXTRA = {"pipe": {"FAKEGPU_KERNEL_SCALE": "4"}, "tiny": {"CUTRACE_BUFFER_KB": "16384"}}


def one(case):
    ranks, env = CASES[case], dict(EXTRA.get(case, {}))
    runs = {}
    for mode in ("cupti", "events"):
        env["CUTRACE_GPU_TIMING"] = mode
        before = len(cc.failures)
        rep, _ = cc.run(case, ranks, env)
        if case == "tiny" and mode == "events":  # its drops are the untimed ops, checked below
            cc.failures[before:] = [f for f in cc.failures[before:] if "dropped records" not in f]
        traces = os.path.join(cc.scratch[-1], "traces")
        runs[mode] = (rep, diagnose(traces), diagnose(traces, "1"))
        for k in rep["ranks"]:
            # tiny launches 500 kernels a step back to back: more than the
            # 512 pairs in flight a stream may hold, so events mode leaves
            # ops untimed, counts them, and diagnose says its idle split is
            # not known (below) instead of finding from half the ops
            capped = case == "tiny" and mode == "events"
            cc.check(f"{case} {mode} rank {k['rank']} timed by {mode}",
                     k["gpu_timing"] == mode and (k["coverage"]["untimed_ops"] > 0) == capped,
                     f"{k['gpu_timing']} {k['coverage']}")
        if case == "tiny" and mode == "events":
            ins = {i["kind"] for i in runs[mode][1]["insufficient_evidence"]}
            cc.check("tiny events: the idle split is insufficient evidence",
                     {"launch_bound", "sync_drain"} <= ins, str(runs[mode][1]))
    for a, b in (("cupti", "events"), ("events", "cupti")):
        if case == "tiny" and a == "cupti":
            continue  # events mode cannot judge these (above): it must not contradict them
        # host_contention is judged from the machine's CPU pressure while
        # each run ran (health counters): the two modes are two runs, and
        # the pressure is the machine's, not the timing mode's
        got = {x["kind"] for x in runs[a][1]["findings"]} - {"host_contention"}
        loose = {x["kind"] for x in runs[b][2]["findings"]}
        cc.check(f"{case} {a} findings are {b}'s", got <= loose,
                 f"{a} {sorted(got)}, {b} at 1 % {sorted(loose)}")
    fr = {k["rank"]: k for k in runs["cupti"][0]["ranks"]}
    for k in runs["events"][0]["ranks"]:
        f = fr[k["rank"]]
        idx = {i["index"]: i for i in f["iterations"]}
        same = [(i, idx[i["index"]]) for i in k["iterations"] if i["index"] in idx]
        cc.check(f"{case} rank {k['rank']} the same steps", len(same) == len(f["iterations"]),
                 f"{len(k['iterations'])} against {len(f['iterations'])}")
        # a synchronous copy's pair times its host call (flagged: the
        # rank's memory_blocking_us), so memory time is compared without it
        blocking = k["memory_blocking_us"] / len(k["iterations"]) if k["iterations"] else 0
        for key in ("compute_us", "memory_us"):
            if same and case != "tiny":
                got = statistics.median(e[key] for e, _ in same)
                want = statistics.median(c[key] for _, c in same)
                if key == "memory_us" and blocking:
                    cc.check(f"{case} rank {k['rank']} memory beyond the transfer is flagged",
                             want - 50 <= got <= want + blocking * 1.01 + 50,
                             f"events {got}, cupti {want}, blocking {blocking} per iteration")
                    continue
                cc.near(f"{case} rank {k['rank']} median {key} per iteration", got, want, 0.01, 50)


def main():
    for case in sys.argv[1:]:
        one(case)
    cc.finish("events")


if __name__ == "__main__":
    main()
