#!/usr/bin/env python3
"""fleet-e2e: a labelled fleet written through the real recorder
(tests/tools/ct_synth_job), added to a store from its traces and from
summaries of them, then reported and explained against the truth of its
schedule.

Two workloads: "train" (4 ranks on 2 hosts) and "serve" (2 ranks on 1
host), on hosts n0..n7, started an hour apart. Every job's step (no
annotation floor: --kernel-us 101) is, in µs, for kernels of D on the
slowest rank, an all-reduce of A, a read of R:

    step = R + 10 + max(10 D, 8 D + A) + 5,   then a 50 µs gap

with 2 % per-kernel and +-1.5 % per-job noise. Injected:
  host n5        power-capped at 1833 MHz of 1980 (health counters): its
                 kernels x 1980/1833, the other ranks wait for it
  nccl 2.27.3    (on 40 % of jobs) all-reduce 390 µs instead of 300 on
                 "train" only (two hosts); no effect on "serve"
  tag loader=lazy  (30 %) a read of 300 µs instead of 200
  driver 13010   from the 60th percentile of start times on: kernels x 1.04
and a tag team=a|b of no effect.

Checks:
  * fleet add: every job once; again: none added; summaries give the
    same jobs as their traces (half the jobs are added from summaries,
    their traces moved away);
  * fleet report: GPU time and each part against the schedule's
    ledger: the lost share within 2 % of the truth (relative), each part
    within 1 point;
  * fleet explain: exactly the injected factors pinned (host n5 with its
    clock policy as a confounder, nccl on train only, loader, driver with
    its CUDA version), each truth (the formula above without noise) within
    its interval widened by the noise's share of a job (0.5 point), no
    other factor; a change point at the driver's upgrade in each workload
    naming it; the HTML page and the rows written.
usage: CT_CUTRACE=... CT_SYNTH_JOB=... check_fleet.py [--jobs N] [--keep DIR]
"""
import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile

CUTRACE = os.environ.get("CT_CUTRACE", "build/decoder/cutrace")
SYNTH = os.environ.get("CT_SYNTH_JOB", "build/tests/tools/ct_synth_job")
ITERS = 12
D0, A0, R0, GAP = 101.0, 300.0, 200.0, 50.0
CAP = 1980.0 / 1833.0


def step(d, a, r):
    return r + 10 + max(10 * d, 8 * d + a) + 5


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(cmd[:4]), p.returncode, p.stdout, p.stderr))
    return p.stdout


def make_fleet(root, njobs, seed):
    rnd = random.Random(seed)
    with open("/proc/uptime") as f:
        base = int(float(f.read().split()[0])) + 3000000
    jobs = []
    upgrade_at = int(njobs * 0.6)
    for k in range(njobs):
        train = k % 2 == 0
        hosts = rnd.sample(["n%d" % i for i in range(8)], 2 if train else 1)
        nccl = "2.27.3" if rnd.random() < 0.4 else "2.26.2"
        lazy = rnd.random() < 0.3
        new = k >= upgrade_at
        team = rnd.choice(["a", "b"])
        cmd = ("python3 /w/train.py --model 7b --seed %d" % k if train
               else "python3 /w/serve.py --model 7b --port %d" % (8000 + k))
        ranks = 4 if train else 2
        a = A0 * 1.3 if train and nccl == "2.27.3" else A0
        r = 300.0 if lazy else R0
        d = D0 * (1.04 if new else 1.0)
        capped = "n5" in hosts
        dmax = d * (CAP if capped else 1.0)
        jobs.append(dict(k=k, train=train, hosts=hosts, nccl=nccl, lazy=lazy, new=new,
                         ranks=ranks, a=a, r=r, d=d, dmax=dmax, capped=capped,
                         step=step(dmax, a, r)))
        out = os.path.join(root, "traces", "job%03d" % k)
        os.makedirs(out)
        args = [SYNTH, "-d", out, "--ranks", str(ranks), "--iterations", str(ITERS),
                "--kernel-us", "101", "--read-us", str(int(r)), "--ar-us", str(int(a)),
                "--kernel-scale", "1.04" if new else "1.0",
                "--jitter-pct", "2", "--run-jitter-pct", "1.5", "--seed", str(seed * 1000 + k),
                "--hosts", ",".join(hosts), "--gpu", "H100", "--driver",
                "13010" if new else "13000", "--nccl", nccl, "--tag",
                "loader=" + ("lazy" if lazy else "prefetch"), "--tag", "team=" + team,
                "--cmdline", cmd, "--run-id", "e2e-%d-%03d" % (seed, k), "--job", "j%03d" % k,
                "--start-s", str(base + 3600 * k), "--counters-us", "500",
                "--throttle-host", "n5", "--throttle-mhz", "1833"]
        run(args)
    return jobs


