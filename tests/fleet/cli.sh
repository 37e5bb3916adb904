#!/bin/bash
# fleet-cli: `cutrace fleet`'s options and operands: bad values refused
# with the option named and exit 2; a store never made by report or
# explain, never replaced by an output, never a trace; rows from standard
# input; two adds at once into one SQLite file, each job once; a rows file
# of another version refused; --since and --workload selecting jobs; a tag
# naming the workload; a PostgreSQL URL with a password refused before any
# connection, without repeating it.
# usage: cli.sh BUILD_DIR SRC_DIR
set -uo pipefail
cutrace=$(cd "$1" && pwd)/decoder/cutrace
src=$(cd "$2" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/ct-fleet-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
expect() { # status, pattern, command...
  local want=$1 pat=$2
  shift 2
  "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  [ $rc = "$want" ] || fail "$* : exit $rc (expected $want): $(cat "$work/err")"
  [ -z "$pat" ] || grep -q -- "$pat" "$work/err" "$work/out" ||
    fail "$* : no '$pat' in: $(cat "$work/err" "$work/out")"
}
python3 "$src/tests/fleet/gen_fleet.py" --jobs 40 --iterations 3 --seed 5 --out "$work/r.jsonl" ||
  fail "gen_fleet"

expect 2 "expected the fleet store" "$cutrace" fleet add
expect 2 "expected traces, summaries" "$cutrace" fleet add "$work/s.db"
expect 2 "unknown subcommand 'show'" "$cutrace" fleet show "$work/s.db"
expect 1 "no such fleet store" "$cutrace" fleet report "$work/none.db"
[ -e "$work/none.db" ] && fail "report made a store"
expect 0 "" "$cutrace" fleet add "$work/s.db" - < "$work/r.jsonl"
grep -q "40 jobs added, 0 in the store already" "$work/out" || fail "rows from stdin: $(cat "$work/out")"
expect 0 "" "$cutrace" fleet add "$work/s.db" "$work/r.jsonl"
grep -q "0 jobs added, 40 in the store already" "$work/out" || fail "again: $(cat "$work/out")"

# two adds at once into one SQLite file: each job once
"$cutrace" fleet add -q "$work/c.db" "$work/r.jsonl" > "$work/c1" 2>&1 &
p1=$!
"$cutrace" fleet add -q "$work/c.db" "$work/r.jsonl" > "$work/c2" 2>&1 &
p2=$!
wait $p1 || fail "concurrent add: $(cat "$work/c1")"
wait $p2 || fail "concurrent add: $(cat "$work/c2")"
[ "$(cat "$work/c1" "$work/c2" | awk '{ s += $1 } END { print s }')" = 40 ] ||
  fail "two adds at once added $(cat "$work/c1" "$work/c2")"
[ "$(sqlite3 "$work/c.db" "SELECT count(*), count(DISTINCT run_id) FROM jobs")" = "40|40" ] ||
  fail "two adds at once: $(sqlite3 "$work/c.db" "SELECT count(*) FROM jobs") jobs"

expect 2 "--since 'yesterday': expected a UTC date" "$cutrace" fleet report "$work/s.db" --since yesterday
expect 2 "--alpha '2'" "$cutrace" fleet explain "$work/s.db" --alpha 2
expect 2 "--min-effect 'x'" "$cutrace" fleet explain "$work/s.db" --min-effect x
expect 2 "--min-jobs '3'" "$cutrace" fleet explain "$work/s.db" --min-jobs 3
expect 2 "--by is an option of fleet report" "$cutrace" fleet explain "$work/s.db" --by host
expect 2 "--html writes a file" "$cutrace" fleet explain "$work/s.db" --html
expect 2 "no workload of that name" "$cutrace" fleet explain "$work/s.db" --workload w-nothing
expect 2 "one store only" "$cutrace" fleet report "$work/s.db" "$work/r.jsonl"
expect 2 "" "$cutrace" fleet report "$work/s.db" -o "$work/s.db"
cmp -s <(sqlite3 "$work/s.db" "SELECT count(*) FROM jobs") <(echo 40) || fail "the store was touched"

# a store in place of a trace, a trace in place of a store
mkdir "$work/t"
"$(dirname "$cutrace")/../tests/tools/ct_synth_job" -d "$work/t" --ranks 2 --iterations 4 \
  --run-id cli-1 || fail "ct_synth_job"
trace=$(ls "$work"/t/*.cutrace | head -1)
expect 2 "" "$cutrace" fleet add "$trace" "$work/t"
expect 0 "" "$cutrace" fleet add "$work/s.db" "$work/t"
grep -q "1 jobs added" "$work/out" || fail "traces: $(cat "$work/out")"

# a rows file of another version
sed 's/"version":2/"version":1/' "$work/r.jsonl" | head -3 > "$work/v1.jsonl"
expect 1 "rows of version 1" "$cutrace" fleet add "$work/s2.db" "$work/v1.jsonl"

# --since and --workload select
n_all=$("$cutrace" fleet report --json "$work/s.db" | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'])")
n_since=$("$cutrace" fleet report --json --since 2024-05-15 "$work/s.db" | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'])")
[ "$n_all" = 41 ] || fail "jobs: $n_all"
[ "$n_since" -gt 0 ] && [ "$n_since" -lt 40 ] || fail "--since 2024-05-15 kept $n_since of 40 dated jobs"
w=$("$cutrace" fleet report --json --by workload "$work/s.db" | python3 -c "import json,sys; print(json.load(sys.stdin)['by'][0]['groups'][0]['value'])")
"$cutrace" fleet explain --json --workload "${w%?}" "$work/s.db" > "$work/x.json" ||
  fail "explain --workload ${w%?} (the start of $w)"
python3 -c "import json,sys; x=json.load(open(sys.argv[1])); assert [v['workload'] for v in x['workloads']] == [sys.argv[2]], x['workloads']" \
  "$work/x.json" "$w" || fail "explain --workload: another workload explained"

# a tag "workload" names the workload
python3 "$src/tests/fleet/gen_fleet.py" --jobs 3 --iterations 2 --seed 6 --out - |
  sed 's/"labels":{/"labels":{"tag.workload":"llama-ft",/' > "$work/named.jsonl"
expect 0 "" "$cutrace" fleet add "$work/n.db" "$work/named.jsonl"
[ "$(sqlite3 "$work/n.db" "SELECT DISTINCT workload FROM jobs")" = llama-ft ] ||
  fail "tag workload: $(sqlite3 "$work/n.db" "SELECT DISTINCT workload FROM jobs")"

# passwords
expect 2 "PGPASSFILE" "$cutrace" fleet report --db "postgresql://u:hunter2-cli@db.invalid/fleet"
grep -q hunter2 "$work/err" "$work/out" && fail "the refusal repeats the password"
echo "PASS"
