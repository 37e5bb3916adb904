#!/bin/bash
# e2e: `cutrace report --html` opened in headless Chromium. The page's own
# self-check (#selfcheck, decoder/export/html_page.html) says "ok: timeline N
# rows ...; M charts" only when the timeline and every chart drew without a
# script error; console errors are caught from Chromium's log too. The
# screenshot stays in the build folder (tests/export/report-html.png). The
# job has health counters (rank 1 power-capped from step 5): the SM clock,
# power and throttled-share charts must draw too.
# usage: html.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
out=$build/tests/export
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (scripts/setup installs it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/job"
"$build/tests/tools/ct_synth_job" -d "$tmp/job" --ranks 4 --iterations 10 --slow-rank 2 \
  --skew-us 37 --counters-us 200 --throttle-rank 1 --throttle-from 5
"$build/decoder/cutrace" report --html -o "$out/report.html" "$tmp/job"
# self-contained: no URL the page would fetch
if grep -Eq '(src|href)="(https?:)?//' "$out/report.html"; then
  echo "the page references the network"; exit 1
fi
flags=(--headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$tmp/profile"
       --window-size=1300,2400 --virtual-time-budget=10000)
timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom \
  "file://$out/report.html" > "$tmp/dom.html" 2> "$tmp/console.log" || true
timeout 120 "$browser" "${flags[@]}" --screenshot="$out/report-html.png" \
  "file://$out/report.html" > /dev/null 2>&1 || true
check=$(grep -o '<p id="selfcheck"[^<]*' "$tmp/dom.html" | sed 's/.*>//')
echo "self-check: $check"
case "$check" in
  "ok: timeline "*) ;;
  *) echo "the page did not render"; cat "$tmp/console.log" | grep -i console | head; exit 1 ;;
esac
rows=$(echo "$check" | sed -n 's/ok: timeline \([0-9]*\) rows.*/\1/p')
charts=$(echo "$check" | sed -n 's/.* \([0-9]*\) charts/\1/p')
[ "$rows" -ge 8 ] || { echo "timeline has $rows rows"; exit 1; }
[ "$charts" -ge 10 ] || { echo "$charts charts"; exit 1; }
grep -q 'data-selfcheck="ok"' "$tmp/dom.html" || { echo "no ok marker on body"; exit 1; }
for id in breakdown overlap attr iters health-sm health-power health-thr; do
  grep -q "<div id=\"$id\"><svg" "$tmp/dom.html" || { echo "chart $id missing"; exit 1; }
done
grep -q '<table id="coll"><tr><th>op' "$tmp/dom.html" || { echo "collective table missing"; exit 1; }
# one SM clock line per rank; rank 1's throttled share is drawn with its reason
[ "$(grep -o '<title>rank [0-9] GPU 0 SM clock' "$tmp/dom.html" | wc -l)" = 4 ] ||
  { echo "SM clock lines missing"; exit 1; }
grep -q 'rank 1: sw_power_cap' "$tmp/dom.html" || { echo "throttle reason missing"; exit 1; }
if grep -i 'CONSOLE' "$tmp/console.log" | grep -iq 'error'; then
  echo "script errors:"; grep -i console "$tmp/console.log"; exit 1
fi
[ -s "$out/report-html.png" ] || { echo "no screenshot"; exit 1; }
# the critical path section: composition, per-step bars, top segments and
# the median step's path drawn; its figures are those of `cutrace
# critical-path --json` on the same job (the slow rank 2's compute among the
# top segments)
for id in cp-comp cp-steps cp-median; do
  grep -q "<div id=\"$id\"><svg" "$tmp/dom.html" || { echo "critical path chart $id missing"; exit 1; }
done
grep -q '<table id="cp-top"><tr><th>rank</th><th>category</th>' "$tmp/dom.html" ||
  { echo "critical path table missing"; exit 1; }
grep -o '<table id="cp-top">.*</table>' "$tmp/dom.html" |
  grep -q '<tr><td class="name" title="2">2</td><td>compute</td>' ||
  { echo "rank 2's compute is not among the top segments"; exit 1; }
"$build/decoder/cutrace" critical-path --json -o "$tmp/cp.json" "$tmp/job"
python3 - "$out/report.html" "$tmp/cp.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script type="application/json" id="data">\n(.*?)</script>', page, re.S).group(1))
cp, want = d["cp"], json.load(open(sys.argv[2]))
assert cp["built"] == 1 and cp["steps"] == want["steps"], (cp.get("built"), cp.get("steps"))
got = dict(zip(cp["cats"], cp["cat"]))
for c, v in want["categories"].items():
    assert got[c] == round(v * 1000), (c, got[c], v)
