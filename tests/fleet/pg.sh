#!/bin/bash
# fleet-postgresql: the fleet store on a real PostgreSQL server that this
# test starts and stops itself (Debian's postgresql: initdb and pg_ctl in a
# scratch folder, listening on a Unix socket there, no TCP port).
#   - the PostgreSQL and the SQLite stores of the same labelled fleet give
#     byte-identical answers (report, report --by, explain, their rows);
#   - adding the same jobs again changes nothing; two adds at once of
#     overlapping jobs store each job once;
#   - the password (scram-sha-256 for role fleet) given through a password
#     file (PGPASSFILE) appears in no output, store row, log or
#     /proc/PID/cmdline of the running command; a URL holding it is refused
#     (exit 2) with how to pass it instead, without repeating it; a wrong
#     password's error does not repeat it either.
# As root the server runs as the postgres user (the server refuses root);
# without one, or without initdb, or in a build without libpq: SKIP (77)
# with the reason.
# usage: pg.sh BUILD_DIR SRC_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cutrace=$build/decoder/cutrace
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

out=$("$cutrace" fleet report --db postgresql:///x 2>&1)
case "$out" in *"without PostgreSQL support"*) skip "this cutrace was built without libpq";; esac
# shellcheck source=tests/fleet/pg_server.sh
. "$src/tests/fleet/pg_server.sh"
trap pg_stop EXIT
pg_start
case $? in 0) ;; 77) skip "$skip_why";; *) fail "the PostgreSQL server did not start";; esac
work=$scratch/work
mkdir -p "$work"
python3 "$src/tests/fleet/gen_fleet.py" --jobs 120 --iterations 6 --seed 7 --out "$work/a.jsonl" \
  --truth "$work/a.json" || fail "gen_fleet"
python3 "$src/tests/fleet/gen_fleet.py" --jobs 40 --iterations 6 --seed 8 --out "$work/c.jsonl" \
  || fail "gen_fleet"
# b: a's 120 jobs and 40 others (run identities carry the seed)
cat "$work/a.jsonl" "$work/c.jsonl" > "$work/b.jsonl"

# 1. add, watching the running command's /proc/PID/cmdline and environment
"$cutrace" fleet add --db "$url" "$work/a.jsonl" > "$work/add1.out" 2> "$work/add1.err" &
pid=$!
seen=0
while kill -0 $pid 2> /dev/null; do
  # an exiting process (a zombie) reads as empty: only whole reads count
  if tr '\0' ' ' < /proc/$pid/cmdline > "$work/cmdline.$seen" 2> /dev/null &&
    [ -s "$work/cmdline.$seen" ] &&
    cat /proc/$pid/environ > "$work/environ.$seen" 2> /dev/null && [ -s "$work/environ.$seen" ]; then
    seen=$((seen + 1))
  else
    rm -f "$work/cmdline.$seen" "$work/environ.$seen"
  fi
  sleep 0.01
done
wait $pid || { cat "$work/add1.err"; fail "fleet add into PostgreSQL"; }
[ $seen -gt 0 ] || fail "the adding command's /proc/PID/cmdline was never read"
grep -q "120 jobs added, 0 in the store already" "$work/add1.out" || fail "first add: $(cat "$work/add1.out")"
echo "ok: 120 jobs added to PostgreSQL ($seen reads of /proc/PID/cmdline while it ran)"

# 2. again: nothing changes; then two adds at once of overlapping jobs
"$cutrace" fleet add --db "$url" "$work/a.jsonl" > "$work/add2.out" 2> "$work/add2.err" ||
  fail "second add"
grep -q "0 jobs added, 120 in the store already" "$work/add2.out" || fail "second add: $(cat "$work/add2.out")"
"$cutrace" fleet add --db "$url" "$work/b.jsonl" > "$work/add3.out" 2> "$work/add3.err" &
p1=$!
"$cutrace" fleet add --db "$url" "$work/b.jsonl" > "$work/add4.out" 2> "$work/add4.err" &
p2=$!
wait $p1 || { cat "$work/add3.err"; fail "concurrent add 1"; }
wait $p2 || { cat "$work/add4.err"; fail "concurrent add 2"; }
n=$(psql_su -d fleet -At -c "SELECT count(*), count(DISTINCT run_id) FROM jobs")
[ "$n" = "160|160" ] || fail "after two adds at once: jobs, distinct: $n (expected 160|160)"
added=$(cat "$work/add3.out" "$work/add4.out" | awk '{ s += $1 } END { print s }')
[ "$added" = 40 ] || fail "the two adds at once added $added jobs between them (expected 40)"
its=$(psql_su -d fleet -At -c "SELECT count(*) FROM iterations")
exp_its=$(grep -c '"row":"iteration"' "$work/b.jsonl")
[ "$its" = "$exp_its" ] || fail "iteration rows $its, expected $exp_its (each job once)"
echo "ok: the same jobs again change nothing; two adds at once stored each of 160 jobs once"

