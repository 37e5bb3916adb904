#!/usr/bin/env python3
"""fleet-explain: `cutrace fleet explain` on labelled fleets of rows
(tests/fleet/gen_fleet.py: 300 jobs, 4 workloads, 32 hosts, heavy-tailed
noise) over several seeds, injected and null, against the truth.

Per injected seed: the discoveries against the injected factors (a
factor's confounders count as it; a baseline the other way round counts as
its inverse); "testable" truths are those with >= 3 jobs with the value and
an effect >= 0.5 %; an interval "covers" when it holds the mean effect
(`cover`), or overlaps the range of the jobs' own effects (`overlap`: the
effects are added in µs, so a factor's relative effect differs between the
workload's jobs); change points at the driver's upgrade. Per null seed:
any discovery or change point is false.

Every seed's `fleet report` is checked against the generator's own ledger
of the GPU time (docs/fleet.md "GPU time"): each part within 1 point, the
lost share within 2 % of the truth.

Test mode (default) fails unless: recall >= 0.9 over the injected seeds,
no discovery of a factor that was not injected (nor of nccl on a
single-node workload), overlap >= 0.9, at most 1 null seed with any false
discovery and at most 1 with any false change point (at alpha 0.05 each,
2 of 6 happens with probability 0.033), and the upgrade's change point in
at least 3 of the 4 workloads of every injected seed.
--table prints the calibration table docs/fleet.md quotes instead.
usage: CT_CUTRACE=... check_explain.py [--seeds 1,2,3] [--null-seeds 1-6]
       [--jobs 300] [--table]
"""
import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

CUTRACE = os.environ.get("CT_CUTRACE", "build/decoder/cutrace")
GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_fleet.py")
KIND = [("7b --batch", "w7b"), ("13b", "w13b"), ("70b", "w70b"), ("serve", "wserve")]


