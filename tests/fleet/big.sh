#!/bin/bash
# fleet-summaries: a job of 1,000 ranks (tests/tools/ct_synth_job, one
# process a rank through the real recorder) added to a fleet store from
# its summaries alone, its traces moved away: one job, 1,000 ranks on 125
# hosts, every iteration row; the same figures as the job added from its
# traces into another store (every column but when and from what it was
# added); the time and memory it took printed.
# usage: big.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
cutrace=$build/decoder/cutrace
synth=$build/tests/tools/ct_synth_job
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 > /dev/null || { echo "SKIP: no sqlite3 CLI"; exit 77; }
work=$(mktemp -d /tmp/ct-fleet-big.XXXXXX)
trap 'rm -rf "$work"' EXIT
hosts=$(for i in $(seq 0 124); do printf 'n%03d,' "$i"; done)
up=$(cut -d. -f1 /proc/uptime)
mkdir "$work/traces" "$work/summaries"
"$synth" -d "$work/traces" --ranks 1000 --iterations 3 --run-id big-1000 --job big \
  --hosts "${hosts%,}" --start-s $((up + 4000000)) --cmdline "python3 train.py --model 405b" ||
  fail "ct_synth_job"
"$cutrace" summarize -o "$work/summaries" "$work/traces" > /dev/null || fail "summarize"
[ "$(ls "$work/summaries" | wc -l)" = 1000 ] || fail "expected 1000 summaries"
mv "$work/traces" "$work/away"
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "%e s, %M KiB peak" -o "$work/time")
start=$(date +%s%N)
"${timer[@]}" "$cutrace" fleet add -q "$work/s.db" "$work/summaries" > "$work/out" 2> "$work/err" ||
  { cat "$work/err"; fail "fleet add from summaries"; }
[ -s "$work/time" ] || echo "$(( ($(date +%s%N) - start) / 1000000 )) ms" > "$work/time"
grep -q "1 jobs added" "$work/out" || fail "$(cat "$work/out")"
mv "$work/away" "$work/traces"
row=$(sqlite3 "$work/s.db" "SELECT ranks, hosts, layout, source, iterations FROM jobs")
[ "$row" = "1000|125|1000x8|summaries|3" ] || fail "job row: $row"
[ "$(sqlite3 "$work/s.db" "SELECT count(*) FROM iterations")" = 3000 ] || fail "iteration rows"
[ "$(sqlite3 "$work/s.db" "SELECT count(*) FROM ranks")" = 1000 ] || fail "rank rows"
"$cutrace" fleet add -q "$work/t.db" "$work/traces" > /dev/null 2>&1 || fail "fleet add from traces"
cols="run_id, job, run_start_utc, workload, layout, ranks, hosts, host, step_p50_us, gpu_us,
  useful_us, startup_us, restart_us, checkpoint_us, data_stall_us, comm_part_us, straggler_us,
  idle_part_us, compute_step_us, exposed_comm_step_us, idle_step_us, wait_step_us"
a=$(sqlite3 "$work/s.db" "SELECT $cols FROM jobs")
b=$(sqlite3 "$work/t.db" "SELECT $cols FROM jobs")
[ "$a" = "$b" ] || fail "from summaries and from traces differ: $a vs $b"
for t in iterations ranks collectives kernels; do
  x=$(sqlite3 "$work/s.db" "SELECT * FROM $t ORDER BY 1, 2, 3" | md5sum)
  y=$(sqlite3 "$work/t.db" "SELECT * FROM $t ORDER BY 1, 2, 3" | md5sum)
  [ "$x" = "$y" ] || fail "$t rows differ between summaries and traces"
done
echo "ok: a 1000-rank job added from its summaries alone ($(cat "$work/time")), as from its traces"
echo "PASS"