# 3. the same fleet in SQLite: identical answers
"$cutrace" fleet add -q "$work/s.db" "$work/b.jsonl" > /dev/null 2>&1 || fail "SQLite add"
for args in "report --json" "report --by host --by nccl --by tag.loader --json" \
            "report --by workload" "explain --json" "explain" "report --since 2024-05-10 --json"; do
  # shellcheck disable=SC2086
  "$cutrace" fleet $args --db "$url" > "$work/pg.out" 2> "$work/pg.err" || fail "PostgreSQL: fleet $args"
  # shellcheck disable=SC2086
  "$cutrace" fleet $args "$work/s.db" > "$work/lite.out" 2>&1 || fail "SQLite: fleet $args"
  cmp -s "$work/pg.out" "$work/lite.out" || { diff "$work/pg.out" "$work/lite.out" | head; fail "fleet $args differs between PostgreSQL and SQLite"; }
  cat "$work/pg.out" "$work/pg.err" >> "$work/all_outputs"
done
"$cutrace" fleet explain --db "$url" --rows "$work/pg.rows" -o /dev/null || fail "explain --rows"
"$cutrace" fleet explain "$work/s.db" --rows "$work/lite.rows" -o /dev/null || fail "explain --rows"
cmp -s "$work/pg.rows" "$work/lite.rows" || fail "explain --rows differ"
echo "ok: report, report --by, --since, explain and its rows identical from PostgreSQL and SQLite"

# 4. a password in the URL is refused, without repeating it
for bad in "postgresql://fleet:$pw@/fleet?host=$scratch" "postgresql:///fleet?host=$scratch&user=fleet&password=$pw"; do
  "$cutrace" fleet report --db "$bad" > "$work/bad.out" 2> "$work/bad.err"
  rc=$?
  [ $rc = 2 ] || fail "a URL with a password: exit $rc (expected 2)"
  grep -q PGPASSFILE "$work/bad.err" || fail "the refusal does not say how: $(cat "$work/bad.err")"
  cat "$work/bad.out" "$work/bad.err" >> "$work/all_outputs"
done
# a wrong password in the file: libpq's error, without either password
(umask 077; printf '*:*:fleet:fleet:%s-wrong\n' "$pw" > "$scratch/pgpass.bad")
PGPASSFILE=$scratch/pgpass.bad "$cutrace" fleet report --db "$url" > "$work/wrong.out" 2> "$work/wrong.err" &&
  fail "a wrong password was accepted"
grep -q "password authentication failed" "$work/wrong.err" || fail "wrong password: $(cat "$work/wrong.err")"
cat "$work/wrong.out" "$work/wrong.err" >> "$work/all_outputs"
echo "ok: a URL with the password refused (exit 2, how to pass it said); a wrong one's error names none"

# 5. the password appears nowhere
cat "$work"/add*.out "$work"/add*.err >> "$work/all_outputs"
psql_su -d fleet -c "COPY (SELECT * FROM jobs) TO STDOUT" > "$work/dump.jobs"
for t in labels attempts ranks iterations kernels collectives health fleet_meta; do
  psql_su -d fleet -c "COPY $t TO STDOUT" >> "$work/dump.rows"
done
sqlite3 "$work/s.db" .dump > "$work/dump.sqlite"
for f in "$work"/all_outputs "$work"/dump.* "$work"/pg.rows "$work"/cmdline.* "$work"/environ.* \
         "$scratch/server.log"; do
  [ -s "$f" ] || [ "${f##*/}" = server.log ] || fail "$f is empty: nothing checked"
  if grep -aq -- "$pw" "$f"; then
    fail "the password appears in ${f##*/}"
  fi
done
grep -aq -- "$pw" "$scratch/pgpass" || fail "the check cannot find the password where it is"
grep -aq "fleet" "$work/cmdline.0" || fail "the cmdline read is not the command's"
echo "ok: the password is in no output, store row (PostgreSQL, SQLite), rows file, server log," \
     "/proc/PID/cmdline or environment of the command"
echo "PASS"
