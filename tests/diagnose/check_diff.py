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
7. A small but real change: 8 vs 8 runs (1 % per-run noise), B's step
   1.5 % longer (a kernel scale from two jitter-free runs, as
   scripts/diff-calibration does). The step's interval excludes 1 but not
   1.02: the primary is "worse, possibly below min effect" (`change`,
   `primary_change`), `verdict` stays "no evidence", the interval holds
   1.015, compute explains it (`explained_by`: diagnostics that changed in
   the same direction), the text's primary line says so with the interval; at
   --min-effect 0 the same pair is "regressed".
8. A stall that one run per side does not have (data_stall_us 0 there):
   its interval's upper end is null with the reason, "-" in text, and no
   output of this test ever holds NaN or Infinity.
9. Not the same workload (2 ranks, 10 kernels, `--model 13b` against 4
   ranks, 4 kernels, `--model 7b`): one stderr warning line each and the
   JSON `warnings`, and the comparison still runs; every other diff here
   compares one workload and has no such warning.

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


def make_run(synth, d, seed, host, scale=1.0, run_jitter=True, extra=()):
    os.makedirs(d)
    noise = NOISE if run_jitter else NOISE[:-2]
    p = subprocess.run([synth, "-d", d, "--seed", str(seed), "--host", host,
                        "--kernel-scale", str(scale), "--tag", f"pool={host}"] + noise
                       + list(extra), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"ct_synth_job failed: {p.stderr}")


NOT_A_NUMBER = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


