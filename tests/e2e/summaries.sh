#!/bin/bash
# e2e: per-rank summaries (`cutrace summarize`, docs/summary.md) stand for
# their traces. Two generated 4-rank jobs (ct_synth_job: a slow rank, health
# counters, clock skew; a second, plain one) are summarized, and every
# output of report (text, JSON with and without per-rank iterations, HTML,
# rows), diagnose (text, JSON, rows), goodput and diff (between the jobs) made from
# the summaries, with the traces moved away, is byte for byte the one made
# from the traces. The recipe of a distributed decode with plain xargs -P
# (one summarize per trace, in parallel, into one folder) gives the same
# summaries. Bad input: a damaged summary, one of another --step, export of
# summaries, a PyTorch trace: each a one-line error naming it.
# usage: summaries.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
cutrace=$build/decoder/cutrace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
ok() { pass=$((pass + 1)); }
die() { echo "FAIL: $*"; exit 1; }
mkdir "$tmp/a" "$tmp/b"
"$build/tests/tools/ct_synth_job" -d "$tmp/a" --ranks 4 --iterations 30 --slow-rank 2 \
  --skew-us 37 --counters-us 200 > /dev/null
"$build/tests/tools/ct_synth_job" -d "$tmp/b" --ranks 4 --iterations 30 > /dev/null
"$cutrace" summarize -o "$tmp/sa" "$tmp/a" 2> "$tmp/sum.err"
grep -q "^cutrace summarize: 4 summaries in $tmp/sa (" "$tmp/sum.err" ||
  die "summarize's closing line: $(cat "$tmp/sum.err")"
"$cutrace" summarize -j 1 -o "$tmp/sb" "$tmp/b" 2> /dev/null
[ "$(ls "$tmp/sa" | grep -c '\.ctsum$')" = 4 ] || die "not one summary per trace: $(ls "$tmp/sa")"
ok

. "$(dirname "$0")/outputs.sh"
outputs "$tmp/a" "$tmp/b" "$tmp/from-traces"
mv "$tmp/a" "$tmp/a.away"
mv "$tmp/b" "$tmp/b.away"
outputs "$tmp/sa" "$tmp/sb" "$tmp/from-summaries"
for f in "$tmp/from-traces"/*; do
  n=$(basename "$f")
  [ -s "$f" ] || [ "$n" = report.err ] || die "$n is empty"
  # the operands themselves (folder names) are echoed by the rows and diff:
  # those name the summary folders where the summaries were read
  sed -e "s#$tmp/sa#$tmp/a#g; s#$tmp/sb#$tmp/b#g" "$tmp/from-summaries/$n" > "$tmp/s.$n"
  cmp -s "$f" "$tmp/s.$n" || { diff "$f" "$tmp/s.$n" | head -5; die "$n differs from summaries"; }
  ok
done
grep -q '"health"' "$tmp/from-summaries/report.json" || die "no health counters from the summaries"
ok
mv "$tmp/a.away" "$tmp/a"
mv "$tmp/b.away" "$tmp/b"

# the distributed-decode recipe with xargs -P: one summarize per trace
ls "$tmp/a"/*.cutrace | xargs -P 2 -n 1 "$cutrace" summarize -o "$tmp/sx" 2> /dev/null
for f in "$tmp/sa"/*.ctsum; do
  cmp -s "$f" "$tmp/sx/$(basename "$f")" || die "xargs -P summary $(basename "$f") differs"
done
ok

# bad input, each a one-line error naming what is wrong
one=$(ls "$tmp/sa"/*.ctsum | head -1)
mkdir "$tmp/bad"
head -c 200 "$one" > "$tmp/bad/cut.ctsum"
if "$cutrace" report "$tmp/bad" > /dev/null 2> "$tmp/err"; then die "a truncated summary was read"; fi
grep -q "cut.ctsum: truncated or corrupt summary" "$tmp/err" || die "truncated: $(cat "$tmp/err")"
ok
printf 'not a summary at all' > "$tmp/bad/cut.ctsum"
if "$cutrace" report "$tmp/bad" > /dev/null 2> "$tmp/err"; then die "garbage was read"; fi
grep -q "cut.ctsum: not a cutrace summary" "$tmp/err" || die "garbage: $(cat "$tmp/err")"
ok
if "$cutrace" report --step Other "$tmp/sa" > /dev/null 2> "$tmp/err"; then
  die "a summary of another --step was read"
fi
grep -q "summarized with --step '(default)', read with --step 'Other'" "$tmp/err" ||
  die "--step: $(cat "$tmp/err")"
ok
if "$cutrace" export --format chrome -o "$tmp/x.json" "$tmp/sa" 2> "$tmp/err"; then
  die "export read summaries"
fi
grep -q "is a summary: export needs the traces themselves" "$tmp/err" || die "export: $(cat "$tmp/err")"
ok
if "$cutrace" summarize -o "$tmp/sy" "$tmp/sa" 2> "$tmp/err"; then die "summarized a summary"; fi
grep -q "is a summary already" "$tmp/err" || die "summary of a summary: $(cat "$tmp/err")"
ok
if "$cutrace" summarize -o "$tmp/sy" -j 0 "$tmp/a" 2> "$tmp/err"; then die "-j 0 accepted"; fi
grep -q -- "-j '0': expected a count from 1 to 256" "$tmp/err" || die "-j: $(cat "$tmp/err")"
ok
echo "summaries: $pass checks passed"
