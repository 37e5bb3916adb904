#!/usr/bin/env python3
"""`cutrace diff` against known truths, on runs written through the real
recorder by tests/tools/ct_synth_job (2 ranks, 12 steps, kernel durations
with 2 % per-kernel and 1 % per-run seeded noise, so runs of one
configuration differ as real ones do).

1. Injected slowdown on one host: side A and side B each hold 8 runs on
   host h1 and 8 on h2; B's h2 runs have kernels 5 % slower
   (--kernel-scale 1.05). `--by host` must flag compute and every kernel
   of h2 as regressed, compute's 95 % interval must contain 1.05 (and at
   least 8 of the 10 kernels' intervals), and nothing on h1 is flagged.
2. False positives: TRIALS pairs of 8 vs 8 fresh runs of one configuration
   (new seeds each trial); the share of trials with any metric flagged
   (family-wise) and of metric comparisons flagged are printed and must
   stay at or below 5 %.
3. One run per side: the samples are iterations, the output says so, and
   the 5 % slowdown is still found with an interval containing 1.05.
4. Too few runs in a segment: a warning, and no verdict.
5. Determinism: the same seed gives the same document; the seed is printed.
6. --rows writes loadable JSON lines with the documented columns.

usage: check_diff.py  (environment: CT_CUTRACE, CT_SYNTH_JOB; TRIALS=20)
"""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
NOISE = ["--ranks", "2", "--iterations", "12", "--jitter-pct", "2", "--run-jitter-pct", "1"]


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def make_run(synth, d, seed, host, scale=1.0, run_jitter=True):
    os.makedirs(d)
    noise = NOISE if run_jitter else NOISE[:-2]
    p = subprocess.run([synth, "-d", d, "--seed", str(seed), "--host", host,
                        "--kernel-scale", str(scale), "--tag", f"pool={host}"] + noise,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"ct_synth_job failed: {p.stderr}")


