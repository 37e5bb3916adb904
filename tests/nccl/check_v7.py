#!/usr/bin/env python3
"""NCCL's profiler plugin ABI v7 (docs/nccl.md, "Profiler ABI v7"): a 4-rank
all-reduce job (tests/nccl/w_links.c) under `cutrace run` whose simulated
NCCL speaks v7, with each kernel channel's barrier phases
(FAKEGPU_NCCL_KPHASES=30:50) and each op's user tag
(FAKEGPU_NCCL_USER_TAG=1000: the op's tag is 1000 + its sequence number);
then the same job at v6.

usage: check_v7.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                      CT_FAKE_CUPTI)

Truth (tests/fakegpu/README.md): 4 ops on each of 4 ranks, 4 channels: per
op and channel three phases, initial_sync its channel's first 30 us,
final_sync its last 50, compute between. The phases and the channel are
stamped by the GPU's timer and converted with the offset the shim reads
(refreshed each second): a phase's length is a difference of two
conversions of the same offset, exact but for a refresh between them, and a
phase against its channel within 1 us (CT_NCHAN_CLOCK_TOL_NS's argument,
docs/nccl.md); the report's medians likewise. A tag's ops are the 4 ranks'
instances of one op; its GPU time is their GPU intervals' sum (the dump's
nccl records), to the report's 0.001 us. At v6: no phase and no tag
record, and the report's figures are null with the reasons. The report
from the v7 job's summaries is its traces'.
"""
import json
import os
import subprocess
import sys
import tempfile
from statistics import median

from outcome import check, finish, scratch

RANKS, NCH, STEPS, INIT, FINAL = 4, 4, 4, 30000, 50000
CUTRACE = os.environ["CT_CUTRACE"]


