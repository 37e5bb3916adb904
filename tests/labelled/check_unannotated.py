#!/usr/bin/env python3
"""The labelled jobs of tests/labelled/w_job.c run without their step
ranges (W_JOB_NO_STEPS=1, as a job nobody annotated): `cutrace report` must
find the iterations from the work that repeats (source "period" on every
rank, with a confidence) and give the same figures, checked by the case's
own checks in check_case.py to the same tolerances (that file states them
and why).

usage: check_unannotated.py CASE...   (environment as check_case.py's)

What the detector has to find in them (docs/report.md, "Iterations without
annotations"): dp's step has no kernel of its own (four launches of each
kernel, four all-reduces: every fourth launch cuts it, or the sync that
ends it); loader's and tiny's steps are one kernel or 500 of one kernel, cut
only by the sync that ends each step; ckpt adds two copies every fifth
step; pipe's last stage repeats its micro-batch exactly, so only the job's
common period (the other stages' sync-to-sync step) gives its step.

dp_log is dp whose rank 0 alone syncs on its loss after the forward pass
(a rank-specific sync in mid-step): its steps must still be the job's.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_case as cc  # noqa: E402


def main():
    cc.SOURCE = "period"
    for case in sys.argv[1:]:
        ranks, fn, env = cc.CASES[case]
        env = dict(env or {})
        env["W_JOB_NO_STEPS"] = "1"
        before = len(cc.failures)
        rep, out = cc.run(case, ranks, env, 1 if case == "multigpu" else None)
        for k in rep["ranks"]:
            cc.check(f"{case} rank {k['rank']} iterations from the work that repeats",
                     k["iteration_source"] == "period" and 0 < (k["iteration_confidence"] or 0) <= 1,
                     f"{k['iteration_source']} {k['iteration_confidence']}")
        fn(rep, out)
        cc.failures[before:] = [f"{case}: {f}" for f in cc.failures[before:]]
        print(f"{case}: {'ok' if len(cc.failures) == before else 'FAILED'}")
    cc.finish("unannotated")


if __name__ == "__main__":
    main()
