#!/bin/bash
# e2e: `cutrace report --html` opened in headless Chromium. check_html.py
# drives Chromium over the DevTools protocol (its docstring lists the
# checks): no script or console error, every legend's colours those of its
# series, heat map cells in their scale's colours, each drawn rank's
# timeline spanning its window with all its busy time drawn, the findings
# those of `cutrace diagnose --json`. On:
#   - 4 ranks with health counters (rank 1 power-capped from step 5, rank 2
#     slow): also the SM clock, power and throttled-share charts, and the
#     critical path against `critical-path --json` (DOM read with --dump-dom);
#   - 2 ranks, rank 1 slow, with the job's identity in its metadata: the
#     header and title name it; each stream's busy time is the schedule's
#     (tests/tools/ct_synth_job.c), in the whole run and in the zoom into the
#     slowest step; rank 1's compute row of the heat map stands out;
#   - 8 alike ranks: every heat map one colour;
#   - 64 ranks of 600 steps of 40 kernels, rank 40 slow: past the per-rank
#     limit of intervals, the timeline is drawn from bins and still spans
#     and holds every rank's whole run (busy time exact), the slowest step
#     interval by interval;
#   - 128 ranks: the aggregated page (8 ranks in detail, all in the heat maps).
# The screenshot stays in the build folder (tests/export/report-html.png).
# usage: html.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
src=$2
out=$build/tests/export
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (scripts/setup installs it)"
  exit 77
