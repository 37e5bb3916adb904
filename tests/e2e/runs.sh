#!/bin/bash
# Nothing of the user's is lost, merged or overwritten (docs/runs.md "Runs" and
# "Outputs"): runs never merge, operands are checked, outputs never replace
# an input or a trace and are replaced only when complete, and `cutrace
# run` refuses before the job starts what would leave it untraced.
# usage: runs.sh BUILD_DIR SOURCE_DIR [sanitized]
#   Part A reads jobs written by ct_synth_job (every build); part B runs
#   jobs under `cutrace run` (not in a sanitizer build: a sanitized shim
#   needs its runtime preloaded first, which `cutrace run` does not do).
set -u
build=$1
src=$2
sanitized=${3:-}
cutrace=$build/decoder/cutrace
synth=$build/tests/tools/ct_synth_job
sim=$build/examples/sim_train
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# expect STATUS WHAT CMD...: CMD exits with STATUS (stderr kept in $tmp/err)
expect() {
  local want=$1 what=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  [ "$rc" = "$want" ] && ok || bad "$what: exit $rc, want $want: $(head -c 600 "$tmp/err")"
}
ranks() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ranks"]))' "$1"; }

# ---- A. operands ------------------------------------------------------------
mkdir -p "$tmp/a" "$tmp/b" "$tmp/two" "$tmp/old" "$tmp/att"
"$synth" -d "$tmp/a" --ranks 2 --iterations 6 --run-id 20261201T000000Z-aaaa0001 > /dev/null &&
  "$synth" -d "$tmp/b" --ranks 2 --iterations 6 --run-id 20261201T000000Z-bbbb0002 > /dev/null &&
  "$synth" -d "$tmp/old" --ranks 2 --iterations 6 > /dev/null || bad "ct_synth_job"
