#!/usr/bin/env python3
"""Profiler ABI v7's kernel phases and user tags in the exports and in
`diff --by nccl_tag` (docs/nccl.md "In the exports", docs/export.md,
docs/diff.md "Per user tag"): a 4-rank all-reduce job (tests/nccl/w_links.c,
8 steps, 4 channels) under `cutrace run` whose simulated NCCL speaks v7 with
FAKEGPU_NCCL_KPHASES=30:50 and FAKEGPU_NCCL_USER_TAG=1000 with
FAKEGPU_NCCL_USER_TAG_MOD=2 (the op of sequence number s has tag 1000 + s mod
2: tags 1000 and 1001, 4 ops a rank each); the same job with
FAKEGPU_NCCL_SLOW_SEQ=2:1:2000 (tag 1001's ops carry 2000 us more transfer on
every rank, tests/fakegpu/README.md); the first job at v6.

usage: check_v7_exports.py   (environment: CT_CUTRACE, CT_W_LINKS,
                              CT_FAKEGPU_DIR, CT_FAKE_CUPTI, CT_CHECK_CHROME)

Checked:
  - SQLite: NCCL_KERNEL_PHASES has one row per nccl_phase record of
    `dump --json` and NCCL_TAGS one per nccl_tag record, with the same
    fields, every time the record's plus its rank's RANKS.shiftNs, exactly;
    a join of NCCL_TAGS to NCCL_OPS on (rank, correlationId) gives each
    tag its ops; at v6 both tables exist and are empty;
  - Perfetto (`export --format chrome --nccl-proxy`): the format rules
    (tests/export/check_chrome.py); one nccl_phase slice per record, named
    for its phase, its args the record's, on its channel slice's track and
    nested in it (start and end inside it, after its previous sibling);
    where no clamp moved it (no `clamped_ns` arg) its ts and dur the
    record's to the ns, and a clamp at most 1 us (the GPU timer conversion's
    tolerance, docs/nccl.md "Kernel channels"); `user_tag` on every NCCL
    call and GPU slice of a tagged op, equal to its record, and on no other;
    without --nccl-proxy no phase slice, the tags still there; at v6 neither;
  - diff --by nccl_tag, one run a side (samples: the instances' transfer
    parts): segments 1000 and 1001; tag 1001's op_us medians differ by
    2000 us within 5 us (the simulator's transfer is its schedule's exactly;
    both medians are GPU intervals converted from the GPU timer, each end
    within 1 us: 4 us, and 1 us of rounding) and its verdict is regressed;
    tag 1000's op_us ratio within 0.1 % of 1 (its ops are unchanged; the
    same bound); ops 16 on both sides; against the v6 run: every row's
    median_b null with the reason naming ABI v7; v6 against itself: one
    "(none)" segment, all null with the reason; --by nccl_tags refused
    (exit 2) naming nccl_tag.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from outcome import check, finish, scratch

RANKS, NCH, STEPS, EXTRA_US = 4, 4, 8, 2000
CUTRACE = os.environ["CT_CUTRACE"]


def run(name, extra):
    d = tempfile.mkdtemp(prefix=f"nccl-v7x-{name}-")
    scratch.append(d)
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": os.environ["CT_FAKEGPU_DIR"],
                "CUTRACE_CUPTI_LIB": os.environ["CT_FAKE_CUPTI"],
                "FAKEGPU_NET_GBPS": "4", "W_LINKS_STEPS": str(STEPS),
                "W_LINKS_COUNTS": "4194304", "FAKEGPU_NCCL_NCHANNELS": str(NCH),
                "FAKEGPU_NCCL_KPHASES": "30:50", "FAKEGPU_NCCL_USER_TAG": "1000",
                "FAKEGPU_NCCL_USER_TAG_MOD": "2", "FAKEGPU_NCCL_PROFILER_VERSION": "7"})
    for k in ("FAKEGPU_NCCL_CH_SETUP_US", "FAKEGPU_NCCL_SLOW_CHANNEL", "FAKEGPU_NCCL_LINKS",
              "FAKEGPU_NCCL_SLOW_SEQ"):
        env.pop(k, None)
    env.update(extra)
    traces = os.path.join(d, "traces")
    p = subprocess.run([CUTRACE, "run", "-o", traces, "--", os.environ["CT_W_LINKS"], "launch",
                        str(RANKS)], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode:
        sys.exit(f"{name}: job failed ({p.returncode}): {p.stderr}")
    recs = []
    for f in sorted(os.listdir(traces)):
        out = subprocess.run([CUTRACE, "dump", "--json", os.path.join(traces, f)],
                             capture_output=True, text=True, timeout=300, check=True).stdout
        recs += [json.loads(line) for line in out.splitlines() if line.strip()]
    return d, traces, recs


def cli(*args, ok=(0,)):
    p = subprocess.run([CUTRACE, *args], capture_output=True, text=True, timeout=300)
    if p.returncode not in ok:
        sys.exit(f"cutrace {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


def check_sqlite(name, d, traces, recs, v7):
    db_path = os.path.join(d, "t.sqlite")
    cli("export", "--format", "sqlite", "-o", db_path, traces)
    db = sqlite3.connect(db_path)
    shift = dict(db.execute("SELECT rank, shiftNs FROM RANKS").fetchall())
    want = sorted((r["rank"], r["correlation_id"], r["channel"], r["phase"],
                   r["start_ns"] + shift[r["rank"]], r["end_ns"] + shift[r["rank"]])
                  for r in recs if r["kind"] == "nccl_phase")
    got = sorted(db.execute("SELECT rank, correlationId, channel, phase, start, end "
                            "FROM NCCL_KERNEL_PHASES").fetchall())
    check(f"{name}: NCCL_KERNEL_PHASES rows are the nccl_phase records", got == want and
          len(want) == (3 * RANKS * STEPS * NCH if v7 else 0), f"{len(got)} vs {len(want)}")
    want = sorted((r["rank"], r["correlation_id"], r["tag"], r["time_ns"] + shift[r["rank"]])
                  for r in recs if r["kind"] == "nccl_tag")
    got = sorted(db.execute("SELECT rank, correlationId, tag, start FROM NCCL_TAGS").fetchall())
    check(f"{name}: NCCL_TAGS rows are the nccl_tag records", got == want and
          len(want) == (RANKS * STEPS if v7 else 0), f"{got[:4]} vs {want[:4]}")
    join = db.execute("SELECT t.tag, COUNT(*) FROM NCCL_OPS o JOIN NCCL_TAGS t "
                      "USING (rank, correlationId) GROUP BY t.tag ORDER BY t.tag").fetchall()
    check(f"{name}: NCCL_TAGS joins NCCL_OPS", join == ([(1000, 16), (1001, 16)] if v7 else []),
          join)
    db.close()


def check_chrome(name, d, traces, recs, v7):
    path = os.path.join(d, "t.json")
    cli("export", "--format", "chrome", "--nccl-proxy", "-o", path, traces)
    p = subprocess.run([sys.executable, os.environ["CT_CHECK_CHROME"], path, "--ranks",
                        str(RANKS)], capture_output=True, text=True, timeout=300)
    check(f"{name}: check_chrome.py", p.returncode == 0, p.stdout + p.stderr)
    ev = json.load(open(path))["traceEvents"]
    pid_rank = {e["pid"]: int(e["args"]["name"].split()[1]) for e in ev
                if e["ph"] == "M" and e["name"] == "process_name"}
    db = sqlite3.connect(os.path.join(d, "t.sqlite"))
    shift = dict(db.execute("SELECT rank, shiftNs FROM RANKS").fetchall())
    db.close()

    def ns(ts):
        return round(ts * 1000)
    chans = {}
    for e in ev:
        if e.get("cat") == "nccl_channel":
            key = (pid_rank[e["pid"]], e["args"]["correlation_id"], e["args"]["channel"])
            chans[key] = e
    want = {}
    for r in recs:
        if r["kind"] == "nccl_phase":
            want[(r["rank"], r["correlation_id"], r["channel"], r["phase"])] = r
    phases = [e for e in ev if e.get("cat") == "nccl_phase"]
    check(f"{name}: one phase slice per record", len(phases) == len(want) and
          len(want) == (3 * RANKS * STEPS * NCH if v7 else 0), f"{len(phases)} vs {len(want)}")
    last_end = {}
    for e in sorted(phases, key=lambda e: (e["pid"], e["tid"], e["ts"])):
        a, rank = e["args"], pid_rank[e["pid"]]
        r = want.get((rank, a["correlation_id"], a["channel"], a["phase"]))
        c = chans.get((rank, a["correlation_id"], a["channel"]))
        if not check(f"{name}: a phase slice of a record and a channel slice", r and c, e):
            continue
        check(f"{name}: phase slice named for its phase", e["name"] == a["phase"], e)
        s, t = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        cs, ct = ns(c["ts"]), ns(c["ts"]) + ns(c["dur"])
        check(f"{name}: phase on its channel's track, nested in it",
              e["tid"] == c["tid"] and cs <= s <= t <= ct, (e, c))
        key = (e["pid"], e["tid"], a["correlation_id"], a["channel"])
        check(f"{name}: phases after each other", s >= last_end.get(key, s), e)
        last_end[key] = t
        rs, rt = r["start_ns"] + shift[rank], r["end_ns"] + shift[rank]
        moved = a.get("clamped_ns", 0)
        check(f"{name}: clamp within 1 us and said", moved == abs(s - rs) + abs(t - rt) and
              moved <= 1000, (e, r))
    # user_tag on each tagged op's call and GPU slice, and nowhere else
    tags = {(r["rank"], r["correlation_id"]): r["tag"] for r in recs if r["kind"] == "nccl_tag"}
    tagged = [e for e in ev if "user_tag" in e.get("args", {})]
    per_op = {}
    for e in tagged:
        a, rank = e["args"], pid_rank[e["pid"]]
        # GPU tracks' tids from 2^30 (CT_GPU_TID), host threads' below
        where = "gpu" if e["tid"] >= 1 << 30 else "call"
        check(f"{name}: user_tag is the op's, 1000 + seq mod 2",
              tags.get((rank, a["correlation_id"])) == a["user_tag"] == 1000 + a["seq"] % 2, e)
        per_op[(where, rank, a["correlation_id"])] = a["user_tag"]
    for where in ("call", "gpu"):
        check(f"{name}: user_tag on every tagged op's {where} slice, once",
              sorted(k[1:] for k in per_op if k[0] == where) == sorted(tags) and
              len(tagged) == 2 * len(tags), f"{len(per_op)} vs {len(tags)}")
    # without the option: no phase slice, the tags still there
    plain = os.path.join(d, "plain.json")
    cli("export", "--format", "chrome", "-o", plain, traces)
    pev = json.load(open(plain))["traceEvents"]
    check(f"{name}: no phase slice without --nccl-proxy",
          not [e for e in pev if e.get("cat") == "nccl_phase"], "")
    check(f"{name}: user_tag without --nccl-proxy",
          len([e for e in pev if "user_tag" in e.get("args", {})]) == len(tagged), "")


def diff_json(*args):
    p = cli("diff", "--json", "--by", "nccl_tag", *args)
    return json.loads(p.stdout)


def row(seg, metric):
    return next((m for m in seg["metrics"] if m["metric"] == metric), None)


da, ta, ra = run("a", {})
db_, tb, rb = run("slow", {"FAKEGPU_NCCL_SLOW_SEQ": f"2:1:{EXTRA_US}"})
d6, t6, r6 = run("v6", {"FAKEGPU_NCCL_PROFILER_VERSION": "6"})
for name, d, t, recs, v7 in (("v7", da, ta, ra, True), ("v6", d6, t6, r6, False)):
    check_sqlite(name, d, t, recs, v7)
    check_chrome(name, d, t, recs, v7)

j = diff_json(ta, tb)
segs = {s["value"]: s for s in j["segments"]}
check("diff: a segment per tag", sorted(segs) == ["1000", "1001"], list(segs))
if "1001" in segs and "1000" in segs:
    slow, same = row(segs["1001"], "op_us"), row(segs["1000"], "op_us")
    check("diff: tag 1001's op_us 2000 us slower, regressed",
          slow and abs(slow["median_b"] - slow["median_a"] - EXTRA_US) <= 5 and
          slow["verdict"] == "regressed", slow)
    check("diff: tag 1000's op_us unchanged",
          same and abs(same["ratio"] - 1) <= 1e-3 and same["verdict"] == "no evidence", same)
    for v in ("1000", "1001"):
        ops = row(segs[v], "ops")
        check(f"diff: tag {v}: 16 ops a side", ops and ops["median_a"] == ops["median_b"] == 16,
              ops)
        check(f"diff: tag {v}: gpu_us row", row(segs[v], "gpu_us") is not None, segs[v])
j = diff_json(ta, t6)
for s in j["segments"]:
    for m in s["metrics"]:
        why = {u["figure"]: u["reason"] for u in m["unavailable"]}
        check("diff against v6: median_b null with the reason", m["median_b"] is None and
              m["median_a"] is not None and "ABI v7" in why.get("median_b", ""), m)
check("diff against v6: rows of A's tags", sorted(s["value"] for s in j["segments"]) ==
      ["1000", "1001"] and all(len(s["metrics"]) == 3 for s in j["segments"]), j["segments"])
j = diff_json(t6, t6)
check("diff v6 vs v6: one (none) segment, null with the reason",
      [s["value"] for s in j["segments"]] == ["(none)"] and all(
          m["median_a"] is None and m["median_b"] is None and m["ratio"] is None and
          any("user tag" in u["reason"] for u in m["unavailable"])
          for m in j["segments"][0]["metrics"]) and len(j["segments"][0]["metrics"]) == 3,
      j["segments"])
p = cli("diff", "--by", "nccl_tags", ta, tb, ok=(2,))
check("diff --by nccl_tags refused naming the keys", "nccl_tag," in p.stderr, p.stderr)
text = cli("diff", "--by", "nccl_tag", ta, t6).stdout
check("diff text: null figures as '-' with the reason", "nccl_tag = 1001" in text and
      "median_b" in text and "ABI v7" in text and "nan" not in text, text[-1500:])

finish()
