#!/bin/bash
# A real launcher: `cutrace run -- mpirun -np 4` of a small NCCL job on the
# simulated device (Debian's Open MPI; scripts/setup installs openmpi-bin).
# Exactly one trace per rank, named with its Open MPI rank; nothing of
# cutrace's on stderr but `cutrace run`'s closing line; a report of 4 ranks.
# Then the same with every process traced (CUTRACE_HOST_TRACE_KB=0): mpirun
# and its pre-exec children leave traces, and the report lists them as host
# processes, still 4 ranks. Last, one rank SIGKILLed mid-job: every rank's
# trace complete after the job (the killed one salvaged).
# usage: mpirun.sh CUTRACE W_NCCL FAKEGPU_DIR SHIM
set -u
cutrace=$1 w_nccl=$2 fakegpu=$3 shim=$4
# A sanitizer build's shim needs its runtime preloaded first, which `cutrace
# run` (and so mpirun's ranks) does not arrange: the normal build runs this.
if readelf -d "$shim" | grep -q 'lib[at]san'; then
  echo "sanitizer build: the normal build runs the mpirun job"
  echo "0 passed, 0 failed"
  exit 0
fi
# Under user-mode emulation (the aarch64 suites under qemu) mpirun and its
# daemons are this machine's x86-64 programs, into which the aarch64 shim
# cannot be preloaded: the launcher test needs a native machine.
if [ -n "${CT_EMULATED:-}" ]; then
  echo "skipped under $CT_EMULATED: mpirun is this machine's (x86-64)"
  exit 77
fi
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
mpirun=$(command -v mpirun) || { echo "FAIL: no mpirun (scripts/setup installs openmpi-bin)"; echo "0 passed, 1 failed"; exit 1; }

run_job() { # dir [env...]
  local dir=$1; shift
  mkdir -p "$dir/id"
  env "$@" LD_LIBRARY_PATH="$fakegpu" OMPI_MCA_plm_rsh_agent=false \
    "$cutrace" run -o "$dir/traces" -- "$mpirun" --allow-run-as-root --oversubscribe -np 4 \
    "$w_nccl" mpi "$dir/id" mix > "$dir/out" 2> "$dir/err"
}

if run_job "$tmp/a"; then ok; else bad "the job failed: $(cat "$tmp/a/err")"; fi
n=$(ls "$tmp/a/traces" | wc -l)
[ "$n" = 4 ] && ok || bad "$n traces, want 4: $(ls "$tmp/a/traces")"
for r in 0 1 2 3; do
  [ "$(ls "$tmp/a/traces" | grep -c -- "-r$r-p")" = 1 ] && ok || bad "no single trace named -r$r-"
done
ls "$tmp/a/traces" | grep -q -- "-rNA-" && bad "a trace without a rank: $(ls "$tmp/a/traces")" || ok
if grep -v '^cutrace: 4 traces in ' "$tmp/a/err" | grep -q .; then
  bad "stderr: $(cat "$tmp/a/err")"
else ok; fi
"$cutrace" report --json -o "$tmp/a/r.json" "$tmp/a/traces" && ok || bad "report failed"
python3 - "$tmp/a/r.json" <<'PY' && ok || bad "report ranks"
import json, sys
d = json.load(open(sys.argv[1]))
ranks = [r["rank"] for r in d["ranks"]]
assert ranks == [0, 1, 2, 3], ranks
assert all(r["coverage"]["processes"] == 1 for r in d["ranks"]), d["ranks"]
assert d.get("host_processes", []) == [], d.get("host_processes")
PY