cp "$tmp"/a/* "$tmp"/b/* "$tmp/two/"

# 1. Two runs in one folder are never one job: refused with both listed,
#    for every command that reads a job; --run picks one (a unique start).
for cmd in report diagnose goodput critical-path; do
  expect 2 "$cmd of two runs" "$cutrace" $cmd "$tmp/two"
  grep -q "2 separate runs" "$tmp/err" && grep -q "aaaa0001" "$tmp/err" &&
    grep -q "bbbb0002" "$tmp/err" && grep -q -- "--run ID" "$tmp/err" && ok ||
    bad "$cmd of two runs: the listing: $(cat "$tmp/err")"
done
expect 2 "export of two runs" "$cutrace" export --format chrome -o "$tmp/x.json" "$tmp/two"
[ ! -e "$tmp/x.json" ] && ok || bad "a refused export left $tmp/x.json"
expect 0 "report --run" "$cutrace" report --json -o "$tmp/r.json" --run 20261201T000000Z-bbbb0002 "$tmp/two"
[ "$(ranks "$tmp/r.json")" = 2 ] && ok || bad "report --run: $(ranks "$tmp/r.json") ranks, want 2"
expect 0 "report --run PREFIX" "$cutrace" report --json -o "$tmp/r.json" --run 20261201T000000Z-a "$tmp/two"
[ "$(ranks "$tmp/r.json")" = 2 ] && ok || bad "report --run prefix: want 2 ranks"
expect 2 "--run of no run" "$cutrace" report --run nosuchrun "$tmp/two"
grep -q "names none" "$tmp/err" && ok || bad "--run of no run: $(cat "$tmp/err")"
expect 2 "--run prefix of both" "$cutrace" report --run 20261201 "$tmp/two"
expect 0 "export --run" "$cutrace" export --format chrome -o "$tmp/x.json" --run 20261201T000000Z-aaaa0001 "$tmp/two"
# ... while traces from before run identities are read as before
expect 0 "report of traces without run ids" "$cutrace" report --json -o "$tmp/r.json" "$tmp/old"
[ "$(ranks "$tmp/r.json")" = 2 ] && ok || bad "old traces: want 2 ranks"

# 2. diff, which compares runs, takes a folder of two runs as two runs.
expect 0 "diff of a folder of two runs" "$cutrace" diff --json -o "$tmp/d.json" "$tmp/two" "$tmp/a"
python3 - "$tmp/d.json" <<'PY' && ok || bad "diff: the folder's runs"
import json, sys
s = json.load(open(sys.argv[1]))["segments"][0]
assert s["runs_a"] == 2 and s["runs_b"] == 1, s
PY

# 3. A restarted job (same launcher job id, restart counts 0 and 1) under
#    two run identities stays one job with two attempts.
"$synth" -d "$tmp/att" --ranks 2 --iterations 4 --job 4242 --restart-count 0 \
  --run-id 20261201T000000Z-cccc0003 > /dev/null &&
  "$synth" -d "$tmp/att" --ranks 2 --iterations 4 --job 4242 --restart-count 1 \
    --run-id 20261201T010000Z-dddd0004 > /dev/null || bad "ct_synth_job attempts"
expect 0 "report of a restarted job" "$cutrace" report --json -o "$tmp/r.json" "$tmp/att"
# ... but the same two runs with one restart count are two runs
mkdir -p "$tmp/norestart"
"$synth" -d "$tmp/norestart" --ranks 1 --iterations 4 --job 4242 --run-id R1 > /dev/null
"$synth" -d "$tmp/norestart" --ranks 1 --iterations 4 --job 4242 --run-id R2 > /dev/null
expect 2 "two runs of one job id without restart counts" "$cutrace" report "$tmp/norestart"

# 4. The same trace twice (a folder and a file in it) counts once, with a note.
one=$(ls "$tmp"/a/*.cutrace | head -1)
expect 0 "a trace given twice" "$cutrace" report --json -o "$tmp/r.json" "$tmp/a" "$one"
[ "$(ranks "$tmp/r.json")" = 2 ] && grep -q "counted once" "$tmp/err" && ok ||
  bad "a trace given twice: $(ranks "$tmp/r.json") ranks; $(cat "$tmp/err")"
ln -s "$one" "$tmp/link.cutrace"
expect 0 "a trace and a link to it" "$cutrace" report --json -o "$tmp/r.json" "$tmp/a" "$tmp/link.cutrace"
[ "$(ranks "$tmp/r.json")" = 2 ] && ok || bad "a link to a trace counted twice"

# 5. A PyTorch profiler trace and a cutrace trace are never one job; a FIFO
#    is refused, not read forever.
kin=$src/tests/data/kineto/trace_filter
expect 2 "cutrace and Kineto traces together" "$cutrace" report "$tmp/a" "$kin"
grep -q "never one job" "$tmp/err" && ok || bad "mixed kinds: $(cat "$tmp/err")"
mkfifo "$tmp/fifo"
expect 2 "a FIFO operand" timeout 20 "$cutrace" report "$tmp/fifo"
grep -q "is a FIFO" "$tmp/err" && ok || bad "FIFO: $(cat "$tmp/err")"
expect 2 "a device operand" timeout 20 "$cutrace" info /dev/null

# ---- outputs ----------------------------------------------------------------
# 6. An output that is an input, or any trace, is refused and left whole.
cp "$one" "$tmp/t.cutrace"
cp "$one" "$tmp/keep.cutrace"
for cmd in "report" "report --json" "goodput" "critical-path" "diagnose" "export --format chrome" \
  "export --format sqlite"; do
  expect 2 "$cmd -o INPUT" "$cutrace" $cmd -o "$tmp/t.cutrace" "$tmp/t.cutrace"
  cmp -s "$tmp/t.cutrace" "$tmp/keep.cutrace" && ok || bad "$cmd -o INPUT changed the trace"
done
cp "$one" "$tmp/other.cutrace"
expect 2 "export -o another trace" "$cutrace" export --format chrome -o "$tmp/other.cutrace" "$tmp/a"
cmp -s "$tmp/other.cutrace" "$one" && ok || bad "export -o another trace changed it"
expect 2 "report --rows INPUT" "$cutrace" report --rows "$one" "$tmp/a"
expect 2 "diff -o INPUT" "$cutrace" diff -o "$one" "$tmp/a" "$tmp/b"
cmp -s "$one" "$tmp/keep.cutrace" && ok || bad "diff -o INPUT changed the trace"
expect 2 "report -o DIR" "$cutrace" report -o "$tmp/b" "$tmp/a"

# 7. A failed command leaves an older output of that name as it was, and no
#    temporary file; a good one replaces it; "-" is standard output.
echo "an older export" > "$tmp/x.json"
head -c 4096 /dev/urandom > "$tmp/junk.cutrace"
expect 1 "export of a file that is not a trace" "$cutrace" export --format chrome -o "$tmp/x.json" "$tmp/junk.cutrace"
[ "$(cat "$tmp/x.json")" = "an older export" ] && ok || bad "a failed export replaced the old file"
ls -a "$tmp" | grep -q '\.tmp-' && bad "a temporary file was left: $(ls -a "$tmp")" || ok
echo "an older report" > "$tmp/rep.txt"
chmod 640 "$tmp/rep.txt"
expect 0 "report -o over an older report" "$cutrace" report -o "$tmp/rep.txt" "$tmp/a"
grep -q "^cutrace report: 2 rank" "$tmp/rep.txt" && ok || bad "report -o: $(head -2 "$tmp/rep.txt")"
[ "$(stat -c %a "$tmp/rep.txt")" = 640 ] && ok || bad "report -o: mode $(stat -c %a "$tmp/rep.txt"), want 640 kept"
expect 0 "report -o -" "$cutrace" report -o - "$tmp/a"
grep -q "^cutrace report: 2 rank" "$tmp/out" && [ ! -e "$src/-" ] && [ ! -e ./- ] && ok ||
  bad "report -o - did not write standard output"
expect 2 "export --format sqlite -o -" "$cutrace" export --format sqlite -o - "$tmp/a"
# an output that is not a regular file is written in place (a rename would
# replace it), and a link's target is replaced, not the link
mkfifo "$tmp/out.fifo"
cat "$tmp/out.fifo" > "$tmp/from-fifo" &
expect 0 "report -o FIFO" timeout 60 "$cutrace" report -o "$tmp/out.fifo" "$tmp/a"
wait
[ -p "$tmp/out.fifo" ] && grep -q "^cutrace report: 2 rank" "$tmp/from-fifo" && ok ||
  bad "report -o FIFO: $(ls -l "$tmp/out.fifo")"
expect 0 "report -o /dev/null" "$cutrace" report -o /dev/null "$tmp/a"
[ -c /dev/null ] && ok || bad "report -o /dev/null replaced the device"
echo old > "$tmp/target.txt"
ln -s target.txt "$tmp/link.txt"
expect 0 "report -o LINK" "$cutrace" report -o "$tmp/link.txt" "$tmp/a"
[ -L "$tmp/link.txt" ] && grep -q "^cutrace report: 2 rank" "$tmp/target.txt" && ok ||
  bad "report -o LINK: $(ls -l "$tmp/link.txt" "$tmp/target.txt")"

# ---- B. cutrace run ---------------------------------------------------------
if [ -n "$sanitized" ]; then
  echo "SKIP: cutrace run checks (a sanitized shim needs its runtime preloaded first)"
else
  export CUTRACE_CUPTI_LIB=$build/tests/fakegpu/libcupti.so.13
  mkdir -p "$tmp/cwd"
  cd "$tmp/cwd" || exit 1
  # 8. Each run gets a folder and an identity of its own.
  expect 0 "a first run" "$cutrace" run -- "$sim" 3
  grep -q "traces go to $tmp/cwd/cutrace-run1" "$tmp/err" && ok || bad "run 1: $(cat "$tmp/err")"
  expect 0 "a second run" "$cutrace" run -- "$sim" 3
  grep -q "traces go to $tmp/cwd/cutrace-run2" "$tmp/err" && ok || bad "run 2: $(cat "$tmp/err")"
  id1=$("$cutrace" dump --json cutrace-run1 | grep -m1 -o '"run_id":"[^"]*"')
  id2=$("$cutrace" dump --json cutrace-run2 | grep -m1 -o '"run_id":"[^"]*"')
  [ -n "$id1" ] && [ -n "$id2" ] && [ "$id1" != "$id2" ] && ok || bad "run ids: '$id1' '$id2'"
  "$cutrace" dump --json cutrace-run1 | grep -q '"run_id_source":"cutrace"' && ok || bad "run_id_source"
  # ... and two runs told to share a folder are told apart.
  expect 0 "a run into -o shared" "$cutrace" run -o shared -- "$sim" 3
  expect 0 "another run into -o shared" "$cutrace" run -o shared -- "$sim" 3
  grep -q "already holds 1 trace of 1 other run" "$tmp/err" && ok || bad "no note: $(cat "$tmp/err")"
  expect 2 "report of the shared folder" "$cutrace" report shared

  # 9. Everything that would leave the job untraced is refused before it
  #    starts (the job would have made the marker).
  check_refused() { # what expected-message args...
    local what=$1 msg=$2; shift 2
    rm -f marker
    "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
    [ $rc = 2 ] && [ ! -e marker ] && grep -q -- "$msg" "$tmp/err" && ok ||
      bad "$what: exit $rc, marker $([ -e marker ] && echo made || echo absent): $(cat "$tmp/err")"
  }
  check_refused "--buffer-kb -1" "--buffer-kb -1: expected an integer from 64" \
    "$cutrace" run -o r --buffer-kb -1 -- touch marker
  check_refused "--flush-ms 0" "--flush-ms 0: expected" "$cutrace" run -o r --flush-ms 0 -- touch marker
  check_refused "--zstd-level 99" "--zstd-level 99: expected" \
    "$cutrace" run -o r --zstd-level 99 -- touch marker
  check_refused "a light window longer than its period" "shorter than its period" \
    env CUTRACE_MODE=light CUTRACE_LIGHT_WINDOW_MS=5000 CUTRACE_LIGHT_PERIOD_MS=1000 \
    "$cutrace" run -o r -- touch marker
  check_refused "CUTRACE_HEALTH_MS=5" "CUTRACE_HEALTH_MS=5" \
    env CUTRACE_HEALTH_MS=5 "$cutrace" run -o r -- touch marker
  check_refused "a misspelt variable" "did you mean CUTRACE_BUFFER_KB" \
    env CUTRACE_BUFER_KB=2048 "$cutrace" run -o r -- touch marker
  check_refused "a bad CUTRACE_RUN_ID" "CUTRACE_RUN_ID=" \
    env CUTRACE_RUN_ID='a b' "$cutrace" run -o r -- touch marker
  if [ "$(id -u)" = 0 ]; then
    # root writes anywhere a mode allows: sysfs refuses new files to all
    check_refused "a folder the job cannot write" "could not create its traces there" \
      "$cutrace" run -o /sys/kernel -- touch marker
  else
    mkdir -p ro && chmod 555 ro
    check_refused "a folder the job cannot write" "could not create its traces there" \
      "$cutrace" run -o ro -- touch marker
  fi
  # a variable of the user's own that only looks like ours is left alone
  expect 0 "an unrelated CUTRACE_ variable" env CUTRACE_EXTRA_PASSWD=x "$cutrace" run -o r -- true

  # 10. A job killed by a signal: cutrace run completes the killed process's
  # trace from its live mapping and says so (docs/salvage.md); with the
  # buffers in private memory it names the trace that has no footer.
  expect 137 "a killed job" "$cutrace" run -o killed -- sh -c "$sim 2 && kill -9 \$\$"
  expect 137 "a killed rank" "$cutrace" run -o killed2 -- sh -c "$sim 3000 & sleep 0.5; kill -9 \$!; wait \$!"
  grep -q "its process was killed; salvaged from its live mapping" "$tmp/err" && ok ||
    bad "killed rank: $(cat "$tmp/err")"
  "$cutrace" info killed2 | grep -q "status:     complete, salvaged: the process was killed" && ok ||
    bad "killed rank's trace: $("$cutrace" info killed2 | grep -E 'status|salvage')"
  expect 137 "a killed rank, private buffers" env CUTRACE_BUFFERS=private "$cutrace" run \
    -o killed3 -- sh -c "$sim 3000 & sleep 0.5; kill -9 \$!; wait \$!"
  grep -q "has no footer" "$tmp/err" && ok || bad "killed rank, private buffers: $(cat "$tmp/err")"

  # 11. cutrace start finds the folder a process records into (its own
  #     CUTRACE_OUTPUT: each run has its own folder), and refuses a process
  #     without the shim.
  expect 1 "start of a process without the shim" "$cutrace" start $$
  grep -q "has no libcutrace.so loaded" "$tmp/err" && ok || bad "start without the shim: $(cat "$tmp/err")"
  mkdir -p paused && cd paused || exit 1
  CUTRACE_START=paused "$cutrace" run -- "$sim" 400 > /dev/null 2> "$tmp/bg.err" &
  crun=$!
  job=""
  for _ in $(seq 50); do job=$(pgrep -P $crun | head -1); [ -n "$job" ] && break; sleep 0.05; done
  sleep 0.3
  expect 0 "start without -o" "$cutrace" start "$job"
  wait $crun
  n=$("$cutrace" dump --json cutrace-run1 2> /dev/null | grep -c '"name":"cuLaunchKernel"')
  [ "${n:-0}" -gt 0 ] && ok || bad "start without -o: no launch recorded in the run's folder: $(cat "$tmp/bg.err")"
  grep -q "started a capture window" "$tmp/out" && ok || bad "start does not say the window opened"
  # a process that records throughout does not listen: said, not "asked"
  "$cutrace" run -- "$sim" 1500 > /dev/null 2> "$tmp/bg.err" &
  crun=$!
  job=""
  for _ in $(seq 50); do job=$(pgrep -P $crun | head -1); [ -n "$job" ] && break; sleep 0.05; done
  sleep 0.3
  expect 1 "start of a process that does not listen" "$cutrace" start "$job"
  grep -q "did not take the request" "$tmp/err" && ok || bad "start of a deaf process: $(cat "$tmp/err")"
  wait $crun
  cd .. || exit 1

  # 12. Without cutrace run: a traced process tree shares one identity (its
  #     first traced process's), a launch names its own (Slurm's job and
  #     step), and the next tree gets another.
  shim=$build/shim/libcutrace.so
  mkdir -p plain1 plain2 slurm
  env -u CUTRACE_RUN_ID LD_PRELOAD=$shim CUTRACE_OUTPUT=$PWD/plain1 sh -c "$sim 2; $sim 2" > /dev/null
  env -u CUTRACE_RUN_ID LD_PRELOAD=$shim CUTRACE_OUTPUT=$PWD/plain2 sh -c "$sim 2" > /dev/null
  ids=$("$cutrace" dump --json plain1 | grep -o '"run_id":"[^"]*"' | sort -u)
  [ "$(echo "$ids" | wc -l)" = 1 ] && grep -q '"run_id":"auto-' <<< "$ids" && ok ||
    bad "a process tree's run ids: $ids"
  other=$("$cutrace" dump --json plain2 | grep -m1 -o '"run_id":"[^"]*"')
  [ "$other" != "$ids" ] && ok || bad "two process trees share $other"
  env -u CUTRACE_RUN_ID LD_PRELOAD=$shim CUTRACE_OUTPUT=$PWD/slurm SLURM_JOB_ID=77 SLURM_STEP_ID=3 \
    "$sim" 2 > /dev/null
  "$cutrace" dump --json slurm | grep -q '"run_id":"slurm-77.3","run_id_source":"slurm"' && ok ||
    bad "a Slurm step's run id: $("$cutrace" dump --json slurm | grep -m1 -o '"run_id[^,]*,[^,]*')"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
