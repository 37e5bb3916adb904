#!/usr/bin/env python3
"""`cutrace diff` on a handful of reruns of a real job on the simulated device
(docs/diff.md, "Few runs"): a 2-rank data-parallel job (tests/labelled/w_job.c
`dp`: every step two kernels, then a 1 MB all-reduce that the next step's
compute waits for), 4 runs per side.

1. A link 30 % slower (FAKEGPU_NET_GBPS 0.35 against 0.5: the all-reduce takes
   1/0.7 = 1.43 times as long): `regressed` for the primary (step_us) and for
   the all-reduce, whose interval contains 1/0.7; the step's change is
   explained by the all-reduce.
2. 4 runs against 4 other runs of the same configuration: no `regressed` or
   `improved` anywhere.
Each verdict states the runs and iterations it rests on.
3. No figure of either comparison is NaN or Infinity, in JSON or text (a
   stall such as launch_overhead_us that some runs do not have printed its
   interval as [0.0000, -nan]): a null figure has its reason in the
   metric's `unavailable`, a "-" in text a line saying why.

usage: check_diff_link.py  (environment: CT_CUTRACE, CT_W_JOB, CT_FAKEGPU_DIR, CT_FAKE_CUPTI)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def job(d, gbps):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": str(gbps), "W_JOB_DIR": d})
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", f"{d}/traces", "--",
                        os.environ["CT_W_JOB"], "launch", "2", "dp"], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"job failed: {p.stderr}")


NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


def diff(a, b):
    outs = []
    for fmt in (["--json"], []):
        p = subprocess.run([os.environ["CT_CUTRACE"], "diff"] + fmt + [a, b],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            sys.exit(f"diff failed: {p.stderr}")
        bad = NOT_A_NUMBER.findall(p.stdout)
        check("no NaN or Infinity", not bad, f"{bad[:3]} in diff {' '.join(fmt)}")
        outs.append(p.stdout)
    seg = json.loads(outs[0])["segments"][0]
    for m in seg["metrics"]:
        nulls = {k for k in ("ratio", "ci_low", "ci_high") if m[k] is None}
        check(f"{m['metric']}: every null has its reason",
              nulls == {u["figure"] for u in m["unavailable"]}, str(m))
        if nulls:
            check(f"{m['metric']}: text says why", f"  - {m['metric']}: " in outs[1], outs[1])
    return seg


def main():
    root = tempfile.mkdtemp(prefix="diag-diff-link-")
    # the sides' runs interleaved: what the machine does meanwhile (a build
    # beside the tests) drifts over minutes, and run side after side it
    # lands on one side whole: A's four startups at 600 ms against C's at
    # 380 in one CI run, a real difference diff rightly flagged
    for i in range(4):
        for side, gbps in (("A", 0.5), ("B", 0.35), ("C", 0.5)):
            job(f"{root}/{side}/run{i}", gbps)
    s = diff(f"{root}/A", f"{root}/B")
    m = {x["metric"]: x for x in s["metrics"]}
    step, ar = m["step_us"], m["collective:AllReduce:1000000"]
    check("primary is the step", s["primary"] == "step_us" and step["role"] == "primary", str(s))
    check("step regressed", step["verdict"] == "regressed" and s["primary_verdict"] == "regressed",
          str(step))
    check("all-reduce regressed", ar["verdict"] == "regressed", str(ar))
    check("all-reduce interval holds 1/0.7", ar["ci_low"] <= 1 / 0.7 <= ar["ci_high"] * 1.001,
          str(ar))
    check("explained by the all-reduce", "collective:AllReduce:1000000" in s["explained_by"],
          str(s["explained_by"]))
    check("rests on 4 vs 4 runs and their iterations",
          step["n_a"] == 4 and step["n_b"] == 4 and step["samples_a"] >= 4 * 2 * 9, str(step))
    print(f"slower link: step {step['ratio']:.4f} [{step['ci_low']:.4f}, {step['ci_high']:.4f}] "
          f"p {step['p']:.2g}; all-reduce {ar['ratio']:.4f}")
    s = diff(f"{root}/A", f"{root}/C")
    flagged = [x["metric"] for x in s["metrics"] if x["verdict"] != "no evidence"]
    check("same configuration: nothing flagged", not flagged, str(flagged))
    check("same configuration: primary no evidence", s["primary_verdict"] == "no evidence", str(s))
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
        print(f"traces kept in {root}")
        sys.exit(1)
    shutil.rmtree(root, ignore_errors=True)
    print("diff link: ok")


if __name__ == "__main__":
    main()
