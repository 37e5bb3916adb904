#!/bin/bash
# The fleet benchmark (scripts/bench section (k), never a meson test):
# N jobs (default 10,000) of the labelled fleet (tests/fleet/gen_fleet.py,
# 5 iterations per rank: ~1.2 M rows) added to an SQLite store and to a
# PostgreSQL one (a server started in a scratch folder, tests/fleet/
# pg_server.sh; skipped without one), then report --by host and explain on
# each: wall time and peak RSS of every command (GNU time).
# usage: bench.sh BUILD_DIR [JOBS]
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
jobs=${2:-10000}
cutrace=$build/decoder/cutrace
work=$(mktemp -d /tmp/ct-fleet-bench.XXXXXX)
. "$src/tests/fleet/pg_server.sh"
cleanup() { pg_stop; rm -rf "$work"; }
trap cleanup EXIT
[ -x /usr/bin/time ] || { echo "  no /usr/bin/time: skipped"; exit 0; }
python3 "$src/tests/fleet/gen_fleet.py" --jobs "$jobs" --iterations 5 --seed 11 \
  --out "$work/rows.jsonl" || exit 1
printf "  %d jobs, %d rows, %.0f MB of rows\n" "$jobs" "$(wc -l < "$work/rows.jsonl")" \
  "$(awk -v b="$(stat -c %s "$work/rows.jsonl")" 'BEGIN { print b / 1e6 }')"
measure() { # what, command...
  local what=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/err" ||
    { echo "  $what: FAILED"; cat "$work/err"; return 1; }
  read -r s kb < "$work/t"
  printf "  %-42s %8.2f s  peak RSS %6.0f MB\n" "$what" "$s" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
}
run_on() { # backend, store
  measure "$1: fleet add" "$cutrace" fleet add -q --db "$2" "$work/rows.jsonl"
  measure "$1: fleet add again (no change)" "$cutrace" fleet add -q --db "$2" "$work/rows.jsonl"
  measure "$1: fleet report --by host" "$cutrace" fleet report --db "$2" --by host
  measure "$1: fleet explain" "$cutrace" fleet explain --db "$2"
}
run_on sqlite "$work/fleet.db"
printf "  sqlite: store %.0f MB\n" "$(du -sm "$work"/fleet.db* | awk '{ s += $1 } END { print s }')"
if pg_start; then
  run_on postgresql "$url"
else
  echo "  postgresql: skipped (${skip_why:-the server did not start})"
fi
