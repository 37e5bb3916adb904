#!/usr/bin/env python3
"""Raw NCCL proxy steps (docs/nccl.md, "Raw proxy steps"): a 4-rank
all-reduce job (tests/nccl/w_links.c) under `cutrace run` whose simulated
NCCL makes its ProxySteps from its schedule (tests/fakegpu/fn_proxy_steps.c),
with CUTRACE_NCCL_STEPS on, with a budget smaller than the job's steps, off,
and bad.

usage: check_steps.py   (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR,
                         CT_FAKE_CUPTI, CT_SHIM)

Truth. 4 steps of one AllReduce of 16 MiB over a ring of 4 ranks on 4
channels: each ProxyOp (rank, channel, direction) makes K = 6 steps of
1 MiB, so a rank stops 4 x 4 x 2 x 6 = 192 steps. With raw steps on, every
ProxyOp's `nccl_step` records are its `nccl_proxy` record's steps: as many,
step indices 0..K-1 once each, their bytes summing to its bytes, each
state's time summed over them equal to its record's sum (gpu_wait,
peer_wait, net, flush) to the ns, started in the order of their indices,
and inside the ProxyOp's interval; SQLite's NCCL_PROXY_STEPS likewise, joined
to NCCL_PROXY_OPS and NCCL_OPS; Perfetto's step slices only with
--nccl-proxy, each on its ProxyOp's steps track with its record's states,
the size estimate within 25 %. Exactness: the recorder converts a
ProxyOp's state times to ns through running sums (shim/nccl_profiler.c,
step_raw), so the steps' sums are the conversion of the very tick sums the
aggregate converts: no rounding tolerance, on the TSC clock as on the
monotonic one. The interval: on the monotonic clock the step's start and
stop are the very values the ProxyOp's start and end are taken from, so
containment is exact; on the TSC each is converted to ns when written, the
step's at its stop and the ProxyOp's when its record is written, by the
writer's published conversion of that moment, which it refits as it runs;
two fits agree on a tick count within their anchors' jitter (a pair of clock
reads, ~100 ns) plus the rate's error (1e-5 after 10 ms, src/clock.c) times
the distance to the anchor (under a second: 10 us at most, far less in a
1-second job): 20 us bounds both. With a budget of 50: exactly 50 step
records a rank, `nccl_steps_raw` 50 and `nccl_steps_not_raw` 142 in its
trace, and the aggregates unchanged. Off: no step record and no
`nccl_steps_*` entry, and every other record kind in the same number as
with raw steps on. A bad value: `cutrace run` refuses it (exit 2) naming
the variable and the allowed values; preloaded without `cutrace run`, the
job records without raw steps and its trace says why.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

from outcome import check, finish, scratch

RANKS, NCH, STEPS, K, CHUNK = 4, 4, 4, 6, 1 << 20
PER_RANK = STEPS * NCH * 2 * K
TSC_SLACK_NS = 20000


def job_env(extra):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": str(STEPS),
                "W_LINKS_COUNTS": "4194304", "FAKEGPU_NCCL_NCHANNELS": str(NCH)})
    for k in ("FAKEGPU_NCCL_NET", "FAKEGPU_NCCL_PROFILER_VERSION", "CUTRACE_NCCL_STEPS",
              "CUTRACE_CLOCK", "NCCL_PROFILER_PLUGIN"):
        env.pop(k, None)
    env.update(extra)
    return env


def dump(traces):
    recs = []
    for f in sorted(os.listdir(traces)):
        out = subprocess.run([os.environ["CT_CUTRACE"], "dump", "--json",
                              os.path.join(traces, f)], capture_output=True, text=True,
                             timeout=300, check=True).stdout
        recs += [json.loads(line) for line in out.splitlines() if line.strip()]
    return recs


def run(name, extra, expect_rc=0):
    d = tempfile.mkdtemp(prefix=f"nccl-steps-{name}-")
    scratch.append(d)
    traces = os.path.join(d, "traces")
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", traces, "--",
                        os.environ["CT_W_LINKS"], "launch", str(RANKS)], env=job_env(extra),
                       capture_output=True, text=True, timeout=300)
    if p.returncode != expect_rc:
        sys.exit(f"{name}: exit {p.returncode}, expected {expect_rc}: {p.stderr}")
    if expect_rc:
        return p.stderr, None, None
    size = sum(os.path.getsize(os.path.join(traces, f)) for f in os.listdir(traces))
    return traces, dump(traces), size


def meta(recs, key):
    return [r[key] for r in recs if r["kind"] == "meta" and key in r]


def key(r):
    return (r["rank"], r["correlation_id"], r["channel"], r["peer"], r["direction"])


def check_exact(name, recs, slack):
    steps = [r for r in recs if r["kind"] == "nccl_step"]
    proxies = {key(r): r for r in recs if r["kind"] == "nccl_proxy"}
    check(f"{name}: {PER_RANK} steps a rank, one record each",
          len(steps) == RANKS * PER_RANK and len(proxies) == RANKS * STEPS * NCH * 2,
          f"{len(steps)} steps, {len(proxies)} ProxyOps")
    by = collections.defaultdict(list)
    for s in steps:
        by[key(s)].append(s)
    check(f"{name}: every step's ProxyOp recorded", set(by) == set(proxies),
          str(set(by) ^ set(proxies))[:300])
    for k, p in proxies.items():
        ss = sorted(by.get(k, []), key=lambda s: s["step"])
        what = f"{name}: ProxyOp {k}"
        check(f"{what}: as many steps as its record", len(ss) == p["steps"] == K,
              f"{len(ss)} vs {p['steps']}")
        check(f"{what}: indices 0..K-1", [s["step"] for s in ss] == list(range(len(ss))),
              str([s["step"] for s in ss]))
        check(f"{what}: bytes", sum(s["bytes"] for s in ss) == p["bytes"] and
              all(s["bytes"] == CHUNK for s in ss), f"{[s['bytes'] for s in ss]} vs {p['bytes']}")
        for st in ("gpu_wait", "peer_wait", "net", "flush"):
            got = sum(s[f"{st}_ns"] for s in ss)
            check(f"{what}: {st} summed to the ns", got == p[f"{st}_ns"],
                  f"{got} vs {p[f'{st}_ns']}")
        check(f"{what}: started in index order",
              all(a["start_ns"] <= b["start_ns"] for a, b in zip(ss, ss[1:])),
              str([s["start_ns"] for s in ss]))
        for s in ss:
            check(f"{what}: step {s['step']} inside the ProxyOp",
                  p["start_ns"] - slack <= s["start_ns"] <= s["end_ns"] <= p["end_ns"] + slack,
                  f"{s['start_ns']}-{s['end_ns']} vs {p['start_ns']}-{p['end_ns']}")
            # states in NCCL's order, each from its begin to the next one's
            want = (["gpu_wait", "peer_wait", "net"] if s["direction"] == "send"
                    else ["peer_wait", "flush", "gpu_wait"])
            at = [s[f"{st}_at_ns"] for st in want]
            check(f"{what}: step {s['step']} entered its three states in order",
                  None not in at and s["start_ns"] <= at[0] <= at[1] <= at[2] <= s["end_ns"] and
                  all(s[f"{st}_ns"] == b - a for st, a, b in zip(want, at, at[1:] + [s["end_ns"]])),
                  str(s))
    if slack == 0:
        firsts = {k: min(s["start_ns"] for s in v) for k, v in by.items()}
        lasts = {k: max(s["end_ns"] for s in v) for k, v in by.items()}
        check(f"{name}: the first step starts and the last stops the ProxyOp",
              all(firsts[k] == proxies[k]["start_ns"] and lasts[k] == proxies[k]["end_ns"]
                  for k in by), "")
    for r in range(RANKS):
        check(f"{name}: rank {r} says all its steps were recorded raw",
              meta([x for x in recs if x["rank"] == r], "nccl_steps_raw") == [str(PER_RANK)] and
              meta([x for x in recs if x["rank"] == r], "nccl_steps_not_raw") == ["0"],
              str(meta(recs, "nccl_steps_raw")))


# 1. on, monotonic clock: exact times; on, the default clock (TSC where there is one)
_, mono, _ = run("mono", {"CUTRACE_NCCL_STEPS": "on", "CUTRACE_CLOCK": "monotonic"})
check_exact("monotonic", mono, 0)
traces_on, on, size_on = run("on", {"CUTRACE_NCCL_STEPS": "on"})
check("budget on: 1000000", set(meta(on, "nccl_steps_budget")) == {"1000000"},
      str(meta(on, "nccl_steps_budget")))
check_exact("default clock", on, TSC_SLACK_NS)

# the SQLite table: one row per step record, joined to its ProxyOp
try:
    import sqlite3
except ImportError:
    sqlite3 = None
if sqlite3:
    db = os.path.join(scratch[-1], "t.sqlite")
    subprocess.run([os.environ["CT_CUTRACE"], "export", "--format", "sqlite", "-o", db, traces_on],
                   check=True, capture_output=True, timeout=300)
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM NCCL_PROXY_STEPS").fetchone()[0]
    check("sqlite: a row per step", n == RANKS * PER_RANK, str(n))
    rows = con.execute(
        "SELECT p.steps, count(*), sum(s.bytes), p.bytes, sum(s.gpuWait), p.gpuWait,"
        " sum(s.peerWait), p.peerWait, sum(s.net), p.net, sum(s.flush), p.flush"
        " FROM NCCL_PROXY_STEPS s JOIN NCCL_PROXY_OPS p ON s.rank = p.rank AND"
        " s.correlationId = p.correlationId AND s.channel = p.channel AND s.peer = p.peer AND"
        " s.direction = p.direction GROUP BY s.rank, s.correlationId, s.channel, s.peer,"
        " s.direction").fetchall()
    check("sqlite: every ProxyOp's steps join it and add up to it",
          len(rows) == RANKS * STEPS * NCH * 2 and
          all(r[0] == r[1] and r[2] == r[3] and r[4] == r[5] and r[6] == r[7] and r[8] == r[9]
              and r[10] == r[11] for r in rows), str(rows[:3]))
    ops = con.execute("SELECT count(*) FROM (SELECT DISTINCT s.rank, s.correlationId FROM"
                      " NCCL_PROXY_STEPS s JOIN NCCL_OPS o ON s.rank = o.rank AND"
                      " s.correlationId = o.correlationId AND o.op = 'AllReduce')").fetchone()[0]
    check("sqlite: joined to NCCL_OPS", ops == RANKS * STEPS, str(ops))
    con.close()

# Perfetto: a slice per step on its ProxyOp's track, only with --nccl-proxy
chrome = os.path.join(scratch[-1], "t.json")
chrome_p = os.path.join(scratch[-1], "tp.json")
subprocess.run([os.environ["CT_CUTRACE"], "export", "--format", "chrome", "-o", chrome, traces_on],
               check=True, capture_output=True, timeout=300)
subprocess.run([os.environ["CT_CUTRACE"], "export", "--format", "chrome", "--nccl-proxy", "-o",
                chrome_p, traces_on], check=True, capture_output=True, timeout=300)
ev = json.load(open(chrome))
evp = json.load(open(chrome_p))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
evp = evp["traceEvents"] if isinstance(evp, dict) else evp
steps_p = [e for e in evp if e.get("cat") == "nccl_step"]
check("chrome: no step slice without --nccl-proxy",
      not [e for e in ev if e.get("cat") == "nccl_step"], "")
check("chrome: a slice per step with --nccl-proxy", len(steps_p) == RANKS * PER_RANK,
      str(len(steps_p)))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evp
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
def track_ok(e):
    a = e["args"]
    want = (f" ch {a['channel']} send to peer {a['peer']}" if a["direction"] == "send"
            else f" ch {a['channel']} recv from peer {a['peer']}")
    n = names.get((e["pid"], e["tid"]), "")
    return n.startswith("NCCL proxy steps comm ") and want in n
check("chrome: each step on the steps track of its ProxyOp's (channel, peer, direction)",
      steps_p and all(track_ok(e) for e in steps_p), str(steps_p[:1]))
want_states = {"send": ["gpu_wait", "peer_wait", "net"], "recv": ["peer_wait", "flush", "gpu_wait"]}
by_id = {(s["rank"], s["correlation_id"], s["channel"], s["direction"], s["step"]): s
         for s in on if s["kind"] == "nccl_step"}
def args_ok(e):
    a = e["args"]
    s = by_id.get((e["pid"], a["correlation_id"], a["channel"], a["direction"], a["step"]))
    return s and a["bytes"] == s["bytes"] and round(e["dur"] * 1000) == s["end_ns"] - s["start_ns"] \
        and all(a[f"{st}_ns"] == s[f"{st}_ns"] for st in want_states[a["direction"]])
check("chrome: a step's args are its record's states, its duration its record's to the ns",
      steps_p and all(args_ok(e) for e in steps_p), str(steps_p[:1]))
no_steps = [e for e in evp if e.get("cat") != "nccl_step" and not
            (e.get("ph") == "M" and names.get((e["pid"], e["tid"]), "").startswith(
                "NCCL proxy steps"))]
check("chrome: the file without --nccl-proxy is the file with it less the NCCL tracks",
      ev == [e for e in no_steps if e.get("cat") not in ("nccl_proxy", "nccl_channel") and not
             (e.get("ph") == "M" and names.get((e["pid"], e["tid"]), "").startswith("NCCL "))],
      f"{len(ev)} events vs {len(no_steps)}")

# the size estimate with the step slices (tests/export/check_size.py's 25 %)
os.makedirs(os.path.join(scratch[-1], "size"))
p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                 "export", "check_size.py"),
                    os.environ["CT_CUTRACE"], os.path.join(scratch[-1], "size"), "--",
                    "--nccl-proxy", traces_on], capture_output=True, text=True, timeout=300)
check("chrome: the size estimate with the step slices", p.returncode == 0, p.stdout + p.stderr)



def report_nccl(traces):
    out = subprocess.run([os.environ["CT_CUTRACE"], "report", "--json", traces],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    return json.loads(out)["nccl"]


# the report counts the raw steps against the ProxyOps' steps (every rank's)
n_on = report_nccl(traces_on)
check("report: raw steps of the ProxyOps' steps",
      (n_on["raw_steps"], n_on["proxy_steps"], n_on["raw_steps_reason"]) ==
      (RANKS * PER_RANK, RANKS * PER_RANK, None), str(n_on))

# summaries (version 12) carry the count: the report from them is the traces'
sums = os.path.join(scratch[-1], "sums")
subprocess.run([os.environ["CT_CUTRACE"], "summarize", "-o", sums, traces_on], check=True,
               capture_output=True, timeout=300)
n_sums = report_nccl(sums)
check("report from summaries: the raw steps' count",
      (n_sums["raw_steps"], n_sums["proxy_steps"]) == (n_on["raw_steps"], n_on["proxy_steps"]),
      str(n_sums)[:300])

# 2. a budget below the job's steps
traces_bud, bud, _ = run("budget", {"CUTRACE_NCCL_STEPS": "50"})
n_bud = report_nccl(traces_bud)
check("report: the budget's raw steps of all",
      (n_bud["raw_steps"], n_bud["proxy_steps"]) == (RANKS * 50, RANKS * PER_RANK), str(n_bud))
for r in range(RANKS):
    mine = [x for x in bud if x["rank"] == r]
    n = len([x for x in mine if x["kind"] == "nccl_step"])
    check(f"budget: rank {r} recorded exactly 50 steps raw", n == 50, str(n))
    check(f"budget: rank {r} says 50 raw and {PER_RANK - 50} not",
          (meta(mine, "nccl_steps_raw"), meta(mine, "nccl_steps_not_raw")) ==
          (["50"], [str(PER_RANK - 50)]),
          str((meta(mine, "nccl_steps_raw"), meta(mine, "nccl_steps_not_raw"))))
    px = [x for x in mine if x["kind"] == "nccl_proxy"]
    check(f"budget: rank {r}'s aggregates go on", len(px) == STEPS * NCH * 2 and
          sum(x["steps"] for x in px) == PER_RANK, str(len(px)))

# 3. off: no step record, the same records otherwise
traces_off, off, size_off = run("off", {})
n_off = report_nccl(traces_off)
check("report: none raw with steps off", (n_off["raw_steps"], n_off["proxy_steps"]) ==
      (0, RANKS * PER_RANK), str(n_off))
check("off: no step record and no nccl_steps entry",
      not [r for r in off if r["kind"] == "nccl_step"] and
      not [r for r in off if r["kind"] == "meta" and
           any(k.startswith("nccl_steps") for k in r)], "")
count = lambda recs: collections.Counter(
    r["kind"] for r in recs if r["kind"] not in ("nccl_step", "meta", "clock", "counter"))
check("off: every other kind as many as with steps on", count(off) == count(on),
      f"{count(off)} vs {count(on)}")
check("off: a smaller trace than with steps on", size_off < size_on, f"{size_off} vs {size_on}")
_, zero, _ = run("zero", {"CUTRACE_NCCL_STEPS": "0"})
check("0 is off", not [r for r in zero if r["kind"] == "nccl_step"], "")

# 4. bad values: refused by cutrace run; said in a preloaded job's trace
for bad in ("lots", "-1", "100000001", ""):
    err, _, _ = run("bad", {"CUTRACE_NCCL_STEPS": bad}, expect_rc=2)
    check(f"CUTRACE_NCCL_STEPS={bad!r} refused naming the variable and the values",
          f"CUTRACE_NCCL_STEPS={bad}: expected off (0), on (1000000 steps) or a number of raw "
          "proxy steps a process records, from 1 to 100000000" in err, err)
d = tempfile.mkdtemp(prefix="nccl-steps-preload-")
scratch.append(d)
shim = os.environ["CT_SHIM"]
env = job_env({"CUTRACE_NCCL_STEPS": "lots", "LD_PRELOAD": shim, "NCCL_PROFILER_PLUGIN": shim,
               "CUTRACE_OUTPUT": d})
p = subprocess.run([os.environ["CT_W_LINKS"], "launch", str(RANKS)], env=env, capture_output=True,
                   text=True, timeout=300)
check("preloaded: the job runs", p.returncode == 0, p.stderr)
pre = dump(d) if p.returncode == 0 else []
why = meta(pre, "nccl_steps_ignored")
check("preloaded: each trace says why raw steps are off",
      len(why) == RANKS and all("CUTRACE_NCCL_STEPS=lots: expected off" in w and
                                w.endswith("raw steps are off") for w in why), str(why))
check("preloaded: no step record, the aggregates recorded",
      not [r for r in pre if r["kind"] == "nccl_step"] and
      len([r for r in pre if r["kind"] == "nccl_proxy"]) == RANKS * STEPS * NCH * 2, "")

finish(f"ok (trace bytes: {size_off} off, {size_on} with {RANKS * PER_RANK} raw steps)")
