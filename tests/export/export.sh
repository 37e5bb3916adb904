#!/bin/bash
# e2e: `cutrace export` (chrome, sqlite) and `cutrace report --html` on
# ct_synth traces (one process, the training-loop mix), a ct_synth_job
# 4-rank job and one with health counters (rank 1 power-capped from step 6),
# checked by check_chrome.py / check_sqlite.py against the
# decoder's own `dump --json` and `report --json`; option and output errors.
# usage: export.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
src=$2
cutrace=$build/decoder/cutrace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/job" "$tmp/one"
"$build/tests/tools/ct_synth_job" -d "$tmp/job" --ranks 4 --iterations 10 --slow-rank 2 \
  --skew-us 37
"$build/tests/tools/ct_synth" -o "$tmp/one/synth.cutrace" --iterations 30
for d in job one; do
  for f in "$tmp/$d"/*.cutrace; do "$cutrace" dump --json "$f" > "$f.jsonl"; done
  "$cutrace" report --json --rank-iterations -o "$tmp/$d.report.json" "$tmp/$d"
  "$cutrace" export --format chrome -o "$tmp/$d.json" "$tmp/$d"
  "$cutrace" export --format sqlite -o "$tmp/$d.sqlite" "$tmp/$d"
  python3 "$src/tests/export/check_sqlite.py" "$tmp/$d.sqlite" "$tmp/$d.report.json" \
    "$tmp/$d"/*.jsonl
  python3 "$src/tests/export/check_nsys_stats.py" "$tmp/$d.sqlite" "$tmp/$d.report.json" \
    "$tmp/$d"/*.jsonl
done
# nsys's summary reports on kernels whose durations vary (medians, spreads)
mkdir "$tmp/jitter"
"$build/tests/tools/ct_synth_job" -d "$tmp/jitter" --ranks 4 --iterations 10 --jitter-pct 20 \
  --seed 3 --skew-us 250 > /dev/null
for f in "$tmp/jitter"/*.cutrace; do "$cutrace" dump --json "$f" > "$f.jsonl"; done
"$cutrace" report --json -o "$tmp/jitter.report.json" "$tmp/jitter"
"$cutrace" export --format sqlite -o "$tmp/jitter.sqlite" "$tmp/jitter"
python3 "$src/tests/export/check_nsys_stats.py" "$tmp/jitter.sqlite" "$tmp/jitter.report.json" \
  "$tmp/jitter"/*.jsonl
python3 "$src/tests/export/check_chrome.py" "$tmp/job.json" --ranks 4 --dump "$tmp"/job/*.jsonl
python3 "$src/tests/export/check_chrome.py" "$tmp/one.json" --ranks 1 --dump "$tmp"/one/*.jsonl
# health counters as counter tracks: every rank has them, rank 1's SM clock drops
mkdir "$tmp/health"
"$build/tests/tools/ct_synth_job" -d "$tmp/health" --ranks 4 --iterations 12 \
  --counters-us 200 --throttle-rank 1 --throttle-from 6
for f in "$tmp/health"/*.cutrace; do "$cutrace" dump --json "$f" > "$f.jsonl"; done
"$cutrace" export --format chrome -o "$tmp/health.json" "$tmp/health"
python3 "$src/tests/export/check_chrome.py" "$tmp/health.json" --ranks 4 --health \
  --throttled 1 --dump "$tmp"/health/*.jsonl
# ... and a job without counters has no health tracks
if grep -q '"name":"GPU 0 SM clock"' "$tmp/job.json"; then
  echo "health tracks in a job without counters"; exit 1
fi
# the sqlite3 CLI reads the database too (Nsight Systems' recipe style)
if command -v sqlite3 > /dev/null; then
  n=$(sqlite3 "$tmp/job.sqlite" "SELECT COUNT(*) FROM NCCL_OPS WHERE op = 'AllReduce'")
  [ "$n" = 40 ] || { echo "sqlite3 CLI: $n AllReduce rows, want 40"; exit 1; }
fi
# the size estimate made before writing against the files written
mkdir "$tmp/size"
python3 "$src/tests/export/check_size.py" "$cutrace" "$tmp/size" -- "$tmp/job" -- "$tmp/one" \
  -- "$tmp/health" -- --critical-path "$tmp/job" -- --ranks 1,3 --iterations 3-5 "$tmp/job"
# ... and both sides of the limit: one byte under the estimate is refused
# (exit 2, the slicing options named, no file), the estimate itself is not
est=$( ("$cutrace" export --format chrome --max-size 1 -o "$tmp/x.json" "$tmp/job" 2>&1 || true) |
  sed -n 's/.*would be about [0-9.]* [a-zA-Z]* (\([0-9]*\) bytes.*/\1/p')
