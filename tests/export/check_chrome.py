#!/usr/bin/env python3
"""Checks a `cutrace export --format chrome` file against the trace-event
format (the JSON Object Format read by ui.perfetto.dev and chrome://tracing)
and against the traces it came from.

usage: check_chrome.py FILE.json [--ranks N] [--dump DUMP.jsonl ...]
                       [--health] [--throttled RANK]

Format rules checked on every event, as Perfetto's trace processor reads
the JSON (its JSON importer and its stats' descriptions, google/perfetto;
there is no trace processor to run here, none in Debian or npm): the file
starts with "{" and its displayTimeUnit comes before traceEvents (the
importer reads the keys before the events from the first chunk; it ignores
the value now, chrome://tracing shows ns with it); every event has ph, ts,
pid, tid, name, typed; ts >= 0 on every event (the trace processor drops
events of negative time, trace_sorter_negative_timestamp_dropped) and below
2^53 ns (exact as a double); pid and tid integers in [0, 2^32) (others
become 0); no key twice in an event or its args; X has dur >= 0 (a slice of
negative duration is dropped); s/f have an id and pair up one to one (s
before or at f); f binds to the enclosing slice ("bp":"e"); a v2 flow
(bind_id) has flow_in or flow_out; b/e pair by id; C has args, all numbers;
M is process_name, thread_name (args.name a non-empty string),
process_sort_index or thread_sort_index (args.sort_index an integer);
timestamps have at most three decimals (exact ns). Per track (pid, tid), X
events are in start order and nest (a slice that starts inside another
ends inside it: Perfetto moves one that does not to an overflow track, with
an error stat); per counter series, C events are in time order.
otherData says where time 0 is (time_zero, time_zero_realtime_ns) and
where the report's zero lies (report_time_zero_ts >= 0; null for a job
without a GPU op, which the report has no zero for).

With --dump (one `cutrace dump --json` output per trace): the number of GPU
intervals on GPU tracks equals the number of gpu records, the sum of kernel
durations per (rank, stream) equals the dump's to the ns, and every NCCL
call appears with its op, bytes and comm_hash.

Health counter tracks (docs/export.md), wherever they appear: the event
name is "GPU d LABEL" or "host LABEL" from the known set, with the series
key that label takes ("MHz", "W", ...); "GPU d throttled" series are 0 or 1
("slowing" plus reason names). With --health every rank has the device
tracks SM clock, power, temperature, throttled and the host's CPU use;
with --throttled R, rank R's GPU 0 SM clock drops below 90 % of its first
value and its "slowing" series reaches 1, while every other rank's SM clock
stays within 10 % of its first value and never shows "slowing" 1 (the cap
in the tests takes the clock from 1980 to 1410 MHz, -29 %).
"""
import collections
import json
import re
import sys

fails = []

# health counter tracks: label -> series key (docs/export.md)
GPU_COUNTERS = {"SM clock": "MHz", "memory clock": "MHz", "power": "W", "power limit": "W",
                "temperature": "C", "utilisation": "%", "memory utilisation": "%",
                "memory used": "MiB", "PCIe tx": "KB/s", "PCIe rx": "KB/s"}
HOST_COUNTERS = {"CPU use": "%", "CPU pressure": "%", "run queue": "tasks/CPU",
                 "major faults": "faults/s"}
REASONS = {"slowing", "gpu_idle", "applications_clocks", "sw_power_cap", "hw_slowdown",
           "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks"}
HEALTH_RE = re.compile(r"^(GPU (\d+)|host) (.+?)( \(pid \d+\))?$")


