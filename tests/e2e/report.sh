#!/bin/bash
# e2e: `cutrace report --json` on a generated 4-rank job (tests/tools/
# ct_synth_job.c states the schedule) checked against hand-computed truth
# by check_report_json.py. usage: report.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/job"
"$build/tests/tools/ct_synth_job" -d "$tmp/job" --ranks 4 --iterations 10 --slow-rank 2 \
  --skew-us 37
"$build/decoder/cutrace" report --json --rank-iterations -o "$tmp/report.json" "$tmp/job"
python3 "$src/tests/e2e/check_report_json.py" "$tmp/report.json" 10
# the same report without the huge-page re-exec (decoder/util/hugepages.c), and
# with a GLIBC_TUNABLES of the caller's own (the tunable is appended to it)
CUTRACE_HUGEPAGES=0 "$build/decoder/cutrace" report --json --rank-iterations \
  -o "$tmp/report0.json" "$tmp/job"
cmp "$tmp/report.json" "$tmp/report0.json"
GLIBC_TUNABLES=glibc.malloc.check=0 "$build/decoder/cutrace" report --json --rank-iterations \
  -o "$tmp/report1.json" "$tmp/job"
cmp "$tmp/report.json" "$tmp/report1.json"
# the default document: per-rank summaries and the job's steps, which are
# the per-rank iterations of the same index taken together
"$build/decoder/cutrace" report --json -o "$tmp/default.json" "$tmp/job"
python3 - "$tmp/report.json" "$tmp/default.json" <<'PY'
import json, statistics, sys
full, dflt = (json.load(open(p)) for p in sys.argv[1:3])
assert all("iterations" not in k for k in dflt["ranks"]), "per-rank iterations by default"
assert [k["iteration_count"] for k in dflt["ranks"]] == [len(k["iterations"]) for k in full["ranks"]]
steps = dflt["job"]["steps"]
assert [s["index"] for s in steps] == list(range(10)), steps
for s in steps:
    its = {k["rank"]: i for k in full["ranks"] for i in k["iterations"] if i["index"] == s["index"]}
    assert s["ranks"] == len(its) == 4, s
    dur = {r: i["duration_us"] for r, i in its.items()}
    near = lambda a, b: abs(a - b) <= 0.002  # both rounded to ns from the same ns figures
    assert near(s["duration_max_us"], max(dur.values())), s
    assert near(s["duration_p50_us"], statistics.median(dur.values())), s
    assert dur[s["slowest_rank"]] == max(dur.values()), s
    assert near(s["start_us"], min(i["start_us"] for i in its.values())), s
    assert near(s["end_us"], max(i["end_us"] for i in its.values())), s
    for key in ("compute", "comm", "exposed_comm", "idle"):
        want = statistics.median(i[key + "_us"] for i in its.values())
        assert near(s[key + "_p50_us"], want), (key, s, want)
PY
# fleet rows (docs/diff.md) load into the sqlite3 CLI (a query engine every
# Debian machine has), one JSON object a line into one text column
"$build/decoder/cutrace" report -o /dev/null --rows "$tmp/rows.jsonl" "$tmp/job"
sqlite3 "$tmp/rows.db" "CREATE TABLE rows (j TEXT);" ".mode tabs" ".import $tmp/rows.jsonl rows"
q() { sqlite3 "$tmp/rows.db" "$1"; }
[ "$(q "SELECT group_concat(k, ' ') FROM (SELECT json_extract(j, '\$.row') || '=' || count(*) AS k
      FROM rows GROUP BY json_extract(j, '\$.row') ORDER BY 1)")" = \
  "attempt=1 collective=1 iteration=40 job=1 kernel=10 rank=4" ] || { echo "row kinds"; exit 1; }
[ "$(q "SELECT count(DISTINCT json_extract(j, '\$.version')) || json_extract(j, '\$.schema')
      FROM rows")" = "1cutrace.rows" ] || { echo "rows schema"; exit 1; }
# per rank, the sum of its iteration rows' compute equals its rank row's (a join)
[ "$(q "SELECT count(*) FROM (SELECT json_extract(r.j, '\$.rank') AS rk,
      json_extract(r.j, '\$.compute_us') AS tot, sum(json_extract(i.j, '\$.compute_us')) AS s
      FROM rows r JOIN rows i ON json_extract(i.j, '\$.row') = 'iteration'
      AND json_extract(i.j, '\$.rank') = json_extract(r.j, '\$.rank')
      WHERE json_extract(r.j, '\$.row') = 'rank' GROUP BY rk) WHERE abs(tot - s) > 0.01")" = 0 ] ||
  { echo "rank totals against iterations"; exit 1; }
[ "$(q "SELECT json_extract(j, '\$.op') || ' ' || json_extract(j, '\$.nranks') FROM rows
      WHERE json_extract(j, '\$.row') = 'collective'")" = "AllReduce 4" ] ||
  { echo "collective row"; exit 1; }
if "$build/decoder/cutrace" report --rank-iterations "$tmp/job" 2> "$tmp/err"; then exit 1; fi
grep -q -- "--rank-iterations adds to the JSON document" "$tmp/err"
# the text report names the straggler at the top
"$build/decoder/cutrace" report "$tmp/job" > "$tmp/report.txt"
grep -q "rank 2: score" "$tmp/report.txt"
# --skip/--steps select iterations
"$build/decoder/cutrace" report --json --rank-iterations --skip 2 --steps 3-7 "$tmp/job" \
  > "$tmp/sel.json"
python3 - "$tmp/sel.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
idx = [it["index"] for it in r["ranks"][0]["iterations"]]
assert idx == [3, 4, 5, 6, 7], idx
PY
# bad options name the option and the allowed values
if "$build/decoder/cutrace" report --steps x "$tmp/job" 2> "$tmp/err"; then exit 1; fi
grep -q -- "--steps 'x': expected A-B" "$tmp/err"
if "$build/decoder/cutrace" report --bogus "$tmp/job" 2> "$tmp/err"; then exit 1; fi
grep -q -- "allowed: --json" "$tmp/err"
# no rank limit: 128 ranks with rank 100 slow; diagnose finds it (it used to
# look at the first 64 ranks only), lists every rank in JSON and compactly in text
mkdir "$tmp/big"
"$build/tests/tools/ct_synth_job" -d "$tmp/big" --ranks 128 --iterations 10 --slow-rank 100
"$build/decoder/cutrace" diagnose --json "$tmp/big" > "$tmp/big.json"
python3 - "$tmp/big.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["kind"]: x for x in d["findings"]}
assert f["compute_straggler"]["ranks"] == [100], f["compute_straggler"]
assert f["data_loading_stall"]["ranks"] == list(range(128)), f["data_loading_stall"]["ranks"]
PY
"$build/decoder/cutrace" diagnose "$tmp/big" > "$tmp/big.txt"
grep -q "compute_straggler .* ranks 100$" "$tmp/big.txt"
grep -q "data_loading_stall .* ranks 0-127$" "$tmp/big.txt"
echo "report e2e: ok"