[ -n "$est" ] || { echo "no estimate stated"; exit 1; }
rc=0
"$cutrace" export --format chrome --max-size $((est - 1)) -o "$tmp/x.json" "$tmp/job" \
  2> "$tmp/err" || rc=$?
[ $rc = 2 ] || { echo "over --max-size: exit $rc, want 2"; cat "$tmp/err"; exit 1; }
grep -q "over the limit of .* (--max-size): export a part with --ranks LIST, --iterations A-B or --window START-END, or raise the limit with --max-size SIZE" "$tmp/err" || {
  cat "$tmp/err"; exit 1
}
[ "$(wc -l < "$tmp/err")" = 1 ] || { cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/x.json" ] || { echo "a refused export left a file"; exit 1; }
"$cutrace" export --format chrome --max-size "$est" -o "$tmp/x.json" "$tmp/job"
"$cutrace" export --format chrome --max-size none -o "$tmp/x.json" "$tmp/job"
"$cutrace" export --format chrome --max-size 0.5M -o "$tmp/x.json" "$tmp/job"
# a limit changes nothing in what is written: the bytes of the default's export
cmp "$tmp/x.json" "$tmp/job.json"

# a database is replaced, not appended to
"$cutrace" export --format sqlite -o "$tmp/job.sqlite" "$tmp/job"
python3 "$src/tests/export/check_sqlite.py" "$tmp/job.sqlite" "$tmp/job.report.json" \
  "$tmp"/job/*.jsonl > /dev/null

# a slice of the job: --ranks 1,3 --iterations 3-5 writes what overlaps the
# span of those iterations on those ranks and nothing else; checked against
# the full export filtered here, and the slice is a valid trace on its own
"$cutrace" export --format chrome --ranks 1,3 --iterations 3-5 -o "$tmp/slice.json" "$tmp/job"
"$cutrace" export --format sqlite --ranks 1,3 --iterations 3-5 -o "$tmp/slice.sqlite" "$tmp/job"
"$cutrace" export --format chrome --ranks 1,3 --window 4000-7500 -o "$tmp/win.json" "$tmp/job"
python3 - "$tmp/job.json" "$tmp/slice.json" "$tmp/win.json" "$tmp/job.report.json" \
  "$tmp/job.sqlite" "$tmp/slice.sqlite" <<'PY'
import json, sqlite3, sys
full, sl, win = (json.load(open(p)) for p in sys.argv[1:4])
rep = json.load(open(sys.argv[4]))
its = [i for k in rep["ranks"] if k["rank"] in (1, 3) for i in k["iterations"] if 3 <= i["index"] <= 5]
# in integer ns (the file's µs have three decimals): the report's times
# (and --window) count from its zero, the file's from the job's earliest
# record, and the report's zero is at otherData.report_time_zero_ts
ns = lambda us: round(us * 1000)
z = ns(full["otherData"]["report_time_zero_ts"])
assert z > 0 and ns(sl["otherData"]["report_time_zero_ts"]) == z, z
lo, hi = z + min(ns(i["start_us"]) for i in its), z + max(ns(i["end_us"]) for i in its)
pid = {e["pid"]: int(e["args"]["name"].split()[1]) for e in full["traceEvents"]
       if e["ph"] == "M" and e["name"] == "process_name"}
def kept(doc, lo, hi):
    return sorted((e["pid"], e["tid"], e["ts"], e["name"]) for e in doc["traceEvents"]
                  if e["ph"] == "X" and pid.get(e["pid"]) in (1, 3)
                  and ns(e["ts"]) + ns(e.get("dur", 0)) >= lo and ns(e["ts"]) <= hi)
for doc, a, b in ((sl, lo, hi), (win, z + 4000000, z + 7500000)):
    got = sorted((e["pid"], e["tid"], e["ts"], e["name"]) for e in doc["traceEvents"] if e["ph"] == "X")
    want = kept(full, a, b)
    assert got == want, (len(got), len(want))
    assert 0 < len(got) < sum(e["ph"] == "X" for e in full["traceEvents"]) / 3, len(got)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert names and all(n.split()[1] in ("1", "3") for n in names), names
    # every flow that starts ends, and the other way round
    s = {e["id"] for e in doc["traceEvents"] if e["ph"] == "s"}
    f = {e["id"] for e in doc["traceEvents"] if e["ph"] == "f"}
    assert s == f and s, (len(s), len(f))
q = "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN RANKS t ON t.globalPid = k.globalPid WHERE t.rank IN (1, 3) AND k.end >= ? AND k.start <= ?"
fdb, sdb = sqlite3.connect(sys.argv[5]), sqlite3.connect(sys.argv[6])
want = fdb.execute(q, (lo, hi)).fetchone()[0]
got = sdb.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
assert got == want and got > 0, (got, want)
ranks = {r for (r,) in sdb.execute("SELECT rank FROM ITERATIONS")}
assert ranks == {1, 3}, ranks
print(f"export slice: ok ({len(kept(full, lo, hi))} slices of ranks 1,3 in iterations 3-5)")
PY

# --critical-path: each step's path as slices and flows on "critical path"
# tracks, checked against the plain export (its byte prefix) and against
# `cutrace critical-path --json` (per-category totals, steps); the slow
# rank 2 makes the path cross ranks. And a selection of it.
"$cutrace" critical-path --json -o "$tmp/job.cp.json" "$tmp/job"
"$cutrace" export --format chrome --critical-path -o "$tmp/job.path.json" "$tmp/job"
python3 "$src/tests/export/check_critical_path.py" "$tmp/job.json" "$tmp/job.path.json" \
  "$tmp/job.cp.json"
"$cutrace" export --format chrome --ranks 2,3 --iterations 3-5 -o "$tmp/sel.json" "$tmp/job"
"$cutrace" export --format chrome --critical-path --ranks 2,3 --iterations 3-5 \
  -o "$tmp/sel.path.json" "$tmp/job"
python3 "$src/tests/export/check_critical_path.py" "$tmp/sel.json" "$tmp/sel.path.json" \
  "$tmp/job.cp.json" --ranks 2,3 --iterations 3-5

# critical-path --iterations A-B: only those steps, each as long as in the
# whole run's path; the graph holds only their work
"$cutrace" critical-path --json --iterations 3-5 -o "$tmp/job.cp35.json" "$tmp/job"
python3 - "$tmp/job.cp.json" "$tmp/job.cp35.json" <<'PY'
import json, sys
full = {i["index"]: i["length_us"] for i in json.load(open(sys.argv[1]))["iterations"]}
part = json.load(open(sys.argv[2]))["iterations"]
assert [i["index"] for i in part] == [3, 4, 5], part
for i in part:
    assert abs(i["length_us"] - full[i["index"]]) < 1e-3, (i, full[i["index"]])
print("critical-path --iterations: ok")
PY
# a run whose graph passes the limit (CUTRACE_CP_MAX_MIB=1, a 400-step job
# of about 20 000 GPU ops: some 5 MB) is computed in chunks of steps, with
# the whole run's figures (critical-path, and whatif's prediction and
# mean step); a limit that a single step passes (512 kernels a step on 16
# ranks, some 2 MB) is a clear error
mkdir "$tmp/long"
"$build/tests/tools/ct_synth_job" -d "$tmp/long" --ranks 4 --iterations 400 > /dev/null
"$cutrace" critical-path --json -o "$tmp/long.whole.json" "$tmp/long"
CUTRACE_CP_MAX_MIB=1 "$cutrace" critical-path --json -o "$tmp/long.chunks.json" "$tmp/long"
"$cutrace" whatif --json --scale rank=1=2 -o "$tmp/long.wwhole.json" "$tmp/long"
CUTRACE_CP_MAX_MIB=1 "$cutrace" whatif --json --scale rank=1=2 -o "$tmp/long.wchunks.json" \
  "$tmp/long"
CUTRACE_CP_MAX_MIB=1 "$cutrace" critical-path "$tmp/long" | grep -q "computed in [0-9]* chunks"
python3 - "$tmp"/long.whole.json "$tmp"/long.chunks.json "$tmp"/long.wwhole.json \
  "$tmp"/long.wchunks.json <<'PY'
import json, sys
w, c, ww, wc = (json.load(open(f)) for f in sys.argv[1:])
assert w["graph_chunks"] == 1 and c["graph_chunks"] > 1, (w["graph_chunks"], c["graph_chunks"])
w["graph_chunks"] = c["graph_chunks"]
assert w == c, "chunked critical path differs from the whole run's"
for k in ("measured_step_us", "replayed_step_us", "predicted_step_us", "measured_mean_step_us",
          "predicted_mean_step_us"):
    assert abs(ww[k] - wc[k]) <= 1e-3 * ww[k], (k, ww[k], wc[k])
print(f"critical-path in {c['graph_chunks']} chunks: the whole run's figures")
PY
# ... and so are export --critical-path and the HTML page's path, the same
# bytes as from one graph; a spilled job's page (one rank in memory at a
# time) draws its path too, within diagnose's side budget
"$cutrace" export --format chrome --critical-path -o "$tmp/long.path.json" "$tmp/long"
CUTRACE_CP_MAX_MIB=1 "$cutrace" export --format chrome --critical-path \
  -o "$tmp/long.cpath.json" "$tmp/long"
cmp "$tmp/long.path.json" "$tmp/long.cpath.json"
grep -q '"cat":"critical_path"' "$tmp/long.path.json" || { echo "no path drawn"; exit 1; }
"$cutrace" report --html -o "$tmp/long.html" "$tmp/long"
CUTRACE_CP_MAX_MIB=1 "$cutrace" report --html -o "$tmp/long.c.html" "$tmp/long"
CUTRACE_SPILL=1 "$cutrace" report --html -o "$tmp/long.s.html" "$tmp/long"
cmp "$tmp/long.html" "$tmp/long.c.html"
cmp "$tmp/long.html" "$tmp/long.s.html"
if grep -q "Not computed" "$tmp/long.html"; then echo "html: path not computed"; exit 1; fi
mkdir "$tmp/wide"
"$build/tests/tools/ct_synth_job" -d "$tmp/wide" --ranks 16 --iterations 3 --kernels 512 \
  > /dev/null
if CUTRACE_CP_MAX_MIB=1 "$cutrace" critical-path "$tmp/wide" 2> "$tmp/err"; then
  echo "critical-path: a step over CUTRACE_CP_MAX_MIB=1 was built"; exit 1
fi
grep -q "a single step, with the step before it, would pass 1 MiB" "$tmp/err" || {
  cat "$tmp/err"; exit 1
}

# bad options name the option and the allowed values
expect_fail() { # pattern, args...
  local pat=$1
  shift
  if "$cutrace" "$@" 2> "$tmp/err"; then echo "expected failure: $*"; exit 1; fi
  grep -q -- "$pat" "$tmp/err" || { echo "want '$pat' from $*, got:"; cat "$tmp/err"; exit 1; }
}
expect_fail "--format 'xml': allowed: chrome, sqlite" export --format xml -o "$tmp/x" "$tmp/job"
expect_fail "--format is required; allowed: chrome, sqlite" export -o "$tmp/x" "$tmp/job"
expect_fail "-o FILE is required" export --format chrome "$tmp/job"
expect_fail "allowed: --format chrome|sqlite, -o FILE" export --bogus "$tmp/job"
expect_fail "--ranks 'x': expected ranks and ranges, e.g. 0-3,100" export --format chrome \
  --ranks x -o "$tmp/x" "$tmp/job"
expect_fail "--ranks: the job has no rank 9 (ranks 0..3)" export --format chrome --ranks 1,9 \
  -o "$tmp/x" "$tmp/job"
expect_fail "--window '5-1': expected START-END" export --format chrome --window 5-1 \
  -o "$tmp/x" "$tmp/job"
expect_fail "--iterations and --window both select a time span" export --format sqlite \
  --iterations 1-2 --window 0-10 -o "$tmp/x" "$tmp/job"
expect_fail "--iterations: no iteration in that range" export --format chrome \
  --iterations 50-60 -o "$tmp/x" "$tmp/job"
expect_fail "--critical-path draws into the Chrome JSON timeline: use it with --format chrome" \
  export --format sqlite --critical-path -o "$tmp/x" "$tmp/job"
expect_fail "allowed: --format chrome|sqlite, -o FILE, --step NAME, --ranks LIST, --iterations A-B, --window START-END, --critical-path" \
  export --critical-pat=x "$tmp/job"
for v in x 0 -5 5X 2GB 1e30; do
  expect_fail "--max-size '$v': expected a size in bytes > 0, with k, M, G or T (powers of 1000), e.g. 2G, or none" \
    export --format chrome --max-size "$v" -o "$tmp/x" "$tmp/job"
done
expect_fail "--max-size limits the Chrome JSON file (what a viewer opens): use it with --format chrome" \
  export --format sqlite --max-size 1G -o "$tmp/x" "$tmp/job"
expect_fail "--html writes a file" report --html "$tmp/job"
expect_fail "allowed: --json, --html" report --bogus "$tmp/job"
# an unwritable output: one clear error, before reading anything
for fmt in chrome sqlite; do
  expect_fail "-o $tmp/nodir/out: No such file or directory" \
    export --format $fmt \
    -o "$tmp/nodir/out" "$tmp/job"
  [ "$(wc -l < "$tmp/err")" = 1 ] || { cat "$tmp/err"; exit 1; }
done
expect_fail "report: -o $tmp/nodir/r.html: No such file or directory" \
  report --html \
  -o "$tmp/nodir/r.html" "$tmp/job"
# a missing trace: named, and no output file left behind
expect_fail "$tmp/missing" export --format chrome -o "$tmp/gone.json" "$tmp/missing"
[ ! -e "$tmp/gone.json" ] || { echo "partial output left behind"; exit 1; }
echo "export e2e: ok"
