#!/usr/bin/env python3
"""Iterations of real Kineto traces whose step annotations were removed.

For each multi-step trace below (HTA's samples and TraceLens's training
trace in tests/data/kineto, several vendors' GPUs), writes a copy without its
ProfilerStep#N events and checks, in each mode (HTA-compatible and
--no-hta), that `cutrace report --json` finds from the repeating work alone
exactly the annotated iterations of the same mode: source "period", a
confidence in (0, 1], the same count (no false step, none missed), every
start and the last end within 2 % of the median annotated step. HTA's mode
leaves out the capture's last step in both (with the annotations HTA's
preprocessing drops it; without them cutrace does, and says so), so it has
one iteration fewer than --no-hta and the others are the same instants. One
exception, HTA's own: a trace whose GPU-side ProfilerStep rows start after
its last CPU-side one (the host ran ahead) moves HTA's cut past the last
step, which it then keeps; stripped of its annotations it has no such row,
and the last step goes (resnet_act_checkpoint: 3 annotated, 2 found, the
2 the same).

Tolerance: the annotated start is prof.step()'s host time; the found one is
the step's first launch, or the end of the sync that closed the step before.
Between the two lies only host work before the step's first launch (the next
batch's fetch, zero_grad), 0 to 1.5 % of a step on these traces; a step whose
host ran ahead starts, annotated or not, where its GPU work can begin, by one
rule (docs/report.md). 2 % bounds the first with the traces' margin, and a
step cut at the wrong phase or a layer taken for a step is 10 % or more off.
The same instants in both modes: within 0.1 % of a step (HTA's µs rounding
moves a boundary by under a µs, a dropped sub-µs op by a few).

Then single-step captures (inference: BERT, a ViT, an LLM prefill of 36
layers, serving steps of SGLang and vLLM on AMD and NVIDIA GPUs): their
layers repeat, the step does not, so the stripped trace gives no
iterations (source none, the note says why), in both modes. The multi-step
traces whose steps do not repeat give none too; and a trace whose work
never repeats: no iterations, confidence null with a note, no step time
(null; the text says so).
Prints each boundary's distance to the annotated one, in % of the median
annotated step (docs/report.md gives these figures).

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
    "tracelens/mi300/resnet_act_checkpoint.json.gz",
]
# One step captured whole (one ProfilerStep, or one serving step without
# any): layers repeat inside it, and none of them is a step
ONE_STEP = [
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    "tracelens/b200/eager_trace.json.gz",
]
# Multi-step traces whose steps do not repeat: nothing to find, and nothing
# may be invented (trace_compare: a step of 10 ops, then one of 6 others;
# the MI250 toy: its second step is empty)
UNLIKE = [
    "trace_compare/base/base.json.gz",
    "trace_compare/test/test.json.gz",
    "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]
MODES = ([], ["--no-hta"])


def report(cutrace, path, *opts):
    out = subprocess.run([cutrace, "report", "--json", "--rank-iterations", *opts, path], check=True,
                         capture_output=True, text=True).stdout
    d = json.loads(out)
    r = d["ranks"][0]
    r["time_zero_ns"] = d["job"]["time_zero_ns"]
    return r


def text(cutrace, path, *opts):
    return subprocess.run([cutrace, "report", *opts, path], check=True, capture_output=True,
                          text=True).stdout


def strip(src, dst):
    """Writes src without its ProfilerStep#N events (CPU and GPU rows)."""
    d = json.load(gzip.open(src))
    if isinstance(d, list):
        d = {"traceEvents": d}
    d["traceEvents"] = [e for e in d["traceEvents"]
                        if not str(e.get("name", "")).startswith("ProfilerStep#")]
    with open(dst, "w") as f:
        json.dump(d, f)


def hta_keeps_last(src):
    """1 when HTA's preprocessing keeps the last annotated step: its cut is
    the latest start of any ProfilerStep row it counts as CPU, and a
    GPU-side row (gpu_user_annotation) can start after the last CPU-side
    one."""
    ev = json.load(gzip.open(src))["traceEvents"]
    steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
    cpu = [e["ts"] for e in steps if e.get("cat") == "user_annotation"]
    gpu = [e["ts"] for e in steps if e.get("cat") == "gpu_user_annotation"]
    return bool(cpu and gpu and max(gpu) > max(cpu))