def health_series(e):
    """(device or None, label) when e is a health counter event, else None;
    checks its args on the way."""
    m = HEALTH_RE.match(e["name"])
    if not m:
        return None
    dev, label = (int(m.group(2)) if m.group(2) else None), m.group(3)
    a = e["args"]
    if dev is not None and label == "throttled":
        check("throttled series", set(a) <= REASONS and "slowing" in a and
              all(v in (0, 1) for v in a.values()), e)
    elif dev is not None and label in GPU_COUNTERS:
        check("GPU counter key", list(a) == [GPU_COUNTERS[label]], e)
    elif dev is None and label in HOST_COUNTERS:
        check("host counter key", list(a) == [HOST_COUNTERS[label]], e)
    else:
        return None  # another counter ("NCCL algbw", queue depth...)
    check("counter value", all(v >= 0 for v in a.values()), e)
    return dev, label


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
    want_health = False
    throttled = None
    while args:
        a = args.pop(0)
        if a == "--ranks":
            ranks = int(args.pop(0))
        elif a == "--health":
            want_health = True
        elif a == "--throttled":
            throttled = int(args.pop(0))
        elif a == "--dump":
            while args and not args[0].startswith("--"):
                dumps.append(args.pop(0))
    raw = open(path).read()
    dups = []

    def no_dup(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            dups.append(keys)
        return dict(pairs)

    # a real JSON parser: the whole file must parse
    doc = json.loads(raw, object_pairs_hook=no_dup)
    check("no key twice in an object", not dups, dups[:3])
    check("starts with {", raw.lstrip().startswith("{"), raw[:20])
    check("displayTimeUnit", doc.get("displayTimeUnit") == "ns", doc.get("displayTimeUnit"))
    check("displayTimeUnit before traceEvents",
          0 <= raw.find('"displayTimeUnit"') < raw.find('"traceEvents"'), "")
    od = doc.get("otherData", {})
    check("time zero stated", od.get("time_zero") == "the job's earliest record" and
          isinstance(od.get("time_zero_realtime_ns"), int) and
          (od.get("report_time_zero_ts") is None and "report_time_zero_ts" in od or
           isinstance(od.get("report_time_zero_ts"), (int, float)) and
           od["report_time_zero_ts"] >= 0), od)
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
    health = collections.defaultdict(list)  # (pid, dev, label) -> [(ts, args)]
    for e in evs:
        for k in ("ph", "ts", "pid", "tid", "name"):
            check(f"field {k}", k in e, e)
        ph = e.get("ph")
        ts = e.get("ts")
        check("ts number", isinstance(ts, (int, float)), e)
        if isinstance(ts, (int, float)):
            check("ts >= 0", ts >= 0, e)
            check("ts exact as a double", ts * 1000 < 2 ** 53, e)
        for k in ("pid", "tid"):
            v = e.get(k)
            check(f"{k} int in [0, 2^32)", isinstance(v, int) and 0 <= v < 2 ** 32, e)
        check("name string", isinstance(e.get("name"), str), e)
        if "bind_id" in e:
            check("v2 flow direction", e.get("flow_in") is True or e.get("flow_out") is True, e)
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
                  all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      for v in a.values()), e)
            counters[(e["pid"], e["name"])].append(ns(e["ts"]))
            hs = health_series(e)
            if hs:
                health[(e["pid"],) + hs].append((ns(e["ts"]), e["args"]))
        elif ph == "M":
            check("M name", e["name"] in ("process_name", "thread_name", "process_sort_index",
                                          "thread_sort_index"), e)
            a = e.get("args", {})
            if e["name"] in ("process_name", "thread_name"):
                check("M args.name", isinstance(a.get("name"), str) and a["name"], e)
            else:
                check("M args.sort_index", isinstance(a.get("sort_index"), int), e)
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
    if want_health:
        for p in proc_names:
            for dev, label in ((0, "SM clock"), (0, "power"), (0, "temperature"),
                               (0, "throttled"), (None, "CPU use")):
                check("health track", len(health.get((p, dev, label), [])) > 1,
                      f"rank {p}: {label}")
    if throttled is not None:
        for p in proc_names:
            sm = [a["MHz"] for _, a in health.get((p, 0, "SM clock"), [])]
            slow = [a["slowing"] for _, a in health.get((p, 0, "throttled"), [])]
            check("SM clock series", len(sm) > 1 and slow, f"rank {p}")
            if len(sm) < 2 or not slow:
                continue
            if p == throttled:
                check("capped device's SM clock drops", min(sm) < 0.9 * sm[0],
                      f"rank {p}: first {sm[0]}, min {min(sm)}")
                check("capped device shows throttling", max(slow) == 1, f"rank {p}")
            else:
                check("SM clock steady", min(sm) >= 0.9 * sm[0], f"rank {p}: {sm[0]} {min(sm)}")
                check("no throttling", max(slow) == 0, f"rank {p}")
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
                if r["kind"] == "gpu" and r["type"] != "sync":  # host waits: the call's span
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
        # no track of no device: an NCCL op's plugin interval (device -1,
        # stream 0) is drawn on its op's stream's "NCCL ops" track
        check("no GPU -1 track", not [n for n in thread_names.values()
                                      if n.startswith("GPU -1 ") or n.startswith("GPU 255 ")],
              sorted(set(thread_names.values())))
        check("kernel time per stream", dict(gkern) == dict(kern), f"{gkern} != {kern}")
        check("NCCL calls", gnccl == nccl, f"{gnccl} != {nccl}")
    if fails:
        print("\n".join(fails))
        sys.exit(1)
    print(f"chrome check: ok ({len(evs)} events, {len(flows_s)} flows, "
          f"{len(tracks)} tracks, {len(counters)} counter series, "
          f"{len(health)} of them health counters)")


main()