def run(name, extra):
    d = tempfile.mkdtemp(prefix=f"nccl-v7-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": str(STEPS),
                "W_LINKS_COUNTS": "4194304", "FAKEGPU_NCCL_NCHANNELS": str(NCH)})
    for k in ("FAKEGPU_NCCL_KPHASES", "FAKEGPU_NCCL_USER_TAG", "FAKEGPU_NCCL_PROFILER_VERSION",
              "FAKEGPU_NCCL_CH_SETUP_US", "FAKEGPU_NCCL_SLOW_CHANNEL", "FAKEGPU_NCCL_LINKS"):
        env.pop(k, None)
    env.update(extra)
    traces = os.path.join(d, "traces")
    p = subprocess.run([CUTRACE, "run", "-o", traces, "--", os.environ["CT_W_LINKS"], "launch",
                        str(RANKS)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    rep = subprocess.run([CUTRACE, "report", "--json", traces], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    text = subprocess.run([CUTRACE, "report", traces], capture_output=True, text=True,
                          timeout=300, check=True).stdout
    recs = []
    for f in sorted(os.listdir(traces)):
        out = subprocess.run([CUTRACE, "dump", "--json", os.path.join(traces, f)],
                             capture_output=True, text=True, timeout=300, check=True).stdout
        recs += [json.loads(line) for line in out.splitlines() if line.strip()]
    return d, traces, rep, text, recs


d, traces, rep_s, text, recs = run("v7", {"FAKEGPU_NCCL_PROFILER_VERSION": "7",
                                         "FAKEGPU_NCCL_KPHASES": "30:50",
                                         "FAKEGPU_NCCL_USER_TAG": "1000"})
rep = json.loads(rep_s)
phases = [r for r in recs if r["kind"] == "nccl_phase"]
chans = {(r["rank"], r["correlation_id"], r["channel"]): r for r in recs
         if r["kind"] == "nccl_channel"}
check("three phases per channel of each op", len(phases) == 3 * RANKS * STEPS * NCH and
      len(chans) == RANKS * STEPS * NCH, f"{len(phases)} phases, {len(chans)} channels")
for p in phases:
    c = chans.get((p["rank"], p["correlation_id"], p["channel"]))
    if not c:
        check("a phase of a recorded channel", False, str(p))
        continue
    length = p["end_ns"] - p["start_ns"]
    if p["phase"] == "initial_sync":
        check("initial_sync: 30 us from the channel's start",
              abs(length - INIT) <= 1000 and abs(p["start_ns"] - c["start_ns"]) <= 1000, str(p))
    elif p["phase"] == "final_sync":
        check("final_sync: the channel's last 50 us",
              abs(length - FINAL) <= 1000 and abs(p["end_ns"] - c["end_ns"]) <= 1000, str(p))
    else:
        want = c["end_ns"] - c["start_ns"] - INIT - FINAL
        check("compute: the rest of the channel", p["phase"] == "compute" and
              abs(length - want) <= 1000, f"{p} vs {want}")
coll = [c for c in rep["nccl"]["collectives"] if c["op"] == "AllReduce"]
check("one collective row", len(coll) == 1, str(coll))
if coll:
    c = coll[0]
    runs = [(x["end_ns"] - x["start_ns"]) for x in chans.values()]
    want_compute = median(
        max(chans[k]["end_ns"] - chans[k]["start_ns"] for k in chans if k[:2] == op) - INIT - FINAL
        for op in {k[:2] for k in chans})
    check("report: the phases' medians",
          c["phase_instances"] == RANKS * STEPS and abs(c["initial_sync_p50_us"] - 30) <= 1.001
          and abs(c["final_sync_p50_us"] - 50) <= 1.001
          and abs(c["compute_p50_us"] - want_compute / 1e3) <= 1.001
          and c["phase_reason"] is None, f"{c} (compute {want_compute / 1e3:.3f})")
check("text: the phases' table", "kernel barrier phases (v7), p50 us:" in text, text[-1500:])
# user tags: 1000 + the op's sequence number on every rank
tags = {r["correlation_id"] + (r["rank"] << 48): r["tag"] for r in recs if r["kind"] == "nccl_tag"}
check("a tag per op", len(tags) == RANKS * STEPS and
      sorted(set(tags.values())) == [1000 + i for i in range(STEPS)], str(sorted(tags.values())))
gpu = {}
for r in recs:
    if r["kind"] == "nccl" and "gpu_start_ns" in r:
        t = tags.get(r["correlation_id"] + (r["rank"] << 48))
        if t:
            gpu[t] = gpu.get(t, 0) + r["gpu_end_ns"] - r["gpu_start_ns"]
ut = rep["nccl"]["user_tags"] or []
check("report: a row per tag, its ops and GPU time", [u["tag"] for u in ut] ==
      [1000 + i for i in range(STEPS)] and all(
          u["ops"] == u["timed_ops"] == RANKS and abs(u["gpu_us"] - gpu[u["tag"]] / 1e3) <= 0.001
          for u in ut) and rep["nccl"]["user_tags_reason"] is None, f"{ut} vs {gpu}")
check("text: the tags", "user tag 1000: 4 ops, GPU " in text, text[-1500:])
# summaries carry both
sums = os.path.join(d, "sums")
subprocess.run([CUTRACE, "summarize", "-o", sums, traces], check=True, capture_output=True,
               timeout=300)
b = subprocess.run([CUTRACE, "report", "--json", sums], capture_output=True, text=True,
                   timeout=300, check=True).stdout
check("the report from summaries is the traces'", b == rep_s, "differs")

# v6: neither, with the reasons
_, _, rep_s, _, recs = run("v6", {"FAKEGPU_NCCL_KPHASES": "30:50",
                                  "FAKEGPU_NCCL_USER_TAG": "1000"})
rep = json.loads(rep_s)
check("v6: no phase or tag record",
      not [r for r in recs if r["kind"] in ("nccl_phase", "nccl_tag")], "")
check("v6: phases null with the reason", all(
    c["phase_instances"] == 0 and c["compute_p50_us"] is None and
    "ABI v7" in (c["phase_reason"] or "") for c in rep["nccl"]["collectives"]),
      str(rep["nccl"]["collectives"])[:400])
check("v6: tags null with the reason", rep["nccl"]["user_tags"] is None and
      "v7" in (rep["nccl"]["user_tags_reason"] or ""), str(rep["nccl"].get("user_tags_reason")))

finish()
