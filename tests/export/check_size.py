#!/usr/bin/env python3
"""The Chrome export's size estimate (decoder/export/prescan.c) against the
file it writes, and the bytes an event of each kind takes.

usage: check_size.py CUTRACE DIR [--tolerance PCT] [--show] -- EXPORT_ARGS...

For each EXPORT_ARGS (a `cutrace export --format chrome` command's options
and operands, several separated by "--"): the export with --max-size 1 is
refused (exit 2) and its message states the estimate, "(N bytes"; the
same export without it writes a file within PCT % (default 25) of N. With
--show, the mean bytes of each kind of event, without its "ts" digits and
the names it carries, over all the files: the constants of prescan.c
(B_API, B_GPU, ...) are these means, measured on the exports of
examples/sim_train and the labelled pipe job under `cutrace run`.

Why 25 %: the estimate charges each record its kind's mean bytes plus the
names it carries, and one ts width for the whole run; what it cannot know
before writing are the numbers' widths (correlation ids, byte counts,
durations), optional args (a root, a peer, a group) and which records
another source supersedes. Over the test jobs those move the total by at
most 7 %; 25 % keeps the refusal meaningful (a 6.5 GB file is not taken
for 1 GB) without failing on a job whose numbers run wider.
"""
import collections
import json
import os
import re
import subprocess
import sys

HEALTH = re.compile(r"^(GPU \d+|host) ")


def kind(e, names):
    """The record kind an event is charged to (prescan.c), or None."""
    ph, cat = e["ph"], e.get("cat", "")
    track = names.get((e["pid"], e["tid"]), "")
    if ph == "X" and cat == "cuda_api":
        return "B_API"
    if ph == "X" and cat == "critical_path":
        return "B_CP"
    if ph == "X" and cat == "nccl_proxy":
        return "B_PROXY"
    if ph == "X" and track.startswith("GPU "):
        return "B_GPU"
    if ph == "X" and cat == "nccl":
        return "B_NCCL"
    if ph == "X" and cat == "io":
        return "B_IO"
    if ph == "X" and cat == "nvtx":
        return "B_RANGE"
    if ph in "be" and cat == "nvtx":
        return "B_ASYNC"
    if ph in "sf":
        return "B_LAUNCHED"
    if ph == "C" and e["name"].startswith("queue depth"):
        return "B_LAUNCHED"
    if ph == "C" and e["name"].startswith("NCCL algbw"):
        return "B_NCCL_GPU"
    if ph == "C" and HEALTH.match(e["name"]):
        return "B_COUNTER"
    if ph == "i":
        return "B_MARK"
    if ph == "M":
        return "B_TRACE"
    return None


def names_len(e):
    """The names the estimate adds to an event's kind bytes."""
    a = e.get("args", {})
    ph, cat = e["ph"], e.get("cat", "")
    if ph == "X" and cat == "cuda_api":
        return len(e["name"]) + len(a.get("kernel", ""))
    if ph == "X" and cat == "kernel":
        return len(e["name"]) + len(a.get("mangled", ""))
    if ph == "X" and cat in ("io",):
        return len(e["name"]) + len(a.get("path", ""))
    if ph in "Xbe" and cat == "nvtx":
        return len(e["name"]) + (len(a.get("domain", "")) if ph != "e" else 0)
    if ph == "X" and cat == "critical_path":
        return len(a.get("name") or "")
    if ph == "i":
        return len(e["name"])
    return 0


def estimate(cutrace, args):
    """The estimate stated by the refusal of the export with --max-size 1."""
    p = subprocess.run([cutrace, "export", "--format", "chrome", "--max-size", "1", "-o",
                        os.devnull] + args, capture_output=True, text=True)
    m = re.search(r"would be about [0-9.]+ [a-zA-Z]+ \(([0-9]+) bytes, ([0-9]+) events\), over "
                  r"the limit of 1 bytes \(--max-size\): export a part with --ranks LIST, "
                  r"--iterations A-B or --window START-END, or raise the limit with --max-size "
                  r"SIZE", p.stderr)
    if p.returncode != 2 or not m:
        sys.exit(f"export {args} with --max-size 1: exit {p.returncode}, {p.stderr!r}")
    return int(m.group(1))


def main():
    args = sys.argv[1:]
    cutrace, outdir = args.pop(0), args.pop(0)
    tol, show = 25.0, False
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--tolerance":
            tol = float(args.pop(0))
        elif a == "--show":
            show = True
    runs, cur = [], None
    for a in args:
        if a == "--":
            cur = []
            runs.append(cur)
        else:
            cur.append(a)
    fails = []
    total = collections.defaultdict(lambda: [0, 0])
    for i, run in enumerate(runs):
        est = estimate(cutrace, run)
        path = os.path.join(outdir, f"size{i}.json")
        subprocess.run([cutrace, "export", "--format", "chrome", "-o", path] + run, check=True)
        raw = open(path).read()
        doc = json.loads(raw)
        dev = 100.0 * (est - len(raw)) / len(raw)
        print(f"{' '.join(run)}: {len(raw)} bytes, estimated {est} ({dev:+.1f} %)")
        if abs(dev) > tol:
            fails.append(f"{' '.join(run)}: estimate {est} is {dev:+.1f} % off {len(raw)} bytes")
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        # one event a line as the writer puts them; its bytes with the
        # separator, less its ts digits and the names it carries
        for line in raw.split("\n"):
            line = line.rstrip(",")
            if not line.startswith("{\"ph\""):
                continue
            e = json.loads(line)
            k = kind(e, names)
            if not k:
                continue
            m = re.search(r'"ts":([0-9.]+)', line)
            b = len(line) + 2 - (len(m.group(1)) if m else 0) - names_len(e)
            total[k][0] += 1
            total[k][1] += b
    if show:
        for k, (n, b) in sorted(total.items()):
            print(f"  {k:12s} {n:8d} events, {b / n:7.1f} bytes an event")
    if not runs:
        fails.append("no export to check")
    if fails:
        print("\n".join(fails))
        sys.exit(1)
    print(f"size estimate: ok ({len(runs)} exports within {tol:g} %)")


main()
