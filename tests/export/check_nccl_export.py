#!/usr/bin/env python3
"""NCCL's account in the exports (docs/export.md, docs/nccl.md): a 4-rank
all-reduce job on the simulated device and NCCL (tests/nccl/w_links.c,
every link 4 GB/s, rank 1 -> rank 2 at 1 GB/s) recorded under `cutrace run`,
and the same job with the profiler plugin at ABI v3 (descriptors, no proxy
steps).

usage: check_nccl_export.py chrome|html SOURCE_DIR
       (environment: CT_CUTRACE, CT_W_LINKS, CT_FAKEGPU_DIR, CT_FAKE_CUPTI)

chrome: `cutrace export --format chrome` with and without --nccl-proxy,
against `cutrace dump --json` of the same traces:
  - both files pass check_chrome.py (the trace-event format rules, GPU
    intervals and NCCL calls against the dump);
  - without the option there is no proxy slice or track, and the file is,
    byte for byte, the file with the option less its proxy events (they are
    written after each trace's other events), so the option adds and
    changes nothing else;
  - with it, one slice per nccl_channel record on its (communicator,
    channel) track, its duration to the ns;
  - with it, per rank one slice per nccl_proxy record of the dump, on a
    track per (communicator, channel, peer, direction) named so; each
    slice's args equal its record's fields (steps, bytes, the state sums)
    and its duration its end - start, to the ns; each slice lies inside
    its op's GPU interval on the same rank (the simulated NCCL makes the
    proxy steps of an op while its kernel runs: tests/fakegpu/README.md),
    its end up to the proxy thread's wake-up late (LATE_NS, below);
  - --ranks and --window select the proxy slices as the other events;
  - every NCCL call slice and op GPU slice carries its nccl_info record's
    algorithm, protocol, channels and warps (ABI v3 too: descriptors only);
  - the size estimate with --nccl-proxy is within check_size.py's 25 %;
  - the SQLite file (`export --format sqlite`): NCCL_INFO has one row per
    nccl_info record of the dump, NCCL_PROXY_OPS one per nccl_proxy,
    NCCL_CHANNELS one per nccl_channel and NCCL_NET one per nccl_net
    record, each with its record's fields (unknown channels and warps, an
    empty algorithm or protocol as NULL), every time shifted by its rank's
    one offset (the export's time base) to the ns, every duration exact;
    each joins its NCCL_OPS row by (rank, correlationId); --nccl-proxy
    with --format sqlite is refused (exit 2) naming the table, no file made;
  - `report --rows`: one "link" row per link of `report --json`'s
    nccl.links, with its figures and whether it is a slow link (none at
    ABI v3).
html: `cutrace report --html` opened in headless Chromium (check_html.py's
Browser); check_html.py's own checks pass on the page, and
  - per communicator a matrix whose non-empty cells are exactly the JSON's
    `nccl.links`, each at its sender's row and receiver's column (job
    ranks) showing its gbps (to the 0.01 the page shows), every other cell
    empty; the JSON's slow links, and only they, marked, each with its
    evidence line; the job's slow link is rank 1 -> rank 2;
  - per collective of `nccl.collectives` a row with its algorithm,
    protocol, channels and wait/transfer medians (to the last digit shown);
  - at ABI v3 no matrix: the report's reason is shown, and the wait and
    transfer cells are dashes carrying the row's `split_reason` (the
    report's first reason where the row has none).

Why 4 ranks, 64 MiB, 4 steps: each all-reduce is a ring of 6 steps of
8 MiB per channel, 2.1 ms on a 4 GB/s link and 8.4 ms on the slow one,
against proxy wake-ups up to ~1 ms late on the 2-CPU test machine
(tests/nccl/check_links.py): the slow link stays below 80 % of its peers
in each of the 4 instances, which the slow-link rule needs (docs/nccl.md).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# How late a ProxyOp's last stop may be seen after its op's GPU end. The
# simulated NCCL stops the op's ProxyOps at the op's end (its GPU interval,
# from the plugin's GPU timer: exact), but its proxy thread makes each call
# when it wakes after that virtual time (the fake's driver learns an op's
# end by polling every 1 ms), and the plugin reads its clock then: measured
# 1.3-3.7 ms late over 5 runs of 4 ranks on a quiet 2-CPU test machine, but
# 15-35 ms in runs beside a build or another suite (the proxy thread of one
# of 4 processes waits for a CPU), ~10 ms a wake-up under emulation
# (tests/nccl/check_links.py). The slice names its op (correlation_id,
# checked below), so lateness only lengthens it; what the bound catches is
# a slice drawn from another op's times: the next op on the rank ends at
# least an op's transfer (6 steps of 8.4 ms on the slow link: 50 ms) plus
# the 2 ms compute after this one's end, so 40 ms of lateness is still
# this op's.
# The start has no such slack: a ProxyOp starts after its op's GPU start
# (the transfer begins when the last member has started), and lateness
# only delays it.
LATE_NS = 40_000_000
failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")
    return ok


def run_job(d, extra):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "FAKEGPU_NCCL_LINKS": "1-2=1",
                "W_LINKS_STEPS": "4", "W_LINKS_COUNTS": "16777216"})
    env.update(extra)
    traces = os.path.join(d, "traces")
    p = subprocess.run([os.environ["CT_CUTRACE"], "run", "-o", traces, "--",
                        os.environ["CT_W_LINKS"], "launch", "4"],
                       env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"job failed ({p.returncode}): {p.stderr}")
    return traces


def cutrace(*args):
    p = subprocess.run([os.environ["CT_CUTRACE"], *args], capture_output=True, text=True,
                       timeout=300)
    if p.returncode:
        sys.exit(f"cutrace {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def dumps(traces, d):
    """Per trace: its dump file and its records."""
    out = []
    for f in sorted(os.listdir(traces)):
        if f.endswith(".cutrace"):
            path = os.path.join(d, f + ".jsonl")
            with open(path, "w") as o:
                o.write(cutrace("dump", "--json", os.path.join(traces, f)))
            out.append((path, [json.loads(x) for x in open(path)]))
    return out


def event_lines(path):
    """The file's events as the text of each (one a line), and the text
    around them."""
    text = open(path).read()
    head, body = text.split('"traceEvents":[\n', 1)
    body, tail = body.rsplit("\n]}", 1)
    lines = [x[:-1] if x.endswith(",") else x for x in body.split(",\n")]
    return head, lines, tail


def check_chrome(d, traces, name):
    recs = dumps(traces, d)
    plain, proxy = os.path.join(d, "plain.json"), os.path.join(d, "proxy.json")
    cutrace("export", "--format", "chrome", "-o", plain, traces)
    cutrace("export", "--format", "chrome", "--nccl-proxy", "-o", proxy, traces)
    for f in (plain, proxy):
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_chrome.py"), f, "--ranks",
                            "4", "--dump", *[x for x, _ in recs]], capture_output=True, text=True)
        check(f"{name}: check_chrome.py {os.path.basename(f)}", p.returncode == 0,
              p.stdout + p.stderr)
    ev_plain = json.load(open(plain))["traceEvents"]
    ev = json.load(open(proxy))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    ptids = {k for k, v in names.items() if v.startswith("NCCL proxy ")}
    ctids = {k for k, v in names.items() if v.startswith("NCCL kernel ")}
    check(f"{name}: no proxy slice without --nccl-proxy",
          not [e for e in ev_plain if e.get("cat") in ("nccl_proxy", "nccl_channel") or
               (e["ph"] == "M" and "NCCL proxy" in str(e.get("args", {}).get("name"))) or
               (e["ph"] == "M" and "NCCL kernel" in str(e.get("args", {}).get("name")))], "")
    # byte for byte: the option's file less its proxy events
    h1, l1, t1 = event_lines(plain)
    h2, l2, t2 = event_lines(proxy)
    kept = [x for x in l2
            if (json.loads(x)["pid"], json.loads(x)["tid"]) not in ptids | ctids]
    check(f"{name}: file without the option = with it less its proxy events",
          (h1, l1, t1) == (h2, kept, t2), f"{len(l1)} vs {len(kept)} events")
    # the kernel channels (format v5 nccl_channel): one slice per record of
    # the dump on its (communicator, channel) track, duration to the ns
    chans = [e for e in ev if e.get("cat") == "nccl_channel"]
    want_ch = {(rs[0]["rank"], r["correlation_id"], r["channel"]): r["end_ns"] - r["start_ns"]
               for _, rs in recs for r in rs if r["kind"] == "nccl_channel"}
    got_ch = {(e["pid"], e["args"]["correlation_id"], e["args"]["channel"]): round(e["dur"] * 1000)
              for e in chans}
    check(f"{name}: a kernel-channel slice per nccl_channel record, its duration exact",
          got_ch == want_ch and len(chans) == len(want_ch), f"{len(chans)} vs {len(want_ch)}")
    check(f"{name}: channel slices on their channel's track",
          all((e["pid"], e["tid"]) in ctids and re.fullmatch(
              r"NCCL kernel comm [0-9a-f]{16} ch %d( \(overlapping, lane \d\))?( \(pid \d+\))?"
              % e["args"]["channel"], names[(e["pid"], e["tid"])]) for e in chans), "")
    slices = [e for e in ev if e.get("cat") == "nccl_proxy"]
    check(f"{name}: proxy slices on proxy tracks",
          all((e["pid"], e["tid"]) in ptids and e["ph"] == "X" for e in slices), "")
    # the op's GPU interval per (rank, correlation id): the op's slice on a GPU track
    gpu = {}
    for e in ev:
        if e["ph"] == "X" and e.get("cat") == "nccl" and \
                names.get((e["pid"], e["tid"]), "").startswith("GPU "):
            gpu[(e["pid"], e["args"]["correlation_id"])] = (e["ts"], e["ts"] + e["dur"])
    calls = [e for e in ev if e["ph"] == "X" and e.get("cat") == "nccl" and
             not names.get((e["pid"], e["tid"]), "").startswith("GPU ")]
    nproxy, worst = 0, [0]
    for _, rs in recs:
        rank = rs[0]["rank"]
        px = [r for r in rs if r["kind"] == "nccl_proxy"]
        info = {r["correlation_id"]: r for r in rs if r["kind"] == "nccl_info"}
        nproxy += len(px)
        mine = {(e["args"]["correlation_id"], e["args"]["channel"], e["args"]["peer"],
                 e["args"]["direction"]): e for e in slices if e["pid"] == rank}
        check(f"{name}: rank {rank}: a slice per ProxyOp record",
              len(mine) == len(px) == len([e for e in slices if e["pid"] == rank]),
              f"{len([e for e in slices if e['pid'] == rank])} slices, {len(px)} records")
        for r in px:
            k = (r["correlation_id"], r["channel"], r["peer"], r["direction"])
            e = mine.get(k)
            if not check(f"{name}: rank {rank} ProxyOp {k} drawn", e is not None, ""):
                continue
            a = e["args"]
            for f in ("steps", "bytes", "nsteps", "chunk_size"):
                check(f"{name}: rank {rank} {k} {f}", a[f] == r[f], f"{a[f]} != {r[f]}")
            for f in ("gpu_wait_ns", "peer_wait_ns", "net_ns", "flush_ns", "net_busy_ns"):
                check(f"{name}: rank {rank} {k} {f}", a[f] == r[f], f"{a[f]} != {r[f]}")
            # µs with three decimals: exact ns
            check(f"{name}: rank {rank} {k} duration",
                  round(e["dur"] * 1000) == r["end_ns"] - r["start_ns"],
                  f"{e['dur']} us vs {r['end_ns'] - r['start_ns']} ns")
            tr = names[(e["pid"], e["tid"])]
            check(f"{name}: rank {rank} {k} track", re.fullmatch(
                r"NCCL proxy comm [0-9a-f]{16} ch %d %s %s peer %d( \(overlapping, lane \d\))?"
                r"( \(pid \d+\))?" %
                (r["channel"], "send" if r["direction"] == "send" else "recv",
                 "to" if r["direction"] == "send" else "from", r["peer"]), tr), tr)
            g = gpu.get((rank, r["correlation_id"]))
            if check(f"{name}: rank {rank} {k} op's GPU interval", g is not None, ""):
                # one trace clock for both; the op's interval is the plugin's
                # GPU timer (exact), the ProxyOp's ends the proxy thread's
                # observations, late by its wake-up only (docstring)
                late = round((e["ts"] + e["dur"]) * 1000) - round(g[1] * 1000)
                check(f"{name}: rank {rank} {k} inside its op's GPU interval",
                      round(g[0] * 1000) <= round(e["ts"] * 1000) and late <= LATE_NS,
                      f"slice {e['ts']}+{e['dur']}, op {g}")
                worst[0] = max(worst[0], late)
        # the descriptor on the op's call and GPU slices
        ops = [r for r in rs if r["kind"] == "nccl"]
        for r in ops:
            i = info.get(r["correlation_id"])
            if not check(f"{name}: rank {rank} op {r['correlation_id']} has a descriptor",
                         i is not None, ""):
                continue
            on = [e for e in calls if e["pid"] == rank and
                  e["args"].get("correlation_id") == r["correlation_id"]]
            g = [e for e in ev if e["ph"] == "X" and e["pid"] == rank and e.get("cat") == "nccl" and
                 names.get((e["pid"], e["tid"]), "").startswith("GPU ") and
                 e["args"].get("correlation_id") == r["correlation_id"]]
            check(f"{name}: rank {rank} op {r['correlation_id']} slices", len(on) == 1 and
                  len(g) == 1, f"{len(on)} call, {len(g)} GPU")
            for e in on + g:
                a = e["args"]
                check(f"{name}: rank {rank} op {r['correlation_id']} choices",
                      (a.get("algo"), a.get("proto"), a.get("channels"), a.get("warps")) ==
                      (i["algo"], i["proto"], i["channels"], i["warps"]), str(a))
    check(f"{name}: ProxyOps recorded", (nproxy > 0) == (name != "v3"), f"{nproxy}")
    # the selection applies to the proxy slices as to the rest: --ranks, and
    # --window (µs on the report's clock: report_time_zero_ts in the file)
    key = lambda e: (e["pid"], e["args"]["correlation_id"], e["args"]["channel"],
                     e["args"]["peer"], e["args"]["direction"])
    if slices:
        sub = os.path.join(d, "ranks.json")
        cutrace("export", "--format", "chrome", "--nccl-proxy", "--ranks", "1,2", "-o", sub, traces)
        got = {key(e) for e in json.load(open(sub))["traceEvents"] if e.get("cat") == "nccl_proxy"}
        check(f"{name}: --ranks 1,2: their proxy slices", got == {key(e) for e in slices
                                                                 if e["pid"] in (1, 2)}, "")
        doc = json.load(open(proxy))
        rz = doc["otherData"]["report_time_zero_ts"]
        mid = sorted(e["ts"] + e["dur"] / 2 for e in slices)[len(slices) // 2] - rz
        w0, w1 = mid - 500, mid + 500
        sub = os.path.join(d, "window.json")
        cutrace("export", "--format", "chrome", "--nccl-proxy", "--window", f"{w0:.3f}-{w1:.3f}",
                "-o", sub, traces)
        got = {key(e) for e in json.load(open(sub))["traceEvents"] if e.get("cat") == "nccl_proxy"}
        # µs with three decimals on both sides: the window's ends are exact ns
        want = {key(e) for e in slices if e["ts"] + e["dur"] - rz >= w0 and e["ts"] - rz <= w1}
        check(f"{name}: --window: the proxy slices overlapping it", got == want and want and
              len(want) < len(slices), f"{len(got)} vs {len(want)} of {len(slices)}")
        print(f"{name}: --window {w0:.3f}-{w1:.3f}: {len(got)} of {len(slices)} proxy slices")
    # the size estimate with the proxy slices
    os.makedirs(os.path.join(d, "size"))
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_size.py"),
                        os.environ["CT_CUTRACE"], os.path.join(d, "size"), "--", "--nccl-proxy",
                        traces, "--", traces], capture_output=True, text=True)
    check(f"{name}: size estimate", p.returncode == 0, p.stdout + p.stderr)
    # sqlite has no proxy tracks: refused with the reason
    p = subprocess.run([os.environ["CT_CUTRACE"], "export", "--format", "sqlite", "--nccl-proxy",
                        "-o", os.path.join(d, "x.sqlite"), traces], capture_output=True, text=True)
    check(f"{name}: --nccl-proxy with sqlite refused", p.returncode == 2 and
          "--nccl-proxy" in p.stderr and "--format chrome" in p.stderr, p.stderr)
    print(f"{name}: the latest ProxyOp end after its op's GPU end: {worst[0] / 1e6:.3f} ms")
    return f"{len(slices)}+{len(chans)}"


def check_sqlite(d, traces, name):
    """NCCL_INFO and NCCL_PROXY_OPS against the dump's records."""
    import sqlite3
    recs = dumps(traces, d)
    db_path = os.path.join(d, "job.sqlite")
    cutrace("export", "--format", "sqlite", "-o", db_path, traces)
    db = sqlite3.connect(db_path)
    want_info, want_proxy = {}, {}
    for _, rs in recs:
        for r in rs:
            if r["kind"] == "nccl_info":
                want_info[(r["rank"], r["correlation_id"])] = r
            elif r["kind"] == "nccl_proxy":
                want_proxy[(r["rank"], r["correlation_id"], r["channel"], r["peer"],
                            r["direction"])] = r
    got = db.execute("SELECT rank, correlationId, start, algo, proto, channels, warps, p2p, "
                     "copyEngine FROM NCCL_INFO").fetchall()
    check(f"{name}: an NCCL_INFO row per nccl_info record", len(got) == len(want_info),
          f"{len(got)} vs {len(want_info)}")
    shift = {}
    for rank, corr, start, algo, proto, ch, warps, p2p, ce in got:
        r = want_info.get((rank, corr))
        if not check(f"{name}: NCCL_INFO row of a record", r is not None, f"{rank} {corr}"):
            continue
        shift.setdefault(rank, r["time_ns"] - start)
        check(f"{name}: NCCL_INFO start", r["time_ns"] - start == shift[rank], f"{rank} {corr}")
        check(f"{name}: NCCL_INFO fields",
              (algo, proto, ch, warps, p2p, ce) ==
              (r["algo"] or None, r["proto"] or None, r["channels"] or None, r["warps"] or None,
               r["flags"] & 1, (r["flags"] >> 1) & 1), f"{(algo, proto, ch, warps, p2p, ce)} {r}")
    got = db.execute("SELECT rank, correlationId, channel, peer, direction, start, end, steps, "
                     "bytes, gpuWait, peerWait, net, flush, netBusy, nSteps, chunkSize "
                     "FROM NCCL_PROXY_OPS").fetchall()
    check(f"{name}: an NCCL_PROXY_OPS row per nccl_proxy record", len(got) == len(want_proxy),
          f"{len(got)} vs {len(want_proxy)}")
    for row in got:
        r = want_proxy.get(row[:5])
        if not check(f"{name}: NCCL_PROXY_OPS row of a record", r is not None, str(row[:5])):
            continue
        rank, start, end = row[0], row[5], row[6]
        shift.setdefault(rank, r["start_ns"] - start)
        check(f"{name}: NCCL_PROXY_OPS times", (r["start_ns"] - start, r["end_ns"] - end) ==
              (shift[rank], shift[rank]), str(row))
        check(f"{name}: NCCL_PROXY_OPS fields", list(row[7:]) ==
              [r[k] for k in ("steps", "bytes", "gpu_wait_ns", "peer_wait_ns", "net_ns",
                              "flush_ns", "net_busy_ns", "nsteps", "chunk_size")], str(row))
    # kernel channels and network work (format v5): a row per record
    want_ch = {(r["rank"], r["correlation_id"], r["channel"]): r for _, rs in recs for r in rs
               if r["kind"] == "nccl_channel"}
    got_ch = db.execute("SELECT rank, correlationId, channel, start, end FROM NCCL_CHANNELS")\
        .fetchall()
    check(f"{name}: an NCCL_CHANNELS row per nccl_channel record, times shifted alike",
          len(got_ch) == len(want_ch) and all(
              (want_ch[g[:3]]["start_ns"] - g[3], want_ch[g[:3]]["end_ns"] - g[4]) ==
              (shift[g[0]], shift[g[0]]) for g in got_ch if g[:3] in want_ch) and
          {g[:3] for g in got_ch} == set(want_ch), f"{len(got_ch)} vs {len(want_ch)}")
    want_net = {(r["rank"], r["correlation_id"], r["channel"], r["peer"], r["direction"],
                 r["qp"]): r for _, rs in recs for r in rs if r["kind"] == "nccl_net"}
    got_net = db.execute("SELECT rank, correlationId, channel, peer, direction, qp, transport, "
                         "device, wrs, bytes, busy, otherWrs, otherBytes FROM NCCL_NET").fetchall()
    check(f"{name}: an NCCL_NET row per nccl_net record with its fields",
          len(got_net) == len(want_net) and all(
              g[:6] in want_net and list(g[6:]) == [
                  want_net[g[:6]][k] if k != "device" or want_net[g[:6]][k] >= 0 else None
                  for k in ("transport", "device", "wrs", "bytes", "busy_ns", "other_wrs",
                            "other_bytes")] for g in got_net), f"{len(got_net)} vs {len(want_net)}")
    orphans = db.execute("SELECT COUNT(*) FROM NCCL_PROXY_OPS p WHERE NOT EXISTS (SELECT 1 FROM "
                         "NCCL_OPS o WHERE o.rank = p.rank AND o.correlationId = "
                         "p.correlationId)").fetchone()[0]
    check(f"{name}: every proxy op joins its NCCL_OPS row", orphans == 0, str(orphans))
    p = subprocess.run([os.environ["CT_CUTRACE"], "export", "--format", "sqlite", "--nccl-proxy",
                        "-o", os.path.join(d, "refused.sqlite"), traces], capture_output=True,
                       text=True, timeout=300)
    check(f"{name}: --nccl-proxy with sqlite refused, naming the table",
          p.returncode == 2 and "NCCL_PROXY_OPS" in p.stderr
          and not os.path.exists(os.path.join(d, "refused.sqlite")), p.stderr)
    return len(got)


