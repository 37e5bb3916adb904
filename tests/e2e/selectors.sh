#!/bin/bash
# Options that select part of a run and match nothing of it are refused
# (exit status 2, naming the option and what the run has), never answered
# as if they had selected something: a what-if of a misspelt kernel would
# predict the run unchanged ("1.000x"), a --step of no range would fall back
# to the detector's iterations unasked.
# usage: selectors.sh BUILD_DIR
set -u
build=$1
cutrace=$build/decoder/cutrace
synth=$build/tests/tools/ct_synth_job
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# refused PATTERN ARGS...: cutrace ARGS exits 2 with PATTERN on stderr
refused() {
  local pat=$1; shift
  local err rc
  err=$("$cutrace" "$@" 2>&1 > /dev/null); rc=$?
  [ $rc = 2 ] && grep -q -- "$pat" <<< "$err" && ok || bad "cutrace $*: rc=$rc: $err (wanted 2, /$pat/)"
}
accepted() {
  "$cutrace" "$@" > /dev/null 2> "$tmp/err" && ok || bad "cutrace $*: $(cat "$tmp/err")"
}

# 2 ranks, 6 steps of ProfilerStep#N, kernels model::layer0..9, one 1 MiB
# all-reduce a step, a pread per step, no checkpoint
mkdir -p "$tmp/j" "$tmp/noread"
"$synth" -d "$tmp/j" --ranks 2 --iterations 6 > /dev/null || bad "ct_synth_job"
"$synth" -d "$tmp/noread" --ranks 2 --iterations 6 --read-us 0 > /dev/null || bad "ct_synth_job"

# whatif --scale
accepted whatif --scale 'kernel=*layer3*=0.5' "$tmp/j"
refused "kernel=typo\*=0.5: matches no kernel of the run (its kernels: model::layer" \
  whatif --scale 'kernel=typo*=0.5' "$tmp/j"
refused "rank=7=0.5: the run has no rank 7 (its ranks: 0, 1)" whatif --scale rank=7=0.5 "$tmp/j"
refused "host=9=0: the run has no rank 9" whatif --scale host=9=0 "$tmp/j"
accepted whatif --scale op=AllReduce=0.5 "$tmp/j"
refused "op=AllToAll=0.5: the run has no such collective (its collectives: AllReduce:1048576)" \
  whatif --scale op=AllToAll=0.5 "$tmp/j"
refused "op=AllReduce:4096=0.5: the run has no such collective" \
  whatif --scale op=AllReduce:4096=0.5 "$tmp/j"
accepted whatif --scale data=0 "$tmp/j"
refused "data=0: the run has no data-loader waits" whatif --scale data=0 "$tmp/noread"
refused "ckpt=0: the run has no checkpoint I/O" whatif --scale ckpt=0 "$tmp/j"
# critical-path takes the same selectors
refused "matches no kernel" critical-path --scale 'kernel=nope=2' "$tmp/j"

# --step NAME that names no range or mark
for cmd in report goodput critical-path; do
  refused "--step NoSuchStep: no NVTX range or mark of that name" $cmd --step NoSuchStep "$tmp/j"
done
refused "--step NoSuchStep" export --format chrome -o "$tmp/x.json" --step NoSuchStep "$tmp/j"
accepted report --step ProfilerStep "$tmp/j"

# export's --ranks and --iterations outside the run
refused "--ranks: the job has no rank 5" export --format chrome -o "$tmp/x.json" --ranks 5 "$tmp/j"
refused "--iterations" export --format chrome -o "$tmp/x.json" --iterations 50-60 "$tmp/j"

# iteration selections outside the run (its iterations: 0 to 5)
refused "--steps 100-200: selects none of the run's iterations (its iterations: 0 to 5)" \
  report --steps 100-200 "$tmp/j"
refused "--skip 30: selects none" report --skip 30 "$tmp/j"
refused "--iterations 50-: selects none" critical-path --iterations 50- "$tmp/j"
refused "--iterations 9-9: selects none" whatif --scale data=0 --iterations 9-9 "$tmp/j"
accepted report --steps 3-200 "$tmp/j"

# diff --primary of no metric
refused "--primary foo: no such metric; expected one of step_us" diff --primary foo "$tmp/j" "$tmp/noread"
mkdir -p "$tmp/a3" "$tmp/b3"
for i in 1 2 3; do
  mkdir -p "$tmp/a3/r$i" "$tmp/b3/r$i"
  "$synth" -d "$tmp/a3/r$i" --ranks 1 --iterations 4 --seed $i --jitter-pct 2 > /dev/null
  "$synth" -d "$tmp/b3/r$i" --ranks 1 --iterations 4 --seed $((i + 9)) --jitter-pct 2 > /dev/null
done
refused "--primary kernel:nope: neither side has that metric" diff --primary kernel:nope "$tmp/a3" "$tmp/b3"
accepted diff --primary 'kernel:_ZN5model6layer3EPf' "$tmp/a3" "$tmp/b3"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
