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
done
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
# a database is replaced, not appended to
"$cutrace" export --format sqlite -o "$tmp/job.sqlite" "$tmp/job"
python3 "$src/tests/export/check_sqlite.py" "$tmp/job.sqlite" "$tmp/job.report.json" \
  "$tmp"/job/*.jsonl > /dev/null

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
expect_fail "--html writes a file" report --html "$tmp/job"
expect_fail "allowed: --json, --html" report --bogus "$tmp/job"
# an unwritable output: one clear error, before reading anything
for fmt in chrome sqlite; do
  expect_fail "-o $tmp/nodir/out: No such file or directory" export --format $fmt \
    -o "$tmp/nodir/out" "$tmp/job"
  [ "$(wc -l < "$tmp/err")" = 1 ] || { cat "$tmp/err"; exit 1; }
done
expect_fail "report: -o $tmp/nodir/r.html: No such file or directory" report --html \
  -o "$tmp/nodir/r.html" "$tmp/job"
# a missing trace: named, and no output file left behind
expect_fail "$tmp/missing" export --format chrome -o "$tmp/gone.json" "$tmp/missing"
[ ! -e "$tmp/gone.json" ] || { echo "partial output left behind"; exit 1; }
echo "export e2e: ok"
