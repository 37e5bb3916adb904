#!/usr/bin/env python3
"""NVLS and CollNet on the simulated NCCL (docs/nccl.md, "In-switch
algorithms"; tests/fakegpu/README.md): what cutrace makes of collectives the
switch reduces, against the simulator's schedule (tests/fakegpu/fn_algos.c).

usage: check_nvls.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                        CT_FAKEGPU_NVML_DIR, CT_FAKE_CUPTI)

1. A size sweep on one node (4 ranks, tests/nccl/w_links.c, the host ahead of
   the GPU so that every rank starts each op together after the first step):
   all-reduces of 1, 4, 16 and 64 MiB, NCCL choosing RING up to 5 MB and
   NVLS above (FAKEGPU_NCCL_ALGOS=RING:5000000,NVLS), ring links at 4 GB/s,
   each GPU's NVSwitch port at 450 GB/s one way, 18 NVLink links read from
   the simulated NVML. Truth: an NVLS all-reduce of S lasts S x 5/4 / 450
   GB/s (64 MiB: 186.4 us), bus bandwidth S x 3/2 over that = 540 GB/s,
   above the one-way link bound of 450 GB/s by 20 %.
   - the collectives table names RING/LL for 1 and 4 MiB and NVLS/SIMPLE for
     16 and 64 MiB;
   - speed of light: the ring rows have the NVML bound and their share; the
     NVLS rows none (null, the reason naming NVLS), though their busbw is
     above 450 GB/s: never a share over 100 %;
   - the wait/transfer split of NCCL's section: NVLS ops have no proxy steps,
     so null with the NVLS reason; the report's collectives table keeps its
     split from the ranks' arrivals: transfer = the op's schedule, 186.4 us
     for 64 MiB;
   - no nccl_choice finding: NVLS is faster than the ring below it. The rule
     compares bus bandwidths of one op and rank count, whose bus factor
     2(n-1)/n does not depend on the algorithm: the comparison is the
     algorithm bandwidth's, i.e. how fast the job's bytes moved, which is
     like with like whatever reduced them; so the reverse sweep (NVLS up to
     5 MB, RING above) is named: the 16 MiB ring runs at ~4 GB/s against
     540 GB/s for 4 MiB under NVLS, a real loss (NVLS was available).
2. CollNet Direct across 2 "nodes" of 2 ranks (FAKEGPU_NCCL_RANKS_PER_NODE=2)
   for 64 MiB, the ring for 4 MiB, every NIC and link at 4 GB/s: the CollNet
   ProxyOps' peer is 4 (the communicator's size: NCCL's collective-network
   endpoint), 8 steps of 2 MiB a channel; no link is made from them: the links are exactly the
   ring's four rank -> rank + 1, the CollNet send ProxyOps counted in the
   section's `unavailable` (4 ranks x 8 steps x 2 channels = 64); the 64 MiB
   row's transfer is the head's network time, 8 steps of a 4 MiB chunk at 4
   GB/s = 8.39 ms (each ProxyOp's SendWait sums its steps' chunk time, read
   late by the proxy thread's wake-ups: within 15 %, as nccl-links argues);
   no speed of light for it (CollNet). CollNet Chain: only the chain roots
   (ranks 0 and 2) have ProxyOps.
"""
import json
import os
import subprocess
import sys
import tempfile

from outcome import EMULATED, check, finish, near, scratch

MIB = 1 << 20


