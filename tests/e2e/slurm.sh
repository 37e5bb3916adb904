#!/bin/bash
# e2e: the distributed decode on a real Slurm (Debian's slurm-wlm and munge;
# scripts/setup installs them). The test starts its own munged, slurmctld
# and slurmd on this machine (one node, its CPUs; a private munge key,
# socket, ports, state and spool in a temporary folder; stopped at exit),
# then summarizes an 8-rank job's traces the two ways docs/summary.md gives:
#   1. one allocation, one srun task per trace share: each task summarizes
#      the traces its SLURM_PROCID picks, into one folder;
#   2. a job array over the trace folders (one folder per host), sbatch
#      --wait, each array task summarizing its folder;
# and the merged `report --json` (and diagnose --json) of either set of
# summaries must equal the one-machine report of the traces, byte for byte;
#   3. `srun -n 4 cutrace run -- JOB` with one rank SIGKILLed: every rank's
#      trace complete after the job (the killed one salvaged).
# Daemons need root (slurmd starts jobs as their user); without root, or
# without the packages, the test says so and is skipped (exit 77).
# usage: slurm.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$(cd "$1" && pwd) # jobs run from Slurm's spool: absolute paths
cutrace=$build/decoder/cutrace
for p in munged slurmctld slurmd srun sbatch sinfo; do
  command -v "$p" > /dev/null || { echo "SKIP: no $p (scripts/setup installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: slurmd must run as root to start jobs"; exit 77; }
tmp=$(mktemp -d /tmp/ct-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null || true; done
  [ -n "${keep:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { keep=1; echo "FAIL: $*"; for f in "$tmp"/log/*; do echo "== $f"; tail -15 "$f"; done; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

mkdir -p "$tmp"/{munge,state,spool,log,run}
chmod 711 "$tmp/munge" # the socket must be reachable; the key stays 0400
head -c 1024 /dev/urandom > "$tmp/munge/key"
chmod 400 "$tmp/munge/key"
sock=$tmp/munge/munge.socket
munged -F -f --key-file="$tmp/munge/key" --socket="$sock" --pid-file="$tmp/run/munged.pid" \
  --seed-file="$tmp/munge/seed" --log-file="$tmp/log/munged.log" > "$tmp/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "munged did not start"

node=$(hostname -s)
cpus=$(nproc)
cat > "$tmp/slurm.conf" << EOF
ClusterName=cutrace-test
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -D -i > "$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D > "$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 100); do
  state=$(sinfo -h -o %T 2> /dev/null | head -1 || true)
  case "$state" in idle*|mixed*|alloc*) break ;; esac
  sleep 0.2
done
case "$state" in idle*|mixed*|alloc*) ;; *) fail "the node did not come up (state '$state')" ;; esac

# the job: 8 ranks on two "hosts", a slow rank and host clocks off
mkdir -p "$tmp/job" "$tmp/by-host/host0" "$tmp/by-host/host1"
"$build/tests/tools/ct_synth_job" -d "$tmp/job" --ranks 8 --iterations 30 --slow-rank 5 \
  --skew-us 23 --counters-us 200 > /dev/null
