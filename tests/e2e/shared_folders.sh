#!/bin/bash
# Shared folders are no way in (docs/runs.md "Shared folders"): another user who
# can write into the output folder (a team's scratch space, /tmp) cannot
# steer a job's recording through control files, and `cutrace run` refuses
# a folder another user owns or everyone may write without the sticky bit.
# The second user is `nobody`, through setpriv: the test needs root (as CI
# runs) and skips with the reason otherwise.
# usage: shared_folders.sh BUILD_DIR [sanitized]
set -u
build=$1
sanitized=${2:-}
cutrace=$build/decoder/cutrace
sim=$build/examples/sim_train
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to act as a second user (setpriv)"; echo "0 passed, 0 failed"; exit 0
fi
if [ -n "$sanitized" ]; then
  echo "SKIP: cutrace run under a sanitizer build (its shim needs its runtime preloaded)"
  echo "0 passed, 0 failed"; exit 0
fi
other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if ! other true 2> /dev/null; then
  echo "SKIP: setpriv cannot switch to uid 65534 here"; echo "0 passed, 0 failed"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
export CUTRACE_CUPTI_LIB=$build/tests/fakegpu/libcupti.so.13
cd "$tmp" || exit 1

# 1. Control files planted by another user are never obeyed: a paused job
#    in a shared (sticky, world-writable) folder gets a "start" file from
#    nobody, a link and a FIFO in its control file's place; it records no
#    window, its trace says once what it ignored, and the writer is never
#    stuck on the FIFO.
mkdir shared && chmod 1777 shared
for plant in file link fifo; do
  rm -f shared/*.cutrace shared/.cutrace-control-*
  CUTRACE_START=paused "$cutrace" run -o shared -- "$sim" 300 > /dev/null 2> err &
  crun=$!
  job=""
  for _ in $(seq 100); do job=$(pgrep -P $crun | head -1); [ -n "$job" ] && break; sleep 0.05; done
  sleep 0.3
  c=shared/.cutrace-control-$job
  case $plant in
    file) other sh -c "echo start > $c" ;;
    link) other ln -s /etc/hostname "$c" ;;
    fifo) other mkfifo "$c" ;;
  esac
  wait $crun || bad "$plant: the job failed: $(cat err)"
  n=$("$cutrace" dump --json shared 2> /dev/null | grep -c '"name":"cuLaunchKernel"')
  [ "${n:-0}" = 0 ] && ok || bad "$plant: a control file of another user's opened a window ($n launches)"
  # a paused job that never opened a window leaves no trace (nothing was
  # recorded); where there is one, it says what was ignored
  if ls shared/*.cutrace > /dev/null 2>&1; then
    "$cutrace" dump --json shared 2> /dev/null | grep -q '"kind":"error".*ignored .*cutrace-control' &&
      ok || bad "$plant: the trace does not say what was ignored"
  else ok; fi
  [ ! -e "$c" ] || [ "$plant" = fifo ] || [ -L "$c" ] && ok || bad "$plant: the planted file was left"
done
# ... and a "stop" planted in a recording job's place does not stop it (a
# job with windows: CUTRACE_DURATION), which says in its trace what it
# ignored
rm -f shared/*.cutrace shared/.cutrace-control-*
CUTRACE_DURATION=60 "$cutrace" run -o shared -- "$sim" 300 > /dev/null 2> err &
crun=$!
job=""
for _ in $(seq 100); do job=$(pgrep -P $crun | head -1); [ -n "$job" ] && break; sleep 0.05; done
sleep 0.3
other sh -c "echo stop > shared/.cutrace-control-$job"
wait $crun
"$cutrace" dump --json shared > dump.jsonl 2> /dev/null
grep -q '"kind":"meta".*"stop"' dump.jsonl && bad "a stop of another user's closed the window" || ok
[ "$(grep -c '"name":"cuLaunchKernel"' dump.jsonl)" -ge 1500 ] && ok ||
  bad "launches after the planted stop were not recorded: $(grep -c '"name":"cuLaunchKernel"' dump.jsonl)"
grep -q '"kind":"error".*ignored .*cutrace-control.*owned by another user' dump.jsonl && ok ||
  bad "the trace does not say it ignored the planted stop"

# ... while the user's own control file is obeyed
rm -f shared/*.cutrace shared/.cutrace-control-*
CUTRACE_START=paused "$cutrace" run -o shared -- "$sim" 300 > /dev/null 2> err &
crun=$!
job=""
for _ in $(seq 100); do job=$(pgrep -P $crun | head -1); [ -n "$job" ] && break; sleep 0.05; done
sleep 0.3
"$cutrace" start -o shared "$job" > /dev/null || bad "cutrace start"
wait $crun
n=$("$cutrace" dump --json shared 2> /dev/null | grep -c '"name":"cuLaunchKernel"')
[ "${n:-0}" -gt 0 ] && ok || bad "the user's own start opened no window"

# 2. cutrace run refuses a folder another user owns, or one everyone may
#    write without the sticky bit; its own folders are the user's alone.
mkdir theirs && chown 65534:65534 theirs
"$cutrace" run -o theirs -- true 2> err && bad "a folder of another user's accepted" ||
  { grep -q "belongs to uid 65534" err && ok || bad "theirs: $(cat err)"; }
mkdir open && chmod 777 open
"$cutrace" run -o open -- true 2> err && bad "a world-writable folder accepted" ||
  { grep -q "writable by every user without the sticky bit" err && ok || bad "open: $(cat err)"; }
"$cutrace" run -o shared -- true 2> err && ok || bad "a sticky shared folder refused: $(cat err)"
"$cutrace" run -- true 2> err && [ "$(stat -c %a cutrace-run1)" = 700 ] && ok ||
  bad "the run folder is $(stat -c %a cutrace-run1 2> /dev/null), want 700"
"$cutrace" run -o new/sub -- true 2> err && [ "$(stat -c %a new/sub)" = 700 ] && ok ||
  bad "-o new/sub is $(stat -c %a new/sub 2> /dev/null), want 700"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