def diff(cutrace, *args):
    r = subprocess.run([cutrace, "diff", "--json"] + list(args), capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        sys.exit(f"diff failed: {r.stderr}")
    return json.loads(r.stdout), r.stdout


def main():
    cutrace, synth = os.environ["CT_CUTRACE"], os.environ["CT_SYNTH_JOB"]
    trials = int(os.environ.get("TRIALS", "20"))
    root = tempfile.mkdtemp(prefix="diag-diff-")
    # 1. slowdown on h2 in B
    seed = 5000
    for side in "AB":
        for host in ("h1", "h2"):
            for i in range(8):
                scale = 1.05 if side == "B" and host == "h2" else 1.0
                make_run(synth, f"{root}/{side}/{host}-{i}", seed, host, scale)
                seed += 1
    doc, text = diff(cutrace, "--by", "host", "--seed", "7", f"{root}/A", f"{root}/B")
    check("seed printed", doc["seed"] == 7)
    seg = {s["value"]: s for s in doc["segments"]}
    check("two segments", set(seg) == {"h1", "h2"}, str(list(seg)))
    h2 = {m["metric"]: m for m in seg["h2"]["metrics"]}
    kernels = [m for k, m in h2.items() if k.startswith("kernel:")]
    check("ten kernel metrics", len(kernels) == 10, str(len(kernels)))
    for m in kernels + [h2["compute_us"]]:
        check(f"h2 {m['metric']} regressed", m["verdict"] == "regressed", str(m))
    m = h2["compute_us"]
    check("h2 compute interval contains 1.05", m["ci_low"] <= 1.05 <= m["ci_high"], str(m))
    # ten separate 95 % intervals: about one in twenty may miss
    inside = sum(k["ci_low"] <= 1.05 <= k["ci_high"] for k in kernels)
    check("h2 kernel intervals contain 1.05", inside >= 8, f"{inside} of 10")
    flagged = [m["metric"] for m in seg["h1"]["metrics"] if m["verdict"] != "no evidence"]
    check("h1 not flagged", not flagged, str(flagged))
    print(f"slowdown: h2 compute ratio {h2['compute_us']['ratio']:.4f} "
          f"[{h2['compute_us']['ci_low']:.4f}, {h2['compute_us']['ci_high']:.4f}], "
          f"q {h2['compute_us']['q']:.2g}; h1 flagged {len(flagged)}")
    # 5. determinism
    doc2, text2 = diff(cutrace, "--by", "host", "--seed", "7", f"{root}/A", f"{root}/B")
    check("same seed, same output", text == text2)
    # 3. one run per side (no per-run noise: within-run samples say
    # nothing about run-to-run variation, so the truth is the kernel scale)
    make_run(synth, f"{root}/one/A", 77, "h2", 1.0, False)
    make_run(synth, f"{root}/one/B", 78, "h2", 1.05, False)
    one, _ = diff(cutrace, f"{root}/one/A", f"{root}/one/B")
    s = one["segments"][0]
    check("one run: iteration samples", s["samples"] == "iterations", str(s["samples"]))
    check("one run: says so", any("one run per side" in w for w in s["warnings"]), str(s))
    m = {x["metric"]: x for x in s["metrics"]}["compute_us"]
    check("one run: compute regressed", m["verdict"] == "regressed", str(m))
    check("one run: interval contains 1.05", m["ci_low"] <= 1.05 <= m["ci_high"], str(m))
    # 4. too few runs
    few = f"{root}/few"
    for side in "AB":
        for i in range(2):
            os.makedirs(f"{few}/{side}", exist_ok=True)
            os.symlink(f"{root}/{side}/h2-{i}", f"{few}/{side}/r{i}")
    fdoc, _ = diff(cutrace, f"{few}/A", f"{few}/B")
    s = fdoc["segments"][0]
    check("few runs: warning", any("too few runs" in w for w in s["warnings"]), str(s["warnings"]))
    check("few runs: no verdict", all(x["verdict"] == "no evidence" for x in s["metrics"]))
    # 6. rows
    rows = f"{root}/rows.jsonl"
    diff(cutrace, "--rows", rows, f"{few}/A", f"{few}/B")
    lines = [json.loads(l) for l in open(rows)]
    its = [l for l in lines if l["row"] == "iteration"]
    check("rows: 4 runs x 2 ranks x 12 iterations", len(its) == 4 * 2 * 12, str(len(its)))
    common = {"schema", "version", "row", "run", "side", "job", "run_start_utc", "rank", "host",
              "gpu", "driver", "cuda_version", "nccl_version", "labels", "iteration"}
    cols = common | {"start_us", "duration_us", "compute_us", "comm_us", "memory_us", "idle_us",
                     "exposed_comm_us", "bubble_us"}
    check("rows: iteration columns", set(its[0]) == cols, str(sorted(its[0])))
    check("rows: schema", all(l["schema"] == "cutrace.rows" and l["version"] == 2 for l in lines))
    kinds = {}
    for l in lines:
        kinds.setdefault((l["run"], l["row"]), []).append(l)
    runs = {l["run"] for l in lines}
    check("rows: a job row per run", all(len(kinds.get((r, "job"), [])) == 1 for r in runs),
          str({r: len(kinds.get((r, "job"), [])) for r in runs}))
    check("rows: kernel and collective rows", all(kinds.get((r, "kernel")) and
                                                   kinds.get((r, "collective")) for r in runs))
    job = kinds[(sorted(runs)[0], "job")][0]
    check("rows: job columns", set(job) == common | {"ranks", "iterations", "step_p50_us",
          "step_p90_us", "step_p99_us", "window_us", "compute_us", "comm_us", "idle_us",
          "exposed_comm_us", "goodput_pct", "wall_us", "downtime_us", "attempts"} and
          job["rank"] is None and job["ranks"] == 2, str(job))
    check("rows: run start in UTC", re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
                                                  job["run_start_utc"] or "") is not None,
          str(job["run_start_utc"]))
    check("rows: tag label", its[0]["labels"].get("tag.pool") == "h2", str(its[0]["labels"]))
    # 2. false positives over fresh seeds
    fam = metrics = flagged_n = 0
    for t in range(trials):
        base = f"{root}/fp{t}"
        for side in "AB":
            for i in range(8):
                make_run(synth, f"{base}/{side}/r{i}", 1000 + t * 100 + (side == "B") * 50 + i,
                         "h1")
        d, _ = diff(cutrace, "--seed", str(t + 1), f"{base}/A", f"{base}/B")
        ms = d["segments"][0]["metrics"]
        f = [x["metric"] for x in ms if x["verdict"] != "no evidence"]
        metrics += len(ms)
        flagged_n += len(f)
        fam += bool(f)
        if f:
            print(f"  trial {t}: flagged {f}")
    fw, pm = fam / trials, flagged_n / max(metrics, 1)
    print(f"false positives: {fam}/{trials} trials with any metric flagged ({fw:.3f}); "
          f"{flagged_n}/{metrics} metric comparisons ({pm:.4f})")
    check("family-wise false-positive rate <= 5 %", fw <= 0.05, f"{fw:.3f}")
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
        print(f"traces kept in {root}")
        sys.exit(1)
    shutil.rmtree(root, ignore_errors=True)
    print("diff: ok")


if __name__ == "__main__":
    main()
