#!/usr/bin/env python3
"""NCCL's network devices (docs/nccl.md, "Network devices"): a 4-rank
all-reduce job (tests/nccl/w_links.c) under `cutrace run` whose simulated
NCCL reports its network plugin's events (IB work requests, NetPlugin
events under the proxy steps: tests/fakegpu/README.md) over 2 devices per
rank, with the link rank 1 -> rank 2 four times slower; the same job with
the socket transport, and with none.

usage: check_net.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                       CT_FAKE_CUPTI)

Truth. 4 steps of one AllReduce of 16 MiB over a ring of 4 ranks on 4
channels: each ProxyOp (rank, channel, direction) makes K = 6 steps of one
1 MiB work request each, on device channel mod 2, queue pair 0x100 + 2 x
channel + (0 send, 1 receive). So per rank, direction and device: 2
channels x 4 ops x 6 = 48 work requests of 48 MiB, exactly, and the
`nccl_net` records' bytes are their ProxyOps' (`nccl_proxy`) to the byte.
A send work request lasts the step's SendWait state (the simulator posts
it as the state begins and completes it as the step ends); the recorder
reads its clock at each of those plugin calls, which follow each other on
the proxy thread, so a ProxyOp's send work requests never take more than
its network time, and take all of it but the calls between (microseconds):
the median ProxyOp's 95 % or more (a median, as a preemption between two of
those calls on a loaded machine moves a ProxyOp, not the middle one). The
slow link: rank 1's sends take 4x the time on the wire; the proxy thread's
late wake-ups (up to ~1 ms a step on the 2-CPU test machine,
tests/nccl/check_links.py) add alike to every rank's work requests, so
rank 1's rate is between 1/4 and (1.05 + 1) / (4.19 + 1) = 0.39 of each
other rank's: below 0.5 of each. Under qemu-user (CT_EMULATED) a simulated
proxy wakes up to ~10 ms late a step (tests/nccl/check_links.py), which
would allow (1.05 + 10) / (4.19 + 10) = 0.78, and the calls around a work
request are emulated too: the two timing checks are left out there, the
exact ones stay.
"""
import json
import os
import subprocess
import sys
import tempfile

from outcome import EMULATED, check, finish, scratch

RANKS, NCH, STEPS, K, CHUNK, DEVS = 4, 4, 4, 6, 1 << 20, 2


def run(name, extra):
    d = tempfile.mkdtemp(prefix=f"nccl-net-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "FAKEGPU_NCCL_LINKS": "1-2=1",
                "W_LINKS_STEPS": str(STEPS), "W_LINKS_COUNTS": "4194304",
                "FAKEGPU_NCCL_NCHANNELS": str(NCH), "FAKEGPU_NCCL_NET_DEVS": str(DEVS)})
    for k in ("FAKEGPU_NCCL_NET", "FAKEGPU_NCCL_PROFILER_VERSION"):
        env.pop(k, None)
    env.update(extra)
    cutrace = os.environ["CT_CUTRACE"]
    traces = os.path.join(d, "traces")
    p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_LINKS"], "launch",
                        str(RANKS)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    rep = json.loads(subprocess.run([cutrace, "report", "--json", traces], capture_output=True,
                                    text=True, timeout=300, check=True).stdout)
    text = subprocess.run([cutrace, "report", traces], capture_output=True, text=True,
                          timeout=300, check=True).stdout
    recs = []
    for f in sorted(os.listdir(traces)):
        out = subprocess.run([cutrace, "dump", "--json", os.path.join(traces, f)],
                             capture_output=True, text=True, timeout=300, check=True).stdout
        recs += [json.loads(line) for line in out.splitlines() if line.strip()]
    return d, traces, rep, text, recs


# 1. IB over 2 devices, the slow link
d, traces, rep, text, recs = run("ib", {})
nets = [r for r in recs if r["kind"] == "nccl_net"]
proxies = [r for r in recs if r["kind"] == "nccl_proxy"]
check("one net record per ProxyOp", len(nets) == len(proxies) == RANKS * STEPS * NCH * 2,
      f"{len(nets)} net, {len(proxies)} proxy")