def run_diff(cutrace, *args):
    """cutrace diff ARGS: (stdout, stderr). No output may hold NaN or
    Infinity (a figure that cannot be computed is null or "-")."""
    r = subprocess.run([cutrace, "diff"] + list(args), capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        sys.exit(f"diff failed: {r.stderr}")
    bad = NOT_A_NUMBER.findall(r.stdout)
    check("no NaN or Infinity in the output", not bad, f"{bad[:3]} in diff {' '.join(args)}")
    return r.stdout, r.stderr


def diff(cutrace, *args, workload_warnings=0):
    """diff --json; unless told otherwise, A and B are one workload: no
    warning on stderr nor in the document."""
    out, err = run_diff(cutrace, "--json", *args)
    doc = json.loads(out)
    lines = [l for l in err.splitlines() if "not the same workload" in l]
    check("workload warnings", len(lines) == workload_warnings == len(doc["warnings"]),
          f"{err!r} {doc['warnings']} in diff {' '.join(args)}")
    return doc, out


# the calibration's job (scripts/diff-calibration): no 1475 us floor, so the
# step follows the kernels
CAL = ["--kernels", "10", "--kernel-us", "120", "--iterations", "20"]


def small_real_change(cutrace, synth, root):
    """7. B's step 1.5 % longer, 8 vs 8 runs with 1 % per-run noise. The
    geometric mean of 8 runs has se about 0.47 %/sqrt(8) (the per-run
    factor, U(-1, 1) %: sd 0.58 %, of which the kernels carry about 80 % of
    the step), the difference 0.24 %, t(0.975, ~14) = 2.14: the interval is
    1.015 +- 0.5 %, so it excludes 1 (4 se away) and holds 1.02 or lies
    below it (its low end is 4 se below 1.02): the middle verdict."""
    def step(d, scale):
        make_run(synth, d, 1, "h1", scale, False, CAL + ["--jitter-pct", "0"])
        out = subprocess.run([cutrace, "report", "--json", d], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return json.loads(out)["job"]["step_p50_us"]
    s1, s12 = step(f"{root}/cal/1", 1.0), step(f"{root}/cal/12", 1.2)
    scale = 1 + 0.2 * 0.015 * s1 / (s12 - s1)
    achieved = step(f"{root}/cal/x", scale) / s1 - 1
    check("small change: 1.5 % achieved", abs(achieved - 0.015) < 1e-3, f"{achieved:.4f}")
    for side, sc in (("A", 1.0), ("B", scale)):
        for i in range(8):
            make_run(synth, f"{root}/small/{side}/r{i}", 9000 + (side == "B") * 100 + i, "h1", sc,
                     True, CAL)
    doc, _ = diff(cutrace, f"{root}/small/A", f"{root}/small/B")
    seg = doc["segments"][0]
    st = {m["metric"]: m for m in seg["metrics"]}["step_us"]
    want = "worse, possibly below min effect"
    check("small change: primary_change", seg["primary_change"] == want, str(seg))
    check("small change: change", st["change"] == want, str(st))
    check("small change: verdict unchanged", st["verdict"] == "no evidence" and
          seg["primary_verdict"] == "no evidence", str(st))
    check("small change: significant, interval excludes 1",
          st["p"] < 0.05 and 1 < st["ci_low"] < 1.02, str(st))
    check("small change: interval holds 1.015", st["ci_low"] <= 1.015 <= st["ci_high"], str(st))
    # the kernels are what changed: compute is worse too, and explains it
    check("small change: explained by compute", "compute_us" in seg["explained_by"],
          str(seg["explained_by"]))
    text, _ = run_diff(cutrace, f"{root}/small/A", f"{root}/small/B")
    line = next((l for l in text.splitlines() if l.strip().startswith("primary step_us")), "")
    check("small change: text primary line",
          f"primary step_us: {want}: B/A {st['ratio']:.4f}, 95% CI [{st['ci_low']:.4f}, "
          f"{st['ci_high']:.4f}]" in line, line)
    zero, _ = diff(cutrace, "--min-effect", "0", f"{root}/small/A", f"{root}/small/B")
    check("small change: min effect 0 says regressed",
          zero["segments"][0]["primary_change"] == "regressed", str(zero["segments"][0]))
    print(f"small change: step {st['ratio']:.4f} [{st['ci_low']:.4f}, {st['ci_high']:.4f}] "
          f"p {st['p']:.2g}: {st['change']}")


def missing_bound(cutrace, synth, root):
    """8. One run a side reads nothing (data stall 0): 1 of 4 values is 0, so
    a bootstrap resample's median of A is 0 with probability 0.0508 (3 or 4
    draws of the zero), more than the 2.5 % tail: the upper end is +inf,
    which no number states."""
    for side in "AB":
        for i in range(4):
            make_run(synth, f"{root}/stall/{side}/r{i}", 9500 + (side == "B") * 10 + i, "h1",
                     extra=["--read-us", "0"] if i == 0 else [])
    doc, _ = diff(cutrace, f"{root}/stall/A", f"{root}/stall/B")
    ds = {m["metric"]: m for m in doc["segments"][0]["metrics"]}["data_stall_us"]
    check("stall in some runs: upper end null", ds["ci_high"] is None, str(ds))
    check("stall in some runs: says why",
          [u["figure"] for u in ds["unavailable"]] == ["ci_high"] and
          ds["unavailable"][0]["reason"].startswith("unbounded"), str(ds))
    check("stall in some runs: no verdict", ds["change"] == "no evidence", str(ds))
    text, _ = run_diff(cutrace, f"{root}/stall/A", f"{root}/stall/B")
    row = next((l for l in text.splitlines() if l.strip().startswith("data_stall_us")), "")
    check("stall in some runs: text shows -", re.search(r"\[\d\.\d{4}, -\]", row) is not None,
          row)
    check("stall in some runs: text says why",
          "  - data_stall_us: 95% CI high end: unbounded" in text, text)


def not_the_same_workload(cutrace, synth, root):
    """9. Ranks, kernels and the model argument differ: three lines."""
    for side, extra in (("A", ["--ranks", "2", "--kernels", "10", "--cmdline",
                               "python train.py --model 13b"]),
                        ("B", ["--ranks", "4", "--kernels", "4", "--cmdline",
                               "python train.py --model 7b"])):
        for i in range(3):
            make_run(synth, f"{root}/other/{side}/r{i}", 9700 + (side == "B") * 10 + i, "h1",
                     extra=extra)
    doc, _ = diff(cutrace, f"{root}/other/A", f"{root}/other/B", workload_warnings=3)
    w = doc["warnings"]
    check("other workload: rank count", any("rank count: A's runs have 2 ranks, B's 4" in x
                                            for x in w), str(w))
    check("other workload: kernels", any("kernels: 4 of 10 names shared (Jaccard 0.40" in x
                                          for x in w), str(w))
    check("other workload: command", any('"13b"' in x and '"7b"' in x for x in w), str(w))
    check("other workload: still compared", doc["segments"][0]["metrics"], str(doc))
    _, err = run_diff(cutrace, f"{root}/other/A", f"{root}/other/B")
    lines = err.splitlines()
    check("other workload: one stderr line each", len(lines) == 3 and
          all(l.startswith("cutrace diff: warning: not the same workload? ") for l in lines), err)


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
    # GPU efficiency (docs/efficiency.md): null here, the synthetic job has no GPM samples
    gpm = {"gpm_" + m for m in ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
                                "dram_bw_pct", "fp64_active_pct", "fp32_active_pct",
                                "fp16_active_pct", "pcie_tx_mib_s", "pcie_rx_mib_s",
                                "nvlink_tx_mib_s", "nvlink_rx_mib_s")}
    cols = common | gpm | {"start_us", "duration_us", "compute_us", "comm_us", "memory_us",
                           "idle_us", "exposed_comm_us", "bubble_us"}
    check("rows: iteration columns", set(its[0]) == cols, str(sorted(its[0])))
    check("rows: GPM columns null without samples", all(its[0][k] is None for k in gpm),
          str(its[0]))
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
          "exposed_comm_us", "goodput_pct", "wall_us", "downtime_us", "attempts", "run_id",
          "cutrace_version", "cmdline"} and
          job["rank"] is None and job["ranks"] == 2, str(job))
    check("rows: run start in UTC", re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
                                                  job["run_start_utc"] or "") is not None,
          str(job["run_start_utc"]))
    check("rows: tag label", its[0]["labels"].get("tag.pool") == "h2", str(its[0]["labels"]))
    small_real_change(cutrace, synth, root)
    missing_bound(cutrace, synth, root)
    not_the_same_workload(cutrace, synth, root)
    # 2. false positives over fresh seeds
    fam = metrics = flagged_n = changed = 0
    for t in range(trials):
        base = f"{root}/fp{t}"
        for side in "AB":
            for i in range(8):
                make_run(synth, f"{base}/{side}/r{i}", 1000 + t * 100 + (side == "B") * 50 + i,
                         "h1")
        d, _ = diff(cutrace, "--seed", str(t + 1), f"{base}/A", f"{base}/B")
        ms = d["segments"][0]["metrics"]
        f = [x["metric"] for x in ms if x["verdict"] != "no evidence"]
        # any change (also "possibly below min effect"): the test's own level,
        # at most alpha for the primary (docs/diff.md, calibration); printed
        changed += d["segments"][0]["primary_change"] != "no evidence"
        metrics += len(ms)
        flagged_n += len(f)
        fam += bool(f)
        if f:
            print(f"  trial {t}: flagged {f}")
    fw, pm = fam / trials, flagged_n / max(metrics, 1)
    print(f"false positives: {fam}/{trials} trials with any metric flagged ({fw:.3f}); "
          f"{flagged_n}/{metrics} metric comparisons ({pm:.4f}); primary changed at all "
          f"(any class) in {changed}/{trials}")
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