lens = sorted(i["length_us"] for i in want["iterations"])
m = cp["median"]
assert round((m["end"] - m["start"]) / 1000, 3) == lens[(len(lens) - 1) // 2], m
e = m["edges"]
assert e and sum(x[3] - x[2] for x in e) == m["end"] - m["start"] and m["left_out"] == 0
assert all(a[3] == b[2] for a, b in zip(e, e[1:])), "median path not contiguous"
assert len({x[0] for x in e}) > 1, "median path on one rank"
print("html critical path: ok (%d edges in the median step)" % len(e))
PY
# bounded: 250 steps in 200 columns (each the sum of its steps), a median
# step of 514 edges drawn as its 400 longest, the rest counted and summed
# (checked against the step's slices in export --critical-path)
mkdir "$tmp/many" "$tmp/wide"
"$build/tests/tools/ct_synth_job" -d "$tmp/many" --ranks 2 --iterations 250 --slow-rank 1
"$build/tests/tools/ct_synth_job" -d "$tmp/wide" --ranks 2 --iterations 3 --kernels 512 \
  --kernel-us 5 --launch-gap-us 20 --slow-rank 1
for d in many wide; do
  "$build/decoder/cutrace" report --html -o "$tmp/$d.html" "$tmp/$d"
  "$build/decoder/cutrace" critical-path --json -o "$tmp/$d.cp.json" "$tmp/$d"
done
"$build/decoder/cutrace" export --format chrome --critical-path -o "$tmp/wide.json" "$tmp/wide"
python3 - "$tmp/many.html" "$tmp/many.cp.json" "$tmp/wide.html" "$tmp/wide.json" <<'PY'
import json, re, sys
def data(p):
    page = open(p).read()
    return json.loads(re.search(r'<script type="application/json" id="data">\n(.*?)</script>', page, re.S).group(1))["cp"]
cp, want = data(sys.argv[1]), json.load(open(sys.argv[2]))
its = want["iterations"]
assert cp["steps"] == 250 and len(cp["cols"]) == 200, (cp["steps"], len(cp["cols"]))
assert cp["cols"][0][0] == its[0]["index"] and cp["cols"][-1][1] == its[-1]["index"]
k = 0
for col in cp["cols"]:
    run = [i for i in its if col[0] <= i["index"] <= col[1]]
    k += len(run)
    for c, name in enumerate(cp["cats"]):
        assert col[2 + c] == sum(round(i["categories"][name] * 1000) for i in run), (col, name)
assert k == 250
cp = data(sys.argv[3])
m = cp["median"]
sl = [e for e in json.load(open(sys.argv[4]))["traceEvents"]
      if e.get("cat") == "critical_path" and e["args"]["step"] == m["index"]]
assert len(m["edges"]) == 400 and m["left_out"] == len(sl) - 400 > 0, (len(m["edges"]), m["left_out"], len(sl))
drawn = sum(e[3] - e[2] for e in m["edges"])
assert drawn + m["left_out_ns"] == m["end"] - m["start"], (drawn, m["left_out_ns"])
shortest = min(e[3] - e[2] for e in m["edges"])
durs = sorted((round(e["dur"] * 1000) for e in sl), reverse=True)
assert shortest >= durs[400], (shortest, durs[400])
assert all(a[2] < b[2] for a, b in zip(m["edges"], m["edges"][1:])), "not in time order"
assert len(cp["top"]) <= 20
print("html critical path bounds: ok (%d of %d edges drawn)" % (len(m["edges"]), len(sl)))
PY
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/wide.html" > "$tmp/widedom.html" 2> /dev/null || true
grep -q '<p class="note" id="cp-left">[0-9]* shorter edges of this step' "$tmp/widedom.html" ||
  { echo "wide page: no note of the edges left out"; exit 1; }
grep -q 'id="selfcheck" class="note">ok: ' "$tmp/widedom.html" || { echo "wide page did not render"; exit 1; }
# a spilled job (one rank in memory at a time) draws the same path, within
# diagnose's side budget: the same page as decoded in memory
CUTRACE_SPILL=1 "$build/decoder/cutrace" report --html -o "$tmp/spilled.html" "$tmp/job"
cmp "$out/report.html" "$tmp/spilled.html" || { echo "spilled page differs"; exit 1; }
# not built: --no-critical-path says why and draws nothing
"$build/decoder/cutrace" report --html --no-critical-path -o "$tmp/nocp.html" "$tmp/job"
grep -q '"cp":{"built":0,"why":"Not computed: the page was written with --no-critical-path' \
  "$tmp/nocp.html" || { echo "--no-critical-path: no reason"; exit 1; }
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/nocp.html" > "$tmp/nodom.html" 2> /dev/null || true
grep -q '<p id="cp-why">Not computed: the page was written with --no-critical-path' "$tmp/nodom.html" ||
  { echo "--no-critical-path page does not say why"; exit 1; }
grep -q 'id="cp-median"><svg' "$tmp/nodom.html" && { echo "--no-critical-path page draws a path"; exit 1; }
grep -q 'id="selfcheck" class="note">ok: ' "$tmp/nodom.html" || { echo "--no-critical-path page did not render"; exit 1; }
if "$build/decoder/cutrace" report --no-critical-path "$tmp/job" > /dev/null 2> "$tmp/err"; then
  echo "--no-critical-path without --html accepted"; exit 1
fi
grep -q -- "--no-critical-path is an option of the HTML page" "$tmp/err" || { cat "$tmp/err"; exit 1; }
# beyond 32 ranks the page aggregates (decoder/export/html.c): 128 ranks with
# rank 100 slow: every rank in the heat maps, rank 100 among the 8 drawn in
# detail, the findings one line per kind naming it, and the page renders
mkdir "$tmp/big"
"$build/tests/tools/ct_synth_job" -d "$tmp/big" --ranks 128 --iterations 10 --slow-rank 100
"$build/decoder/cutrace" report --html -o "$tmp/big.html" "$tmp/big"
timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --dump-dom \
  "file://$tmp/big.html" > "$tmp/bigdom.html" 2> "$tmp/bigconsole.log" || true
check=$(grep -o '<p id="selfcheck"[^<]*' "$tmp/bigdom.html" | sed 's/.*>//')
echo "128 ranks: self-check: $check"
case "$check" in "ok: timeline "*) ;; *) echo "the 128-rank page did not render"; exit 1 ;; esac
grep -q '<canvas width="900" height="618" role="img" id="heat-step"' "$tmp/bigdom.html" ||
  { echo "no 128-row step heat map"; exit 1; }