def run(name, ranks, extra, cmds=("report", "diagnose")):
    d = tempfile.mkdtemp(prefix=f"nvls-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "CUTRACE_NVML_LIB": os.path.join(os.environ["CT_FAKEGPU_NVML_DIR"],
                                                 "libnvidia-ml.so.1"),
                "FAKEGPU_NVLINK_LINKS": "18", "FAKEGPU_NET_GBPS": "4",
                "W_LINKS_STEPS": "6", "W_LINKS_AHEAD": "1", "W_LINKS_COMPUTE_US": "1000"})
    for k in ("FAKEGPU_NCCL_LINKS", "FAKEGPU_NCCL_ALGOS", "FAKEGPU_NCCL_PROTOS"):
        env.pop(k, None)
    env.update(extra)
    cutrace = os.environ["CT_CUTRACE"]
    traces = os.path.join(d, "traces")
    p = subprocess.run([cutrace, "run", "-o", traces, "--", os.environ["CT_W_LINKS"], "launch",
                        str(ranks)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    out = {}
    for cmd in cmds:
        r = subprocess.run([cutrace, cmd, "--json", traces], capture_output=True, text=True,
                           timeout=300)
        if r.returncode:
            sys.exit(f"{name}: {cmd} failed: {r.stderr}")
        out[cmd] = json.loads(r.stdout) if cmd != "dump" else r.stdout
    out["traces"] = traces
    return out


def choice_findings(diag):
    return [f for f in diag["findings"] if f["kind"] == "nccl_choice"]


SIZES = [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB]
COUNTS = ",".join(str(s // 4) for s in SIZES)

# 1. RING below 5 MB, NVLS above.
o = run("sweep", 4, {"W_LINKS_COUNTS": COUNTS, "FAKEGPU_NCCL_ALGOS": "RING:5000000,NVLS"})
rep, diag = o["report"], o["diagnose"]
nc = {c["bytes"]: c for c in rep["nccl"]["collectives"]}
check("a row per size", sorted(nc) == SIZES, str(sorted(nc)))
for b in SIZES:
    want = "RING/LL" if b < 5000000 else "NVLS/SIMPLE"
    c = nc.get(b, {})
    check(f"choice of {b}", f"{c.get('algo')}/{c.get('proto')}" == want, str(c))
    if b > 5000000:
        check(f"NVLS {b}: no proxy split, the reason", c.get("wait_p50_us") is None and
              c.get("transfer_p50_us") is None and "NVLS" in (c.get("split_reason") or ""), str(c))
    else:
        check(f"ring {b}: proxy split", c.get("transfer_p50_us") is not None and
              c.get("split_reason") is None, str(c))
rows = {c["bytes"]: c for c in rep["collectives"] if c["op"] == "AllReduce"}
for b in SIZES:
    c = rows.get(b)
    if not c:
        check(f"collectives row {b}", False, "missing")
        continue
    if b < 5000000:
        check(f"ring {b}: NVML bound", c["sol_gbps"] == 450.0 and c["sol_reason"] is None, str(c))
        if c["sol_pct"] is not None:
            near(f"ring {b}: its share", c["sol_pct"], 100 * c["busbw_gbps"] / 450.0, 0.01)
    else:
        check(f"NVLS {b}: no bound, NVLS named", c["sol_gbps"] is None and c["sol_pct"] is None
              and "NVLS" in (c["sol_reason"] or ""), str(c))
        # the simulator: S x 5/4 / 450 GB/s; the kernel records are the
        # virtual schedule's, so the arrival rule's transfer is exact but for
        # the timestamps' conversion (1 us)
        xfer_us = b * 5 / 4 / 450e3
        near(f"NVLS {b}: transfer from arrivals", c["transfer_p50_us"], xfer_us, 0.0, 1.0)
        if b == 64 * MIB and EMULATED:
            # the busbw is from the op's median duration, which holds the
            # ranks' arrival skew: under qemu beside other suites the host
            # paces the steps (a CI run: p50 1604 us for a 186 us transfer)
            print("skipped under qemu: NVLS busbw against the schedule (the host paces it)")
        elif b == 64 * MIB:
            # the median instance starts aligned (host ahead): busbw = 540 GB/s
            near("NVLS 64 MiB busbw", c["busbw_gbps"], 540.0, 0.01)
            check("NVLS busbw above the link bound", c["busbw_gbps"] > 450 * 1.05, str(c))
# the text: the NVLS rows' dashes with their reason, once
text = subprocess.run([os.environ["CT_CUTRACE"], "report", o["traces"]], capture_output=True,
                      text=True, timeout=300).stdout
check("text: the NVLS reason once", text.count("    -: NVLS: the NVSwitch reduces") == 1,
      text[text.find("NCCL (profiler"):][:1500])
check("RING -> NVLS: no nccl_choice finding", choice_findings(diag) == [],
      str(choice_findings(diag)))
check("no links invented: ring links only", all(
    0 <= l["dst"] < 4 for l in rep["nccl"]["links"] or []), str(rep["nccl"]["links"]))

# the reverse: NVLS up to 5 MB, the ring above: the 16 MiB ring is named
o = run("reverse", 4, {"W_LINKS_COUNTS": COUNTS, "FAKEGPU_NCCL_ALGOS": "NVLS:5000000,RING",
                       "W_LINKS_STEPS": "4"})
f = [x["evidence"] for x in choice_findings(o["diagnose"])]
if EMULATED and not f:
    # under qemu the host's own overhead paces the steps (each call runs
    # several times slower than the simulated GPU), so the replay of the
    # faster 16 MiB ring saves nothing and dismisses the finding: the rule
    # must still have named it, and only the replay set it aside
    dis = [x["kind"] for x in o["diagnose"]["dismissed_by_replay"]]
    check("NVLS -> RING: the ring named (dismissed by the replay under emulation)",
          "nccl_choice" in dis, str(dis))
else:
    check("NVLS -> RING: the ring named",
          len(f) == 1 and f[0]["bytes"] == 16 * MIB and f[0]["choice"] == "RING/LL" and
          f[0]["smaller_choice"] == "NVLS/SIMPLE", str(f))

# 2. CollNet Direct over 2 nodes of 2 for 64 MiB, the ring for 4 MiB.
#    A synchronize after each step (W_LINKS_AHEAD=0): with the host ahead, the
#    simulated proxy thread learns an op's end late and makes its steps in a
#    burst (a 4 GB/s ring link read at ~390 GB/s), which the sweep above does
#    not read.
#    8 steps: in the first one or two the ranks arrive apart and a rank's
#    proxy thread learns the op's end (from the last arrival) late, so those
#    instances' steps come in a burst; the median over 32 instances is a
#    steady one's.
o = run("collnet", 4, {"W_LINKS_COUNTS": f"{MIB},{16 * MIB}", "W_LINKS_STEPS": "8",
                       "W_LINKS_AHEAD": "0",
                       "FAKEGPU_NCCL_ALGOS": "RING:5000000,COLLNET_DIRECT",
                       "FAKEGPU_NCCL_RANKS_PER_NODE": "2"}, ("report", "dump"))
n = o["report"]["nccl"]
links = sorted((l["src"], l["dst"]) for l in n["links"] or [])
check("links: the ring's only", links == [(r, (r + 1) % 4) for r in range(4)], str(links))
check("no slow link", n["slow_links"] == [], str(n["slow_links"]))
check("the CollNet ProxyOps counted", any(u.startswith("64 send ProxyOps to the collective network")
                                          for u in n["unavailable"]), str(n["unavailable"]))
peers = {}
for line in o["dump"].splitlines():
    if '"nccl_proxy"' in line:
        r = json.loads(line)
        peers.setdefault(r["peer"], []).append(r)
# 4 ranks x 8 ops x 2 channels x send and receive; a head's 32 MiB in 8
# steps over 2 channels: 2 MiB a channel's chunk
check("CollNet ProxyOps: peer 4, 8 steps of a 2 MiB chunk",
      len(peers.get(4, [])) == 4 * 8 * 2 * 2 and
      all(r["nsteps"] == 8 and r["chunk_size"] == 2 * MIB for r in peers.get(4, [])),
      str({k: len(v) for k, v in peers.items()}))
nc = {c["bytes"]: c for c in n["collectives"]}
c = nc.get(64 * MIB, {})
check("CollNet row", c.get("algo") == "COLLNET_DIRECT" and c.get("proto") == "SIMPLE", str(c))
# under qemu a proxy wake-up is ~10 ms late against 1.05 ms steps (check_links.py):
# the network time is noise there (a CI run read 7.08 ms for 8.39)
if EMULATED:
    print("skipped under qemu: CollNet transfer against the schedule (proxy wake-ups)")
else:
    near("CollNet transfer: the head's network time", c.get("transfer_p50_us"),
         8 * 4 * MIB / 4e3, 0.15)
for row in o["report"]["collectives"]:
    if row["bytes"] == 64 * MIB:
        check("CollNet: no bound, named", row["sol_gbps"] is None and
              "CollNet" in (row["sol_reason"] or ""), str(row))

# CollNet Chain: only the chain roots talk to the switch.
o = run("chain", 4, {"W_LINKS_COUNTS": f"{16 * MIB // 4}", "W_LINKS_STEPS": "2",
                     "W_LINKS_AHEAD": "0",
                     "FAKEGPU_NCCL_ALGOS": "COLLNET_CHAIN", "FAKEGPU_NCCL_RANKS_PER_NODE": "2"},
        ("report",))
n = o["report"]["nccl"]
check("chain: no links", n["links"] is None, str(n["links"]))
check("chain: 2 roots x 2 ops x 2 channels counted",
      any(u.startswith("8 send ProxyOps to the collective network") for u in n["unavailable"]) and
      not any("no NCCL proxy-step records" in u for u in n["unavailable"]), str(n["unavailable"]))

finish()
