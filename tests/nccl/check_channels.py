#!/usr/bin/env python3
"""An NCCL kernel's channels (docs/nccl.md, "Kernel channels"): a 4-rank
all-reduce job (tests/nccl/w_links.c) under `cutrace run` with one slow
channel, the same job with even channels at plugin ABI v4, and at ABI v3,
against the simulated NCCL's schedule (tests/fakegpu/README.md, "Kernel
channels"); the slow job's report from its summaries is its traces'.

usage: check_channels.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                            CT_FAKE_CUPTI)

Truth. 4 steps, each a 2 ms compute kernel, then one AllReduce of 4 Mi
float32 (S = 16 MiB) over 4 ranks at 4 GB/s on 4 channels: a ring of
K = 6 steps of S/4 = 4 MiB, D = 1048.576 us each. FAKEGPU_NCCL_CH_SETUP_US=
20:5: channel c starts 20 + 5c us after its kernel, so the setup is 20 us
and the channels' start spread 15 us; the transfer begins 35 us after the
latest rank's kernel start. FAKEGPU_NCCL_SLOW_CHANNEL=2:3: channel 2
carries its share 3x slower, so it stops (3 - 1) x K x D = 12582.912 us
after the others (the stop spread) and is the busiest in every instance;
its run is from its start (own kernel start + 30 us) to the op's end (the
latest rank's kernel start + 35 us + 3 x K x D). The kernels' starts are
the ranks' CUPTI kernel records in `cutrace dump` (the simulated GPU's
virtual clock, exact); the run's truth is computed from them per instance,
its median compared with the report's.

Tolerances. A channel's times are the GPU's globaltimer (virtual
CLOCK_MONOTONIC plus the realtime - monotonic offset the simulator sampled
once) converted back with the offset the shim reads (refreshed each
second): the two offsets differ by the time between their back-to-back
reads and any NTP slew, measured 0.26-0.3 us. So a setup, which sets a
converted time against a CUPTI one, is within 2 us (CT_NCHAN_CLOCK_TOL_NS);
spreads and runs, differences of times converted with one offset (or two
reads a second apart), within 1 us; plus the report's 0.001 us rounding.
The simulated proxy thread's lateness does not enter: the plugin's channel
times are the timer values NCCL passes, not when the calls come. Under
qemu-user (CT_EMULATED) the two conversions were measured 20 us apart (the
setup read 0.3 us for 20): the setup is not checked there.
"""
import json
import os
import subprocess
import sys
import tempfile
from statistics import median

from outcome import EMULATED, check, failures, finish, scratch

K, D = 6, 1048576.0  # ns
SETUP, STAGGER, SLOW, FACTOR, NCH, RANKS, STEPS = 20000, 5000, 2, 3, 4, 4, 4


def near(what, got, want, tol):
    check(what, got is not None and abs(got - want) <= tol, f"got {got}, want {want} +- {tol}")


def run(name, extra):
    d = tempfile.mkdtemp(prefix=f"channels-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": str(STEPS),
                "W_LINKS_COUNTS": "4194304", "FAKEGPU_NCCL_NCHANNELS": str(NCH)})
    for k in ("FAKEGPU_NCCL_LINKS", "FAKEGPU_NCCL_CH_SETUP_US", "FAKEGPU_NCCL_SLOW_CHANNEL",
              "FAKEGPU_NCCL_PROFILER_VERSION"):
        env.pop(k, None)
    env.update(extra)
    cutrace = os.environ["CT_CUTRACE"]
    traces = os.path.join(d, "traces")
    p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_LINKS"], "launch",
                        str(RANKS)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    r = subprocess.run([cutrace, "report", "--json", traces], capture_output=True, text=True,
                       timeout=300)
    if r.returncode:
        sys.exit(f"{name}: report failed: {r.stderr}")
    text = subprocess.run([cutrace, "report", traces], capture_output=True, text=True,
                          timeout=300).stdout
    recs = []
    for f in sorted(os.listdir(traces)):
        out = subprocess.run([cutrace, "dump", "--json", os.path.join(traces, f)],
                             capture_output=True, text=True, timeout=300).stdout
        recs += [json.loads(line) for line in out.splitlines() if line.strip()]
    scratch_traces[name] = traces
    return json.loads(r.stdout), text, recs


scratch_traces = {}


# 1. One slow channel, with setup and stagger.
rep, text, recs = run("slow", {"FAKEGPU_NCCL_CH_SETUP_US": "20:5",
                               "FAKEGPU_NCCL_SLOW_CHANNEL": f"{SLOW}:{FACTOR}"})
chans = [r for r in recs if r["kind"] == "nccl_channel"]
check("channel records", len(chans) == RANKS * STEPS * NCH and
      sorted({c["channel"] for c in chans}) == list(range(NCH)), f"{len(chans)} records")