grep -q '<canvas [^>]*id="heat-idle"' "$tmp/bigdom.html" || { echo "no idle heat map"; exit 1; }
grep -q 'id="aggnote">128 ranks: timelines and per-rank charts below are of 8 of them[^<]*ranks [0-9, ]*100' \
  "$tmp/bigdom.html" || { echo "rank 100 not in detail"; grep -o 'id="aggnote">[^<]*' "$tmp/bigdom.html"; exit 1; }
grep -q '<li>straggler on 1 of 128 ranks (ranks 100)' "$tmp/bigdom.html" ||
  { echo "straggler finding"; grep -o '<ul id="findings">.\{0,400\}' "$tmp/bigdom.html"; exit 1; }
[ "$(grep -o '<text x="0" y="[0-9]*">rank [0-9]*</text>' "$tmp/bigdom.html" | sort -u | wc -l)" -le 24 ] ||
  { echo "per-rank bars for more than the detail ranks"; exit 1; }
# 128 traces are decoded spilled: the path is drawn all the same
grep -q 'id="cp-median"><svg' "$tmp/bigdom.html" || { echo "128 ranks: no critical path"; exit 1; }
# no iteration on any rank (5 launches of one kernel: nothing repeats enough):
# no step time in the page's data, null as in the JSON report, never 0
mkdir "$tmp/none"
CUTRACE_OUTPUT="$tmp/none" CUTRACE_GPU_TIMING=off LD_LIBRARY_PATH="$build/tests/fakegpu" \
  LD_PRELOAD="${CT_SANITIZER_PRELOAD:+$CT_SANITIZER_PRELOAD:}$build/shim/libcutrace.so" \
  "$build/tests/process/w_life" child
"$build/decoder/cutrace" report --html -o "$tmp/none.html" "$tmp/none"
grep -q '"iterations":0,"step_p50":null' "$tmp/none.html" || { echo "step p50 not null"; exit 1; }
grep -q '"cp":{"built":0,"why":"No iterations found: a critical path is per step."}' \
  "$tmp/none.html" || { echo "no reason for the missing critical path"; exit 1; }
if "$build/decoder/cutrace" export --format chrome --critical-path -o "$tmp/none.json" \
  "$tmp/none" 2> "$tmp/err"; then
  echo "export --critical-path without iterations succeeded"; exit 1
fi
grep -q -- "--critical-path: no iterations found" "$tmp/err" || { cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/none.json" ] || { echo "partial output left behind"; exit 1; }
echo "html e2e: ok (screenshot $out/report-html.png)"