def check_rows(d, traces, name):
    """report --rows: a link row per link of report --json's nccl.links."""
    rows_path, rep_path = os.path.join(d, "rows.jsonl"), os.path.join(d, "rows-report.json")
    cutrace("report", "--json", "-o", rep_path, "--rows", rows_path, traces)
    N = json.load(open(rep_path))["nccl"]
    rows = [json.loads(x) for x in open(rows_path)]
    got = [r for r in rows if r["row"] == "link"]
    links = N["links"] or []
    slow = {s["link"] for s in N["slow_links"] or []}
    check(f"{name}: a link row per link", len(got) == len(links), f"{len(got)} vs {len(links)}")
    for i, (r, l) in enumerate(zip(got, links)):
        for k in ("comm_hash", "src", "dst", "src_rank", "dst_rank", "ops", "bytes", "gbps",
                  "p10_gbps", "p50_gbps", "p90_gbps", "net_us"):
            check(f"{name}: link row {i} {k}", r[k] == l[k], f"{r[k]} vs {l[k]}")
        check(f"{name}: link row {i} slow", r["slow"] == (i in slow), str(r))
        check(f"{name}: link row {i} schema", r["schema"] == "cutrace.rows" and r["rank"] is None
              and r["iteration"] is None, str(r))
    return len(got)


