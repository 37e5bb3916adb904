#!/usr/bin/env python3
"""`cutrace diff` over NCCL's own account (docs/diff.md, docs/nccl.md): each
network link's bandwidth is a per-run metric (`link_gbps:A->B`, higher is
better), and `--by nccl_algo` segments runs by the algorithms NCCL's
profiler descriptors name (distinct, sorted, joined by +).

Side A: 8 runs of a 4-rank all-reduce job (tests/nccl/w_links.c), every
link at 4 GB/s; side B: the same with link 1 -> 2 at 1 GB/s. In each side
4 runs name the algorithm Ring and 4 Tree (NCCL_ALGO; the simulated
schedule is the ring's either way). 4 a segment: the simulated proxy
threads sleep, and on a loaded 2-CPU machine a healthy 4 GB/s link
measured 3.7 to 8.3 GB/s over a run (one late wake-up in a step of 2 ms),
which left 3 against 3 runs at q 0.08-0.18 in two runs of this test. The truth: B's link 1 -> 2 is a quarter
of A's, the others unchanged.

What must hold:
  - diff A B: link_gbps:1->2 regressed, its interval holding 0.25 (the
    measured link is within 15 % of its truth, docs/nccl.md, so the ratio
    of two such is within 0.25 x (1 +- 0.35); asked: the interval's centre
    within that band), every other link no evidence (not under qemu:
    below);
  - diff --by nccl_algo A B: two segments, RING and TREE, 4 runs a side
    each, and in each link_gbps:1->2 regressed.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []
CUTRACE = os.environ["CT_CUTRACE"]


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")


def job(out, algo, slow):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": "4", "W_LINKS_COUNTS": "16777216",
                "NCCL_ALGO": algo})
    env.pop("FAKEGPU_NCCL_LINKS", None)
    env.pop("NCCL_PROFILER_PLUGIN", None)
    if slow:
        env["FAKEGPU_NCCL_LINKS"] = "1-2=1"
    p = subprocess.run([CUTRACE, "run", "-o", out, "--", os.environ["CT_W_LINKS"], "launch", "4"],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"job failed ({p.returncode}): {p.stderr}")


def diff(*args):
    p = subprocess.run([CUTRACE, "diff", "--json"] + list(args), capture_output=True, text=True,
                       timeout=600)
    if p.returncode:
        sys.exit(f"diff failed: {p.stderr}")
    return json.loads(p.stdout)


root = tempfile.mkdtemp(prefix="diff-links-")
for i in range(8):
    algo = "Ring" if i % 2 == 0 else "Tree"
    job(f"{root}/A/run{i}", algo, False)
    job(f"{root}/B/run{i}", algo, True)

seg = diff(f"{root}/A", f"{root}/B")["segments"][0]
m = {x["metric"]: x for x in seg["metrics"]}
links = sorted(k for k in m if k.startswith("link_gbps:"))
check("a metric per link", links == [f"link_gbps:{r}->{(r + 1) % 4}" for r in range(4)],
      str(links))
s = m.get("link_gbps:1->2")
if s:
    check("the slow link regressed", s["verdict"] == "regressed", str(s))
    mid = (s["ci_low"] + s["ci_high"]) / 2 if s["ci_low"] is not None else None
    check("its ratio near a quarter", mid is not None and 0.25 * 0.65 <= mid <= 0.25 * 1.35,
          str(s))
    print(f"link 1->2: B/A {s['ratio']} [{s['ci_low']}, {s['ci_high']}], {s['verdict']}")
# Under qemu-user (CT_EMULATED) a simulated proxy wakes up to ~10 ms late,
# and how late depends on its ring's pacing: a healthy link read 4.93 GB/s
# in A's rings and 4.14 in B's (paced by the slow link) in a CI run, a
# real difference of what was measured, not of the link: there only the
# slow link's verdict is held.
for k in links:
    if k != "link_gbps:1->2" and not os.environ.get("CT_EMULATED"):
        check(f"{k} unchanged", m[k]["verdict"] == "no evidence", str(m[k]))

by = diff("--by", "nccl_algo", f"{root}/A", f"{root}/B")
segs = {x["value"]: x for x in by["segments"]}
check("segments RING and TREE", sorted(segs) == ["RING", "TREE"], str(sorted(segs)))
for name, sg in segs.items():
    mm = {x["metric"]: x for x in sg["metrics"]}
    s = mm.get("link_gbps:1->2")
    check(f"{name}: 4 runs a side", s is not None and s["n_a"] == 4 and s["n_b"] == 4, str(s))
    check(f"{name}: the slow link regressed", s is not None and s["verdict"] == "regressed",
          str(s))

if failures:
    print("FAIL\n  " + "\n  ".join(failures) + f"\ntraces kept in {root}")
    sys.exit(1)
subprocess.run(["rm", "-rf", root])
print("diff links: ok")
