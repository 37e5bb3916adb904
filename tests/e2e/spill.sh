#!/bin/bash
# e2e: a spilled job (decoder/read/spill.h: each rank's GPU ops and launches
# held compressed from extraction on, rebuilt only while an analysis reads
# them) gives the same bytes as the job held whole. Two generated 4-rank
# jobs (a slow rank, clock skew, health counters; a plain one): every output
# of report (text, JSON with and without per-rank iterations, HTML, rows),
# diagnose (text, JSON, rows), diff and goodput with CUTRACE_SPILL=1, from
# the traces and from their summaries, equals the one with CUTRACE_SPILL=0.
# A 72-rank job, above the default threshold (64 traces), reports the same
# with the default as with CUTRACE_SPILL=0. A bad CUTRACE_SPILL is a
# one-line error naming it and its values. (The labelled jobs compare the
# same on their own shapes: check_case.py, spill_same.)
# usage: spill.sh BUILD_ROOT
set -euo pipefail
build=$1
cutrace=$build/decoder/cutrace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
ok() { pass=$((pass + 1)); }
die() { echo "FAIL: $*"; exit 1; }
mkdir "$tmp/a" "$tmp/b" "$tmp/big"
"$build/tests/tools/ct_synth_job" -d "$tmp/a" --ranks 4 --iterations 30 --slow-rank 2 \
  --skew-us 37 --counters-us 200 > /dev/null
"$build/tests/tools/ct_synth_job" -d "$tmp/b" --ranks 4 --iterations 30 > /dev/null
"$cutrace" summarize -o "$tmp/sa" "$tmp/a" 2> /dev/null
"$cutrace" summarize -o "$tmp/sb" "$tmp/b" 2> /dev/null

. "$(dirname "$0")/outputs.sh"
# Every output is the same bytes, the HTML page's critical path included
# (a spilled job builds it within diagnose's side budget; docs/critical-path.md).
same() { # OUT_A OUT_B WHAT
  for f in "$1"/*; do
    n=$(basename "$f")
    [ -s "$f" ] || [ "$n" = report.err ] || die "$3: $n is empty"
    if [ "${n%.html}" != "$n" ]; then
      grep -q '"cp":{"built":1,' "$2/$n" || die "$3: $n has no critical path"
    fi
    cmp -s "$f" "$2/$n" || { diff "$f" "$2/$n" | head -5; die "$3: $n differs"; }
    ok
  done
}
CUTRACE_SPILL=0 outputs "$tmp/a" "$tmp/b" "$tmp/whole"
CUTRACE_SPILL=1 outputs "$tmp/a" "$tmp/b" "$tmp/spilled"
same "$tmp/whole" "$tmp/spilled" "traces spilled"
CUTRACE_SPILL=0 outputs "$tmp/sa" "$tmp/sb" "$tmp/whole-s"
CUTRACE_SPILL=1 outputs "$tmp/sa" "$tmp/sb" "$tmp/spilled-s"
same "$tmp/whole-s" "$tmp/spilled-s" "summaries spilled"

"$build/tests/tools/ct_synth_job" -d "$tmp/big" --ranks 72 --iterations 20 --slow-rank 70 \
  > /dev/null
"$cutrace" report --json --rank-iterations "$tmp/big" > "$tmp/big-default.json"
CUTRACE_SPILL=0 "$cutrace" report --json --rank-iterations "$tmp/big" > "$tmp/big-whole.json"
cmp -s "$tmp/big-default.json" "$tmp/big-whole.json" || die "72 ranks: the default differs from whole"
ok
"$cutrace" diagnose --json "$tmp/big" > "$tmp/big-default.diag"
CUTRACE_SPILL=0 "$cutrace" diagnose --json "$tmp/big" > "$tmp/big-whole.diag"
cmp -s "$tmp/big-default.diag" "$tmp/big-whole.diag" || die "72 ranks: diagnose differs"
grep -q '"compute_straggler"' "$tmp/big-default.diag" || die "72 ranks: rank 70 not found slow"
ok

if CUTRACE_SPILL=yes "$cutrace" report "$tmp/a" > /dev/null 2> "$tmp/err"; then
  die "CUTRACE_SPILL=yes accepted"
fi
grep -qx "cutrace report: CUTRACE_SPILL='yes': expected 0 (never spill) or 1 (always)" "$tmp/err" ||
  die "bad CUTRACE_SPILL: $(cat "$tmp/err")"
ok
echo "spill: $pass checks passed"