def ledger(jobs):
    """GPU-µs of each part by the schedule (docs/fleet.md "GPU time")."""
    t = dict(gpu=0.0, useful=0.0, data_stall=0.0, exposed_comm=0.0, stragglers=0.0,
             throttling=0.0, idle=0.0)
    for j in jobs:
        for rk in range(j["ranks"]):
            host = j["hosts"][rk * len(j["hosts"]) // j["ranks"]]
            dr = j["d"] * (CAP if host == "n5" else 1.0)
            s = j["step"]
            life = ITERS * s + (ITERS - 1) * GAP
            t["gpu"] += life
            t["useful"] += ITERS * 10 * j["d"]
            t["throttling"] += ITERS * 10 * (dr - j["d"])
            t["data_stall"] += ITERS * j["r"]
            wait = 8 * (j["dmax"] - dr)
            t["stragglers"] += ITERS * wait
            busy_end = max(10 * j["dmax"], 8 * j["dmax"] + j["a"])
            t["exposed_comm"] += ITERS * (busy_end - 10 * dr - wait)
            t["idle"] += ITERS * 15 + (ITERS - 1) * GAP
    return {k: 100 * v / t["gpu"] for k, v in t.items() if k != "gpu"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=64)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--keep")
    args = ap.parse_args()
    root = args.keep or tempfile.mkdtemp(prefix="ct-fleet-e2e.")
    try:
        if args.keep and os.path.exists(os.path.join(root, "jobs.json")):
            jobs = json.load(open(os.path.join(root, "jobs.json")))
        else:
            os.makedirs(os.path.join(root, "traces"), exist_ok=True)
            jobs = make_fleet(root, args.jobs, args.seed)
            json.dump(jobs, open(os.path.join(root, "jobs.json"), "w"))
        check(root, jobs)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("PASS")


def check(root, jobs):
    n = len(jobs)
    store = os.path.join(root, "fleet.db")
    for p in (store, store + "-wal", store + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    # half the jobs from summaries, their traces moved away
    sums = os.path.join(root, "summaries")
    away = os.path.join(root, "away")
    shutil.rmtree(sums, ignore_errors=True)
    os.makedirs(sums)
    os.makedirs(away, exist_ok=True)
    tr = os.path.join(root, "traces")
    for j in jobs:
        if j["k"] % 4 in (1, 2):
            d = os.path.join(tr, "job%03d" % j["k"])
            out = os.path.join(sums, "job%03d" % j["k"])
            run([CUTRACE, "summarize", "-o", out, d])
            shutil.move(d, os.path.join(away, "job%03d" % j["k"]))
    try:
        out = run([CUTRACE, "fleet", "add", "-q", store, tr, sums])
        if out.strip() != "%d jobs added, 0 in the store already" % n:
            fail("first add: " + out)
        out = run([CUTRACE, "fleet", "add", "-q", store, tr, sums])
        if out.strip() != "0 jobs added, %d in the store already" % n:
            fail("second add: " + out)
        print("ok: %d jobs added once (half from summaries, their traces away); again: none" % n)
    finally:
        for name in os.listdir(away):
            shutil.move(os.path.join(away, name), os.path.join(tr, name))

    # the report against the schedule's ledger
    rep = json.loads(run([CUTRACE, "fleet", "report", "--json", "--by", "host", store]))
    truth = ledger(jobs)
    if rep["jobs"] != n or rep["jobs_without_goodput"] != 0:
        fail("report jobs %s" % rep["jobs"])
    lost = 100 - truth["useful"]
    if abs(rep["lost_pct"] - lost) > 0.02 * lost:
        fail("lost %.2f %% of GPU time, truth %.2f %%" % (rep["lost_pct"], lost))
    for k, v in truth.items():
        got = rep["parts"][k]["pct"]
        if abs(got - v) > 1.0:
            fail("part %s: %.2f %%, truth %.2f %%" % (k, got, v))
        print("  %-13s %6.2f %%  truth %6.2f %%" % (k, got, v))
    print("ok: lost %.2f %% of GPU time (truth %.2f %%); every part within 1 point" %
          (rep["lost_pct"], lost))
    # by host: the throttling is all on the capped host's ranks
    hosts = {g["value"]: g for g in rep["by"][0]["groups"]}
    thr = rep["parts"]["throttling"]["pct"]
    if abs(hosts["n5"]["parts"]["throttling"]["points_of_fleet"] - thr) > 1e-3 or any(
            g["parts"]["throttling"]["points_of_fleet"] > 1e-6 for h, g in hosts.items()
            if h != "n5"):
        fail("throttling by host: %s" % {h: g["parts"]["throttling"]["points_of_fleet"]
                                          for h, g in hosts.items()})
    tot = sum(g["gpu_hours"] for g in hosts.values())
    if abs(tot - rep["gpu_hours"]) > 1e-6 * max(rep["gpu_hours"], 1e-9) + 1e-6:
        fail("by host the GPU time sums to %g of %g" % (tot, rep["gpu_hours"]))
    print("ok: by host, the throttling (%.2f %%) all on n5's ranks" % thr)

    # explain
    html = os.path.join(root, "explain.html")
    rows = os.path.join(root, "explain.rows")
    x = json.loads(run([CUTRACE, "fleet", "explain", "--json", "--rows", rows, store]))
    run([CUTRACE, "fleet", "explain", "--html", "-o", html, store])
    text = run([CUTRACE, "fleet", "explain", store])
    page = open(html).read()
    if "<svg" not in page or "<table" not in page or "</html>" not in page:
        fail("the HTML page has no plot or table")
    kinds = set(json.loads(line)["row"] for line in open(rows))
    if not {"factor", "step"} <= kinds:
        fail("explain rows: %s" % kinds)
    # workloads by their command
    wl = {}
    db = sqlite3.connect(store)
    for w, cmd in db.execute("SELECT workload, workload_cmd FROM jobs GROUP BY workload"):
        wl[w] = "train" if "train.py" in cmd else "serve"
    if sorted(wl.values()) != ["serve", "train"]:
        fail("workloads: %s" % wl)
    if not all("--seed" not in c and "--port" not in c
               for (c,) in db.execute("SELECT DISTINCT workload_cmd FROM jobs")):
        fail("the command signature keeps a seed or port")

    def truth_of(factor, value, kind):
        """the mean over the kind's jobs with the value of log(step / step without)"""
        effs = []
        for j in jobs:
            if (kind == "train") != j["train"]:
                continue
            d, dmax, a, r = j["d"], j["dmax"], j["a"], j["r"]
            if factor == "host" and j["capped"]:
                effs.append(step(dmax, a, r) / step(d, a, r))
            elif factor == "nccl_version" and j["nccl"] == value:
                effs.append(step(dmax, a, r) / step(dmax, A0, r))
            elif factor == "tag.loader" and j["lazy"]:
                effs.append(step(dmax, a, r) / step(dmax, a, R0))
            elif factor == "driver" and j["new"]:
                effs.append(step(dmax, a, r) / step(dmax / 1.04, a, r))
        if not effs:
            return None
        return 100 * (math.exp(sum(math.log(e) for e in effs) / len(effs)) - 1)

    expected = {("host", "n5", "train"), ("host", "n5", "serve"),
                ("nccl_version", "2.27.3", "train"),
                ("tag.loader", "lazy", "train"), ("tag.loader", "lazy", "serve"),
                ("driver", "13010", "train"), ("driver", "13010", "serve")}
    found = set()
    for f in x["factors"]:
        for w in f["workloads"]:
            key = (f["factor"], f["value"], wl[w["workload"]])
            if key not in expected:
                fail("pinned what was not injected: %s %+.2f %% %s" %
                     (key, w["effect_pct"], w["change"]))
            found.add(key)
            t = truth_of(*key)
            lo, hi = w["ci_low_pct"] - 0.5, w["ci_high_pct"] + 0.5
            if not lo <= t <= hi:
                fail("%s: %+.2f %% [%+.2f, %+.2f], truth %+.2f %%" %
                     (key, w["effect_pct"], w["ci_low_pct"], w["ci_high_pct"], t))
            conf = set(w["confounded_with"])
            if key[0] == "host" and "config.clock_policy=power_capped" not in conf:
                fail("host n5 without its clock policy as a confounder: %s" % conf)
            if key[0] == "driver" and "cuda_version=13.1" not in conf:
                fail("the driver without its CUDA version as a confounder: %s" % conf)
            print("  %-40s %+6.2f %% [%+6.2f, %+6.2f]  truth %+6.2f %%  carried by %s" %
                  ("%s=%s on %s" % key, w["effect_pct"], w["ci_low_pct"], w["ci_high_pct"], t,
                   w["carrier"]))
    if found != expected:
        fail("not pinned: %s" % sorted(expected - found))
    print("ok: exactly the injected factors pinned, each truth within its interval")
    cps = {}
    for c in x["change_points"]:
        cps.setdefault(wl[c["workload"]], []).append(c)
    for kind in ("train", "serve"):
        got = cps.get(kind, [])
        if len(got) != 1 or not any(s.startswith("driver: 13000 -> 13010") for s in got[0]["changed"]):
            fail("%s: change points %s" % (kind, got))
    print("ok: one change point per workload, at the driver's upgrade")
    if "pinned (beyond the minimum effect" not in text or "host=n5" not in text:
        fail("text output:\n" + text)


if __name__ == "__main__":
    main()