def seeds(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        print("FAIL: %s: exit %d\n%s" % (" ".join(cmd[:4]), p.returncode, p.stderr))
        sys.exit(1)
    return p.stdout


def one(tmp, seed, jobs, null):
    rows, truth_f, store = (os.path.join(tmp, n) for n in ("r.jsonl", "t.json", "f.db"))
    for p in (store, store + "-wal", store + "-shm"):
        if os.path.exists(p):
            os.unlink(p)
    run([sys.executable, GEN, "--jobs", str(jobs), "--iterations", "6", "--seed", str(seed),
         "--out", rows, "--truth", truth_f] + (["--null"] if null else []))
    run([CUTRACE, "fleet", "add", "-q", store, rows])
    x = json.loads(run([CUTRACE, "fleet", "explain", "--json", store]))
    t = json.load(open(truth_f))
    # the GPU time split against the generator's own ledger
    rep = json.loads(run([CUTRACE, "fleet", "report", "--json", store]))
    ledger_err = max(abs(rep["parts"][k]["pct"] - v) for k, v in t["ledger_pct"].items())
    lost_t = 100 - t["ledger_pct"]["useful"]
    lost_err = abs(rep["lost_pct"] - lost_t) / lost_t
    db = sqlite3.connect(store)
    wmap = {}
    for w, cmd in db.execute("SELECT workload, workload_cmd FROM jobs GROUP BY workload"):
        wmap[w] = next(k for s, k in KIND if s in cmd)
    db.close()
    truth = {(i["factor"], i["value"], i["workload_cmd"]): i for i in t["injected"]}
    res = dict(found=set(), false=[], cover=0, overlap=0, n=0, missed=[], cps=[], fcp=[],
               ledger_err=ledger_err, lost_err=lost_err)
    for f in x["factors"]:
        for w in f["workloads"]:
            key = (f["factor"], f["value"], wmap[w["workload"]])
            cands = [key] + [tuple(a.split("=", 1)) + (key[2],) for a in w["confounded_with"]]
            sign = 1
            hit = next((c for c in cands if c in truth), None)
            if not hit and f["baseline"]:
                inv = (f["factor"], f["baseline"], key[2])
                if inv in truth:
                    hit, sign = inv, -1
            if hit and abs(truth[hit]["effect_pct"]) >= 0.5:
                res["found"].add(hit)
                tr = truth[hit]
                conv = (lambda e: e) if sign > 0 else (lambda e: 100 * (1 / (1 + e / 100) - 1))
                e, lo, hi = conv(tr["effect_pct"]), conv(tr["min_pct"]), conv(tr["max_pct"])
                lo, hi = min(lo, hi), max(lo, hi)
                res["n"] += 1
                res["cover"] += w["ci_low_pct"] <= e <= w["ci_high_pct"]
                res["overlap"] += w["ci_low_pct"] <= hi and lo <= w["ci_high_pct"]
            else:
                res["false"].append((key, w["effect_pct"], w["change"]))
    for k, i in truth.items():
        if abs(i["effect_pct"]) >= 0.5 and i["jobs"] >= 3 and k not in res["found"]:
            res["missed"].append((k, i["jobs"], round(i["effect_pct"], 2)))
    res["testable"] = sum(1 for i in truth.values() if abs(i["effect_pct"]) >= 0.5 and i["jobs"] >= 3)
    for c in x["change_points"]:
        named = any(s.startswith("driver: 12040 -> 12060") for s in c["changed"])
        (res["cps"] if named and not null else res["fcp"]).append((wmap[c["workload"]], c["changed"]))
    return res


def wilson_hi(k, n, z=1.96):
    if n == 0:
        return float("nan")
    p = k / n
    d = 1 + z * z / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,4")
    ap.add_argument("--null-seeds", default="1-6")
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ct-fleet-explain.")
    inj, nul = [], []
    try:
        for s in seeds(args.seeds):
            r = one(tmp, s, args.jobs, False)
            inj.append(r)
            print("seed %d: %d of %d testable found; missed %s; false %s; intervals %d/%d hold the "
                  "mean effect, %d/%d overlap the jobs' effects; upgrade change points in %s; "
                  "GPU time parts within %.3f point of the ledger, lost share within %.2f %%" %
                  (s, len(r["found"]), r["testable"], r["missed"], r["false"], r["cover"], r["n"],
                   r["overlap"], r["n"], sorted(set(w for w, _ in r["cps"])), r["ledger_err"],
                   100 * r["lost_err"]))
        for s in seeds(args.null_seeds):
            r = one(tmp, s, args.jobs, True)
            nul.append(r)
            print("null seed %d: false discoveries %s, false change points %s" %
                  (s, r["false"], r["fcp"]))
    finally:
        subprocess.run(["rm", "-rf", tmp])
    found = sum(len(r["found"] & set(k for k in r["found"])) for r in inj)
    testable = sum(r["testable"] for r in inj)
    recall = sum(r["testable"] - len(r["missed"]) for r in inj) / max(testable, 1)
    n = sum(r["n"] for r in inj)
    cover = sum(r["cover"] for r in inj) / max(n, 1)
    overlap = sum(r["overlap"] for r in inj) / max(n, 1)
    false_inj = sum(len(r["false"]) for r in inj)
    fw = sum(1 for r in nul if r["false"])
    fcp = sum(1 for r in nul if r["fcp"])
    cps = [len(set(w for w, _ in r["cps"])) for r in inj]
    summary = ("%d injected seeds: recall %.3f (%d of %d testable), %d discoveries not injected, "
               "intervals hold the mean effect %.3f, overlap the jobs' effects %.3f (%d "
               "intervals); upgrade change points in %s of 4 workloads; %d null seeds: %d with "
               "a false discovery (rate %.3f, 95 %% upper %.3f), %d with a false change point "
               "(rate %.3f, 95 %% upper %.3f)" %
               (len(inj), recall, found, testable, false_inj, cover, overlap, n, cps, len(nul), fw,
                fw / max(len(nul), 1), wilson_hi(fw, len(nul)), fcp, fcp / max(len(nul), 1),
                wilson_hi(fcp, len(nul))))
    summary += "; GPU time parts within %.3f point of the ledger, lost share within %.2f %%" % (
        max([r["ledger_err"] for r in inj + nul] or [0]),
        100 * max([r["lost_err"] for r in inj + nul] or [0]))
    print(summary)
    if args.table:
        return 0
    bad = []
    if recall < 0.9:
        bad.append("recall %.3f < 0.9" % recall)
    if false_inj:
        bad.append("%d discoveries of factors not injected" % false_inj)
    if overlap < 0.9:
        bad.append("interval overlap %.3f < 0.9" % overlap)
    if fw > 1:
        bad.append("%d null seeds with a false discovery" % fw)
    if fcp > 1:
        bad.append("%d null seeds with a false change point" % fcp)
    worst = max([r["ledger_err"] for r in inj + nul] or [0])
    worst_lost = max([r["lost_err"] for r in inj + nul] or [0])
    if worst > 1 or worst_lost > 0.02:
        bad.append("GPU time: a part %.3f points, the lost share %.2f %% off the ledger" %
                   (worst, 100 * worst_lost))
    if any(c < 3 for c in cps):
        bad.append("the upgrade's change point in fewer than 3 workloads: %s" % cps)
    if bad:
        print("FAIL: " + "; ".join(bad))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