# what the page drew in its NCCL section, read from the DOM
READ = r"""
JSON.stringify({
  selfcheck: document.body.dataset.selfcheck || null,
  note: document.getElementById("ncclnote").textContent,
  noteWhy: document.getElementById("ncclnote").dataset.why || null,
  matrices: [...document.querySelectorAll("table.nccl-matrix")].map(t => ({
    comm: t.dataset.comm,
    cells: [...t.querySelectorAll("td")].map(c => ({ src: c.dataset.src, dst: c.dataset.dst,
      link: c.dataset.link === undefined ? null : +c.dataset.link, text: c.textContent,
      slow: c.dataset.slow === "1" })) })),
  slow: [...document.querySelectorAll("[data-slow-link]")].map(p => ({ link: +p.dataset.slowLink, text: p.textContent })),
  coll: [...document.querySelectorAll("#nccl-coll tr[data-op]")].map(r => ({ comm: r.dataset.comm,
    op: r.dataset.op, bytes: +r.dataset.bytes,
    cells: [...r.children].map(c => ({ text: c.textContent, why: c.dataset.why || null })) }))
})
"""

UNITS = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1}


def shown_ns(text):
    """A time as the page shows it (fmtT), and half its last digit."""
    m = re.fullmatch(r"(-?[0-9.]+) (s|ms|µs|ns)", text)
    if not m:
        return None, 0
    dec = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
    return float(m.group(1)) * UNITS[m.group(2)], 0.5 * 10 ** -dec * UNITS[m.group(2)]