# every process traced: mpirun and the pre-exec children are host processes
if run_job "$tmp/b" CUTRACE_HOST_TRACE_KB=0; then ok; else bad "the job failed (every process)"; fi
n=$(ls "$tmp/b/traces" | wc -l)
[ "$n" -gt 4 ] && ok || bad "with CUTRACE_HOST_TRACE_KB=0 only $n traces"
"$cutrace" report --json -o "$tmp/b/r.json" "$tmp/b/traces" > /dev/null && ok || bad "report (every process)"
python3 - "$tmp/b/r.json" "$n" <<'PY' && ok || bad "host processes are not ranks"
import json, sys
d = json.load(open(sys.argv[1]))
ranks = [r["rank"] for r in d["ranks"]]
assert ranks == [0, 1, 2, 3], ranks
hosts = d["host_processes"]
assert len(hosts) == int(sys.argv[2]) - 4, hosts
assert all(h["pid"] > 0 and h["host"] and h["path"] for h in hosts), hosts
PY
"$cutrace" report "$tmp/b/traces" > "$tmp/b/report.txt" 2>&1
grep -q "^cutrace report: 4 rank(s)" "$tmp/b/report.txt" && ok || bad "text report: $(head -3 "$tmp/b/report.txt")"
grep -q "^Host processes (no GPU work; not ranks): $((n - 4))" "$tmp/b/report.txt" && ok ||
  bad "text report lists no host processes: $(grep -i host "$tmp/b/report.txt")"

# SIGKILL to one rank (the OOM killer's way): mpirun then ends the others.
# After the job every rank's trace is complete, the killed rank's salvaged
# from its live mapping ("killed by SIGKILL" when `cutrace run` knows it,
# "killed" when mpirun was its parent), and each holds every step its side
# file names (a line written after the step's AllReduce returned).
mkdir -p "$tmp/c/id"
( LD_LIBRARY_PATH="$fakegpu" OMPI_MCA_plm_rsh_agent=false \
    "$cutrace" run -o "$tmp/c/traces" -- "$mpirun" --allow-run-as-root --oversubscribe -np 4 \
    "$w_nccl" mpi "$tmp/c/id" steps > "$tmp/c/out" 2> "$tmp/c/err" ) &
job=$!
for i in $(seq 3000); do [ -s "$tmp/c/id/pid-1" ] && break; sleep 0.01; done
sleep 0.3
if [ -s "$tmp/c/id/pid-1" ]; then kill -KILL "$(cat "$tmp/c/id/pid-1")" && ok || bad "kill"; else
  bad "rank 1 made no step: $(cat "$tmp/c/err")"; fi
wait $job
[ $? != 0 ] && ok || bad "a job with a killed rank exited 0"
n=$(ls "$tmp/c/traces" | grep -c '\.cutrace$')
[ "$n" = 4 ] && ok || bad "$n traces after a rank's SIGKILL, want 4: $(ls "$tmp/c/traces")"
ls "$tmp/c/traces" | grep -q -- '-live$' && bad "a mapping left: $(ls "$tmp/c/traces")" || ok
grep -q "salvaged from its live mapping" "$tmp/c/err" && ok || bad "cutrace run salvaged nothing: $(cat "$tmp/c/err")"
for r in 0 1 2 3; do
  t=$(ls "$tmp/c/traces"/*-r$r-p*.cutrace)
  "$cutrace" info "$t" > "$tmp/c/info-$r"
  grep -q "status:     complete" "$tmp/c/info-$r" && ok || bad "rank $r: $(grep status "$tmp/c/info-$r")"
  steps=$("$cutrace" dump --json "$t" | grep -c '"kind":"nccl".*"op":"AllReduce"')
  side=$(wc -l < "$tmp/c/id/side-$r")
  [ "$steps" -ge "$side" ] && ok || bad "rank $r: $side steps in its side file, $steps in its trace"
done
grep -q "salvaged: the process was killed" "$tmp/c/info-1" && ok ||
  bad "rank 1 not salvaged: $(grep -E 'status|salvage' "$tmp/c/info-1")"

[ $fail = 0 ] || cat "$tmp/c/err" "$tmp"/c/info-*
[ $fail = 0 ] && rm -rf "$tmp" || echo "kept $tmp"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
