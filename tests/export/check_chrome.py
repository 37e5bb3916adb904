#!/usr/bin/env python3
"""Checks a `cutrace export --format chrome` file against the trace-event
format (the JSON Object Format read by ui.perfetto.dev and chrome://tracing)
and against the traces it came from.

usage: check_chrome.py FILE.json [--ranks N] [--dump DUMP.jsonl ...]

Format rules checked on every event: ph, ts, pid, tid, name present and
typed; X has dur >= 0; s/f have an id and pair up one to one (s before or at
f); f binds to the enclosing slice ("bp":"e"); b/e pair by id; C has
numeric args; M names a process or thread. Timestamps have at most three
decimals (exact ns). Per track (pid, tid), X events are in start order and
nest (a slice that starts inside another ends inside it: Perfetto drops
slices that do not); per counter series, C events are in time order.

With --dump (one `cutrace dump --json` output per trace): the number of GPU
intervals on GPU tracks equals the number of gpu records, the sum of kernel
durations per (rank, stream) equals the dump's to the ns, and every NCCL
call appears with its op, bytes and comm_hash.
"""
import collections
import json
import re
import sys

fails = []


def check(what, ok, detail=""):
    if not ok:
        fails.append(f"{what}: {detail}")
        if len(fails) > 20:
            print("\n".join(fails))
            sys.exit(1)


def ns(ts):
    return round(ts * 1000)


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    ranks = None
    dumps = []
    while args:
        a = args.pop(0)
        if a == "--ranks":
            ranks = int(args.pop(0))
        elif a == "--dump":
            while args and not args[0].startswith("--"):
                dumps.append(args.pop(0))
    raw = open(path).read()
    doc = json.loads(raw)  # a real JSON parser: the whole file must parse
    check("displayTimeUnit", doc.get("displayTimeUnit") == "ns", doc.get("displayTimeUnit"))
    evs = doc["traceEvents"]
    check("events", len(evs) > 0, "none")
    # three decimals at most on every ts/dur: exact ns
    for m in re.finditer(r'"(ts|dur)":(-?[0-9.]+)', raw):
        v = m.group(2)
        check("ns-exact number", "." not in v or len(v.split(".")[1]) <= 3, v)
    flows_s, flows_f = {}, {}
    async_b, async_e = {}, {}
    tracks = collections.defaultdict(list)
    counters = collections.defaultdict(list)
    proc_names, thread_names = {}, {}
    for e in evs:
        for k in ("ph", "ts", "pid", "tid", "name"):
            check(f"field {k}", k in e, e)
        ph = e.get("ph")
        check("ts number", isinstance(e.get("ts"), (int, float)), e)
        check("pid int", isinstance(e.get("pid"), int), e)
        check("tid int", isinstance(e.get("tid"), int), e)
        check("name string", isinstance(e.get("name"), str), e)
        if ph == "X":
            check("X dur", isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e)
            tracks[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["dur"]), e["name"]))
        elif ph == "s":
            check("s id", "id" in e, e)
            check("s unique", e["id"] not in flows_s, e)
            flows_s[e["id"]] = e
        elif ph == "f":
            check("f id", "id" in e, e)
            check("f bp", e.get("bp") == "e", e)
            check("f unique", e["id"] not in flows_f, e)
            flows_f[e["id"]] = e
        elif ph == "b":
            async_b[(e.get("cat"), e.get("id"))] = e
        elif ph == "e":
            async_e[(e.get("cat"), e.get("id"))] = e
        elif ph == "C":
            a = e.get("args")
            check("C args", isinstance(a, dict) and a and
                  all(isinstance(v, (int, float)) for v in a.values()), e)
            counters[(e["pid"], e["name"])].append(ns(e["ts"]))
        elif ph == "M":
            check("M name", e["name"] in ("process_name", "thread_name", "process_sort_index",
                                          "thread_sort_index"), e)
            if e["name"] == "process_name":
                proc_names[e["pid"]] = e["args"]["name"]
            if e["name"] == "thread_name":
                thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph == "i":
            check("i scope", e.get("s") in ("t", "p", "g"), e)
        else:
            check("known ph", False, e)
    # flows pair up
    check("flows", len(flows_s) > 0, "no flow events")
    check("flow pairs", set(flows_s) == set(flows_f),
          f"{len(set(flows_s) ^ set(flows_f))} unpaired of {len(flows_s)}")
    for i, s in flows_s.items():
        f = flows_f.get(i)
        if f:
            check("flow order", ns(s["ts"]) <= ns(f["ts"]), (s, f))
            check("flow lands on GPU track", "GPU" in thread_names.get((f["pid"], f["tid"]), ""),
                  f)
    check("async pairs", set(async_b) == set(async_e), "unpaired b/e")
    # per-track order and nesting
    for tr, xs in tracks.items():
        check("track named", tr in thread_names, tr)
        stack = []
        last = None
        for ts, d, name in xs:
            check("X in start order", last is None or ts >= last, (tr, ts, last))
            last = ts
            while stack and ts >= stack[-1]:
                stack.pop()
            if stack:
                check("X nests", ts + d <= stack[-1], (tr, name, ts, d, stack[-1]))
            stack.append(ts + d)
    for c, ts in counters.items():
        check("counter order", ts == sorted(ts), c)
    check("a bandwidth or queue counter", any("queue depth" in n for _, n in counters), "")
    if ranks is not None:
        check("ranks", len(proc_names) == ranks, proc_names)
        for p, n in proc_names.items():
            check("process name", n.startswith(f"rank {p} ("), n)
    if dumps:
        want_gpu = 0
        kern = collections.Counter()
        nccl = collections.Counter()
        for d in dumps:
            for line in open(d):
                r = json.loads(line)
                if r["kind"] == "gpu":
                    want_gpu += 1
                    if r["type"] == "kernel":
                        kern[(r["rank"], r["stream"])] += r["gpu_end_ns"] - r["gpu_start_ns"]
                elif r["kind"] == "nccl":
                    nccl[(r["op"], r["bytes"], r["comm_hash"])] += 1
        got_gpu = 0
        gkern = collections.Counter()
        gnccl = collections.Counter()
        for e in evs:
            if e["ph"] == "X" and "GPU" in thread_names.get((e["pid"], e["tid"]), ""):
                if e["args"].get("source") != "nccl_record":
                    got_gpu += 1
                if e.get("cat") == "kernel":
                    gkern[(e["pid"], e["args"]["stream"])] += ns(e["dur"])
            if e["ph"] == "X" and e.get("cat") == "nccl" and \
                    "GPU" not in thread_names.get((e["pid"], e["tid"]), ""):
                a = e["args"]
                gnccl[(a["op"], a["bytes"], a["comm_hash"])] += 1
        check("GPU intervals", got_gpu == want_gpu, f"{got_gpu} != {want_gpu}")
        check("kernel time per stream", dict(gkern) == dict(kern), f"{gkern} != {kern}")
        check("NCCL calls", gnccl == nccl, f"{gnccl} != {nccl}")
    if fails:
        print("\n".join(fails))
        sys.exit(1)
    print(f"chrome check: ok ({len(evs)} events, {len(flows_s)} flows, "
          f"{len(tracks)} tracks, {len(counters)} counter series)")


main()