def check_page(d, traces, name, proxy):
    page, rep_path = os.path.join(d, "page.html"), os.path.join(d, "report.json")
    cutrace("report", "--html", "-o", page, traces)
    cutrace("report", "--json", "-o", rep_path, traces)
    rep = json.load(open(rep_path))
    N = rep["nccl"]
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_html.py"), page, "--report",
                        rep_path], capture_output=True, text=True, timeout=300)
    check(f"{name}: check_html.py", p.returncode == 0, p.stdout + p.stderr)
    sys.path.insert(0, HERE)
    from check_html import Browser
    b = Browser(shutil.which("chromium") or shutil.which("chromium-browser"))
    try:
        b.open("file://" + os.path.abspath(page))
        got = json.loads(b.eval(READ))
        errors = b.errors()
    finally:
        b.close()
    check(f"{name}: no script error", not errors and got["selfcheck"] == "ok",
          f"{errors} {got['selfcheck']}")
    if not proxy:
        check(f"{name}: no links in the JSON", N["links"] is None, str(N["links"]))
        check(f"{name}: no matrix", got["matrices"] == [] and got["slow"] == [], str(got["matrices"]))
        why = "; ".join(N["unavailable"])
        check(f"{name}: the report's reason shown", why and got["noteWhy"] == why and why in got["note"],
              got["note"])
    else:
        links = N["links"] or []
        check(f"{name}: links", len(links) == 4, str(links))
        slow = {s["link"]: s for s in N["slow_links"]}
        check(f"{name}: the slow link is rank 1 -> rank 2",
              [(links[k]["src_rank"], links[k]["dst_rank"]) for k in slow] == [(1, 2)], str(slow))
        cells = [c for m in got["matrices"] for c in m["cells"]]
        check(f"{name}: one matrix per communicator", sorted(m["comm"] for m in got["matrices"]) ==
              sorted({l["comm_hash"] for l in links}), str([m["comm"] for m in got["matrices"]]))
        filled = {c["link"]: c for c in cells if c["link"] is not None}
        check(f"{name}: a cell per link", sorted(filled) == list(range(len(links))), str(sorted(filled)))
        for i, l in enumerate(links):
            c = filled.get(i)
            if not c:
                continue
            check(f"{name}: link {i} at its row and column",
                  (c["src"], c["dst"]) == (f"rank {l['src_rank']}", f"rank {l['dst_rank']}"), str(c))
            # shown to 0.01 (toFixed(2)) of the JSON's 0.001
            check(f"{name}: link {i} GB/s", abs(float(c["text"]) - l["gbps"]) <= 0.005 + 1e-9,
                  f"{c['text']} vs {l['gbps']}")
            check(f"{name}: link {i} slow mark", c["slow"] == (i in slow), str(c))
        for c in cells:
            if c["link"] is None:
                check(f"{name}: no link {c['src']} -> {c['dst']}: empty", c["text"] == "", c["text"])
        check(f"{name}: the matrices are square over the ranks",
              all(len(m["cells"]) == len({c["src"] for c in m["cells"]}) ** 2 for m in got["matrices"]),
              "")
        check(f"{name}: evidence lines", sorted(s["link"] for s in got["slow"]) == sorted(slow) and
              all(slow[s["link"]]["evidence"] in s["text"] for s in got["slow"]), str(got["slow"]))
    # per collective: NCCL's choices and the split
    coll = N["collectives"]
    check(f"{name}: a row per collective", len(got["coll"]) == len(coll), f"{len(got['coll'])}")
    for c, g in zip(coll, got["coll"]):
        t = [x["text"] for x in g["cells"]]
        check(f"{name}: {c['op']} {c['bytes']} identity", (g["comm"], g["op"], g["bytes"]) ==
              (c["comm_hash"], c["op"], c["bytes"]) and t[1:5] ==
              [c["op"], str(c["bytes"]), str(c["nranks"]), str(c["count"])], str(t))
        check(f"{name}: {c['op']} choices", t[5:8] == [c["algo"], c["proto"], str(c["channels"])],
              str(t))
        for j, k in ((8, "wait_p50_us"), (9, "transfer_p50_us")):
            if c[k] is None:
                # the row's own reason where it has one, else the section's
                want = c.get("split_reason") or N["unavailable"][0]
                check(f"{name}: {k} absent with the reason", t[j] == "–" and
                      g["cells"][j]["why"] == want and want, str(g["cells"][j]))
            else:
                v, tol = shown_ns(t[j])
                check(f"{name}: {k}", v is not None and abs(v - c[k] * 1e3) <= tol + 1e-6,
                      f"{t[j]} vs {c[k]} us")
    check(f"{name}: proxy split present iff proxy records",
          all((c["wait_p50_us"] is not None) == proxy for c in coll), str(coll))


def main():
    mode = sys.argv[1]
    if mode == "html" and not (shutil.which("chromium") or shutil.which("chromium-browser")):
        print("SKIP: chromium is not installed (scripts/setup installs it)")
        return 77
    scratch = tempfile.mkdtemp(prefix=f"nccl-export-{mode}-")
    summary = []
    for name, extra, proxy in (("default", {}, True), ("v3", {"FAKEGPU_NCCL_PROFILER_VERSION": "3"},
                                                   False)):
        d = os.path.join(scratch, name)
        os.makedirs(d)
        traces = run_job(d, extra)
        if mode == "chrome":
            summary.append(f"{name}: {check_chrome(d, traces, name)} proxy and channel slices, "
                           f"{check_sqlite(d, traces, name)} proxy rows, "
                           f"{check_rows(d, traces, name)} link rows")
        else:
            check_page(d, traces, name, proxy)
            summary.append(f"{name}: page checked")
    if failures:
        print("\n".join(failures[:60]))
        print(f"kept for inspection: {scratch}")
        return 1
    shutil.rmtree(scratch, ignore_errors=True)
    print("ok (" + "; ".join(summary) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
