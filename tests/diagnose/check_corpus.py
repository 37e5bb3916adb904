#!/usr/bin/env python3
"""Labelled diagnosis corpus: generates jobs with known faults through the
real recorder (tests/tools/ct_synth_job: synthetic schedules, fast), runs
`cutrace diagnose --json` on each, and compares the reported kinds with the
case's labels. Prints per-case results, precision and recall over the whole
corpus, and fails below 0.95 for either, or when any finding lacks its
evidence, ranks, saving or summary.

usage: check_corpus.py   (environment: CT_CUTRACE, CT_SYNTH_JOB;
                          optional CT_W_JOB_CORPUS: a directory of extra
                          cases, one subfolder per case holding traces and
                          a LABELS file, e.g. from tests/labelled)

Every kind has at least one case where it must be found and one where it
must not (the same fault below the 2 % threshold, or a look-alike).

Base schedule (ct_synth_job's header): 4 ranks, 20 steps of 1.475 ms, ten
100 us kernels, a 1 MiB all-reduce hidden under the last two kernels. BASE
removes the default input read (200 us), shortens the post-sync host gap to
10 us and the all-reduce to 150 us so that nothing in it reaches 2 % of the
step (29.5 us).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BASE = ["--read-us", "0", "--gap-us", "10", "--ar-us", "150"]
REPLAYED = {"exposed_communication", "slow_collective", "compute_straggler",
            "data_loading_stall", "checkpoint_stall"}
KINDS = ["exposed_communication", "slow_collective", "compute_straggler", "host_straggler",
         "stage_imbalance", "excess_bubble", "data_loading_stall", "checkpoint_stall",
         "launch_bound", "sync_drain", "pageable_memcpy", "throttled_gpu", "host_contention"]
# Health counters (ct_synth_job --counters-us: a sample every 200 us, as the
# recorder's sampler writes them); the fault options name the rank.
HEALTH = ["--counters-us", "200"]
CONTEND = HEALTH + ["--contention-rank", "2", "--contention-every", "4"]

# name: (extra ct_synth_job options, expected kinds). Truth per case in the
# comment: what the schedule costs per 1.475 ms step.
CASES = {
    "clean": ([], set()),
    "clean_jitter": (["--jitter-pct", "3", "--seed", "5"], set()),   # noise only
    "data": (["--read-us", "200"], {"data_loading_stall"}),          # 200 us read
    "data_small": (["--read-us", "15"], set()),                      # 15 us: 1 %
    "exposed": (["--ar-us", "400"], {"exposed_communication"}),      # 200 us past compute
    "exposed_hidden": (["--ar-us", "190"], set()),                   # fits under 200 us
    "straggler": (["--slow-rank", "2"], {"compute_straggler"}),      # 200 us more compute
    "straggler_2ranks": (["--ranks", "2", "--slow-rank", "1"], set()),  # insufficient
    "host_late": (["--late-rank", "1", "--late-us", "150"], {"host_straggler"}),
    "host_late_small": (["--late-rank", "1", "--late-us", "20"], set()),
    "ckpt": (["--ckpt-every", "5", "--ckpt-us", "2000"], {"checkpoint_stall"}),  # 400 us/step
    "ckpt_small": (["--ckpt-every", "10", "--ckpt-us", "200"], set()),           # 20 us/step
    "launch": (["--kernels", "200", "--kernel-us", "2", "--launch-gap-us", "6", "--ar-us", "4"],
               {"launch_bound"}),                                    # 4 us idle per kernel
    "launch_not": (["--kernels", "200", "--kernel-us", "7", "--launch-gap-us", "6",
                    "--ar-us", "4"], set()),                         # kernels outlast launches
    "drain": (["--gap-us", "200"], {"sync_drain"}),                  # 200 us after each sync
    "drain_small": (["--gap-us", "20"], set()),
    "pageable": (["--pageable-copy-us", "100"], {"pageable_memcpy"}),  # host blocked 100 us
    "pinned": (["--pinned-copy-us", "100"], set()),                    # returns after 3 us
    "slow_coll": (["--ar2-bytes", "4194304", "--ar2-us", "3000"],      # 4 MiB at 0.2x the
                  {"slow_collective", "exposed_communication"}),       # 1 MiB op's bandwidth
    "fast_coll": (["--ar2-bytes", "4194304", "--ar2-us", "900"],       # 0.67x: not slow
                  {"exposed_communication"}),
    "data_and_straggler": (["--read-us", "200", "--slow-rank", "2"],
                           {"data_loading_stall", "compute_straggler"}),
    # rank 1 power-capped from step 10: SM clock 1410 MHz, kernels x1.4
    "throttle": (HEALTH + ["--throttle-rank", "1", "--throttle-from", "10"],
                 {"throttled_gpu", "compute_straggler"}),
    "straggler_unthrottled": (HEALTH + ["--slow-rank", "2"], {"compute_straggler"}),
    # every 4th step rank 2's host launches 800 us late (steps 1.475 -> 1.82
    # ms: the 1.475 ms floor absorbs less) under 60 % CPU pressure
    "contention": (CONTEND + ["--contention-us", "800"], {"host_contention"}),
    "contention_calm": (CONTEND + ["--contention-us", "800", "--contention-pct", "3"],
                        set()),                          # late, CPU pressure as usual (3 %)
    "contention_idle": (CONTEND + ["--contention-us", "0"], set()),  # pressure, no slowdown
}


# Pipeline cases on the simulated device (tests/labelled/w_job.c states
# their schedules), when CT_W_JOB is set: name: (w_job case, runs, expected
# kinds, rank the stage_imbalance finding must name). Several runs each:
# the host timing of a 4-rank job on a loaded 2-CPU machine varies.
W_CASES = {
    "pipe": ("pipe", 3, set(), None),                          # balanced 1F1B
    "pipe_slow": ("pipe_slow", 2, {"stage_imbalance"}, 3),     # last stage 1.5x: its
    # excess waits on the others are the imbalance's (not excess_bubble)
    "pipe_stall": ("pipe_stall", 2, {"excess_bubble"}, None),  # 4 x 2 ms host stalls
}


def w_job_run(case, d):
    fg = os.environ["CT_FAKEGPU_DIR"]
    env = dict(os.environ, LD_LIBRARY_PATH=fg, CUTRACE_CUPTI_LIB=os.environ["CT_FAKE_CUPTI"],
               FAKEGPU_NET_GBPS="1", W_JOB_DIR=d)
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", d, "--", os.environ["CT_W_JOB"],
                        "launch", "4", case], env=env, capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        sys.exit(f"{case}: w_job failed: {p.stderr}")


def diagnose(cutrace, d):
    r = subprocess.run([cutrace, "diagnose", "--json", d], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        sys.exit(f"{d}: diagnose failed: {r.stderr}")
    return json.loads(r.stdout)


def shape_errors(doc):
    errs = []
    for f in doc["findings"]:
        if f["kind"] not in KINDS:
            errs.append(f"unknown kind {f['kind']}")
        if not f["evidence"] or not f["summary"] or not f["ranks"]:
            errs.append(f"{f['kind']}: finding without evidence, summary or ranks")
        if not (0 < f["confidence"] <= 1) or f["saving_us"] <= 0:
            errs.append(f"{f['kind']}: confidence/saving out of range")
        if f["saving_us"] < doc["min_saving_pct"] / 100 * doc["step_us"] - 1e-3:
            errs.append(f"{f['kind']}: saving below the threshold")
        # the kinds whose fix is a scaling of recorded work take their
        # saving from the replay (every corpus job's graph is complete);
        # the others keep their formula (docs/diff.md)
        want = "replay" if f["kind"] in REPLAYED else "formula"
        if f["saving_from"] != want or (want == "replay") != (f["whatif"] is not None):
            errs.append(f"{f['kind']}: saving from {f['saving_from']}, whatif {f['whatif']}, "
                        f"expected {want}")
    if any(f["kind"] in REPLAYED for f in doc["findings"]) and not doc["replay"]["used"]:
        errs.append(f"no replay: {doc['replay']['note']}")
    return errs


def main():
    cutrace, synth = os.environ["CT_CUTRACE"], os.environ["CT_SYNTH_JOB"]
    tp = fp = fn = 0
    errors = []
    per_kind = {k: [0, 0, 0] for k in KINDS}  # tp, fp, fn
    root = tempfile.mkdtemp(prefix="diag-corpus-")
    cases = [(n, BASE + o, want, None) for n, (o, want) in CASES.items()]
    if os.environ.get("CT_W_JOB"):
        for n, (case, runs, want, _) in W_CASES.items():
            for i in range(runs):
                cases.append((f"{n}#{i}", ("w_job", case), want, None))
    extra = os.environ.get("CT_W_JOB_CORPUS")
    if extra and os.path.isdir(extra):
        for n in sorted(os.listdir(extra)):
            lab = os.path.join(extra, n, "LABELS")
            if os.path.exists(lab):
                want = set(open(lab).read().split())
                cases.append((n, None, want, os.path.join(extra, n)))
    for name, opts, want, ready in cases:
        d = ready
        if d is None and opts and opts[0] == "w_job":
            d = os.path.join(root, name.replace("#", "-"))
            os.mkdir(d)
            w_job_run(opts[1], d)
        elif d is None:
            d = os.path.join(root, name)
            os.mkdir(d)
            p = subprocess.run([synth, "-d", d] + opts, capture_output=True, text=True,
                               timeout=120)
            if p.returncode != 0:
                sys.exit(f"{name}: ct_synth_job failed: {p.stderr}")
        doc = diagnose(cutrace, d)
        got = {f["kind"] for f in doc["findings"]}
        base = name.split("#")[0]
        if base in W_CASES and W_CASES[base][3] is not None:
            si = [f for f in doc["findings"] if f["kind"] == "stage_imbalance"]
            if si and si[0]["ranks"] != [W_CASES[base][3]]:
                errors.append(f"{name}: stage_imbalance names {si[0]['ranks']}")
        errors += [f"{name}: {e}" for e in shape_errors(doc)]
        for k in got & want:
            per_kind[k][0] += 1
        for k in got - want:
            per_kind[k][1] += 1
        for k in want - got:
            per_kind[k][2] += 1
        tp += len(got & want)
        fp += len(got - want)
        fn += len(want - got)
        mark = "ok" if got == want else "MISMATCH"
        print(f"{mark:8} {name:22} want {sorted(want)} got "
              f"{[(f['kind'], round(f['saving_us'], 1)) for f in doc['findings']]}")
    # report --rows writes the rows diagnose --rows writes
    d = os.path.join(root, "clean")
    ra, rb = os.path.join(root, "a.jsonl"), os.path.join(root, "b.jsonl")
    subprocess.run([cutrace, "report", "-o", os.devnull, "--rows", ra, d], check=True, timeout=120)
    subprocess.run([cutrace, "diagnose", "-o", os.devnull, "--rows", rb, d], check=True,
                   timeout=120)
    if open(ra).read() != open(rb).read() or not open(ra).read():
        errors.append("report --rows differs from diagnose --rows")
    # every kind: a case where it must be found, one where not (the pipeline
    # kinds come from simulated-device jobs, which sanitizer builds skip)
    sim_only = {"stage_imbalance", "excess_bubble"}
    for k in KINDS:
        if k in sim_only and not os.environ.get("CT_W_JOB"):
            print(f"note: {k} needs the simulated-device pipeline jobs (not in this build)")
            continue
        if not any(k in c[2] for c in cases) or all(k in c[2] for c in cases):
            errors.append(f"{k}: no must-find or no must-not-find case")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"\ncases {len(cases)}, findings expected {tp + fn}, reported {tp + fp}")
    for k, (a, b, c) in per_kind.items():
        print(f"  {k:22} tp {a} fp {b} fn {c}")
    print(f"precision {precision:.3f} recall {recall:.3f}")
    for e in errors:
        print("shape: " + e)
    if precision < 0.95 or recall < 0.95 or errors:
        print(f"traces kept in {root}")
        sys.exit(1)
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