fi
check=("$src/tests/export/check_html.py")
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
[ -n "$version" ] || { echo "no project version in meson.build"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the page and what it is checked against: report --json, diagnose --json
page() { # name, job dir, extra report options...
  local name=$1 dir=$2
  shift 2
  "$build/decoder/cutrace" report --html -o "$tmp/$name.html" "$@" "$dir"
  "$build/decoder/cutrace" report --json -o "$tmp/$name.json" "$dir"
  "$build/decoder/cutrace" diagnose --json -o "$tmp/$name.diag.json" "$dir"
}
mkdir "$tmp/job"
"$build/tests/tools/ct_synth_job" -d "$tmp/job" --ranks 4 --iterations 10 --slow-rank 2 \
  --skew-us 37 --counters-us 200 --throttle-rank 1 --throttle-from 5
page report "$tmp/job"
cp "$tmp/report.html" "$out/report.html"
# self-contained: no URL the page would fetch
if grep -Eq '(src|href)="(https?:)?//' "$out/report.html"; then
  echo "the page references the network"; exit 1
fi
flags=(--headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$tmp/profile"
       --window-size=1300,2400 --virtual-time-budget=10000)
python3 "${check[@]}" "$out/report.html" --report "$tmp/report.json" \
  --diagnose "$tmp/report.diag.json" --min-charts 18 --screenshot "$out/report-html.png"
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$out/report.html" > "$tmp/dom.html" 2> /dev/null || true
grep -q 'data-selfcheck="ok"' "$tmp/dom.html" || { echo "no ok marker on body"; exit 1; }
for id in breakdown overlap attr iters health-sm health-power health-thr; do
  grep -q "<div id=\"$id\"><svg" "$tmp/dom.html" || { echo "chart $id missing"; exit 1; }
done
grep -q '<table id="coll"><tr><th>op' "$tmp/dom.html" || { echo "collective table missing"; exit 1; }
# each collective's speed of light, or why there is none (the synthetic job
# spans two hosts and records no RDMA rate): never a 0
grep -q '<th>of SoL</th><th>SoL from (or why none)</th>' "$tmp/dom.html" &&
  grep -q '<td>-</td><td>host node[0-9]*: no RDMA rate recorded' "$tmp/dom.html" ||
  { echo "collective table: no speed-of-light column, or no reason for its absence"; exit 1; }
# one SM clock line per rank; rank 1's throttled share is drawn with its reason
[ "$(grep -o '<title>rank [0-9] GPU 0 SM clock' "$tmp/dom.html" | wc -l)" = 4 ] ||
  { echo "SM clock lines missing"; exit 1; }
grep -q 'rank 1: sw_power_cap' "$tmp/dom.html" || { echo "throttle reason missing"; exit 1; }
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
# the collectives table's figures are the report's, null (a dash) where the
# report has none, never a 0; the op named with its library when not NCCL's
python3 - "$out/report.html" "$tmp/report.json" <<'PY'
import json, re, sys
page = open(sys.argv[1]).read()
rows = json.loads(re.search(r'<script type="application/json" id="data">\n(.*?)</script>', page,
                            re.S).group(1))["coll"]
want = json.load(open(sys.argv[2]))["collectives"]
assert len(rows) == len(want) > 0, (len(rows), len(want))
keys = ["p50_us", "p90_us", "max_us", "arrival_skew_p50_us", "wait_p50_us", "transfer_p50_us"]
for r, c in zip(rows, want):
    name = ("" if c["lib"] == "nccl" else c["lib"] + ":") + c["op"]
    assert r[:4] == [name, c["bytes"], c["nranks"], c["count"]], (r[:4], c)
    for k, v in zip(keys, r[4:10]):
        assert (v is None) == (c[k] is None), (k, v, c[k])
        assert v is None or abs(v / 1e3 - c[k]) <= 0.051, (k, v, c[k])
    for k, v in zip(("algbw_gbps", "busbw_gbps"), r[10:12]):
        assert (v is None) == (c[k] is None) and (v is None or abs(v - c[k]) <= 0.0051), (k, v, c)
print("html collectives: ok (%d rows)" % len(rows))
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
grep -q 'data-selfcheck="ok"' "$tmp/widedom.html" || { echo "wide page did not render"; exit 1; }
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
grep -q 'data-selfcheck="ok"' "$tmp/nodom.html" || { echo "--no-critical-path page did not render"; exit 1; }
if "$build/decoder/cutrace" report --no-critical-path "$tmp/job" > /dev/null 2> "$tmp/err"; then
  echo "--no-critical-path without --html accepted"; exit 1
fi
grep -q -- "--no-critical-path is an option of the HTML page" "$tmp/err" || { cat "$tmp/err"; exit 1; }
# a page whose script fails says so at its top (a field renamed in its data)
sed 's/"steps":{"cols":/"steps":{"colz":/' "$tmp/report.html" > "$tmp/broken.html"
python3 "${check[@]}" "$tmp/broken.html" --expect-error
# the job's identity in the header and the title; each stream's busy time
# the schedule's (ct_synth_job.c: 10 kernels of 100 us per step, 120 us on
# the slow rank 1; the all-reduce from the 8th kernel's end to 300 us after
# the slow rank's start: 460 us on rank 0, 300 us on rank 1), over the run
# and in the slowest step; rank 1's compute row stands out
mkdir "$tmp/two"
"$build/tests/tools/ct_synth_job" -d "$tmp/two" --ranks 2 --iterations 20 --slow-rank 1 \
  --host gpu-node-7 --gpu "NVIDIA H100 80GB HBM3" --run-id run-4711 --job slurm-99 \
  --cmdline "torchrun --nproc-per-node 2 train.py --lr 3e-4"
page two "$tmp/two"
python3 "${check[@]}" "$tmp/two.html" --report "$tmp/two.json" --diagnose "$tmp/two.diag.json" \
  --straggler 1 --stream-busy 0:7=20000000 --stream-busy 1:7=24000000 \
  --stream-busy 0:9=9200000 --stream-busy 1:9=6000000 \
  --step-busy 0:7=1000000 --step-busy 1:7=1200000 --step-busy 0:9=460000 --step-busy 1:9=300000 \
  --ident "id-cmd=torchrun --nproc-per-node 2 train.py --lr 3e-4" \
  --ident "id-hosts=2 ranks on 1 host: gpu-node-7" --ident "id-gpus=NVIDIA H100 80GB HBM3" \
  --ident id-run=run-4711 --ident id-job=slurm-99 --ident "id-version=page by cutrace $version" \
  --ident "id-start=$(date -u +%Y-)" --title "cutrace: torchrun --nproc-per-node 2 train.py" \
  --title " - 2 ranks on gpu-node-7, $(date -u +%Y-)"
# with --skip, diagnose's findings on the iterations kept, as diagnose --skip
"$build/decoder/cutrace" report --html --skip 3 -o "$tmp/skip.html" "$tmp/two"
"$build/decoder/cutrace" diagnose --json --skip 3 -o "$tmp/skip.diag.json" "$tmp/two"
grep -q '"iterations":17,' "$tmp/skip.diag.json" || { echo "diagnose --skip 3: not 17 iterations"; exit 1; }
python3 "${check[@]}" "$tmp/skip.html" --diagnose "$tmp/skip.diag.json"
# alike ranks: every heat map one colour
mkdir "$tmp/uniform"
"$build/tests/tools/ct_synth_job" -d "$tmp/uniform" --ranks 8 --iterations 30
page uniform "$tmp/uniform"
python3 "${check[@]}" "$tmp/uniform.html" --report "$tmp/uniform.json" \
  --diagnose "$tmp/uniform.diag.json" --uniform --stream-busy 7=30000000
# 64 ranks of 600 steps of 40 kernels of 20 us (24 us on rank 40): some 26 000
# intervals per rank, past the limit of 200 000 over the 8 ranks drawn; the
# whole run drawn from bins, exact (480 ms busy on stream 7, 576 ms on rank
# 40), the slowest step (all steps alike: the first) interval by interval
mkdir "$tmp/wide64"
"$build/tests/tools/ct_synth_job" -d "$tmp/wide64" --ranks 64 --iterations 600 --kernels 40 \
  --kernel-us 20 --launch-gap-us 5 --slow-rank 40
page wide64 "$tmp/wide64"
python3 "${check[@]}" "$tmp/wide64.html" --report "$tmp/wide64.json" \
  --diagnose "$tmp/wide64.diag.json" --binned --straggler 40 \
  --stream-busy 0:7=480000000 --stream-busy 1:7=480000000 --stream-busy 40:7=576000000 \
  --step-busy 0:7=800000 --step-busy 40:7=960000
grep -q '"raw_limit":25000,' "$tmp/wide64.html" || { echo "not 8 ranks of 25000"; exit 1; }
# beyond 32 ranks the page aggregates (decoder/export/html.c): 128 ranks with
# rank 100 slow: every rank in the heat maps, rank 100 among the 8 drawn in
# detail, the observations one line per kind naming it, and the page renders
mkdir "$tmp/big"
"$build/tests/tools/ct_synth_job" -d "$tmp/big" --ranks 128 --iterations 10 --slow-rank 100
page big "$tmp/big"
python3 "${check[@]}" "$tmp/big.html" --report "$tmp/big.json" --diagnose "$tmp/big.diag.json" \
  --straggler 100
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/big.html" > "$tmp/bigdom.html" 2> /dev/null || true
grep -q '<canvas width="900" height="338" role="img" id="heat-step"' "$tmp/bigdom.html" ||
  { echo "no 128-row step heat map"; exit 1; }
for k in compute wait; do
  grep -q "<canvas [^>]*id=\"heat-$k\"" "$tmp/bigdom.html" || { echo "no $k heat map"; exit 1; }
done
grep -q 'id="aggnote">128 ranks: timelines and per-rank charts below are of 8 of them[^<]*ranks [0-9, ]*100' \
  "$tmp/bigdom.html" || { echo "rank 100 not in detail"; grep -o 'id="aggnote">[^<]*' "$tmp/bigdom.html"; exit 1; }
grep -q '<li>straggler on 1 of 128 ranks (ranks 100)' "$tmp/bigdom.html" ||
  { echo "straggler observation"; grep -o '<ul id="facts">.\{0,400\}' "$tmp/bigdom.html"; exit 1; }
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
# ... and the page draws without its step figures; the real shim recorded
# the command line and the version
"$build/decoder/cutrace" diagnose --json -o "$tmp/none.diag.json" "$tmp/none"
python3 "${check[@]}" "$tmp/none.html" --diagnose "$tmp/none.diag.json" --ident id-cmd=w_life \
  --ident "id-version=traces recorded by cutrace $version"
echo "html e2e: ok (screenshot $out/report-html.png)"