for f in "$tmp/job"/*.cutrace; do
  case "$f" in *-host0-*) cp "$f" "$tmp/by-host/host0/" ;; *) cp "$f" "$tmp/by-host/host1/" ;; esac
done
"$cutrace" report --json -o "$tmp/one-machine.json" "$tmp/job"
"$cutrace" diagnose --json -o "$tmp/one-machine-diag.json" "$tmp/job"

# 1. one allocation, one task per share of the traces
timeout 120 srun -N 1 -n 2 --job-name=ct-summarize sh -c \
  "ls '$tmp'/job/*.cutrace | awk -v n=\"\$SLURM_NTASKS\" -v r=\"\$SLURM_PROCID\" 'NR % n == r' |
   xargs '$cutrace' summarize -o '$tmp/sums-srun' 2> \"$tmp/log/task-\$SLURM_PROCID.err\"" ||
  fail "srun of summarize failed"
[ "$(ls "$tmp/sums-srun" | wc -l)" = 8 ] || fail "srun: $(ls "$tmp/sums-srun" | wc -l) summaries, want 8"
"$cutrace" report --json -o "$tmp/srun.json" "$tmp/sums-srun"
cmp "$tmp/one-machine.json" "$tmp/srun.json" || fail "the srun summaries' report differs"
"$cutrace" diagnose --json -o "$tmp/srun-diag.json" "$tmp/sums-srun"
cmp "$tmp/one-machine-diag.json" "$tmp/srun-diag.json" || fail "the srun summaries' diagnose differs"

# 2. a job array over the trace folders
ls -d "$tmp"/by-host/* > "$tmp/folders"
# the recipe of docs/summary.md, as written there (--wrap, the folder by
# SLURM_ARRAY_TASK_ID, evaluated in the task)
(cd "$tmp" && timeout 120 sbatch --wait --array=0-$(($(wc -l < folders) - 1)) --job-name=ct-array \
  -o "$tmp/log/array-%a.out" --wrap \
  "'$cutrace' summarize -o sums-array \"\$(sed -n \"\$((SLURM_ARRAY_TASK_ID + 1))p\" folders)\"" \
  > /dev/null) || fail "sbatch --array of summarize failed"
[ "$(ls "$tmp/sums-array" | wc -l)" = 8 ] || fail "array: $(ls "$tmp/sums-array" | wc -l) summaries, want 8"
"$cutrace" report --json -o "$tmp/array.json" "$tmp/sums-array"
cmp "$tmp/one-machine.json" "$tmp/array.json" || fail "the job array's report differs"
# 3. `srun -n 4 cutrace run -- JOB` (each task under its own `cutrace run`,
# one run id for the job), one rank SIGKILLed mid-job, the others ended by
# Slurm (--kill-on-bad-exit): after the job every rank's trace is complete,
# the killed one salvaged by its `cutrace run` ("killed by SIGKILL"), and
# each holds every step its side file names (w_nccl mpi steps: a line
# written after the step's AllReduce returned).
w_nccl=$build/tests/nccl/w_nccl
# A sanitizer build's shim needs its runtime preloaded first, which `cutrace
# run` (preloading the shim alone) does not do: the case is left out there.
if [ -x "$w_nccl" ] && [ -f "$build/shim/libcutrace.so" ] &&
   ! readelf -d "$build/shim/libcutrace.so" | grep -q 'lib[at]san'; then
  mkdir -p "$tmp/kill/id"
  ( cd "$tmp/kill" && LD_LIBRARY_PATH="$build/tests/fakegpu" CUTRACE_RUN_ID=slurm-kill \
      CUTRACE_GPU_TIMING=off timeout 120 srun -N 1 -n 4 --overcommit --kill-on-bad-exit=1 --job-name=ct-kill \
      "$cutrace" run -o "$tmp/kill/traces" -- "$w_nccl" mpi "$tmp/kill/id" steps \
      > "$tmp/log/kill.out" 2> "$tmp/log/kill.err" ) &
  job=$!
  for _ in $(seq 3000); do [ -s "$tmp/kill/id/pid-1" ] && break; sleep 0.01; done
  [ -s "$tmp/kill/id/pid-1" ] || fail "rank 1 of the srun job made no step"
  sleep 0.3
  kill -KILL "$(cat "$tmp/kill/id/pid-1")"
  wait $job && fail "an srun job with a SIGKILLed rank exited 0" || true
  n=$(ls "$tmp/kill/traces" | grep -c '\.cutrace$' || true)
  [ "$n" = 4 ] || fail "$n traces after a rank's SIGKILL under srun, want 4: $(ls "$tmp/kill/traces")"
  for r in 0 1 2 3; do
    t=$(ls "$tmp/kill/traces"/*-r$r-p*.cutrace)
    "$cutrace" info "$t" > "$tmp/kill/info-$r"
    grep -q "status:     complete" "$tmp/kill/info-$r" || fail "srun rank $r: $(cat "$tmp/kill/info-$r")"
    steps=$("$cutrace" dump --json "$t" | grep -c '"kind":"nccl".*"op":"AllReduce"' || true)
    side=$(wc -l < "$tmp/kill/id/side-$r")
    [ "$steps" -ge "$side" ] || fail "srun rank $r: $side steps in its side file, $steps in its trace"
  done
  grep -q "salvaged: the process was killed by SIGKILL" "$tmp/kill/info-1" ||
    fail "srun rank 1 not salvaged: $(cat "$tmp/kill/info-1")"
  ls "$tmp/kill/traces" | grep -q -- '-live$' && fail "a mapping left: $(ls "$tmp/kill/traces")"
  killed="; a SIGKILLed rank's trace salvaged, every rank's complete"
else
  killed="; (the SIGKILL case needs $w_nccl and a shim built without sanitizers)"
fi

echo "slurm: 8 ranks summarized by srun tasks and by a job array on slurm $(sinfo -V | awk '{ print $2 }');" \
  "merged reports equal the one-machine report$killed"