key = lambda r: (r["rank"], r["correlation_id"], r["channel"], r["peer"], r["direction"])
px = {key(r): r for r in proxies}
for r in nets:
    p = px.get(key(r))
    if not p:
        check("net record of a ProxyOp", False, str(r))
        continue
    check("bytes and work requests are the ProxyOp's", (r["bytes"], r["wrs"]) ==
          (p["bytes"], p["steps"]) == (K * CHUNK, K), f"{r} vs {p}")
    dirn = 0 if r["direction"] == "send" else 1
    check("transport, device, queue pair", (r["transport"], r["device"], r["qp"]) ==
          ("ib", r["channel"] % DEVS, 0x100 + 2 * r["channel"] + dirn), str(r))
    check("none past the slots", (r["other_wrs"], r["other_bytes"]) == (0, 0), str(r))
nics = rep["nccl"]["nics"]
check("a row per rank, device and direction", nics is not None and
      len(nics) == RANKS * DEVS * 2 and rep["nccl"]["nics_reason"] is None, str(nics)[:300])
nics = nics or []
for n in nics:
    want = (NCH // DEVS) * STEPS * K
    check(f"rank {n['rank']} device {n['device']} {n['direction']}: work requests and bytes",
          (n["wrs"], n["bytes"], n["proxy_ops"], n["transport"]) ==
          (want, want * CHUNK, (NCH // DEVS) * STEPS, "ib"), str(n))
ratios = []
for r in nets:
    p = px.get(key(r))
    if p and r["direction"] == "send":
        # inside its ProxyOp's SendWait time: never more (1 us of rounding)
        check("a send's work requests within its ProxyOp's network time",
              r["busy_ns"] <= p["net_ns"] + 1000, f"{r['busy_ns']} vs {p['net_ns']}")
        ratios.append(r["busy_ns"] / p["net_ns"] if p["net_ns"] else 0)
ratios.sort()
check("the median ProxyOp's send work requests take 95 % of its network time or more",
      EMULATED or (ratios and ratios[len(ratios) // 2] >= 0.95),
      str(ratios[len(ratios) // 2] if ratios else None))
rate = {(n["rank"], n["device"]): n["wr_gbps"] for n in nics if n["direction"] == "send"}
for dev in range(DEVS):
    for other in (0, 2, 3):
        a, b = rate.get((1, dev)), rate.get((other, dev))
        check(f"device {dev}: the slow link's sends below half of rank {other}'s",
              a is not None and b and (EMULATED or a < 0.5 * b), f"{a} vs {b}")
check("text: the devices' table", "WR GB/s" in text and "\n  1      ib             0 send" in text,
      text[-1500:])
# the report from summaries is the traces'
sums = os.path.join(d, "sums")
subprocess.run([os.environ["CT_CUTRACE"], "summarize", "-o", sums, traces], check=True,
               capture_output=True, timeout=300)
from_sums = json.loads(subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", sums],
                                      capture_output=True, text=True, check=True,
                                      timeout=300).stdout)
check("summaries carry the devices", from_sums["nccl"]["nics"] == rep["nccl"]["nics"],
      str(from_sums["nccl"]["nics"])[:300])

# 2. sockets
_, _, rep, _, recs = run("socket", {"FAKEGPU_NCCL_NET": "socket"})
nets = [r for r in recs if r["kind"] == "nccl_net"]
check("socket records", nets and all(r["transport"] == "socket" and r["device"] == -1 and
                                     r["qp"] == 100 + 2 * r["channel"] +
                                     (r["direction"] != "send") for r in nets), str(nets[:2]))
nics = rep["nccl"]["nics"] or []
check("socket: one device a direction per rank", len(nics) == RANKS * 2 and
      all(n["device"] == -1 and n["wrs"] == NCH * STEPS * K for n in nics), str(nics)[:300])

# 3. no network events: null with the reason
_, _, rep, text, recs = run("none", {"FAKEGPU_NCCL_NET": "none"})
check("none: no net record", not [r for r in recs if r["kind"] == "nccl_net"], "")
check("none: nics null with the reason", rep["nccl"]["nics"] is None and
      "no network-plugin events" in (rep["nccl"]["nics_reason"] or ""), str(rep["nccl"])[:300])
check("none: text says why", "network devices: - (no network-plugin events" in text, text[-800:])

finish()