def main():
    cutrace, data = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for rel in TRACES:
            src = os.path.join(data, rel)
            bare = os.path.join(tmp, os.path.basename(rel).replace(".gz", ""))
            strip(src, bare)
            found = {}
            for mode in MODES:
                want = report(cutrace, src, *mode)
                got = report(cutrace, bare, *mode)
                wi, gi = want["iterations"], got["iterations"]
                if not mode and hta_keeps_last(src):
                    wi = wi[:-1]  # HTA's cut past the last step: see above
                # the two reports' times from their own zero (HTA's mode
                # keeps every row of the stripped trace, fewer than 2 step
                # names, and drops those launched before the annotated
                # capture: two origins), compared on the trace's clock
                zw, zg = want["time_zero_ns"] / 1e3, got["time_zero_ns"] / 1e3
                for i in wi:
                    i["start_us"] += zw
                    i["end_us"] += zw
                for i in gi:
                    i["start_us"] += zg
                    i["end_us"] += zg
                med = statistics.median(i["duration_us"] for i in wi)
                err = [abs(g["start_us"] - w["start_us"]) / med * 100 for w, g in zip(wi, gi)]
                if wi and gi:
                    err.append(abs(gi[-1]["end_us"] - wi[-1]["end_us"]) / med * 100)
                ok = (want["iteration_source"] == "ranges" and got["iteration_source"] == "period"
                      and want["iteration_confidence"] == 1
                      and 0 < got["iteration_confidence"] <= 1 and len(gi) == len(wi)
                      and max(err) <= 2.0)
                # every iteration holds work and lies in the data: no
                # empty step, none before the capture or after its GPU work
                ok = ok and all(i["compute_us"] + i["comm_us"] + i["memory_us"] > 0 for i in gi)
                ok = ok and all(a["end_us"] <= b["end_us"] for a, b in zip(gi, gi[1:]))
                ok = ok and gi[0]["start_us"] >= wi[0]["start_us"] - 0.02 * med
                # the text report says where its iterations came from
                ok = ok and "Iterations from step ranges on every rank" in text(cutrace, src,
                                                                                *mode)
                ok = ok and ("Iterations of rank %d: %d found from the work that repeats"
                             % (got["rank"], len(gi)) in text(cutrace, bare, *mode))
                found[tuple(mode)] = (gi, med)
                print("%s %s %s: annotated %d, found %d (confidence %.3f), boundary offsets %s %% "
                      "of the median step" % ("ok" if ok else "FAIL", rel,
                                              " ".join(mode) or "hta", len(wi), len(gi),
                                              got["iteration_confidence"] or 0,
                                              " ".join("%.1f" % e for e in err)))
                failed += not ok
            # one set of instants in both modes, HTA's without the last step
            (hta, med), (raw, _) = found[()], found[("--no-hta",)]
            same = len(hta) + 1 == len(raw) and all(
                abs((h["start_us"] - hta[0]["start_us"]) - (r["start_us"] - raw[0]["start_us"]))
                <= 0.001 * med for h, r in zip(hta, raw))
            print("%s %s: HTA's mode %d, --no-hta %d, the same boundaries" % (
                "ok" if same else "FAIL", rel, len(hta), len(raw)))
            failed += not same
        for rel in ONE_STEP:
            bare = os.path.join(tmp, "one.json")
            strip(os.path.join(data, rel), bare)
            for mode in MODES:
                got = report(cutrace, bare, *mode)
                ok = (got["iteration_source"] == "none" and got["iterations"] == []
                      and got["iteration_confidence"] is None
                      and "parts of one step" in got.get("iteration_note", ""))
                print("%s %s %s: one step, source %s, %d found" % (
                    "ok" if ok else "FAIL", rel, " ".join(mode) or "hta", got["iteration_source"],
                    len(got["iterations"])))
                failed += not ok
        for rel in UNLIKE:
            bare = os.path.join(tmp, "unlike.json")
            strip(os.path.join(data, rel), bare)
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