coll = rep["nccl"]["collectives"]
check("one collective row", len(coll) == 1, str(coll))
c = coll[0] if coll else {}
check("instances", c.get("channel_instances") == RANKS * STEPS, str(c))


def setup_ok(what, row, want):
    """The setup within 2 us; not checked under emulation, where the two
    conversions of the GPU's timer (CUPTI's of the kernel, the offset the
    shim reads for the channels) were measured 20 us apart in a CI run
    (setup 0.3 us for 20): the rule's 2 us agreement does not hold there."""
    if not EMULATED:
        near(what, row.get("kernel_setup_p50_us"), want, 2.0)


setup_ok("setup us", c, SETUP / 1e3)
near("start spread us", c.get("channel_start_spread_p50_us"), (NCH - 1) * STAGGER / 1e3, 1.0)
check("busiest channel", c.get("busiest_channel") == SLOW and c.get("busiest_channel_pct") == 100.0,
      str(c))
near("stop spread us", c.get("channel_stop_spread_p50_us"), (FACTOR - 1) * K * D / 1e3, 1.0)
check("no reasons", c.get("channel_reason") is None and
      (c.get("kernel_setup_reason") is None or EMULATED) and
      c.get("busiest_channel_reason") is None, str(c))
# the slow channel's run from the ranks' kernel starts (the k-th NCCL kernel
# of a rank is its k-th all-reduce)
starts = {}
for r in recs:
    if r["kind"] == "gpu" and r["type"] == "kernel" and r["name"].startswith("ncclDevKernel"):
        starts.setdefault(r["rank"], []).append(r["start_ns"])
check("kernels", sorted(starts) == list(range(RANKS)) and
      all(len(v) == STEPS for v in starts.values()), str({k: len(v) for k, v in starts.items()}))
if not failures:
    runs = []
    for k in range(STEPS):
        latest = max(sorted(v)[k] for v in starts.values())
        end = latest + SETUP + (NCH - 1) * STAGGER + FACTOR * K * D
        runs += [end - (sorted(v)[k] + SETUP + SLOW * STAGGER) for v in starts.values()]
    near("busiest channel's run us", c.get("busiest_channel_run_p50_us"), median(runs) / 1e3, 1.0)
check("text table", "kernel channels, p50 us:" in text and
      any(l.split()[:1] == ["AllReduce"] and l.split()[5:6] == [str(SLOW)]
          for l in text.splitlines()), text)

# Summaries carry the channel records (summary version 10): the report from
# them is the traces' byte for byte.
sums = scratch_traces["slow"] + "-sums"
r = subprocess.run([os.environ["CT_CUTRACE"], "summarize", "-o", sums, scratch_traces["slow"]],
                   capture_output=True, text=True, timeout=300)
check("summarize", r.returncode == 0, r.stderr)
a = subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", scratch_traces["slow"]],
                   capture_output=True, text=True, timeout=300).stdout
b = subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", sums], capture_output=True,
                   text=True, timeout=300).stdout
check("the report from summaries is the traces'", a == b and
      json.loads(b)["nccl"]["collectives"][0]["busiest_channel"] == SLOW, "they differ")

# 2. Even channels at ABI v4 (its KernelCh events carry the timers too): no
#    setup, no spreads, no busiest channel (every instance a tie).
rep, text, recs = run("even-v4", {"FAKEGPU_NCCL_PROFILER_VERSION": "4"})
c = rep["nccl"]["collectives"][0]
check("v4 channel records", sum(r["kind"] == "nccl_channel" for r in recs) == RANKS * STEPS * NCH,
      "")
setup_ok("even setup us", c, 0.0)
near("even start spread us", c["channel_start_spread_p50_us"], 0.0, 1.0)
near("even stop spread us", c["channel_stop_spread_p50_us"], 0.0, 1.0)
check("even: no busiest channel, with the reason", c["busiest_channel"] is None and
      c["busiest_channel_pct"] is None and "busiest in more than half" in
      (c["busiest_channel_reason"] or ""), str(c))

# 3. ABI v3: no timers, so no channel records; every figure null, the reason.
rep, text, recs = run("v3", {"FAKEGPU_NCCL_PROFILER_VERSION": "3"})
c = rep["nccl"]["collectives"][0]
check("v3: no channel records", not any(r["kind"] == "nccl_channel" for r in recs), "")
check("v3: nulls with the reason", c["channel_instances"] == 0 and
      all(c[k] is None for k in ("kernel_setup_p50_us", "channel_start_spread_p50_us",
                                 "busiest_channel", "busiest_channel_run_p50_us",
                                 "channel_stop_spread_p50_us")) and
      "ABI v4" in (c["channel_reason"] or ""), str(c))
check("v3 text: dashes and the reason", "no per-channel records" in text, text)

finish()
