#!/usr/bin/env python3
"""Checks `cutrace export --format chrome --critical-path` (docs/critical-path.md,
"Drawn: Perfetto flows and the HTML report") against the plain export of the
same job and `cutrace critical-path --json`:

- the plain export is the path export's prefix, byte for byte (the option only
  appends events);
- every path slice is an X event of cat "critical_path" on a "critical path"
  track of its rank; slices of one track do not overlap;
- each step's slices are chained by v2 flows (one bind_id per step): the first
  has flow_out only, the last flow_in only, every other both; every flow
  event is on a path slice; in time order each slice ends where the next
  begins (the path tiles the step), and some chain crosses ranks;
- per category the slices sum to the JSON's categories and per step to its
  length, exactly (ns), and each step starts at the JSON's start_us (on the
  report's clock, whose zero is at the file's otherData.report_time_zero_ts);
- a compute or memory slice lies inside a GPU slice of its rank with its
  kernel's name, a comm slice inside the GPU slices of its rank (their union:
  one NCCL op's kernel and plugin interval come from two timers).
With --ranks/--iterations (a selection), only those ranks and steps, and the
totals are not compared.

usage: check_critical_path.py PLAIN.json PATH.json CP.json [--ranks 1,3]
       [--iterations A-B]
"""
import argparse
import collections
import json
import sys

CP_TID = 0x3F000000


def ns(us):
    return round(us * 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plain")
    ap.add_argument("path")
    ap.add_argument("cp")
    ap.add_argument("--ranks")
    ap.add_argument("--iterations")
    a = ap.parse_args()
    plain_txt, path_txt = open(a.plain).read(), open(a.path).read()
    tail = "\n]}\n"
    assert plain_txt.endswith(tail) and path_txt.endswith(tail)
    assert path_txt.startswith(plain_txt[: -len(tail)]), "plain export is not the prefix"
    assert len(path_txt) > len(plain_txt), "nothing appended"
    doc = json.loads(path_txt)
    cp = json.load(open(a.cp))
    ev = doc["traceEvents"]
    sl = [e for e in ev if e.get("cat") == "critical_path"]
    assert sl, "no path slices"
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in sl:
        assert e["ph"] == "X" and CP_TID <= e["tid"] < CP_TID + 4, e
        assert names.get((e["pid"], e["tid"]), "").startswith("critical path"), e
    # no overlap on a track
    by_track = collections.defaultdict(list)
    for e in sl:
        by_track[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    for k, v in by_track.items():
        v.sort()
        for x, y in zip(v, v[1:]):
            assert x[1] <= y[0], ("overlap on", k, x, y)
    # flows: only on path slices, one chain per step
    assert all(e.get("cat") == "critical_path" for e in ev if "bind_id" in e)
    chains = collections.defaultdict(list)
    steps = collections.defaultdict(list)
    for e in sl:
        steps[e["args"]["step"]].append(e)
    for st, v in steps.items():
        v.sort(key=lambda e: e["args"]["order"])
        ids = {e.get("bind_id") for e in v}
        assert len(ids) == 1, (st, ids)
        if len(v) == 1:
            assert None in ids and "flow_in" not in v[0] and "flow_out" not in v[0]
            continue
        chains[st] = v
        for i, e in enumerate(v):
            assert bool(e.get("flow_in")) == (i > 0), (st, i, e)
            assert bool(e.get("flow_out")) == (i < len(v) - 1), (st, i, e)
            if i:
                assert ns(v[i - 1]["ts"]) <= ns(e["ts"]), ("not in time order", st, i)
    assert chains, "no flow chains"
    # GPU slices the path's GPU work lies in
    gpu = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X" and e["tid"] >= 0x40000000 and e.get("cat") != "critical_path":
            gpu[e["pid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    # a collective's member is all the GPU intervals of its op on the rank
    # (its kernel, the NCCL plugin's interval: two timers), so a transfer
    # lies on their union
    union = {}
    for pid, v in gpu.items():
        m = []
        for lo_, hi_, _ in sorted(v):
            if m and lo_ <= m[-1][1]:
                m[-1][1] = max(m[-1][1], hi_)
            else:
                m.append([lo_, hi_])
        union[pid] = m
    for e in sl:
        c = e["args"]["category"]
        if c not in ("compute", "memory", "comm"):
            continue
        s, t = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        if c == "comm":
            ok = [g for g in union[e["pid"]] if g[0] <= s and t <= g[1]]
        else:
            ok = [g for g in gpu[e["pid"]] if g[0] <= s and t <= g[1] and g[2] == e["args"]["name"]]
        assert ok, ("no GPU slice under", e)
    if a.ranks or a.iterations:
        rk = {int(r) for r in a.ranks.split(",")} if a.ranks else None
        lo, hi = (int(x) for x in a.iterations.split("-")) if a.iterations else (0, 1 << 62)
        assert rk is None or {e["pid"] for e in sl} <= rk, {e["pid"] for e in sl}
        assert all(lo <= st <= hi for st in steps), sorted(steps)
        print(f"critical path export (selection): ok ({len(sl)} slices, steps {sorted(steps)})")
        return
    # the whole path: across ranks, tiling and totals against critical-path --json
    assert any(len({e["pid"] for e in v}) > 1 for v in chains.values()), "no chain crosses ranks"
    cat = collections.Counter()
    for e in sl:
        cat[e["args"]["category"]] += ns(e["dur"])
    for c, v in cp["categories"].items():
        assert cat[c] == ns(v), (c, cat[c], ns(v))
    its = {i["index"]: i for i in cp["iterations"]}
    assert sorted(steps) == sorted(its), (sorted(steps), sorted(its))
    zero = ns(doc["otherData"]["report_time_zero_ts"])
    for st, v in steps.items():
        it = its[st]
        assert ns(v[0]["ts"]) == zero + ns(it["start_us"]), (st, v[0]["ts"], it["start_us"])
        for x, y in zip(v, v[1:]):
            assert ns(x["ts"]) + ns(x["dur"]) == ns(y["ts"]), ("gap or overlap", st, x, y)
        assert sum(ns(e["dur"]) for e in v) == ns(it["length_us"]), st
    print(f"critical path export: ok ({len(sl)} slices, {len(chains)} chains, "
          f"categories {dict(cat)})")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("critical path export check failed:", e, file=sys.stderr)
        sys.exit(1)
