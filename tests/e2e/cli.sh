#!/bin/bash
# End-to-end checks of `cutrace info` and `cutrace dump` as a user runs them:
# the golden trace decodes exactly as recorded, bad input gets one clear
# message naming the file and a non-zero status, truncation is reported.
# usage: cli.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
cutrace=$build/decoder/cutrace
synth=$build/tests/tools/ct_synth
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cd "$src" || exit 1

# 1. The golden trace of format v1 decodes to exactly the stored views.
if "$cutrace" dump --json tests/golden/v1.cutrace > "$tmp/v1.jsonl" &&
    cmp -s "$tmp/v1.jsonl" tests/golden/v1.jsonl; then ok; else
    bad "golden v1 dump --json differs:"; diff "$tmp/v1.jsonl" tests/golden/v1.jsonl | head -5; fi
if "$cutrace" info tests/golden/v1.cutrace > "$tmp/v1.info" && cmp -s "$tmp/v1.info" tests/golden/v1.info; then ok; else
    bad "golden v1 info differs:"; diff "$tmp/v1.info" tests/golden/v1.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v1.jsonl" > /dev/null; then ok; else bad "golden JSON contract"; fi
# ... and so does the golden trace of format v2 (v1 plus counter records).
if "$cutrace" dump --json tests/golden/v2.cutrace > "$tmp/v2.jsonl" &&
    cmp -s "$tmp/v2.jsonl" tests/golden/v2.jsonl; then ok; else
    bad "golden v2 dump --json differs:"; diff "$tmp/v2.jsonl" tests/golden/v2.jsonl | head -5; fi
if "$cutrace" info tests/golden/v2.cutrace > "$tmp/v2.info" && cmp -s "$tmp/v2.info" tests/golden/v2.info; then ok; else
    bad "golden v2 info differs:"; diff "$tmp/v2.info" tests/golden/v2.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v2.jsonl" > /dev/null; then ok; else bad "golden v2 JSON contract"; fi
# ... and the golden trace of format v3: a salvaged trace (its process
# "killed" in step 1, completed from its live mapping: ct_synth --salvaged)
if "$cutrace" dump --json tests/golden/v3.cutrace > "$tmp/v3.jsonl" &&
    cmp -s "$tmp/v3.jsonl" tests/golden/v3.jsonl; then ok; else
    bad "golden v3 dump --json differs:"; diff "$tmp/v3.jsonl" tests/golden/v3.jsonl | head -5; fi
if "$cutrace" info tests/golden/v3.cutrace > "$tmp/v3.info" && cmp -s "$tmp/v3.info" tests/golden/v3.info; then ok; else
    bad "golden v3 info differs:"; diff "$tmp/v3.info" tests/golden/v3.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v3.jsonl" > /dev/null; then ok; else bad "golden v3 JSON contract"; fi
# ... and the golden trace of format v4: v3's salvaged trace with NCCL's own
# account of its last all-reduce (profiler-plugin descriptor, ProxyOps)
if "$cutrace" dump --json tests/golden/v4.cutrace > "$tmp/v4.jsonl" &&
    cmp -s "$tmp/v4.jsonl" tests/golden/v4.jsonl; then ok; else
    bad "golden v4 dump --json differs:"; diff "$tmp/v4.jsonl" tests/golden/v4.jsonl | head -5; fi
if "$cutrace" info tests/golden/v4.cutrace > "$tmp/v4.info" && cmp -s "$tmp/v4.info" tests/golden/v4.info; then ok; else
    bad "golden v4 info differs:"; diff "$tmp/v4.info" tests/golden/v4.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v4.jsonl" > /dev/null; then ok; else bad "golden v4 JSON contract"; fi
grep -q '"kind":"nccl_info",.*"algo":"RING","proto":"SIMPLE","channels":2,"warps":16' "$tmp/v4.jsonl" &&
    [ "$(grep -c '"kind":"nccl_proxy"' "$tmp/v4.jsonl")" = 4 ] &&
    grep -q '"kind":"nccl_proxy",.*"channel":1,"peer":1,"direction":"send","steps":28' "$tmp/v4.jsonl" &&
    grep -q 'nccl_info 1, nccl_proxy 4' "$tmp/v4.info" &&
    ok || bad "golden v4: the NCCL descriptor and ProxyOps"
# ... and of format v5: v4's with its all-reduce's two kernel channels
if "$cutrace" dump --json tests/golden/v5.cutrace > "$tmp/v5.jsonl" &&
    cmp -s "$tmp/v5.jsonl" tests/golden/v5.jsonl; then ok; else
    bad "golden v5 dump --json differs:"; diff "$tmp/v5.jsonl" tests/golden/v5.jsonl | head -5; fi
if "$cutrace" info tests/golden/v5.cutrace > "$tmp/v5.info" && cmp -s "$tmp/v5.info" tests/golden/v5.info; then ok; else
    bad "golden v5 info differs:"; diff "$tmp/v5.info" tests/golden/v5.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v5.jsonl" > /dev/null; then ok; else bad "golden v5 JSON contract"; fi
[ "$(grep -c '"kind":"nccl_channel"' "$tmp/v5.jsonl")" = 2 ] &&
    grep -q '"kind":"nccl_channel",.*"correlation_id":125,"channel":1}' "$tmp/v5.jsonl" &&
    grep -q 'nccl_proxy 4, nccl_channel 2, nccl_net 1, nccl_phase 1, nccl_tag 1' "$tmp/v5.info" &&
    ok || bad "golden v5: the NCCL kernel channels"
grep -q '"kind":"nccl_net",.*"channel":1,"peer":1,"direction":"send","transport":"ib","device":0,"qp":267,"wrs":28,"bytes":52428800' "$tmp/v5.jsonl" &&
    ok || bad "golden v5: the network work of a ProxyOp"
grep -q '"kind":"nccl_tag",.*"correlation_id":125,"tag":42}' "$tmp/v5.jsonl" &&
    grep -q '"kind":"nccl_phase",.*"correlation_id":125,"channel":0,"phase":"compute"}' "$tmp/v5.jsonl" &&
    ok || bad "golden v5: a user tag and a kernel phase (ABI v7)"
# ... and of format v6: v5's with two raw proxy steps (CUTRACE_NCCL_STEPS)
if "$cutrace" dump --json tests/golden/v6.cutrace > "$tmp/v6.jsonl" &&
    cmp -s "$tmp/v6.jsonl" tests/golden/v6.jsonl; then ok; else
    bad "golden v6 dump --json differs:"; diff "$tmp/v6.jsonl" tests/golden/v6.jsonl | head -5; fi
if "$cutrace" info tests/golden/v6.cutrace > "$tmp/v6.info" && cmp -s "$tmp/v6.info" tests/golden/v6.info; then ok; else
    bad "golden v6 info differs:"; diff "$tmp/v6.info" tests/golden/v6.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v6.jsonl" > /dev/null; then ok; else bad "golden v6 JSON contract"; fi
grep -q '"kind":"nccl_step",.*"direction":"send","step":0,"bytes":524288,"gpu_wait_at_ns":[0-9]*,"gpu_wait_ns":1000,"peer_wait_at_ns":[0-9]*,"peer_wait_ns":2000,"net_at_ns":[0-9]*,"net_ns":40000,"flush_at_ns":null,"flush_ns":0}' "$tmp/v6.jsonl" &&
    grep -q '"kind":"nccl_step",.*"direction":"recv",.*"gpu_wait_ns":5000,.*"peer_wait_ns":30000,"net_at_ns":null,"net_ns":0,"flush_at_ns":null,"flush_ns":0}' "$tmp/v6.jsonl" &&
    grep -q 'nccl_tag 1, nccl_step 2' "$tmp/v6.info" &&
    ok || bad "golden v6: two raw proxy steps, a state never entered null"
# ... and of format v7: v6's with an NVSHMEM collective, which says so
if "$cutrace" dump --json tests/golden/v7.cutrace > "$tmp/v7.jsonl" &&
    cmp -s "$tmp/v7.jsonl" tests/golden/v7.jsonl; then ok; else
    bad "golden v7 dump --json differs:"; diff "$tmp/v7.jsonl" tests/golden/v7.jsonl | head -5; fi
if "$cutrace" info tests/golden/v7.cutrace > "$tmp/v7.info" && cmp -s "$tmp/v7.info" tests/golden/v7.info; then ok; else
    bad "golden v7 info differs:"; diff "$tmp/v7.info" tests/golden/v7.info | head -5; fi
if python3 tests/e2e/check_dump_json.py < "$tmp/v7.jsonl" > /dev/null; then ok; else bad "golden v7 JSON contract"; fi
[ "$(grep -c '"lib":"nvshmem"' "$tmp/v7.jsonl")" = 1 ] &&
    grep -q '"kind":"nccl",.*"op":"AllReduce","lib":"nvshmem",.*"count":1048576,"dtype":"float","bytes":4194304,"redop":"sum"' "$tmp/v7.jsonl" &&
    ! grep -q '"lib":"nvshmem"' "$tmp/v6.jsonl" &&
    ok || bad "golden v7: one NVSHMEM op, its type and operator NVSHMEM's; none in v6"
grep -q '"message":"killed in step 2"' "$tmp/v3.jsonl" && grep -q '"signal":"9"' "$tmp/v3.jsonl" &&
    grep -q 'status:     complete, salvaged: the process was killed by SIGKILL' "$tmp/v3.info" &&
    ok || bad "golden v3: the salvaged marks, the signal and the status"
n=$(grep -c '"kind":"counter"' "$tmp/v2.jsonl")
[ "$n" = 8 ] && grep -q '"kind":"counter",.*"device":-1,"name":"cpu_time","value":120,"unit":"ms"' "$tmp/v2.jsonl" &&
    ok || bad "golden v2: expected 8 counter records, found $n"

# 2. A fresh trace: directories are expanded, text dump has a line per record.
mkdir -p "$tmp/run/sub"
"$synth" -o "$tmp/run/a.cutrace" -n 3 && "$synth" -o "$tmp/run/sub/b.cutrace" -n 2 || bad "ct_synth"
lines=$("$cutrace" dump "$tmp/run" | wc -l)
jlines=$("$cutrace" dump --json "$tmp/run" | wc -l)
[ "$lines" -gt 1000 ] && [ "$lines" = "$jlines" ] && ok || bad "dump of a directory: $lines text vs $jlines json lines"
"$cutrace" dump --json "$tmp/run" | python3 tests/e2e/check_dump_json.py > /dev/null && ok || bad "fresh trace JSON contract"
n=$("$cutrace" info "$tmp/run" | grep -c 'status:     complete')
[ "$n" = 2 ] && ok || bad "info on a directory should describe both traces"

# 3. Truncated: decoded up to the cut, reported, exit 0 (a killed job's trace is normal).
size=$(stat -c %s "$tmp/run/a.cutrace")
head -c $((size * 2 / 3)) "$tmp/run/a.cutrace" > "$tmp/cut.cutrace"
out=$("$cutrace" info "$tmp/cut.cutrace" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "truncated at offset [0-9]" <<< "$out" && ok || bad "truncated info: rc=$rc $out"
err=$("$cutrace" dump "$tmp/cut.cutrace" 2>&1 > /dev/null); rc=$?
[ $rc = 0 ] && grep -q "cut.cutrace: truncated at offset" <<< "$err" && ok || bad "truncated dump: rc=$rc $err"

# 4. Corrupt bytes mid-file: decoded around the damage, located, exit 1.
cp "$tmp/run/a.cutrace" "$tmp/bad.cutrace"
printf 'XXXXXXXXXXXXXXXX' | dd of="$tmp/bad.cutrace" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
err=$("$cutrace" dump "$tmp/bad.cutrace" 2>&1 > /dev/null); rc=$?
[ $rc = 1 ] && grep -q "bad.cutrace: damaged at offset [0-9]*: corrupt" <<< "$err" && ok || bad "corrupt dump: rc=$rc $err"

# 4b. info and report count the same damaged bytes (bytes, not places), and the
# report's header states them, and a cut file's offset (docs/report.md, "Coverage").
info=$("$cutrace" info "$tmp/bad.cutrace")
want=$(sed -n 's/^  damaged: *\([0-9]*\) bytes skipped at 1 place(s).*/\1/p' <<< "$info")
each=$(sed -n 's/^  damage: .*(\([0-9]*\) bytes skipped)$/\1/p' <<< "$info")
got=$("$cutrace" report --json "$tmp/bad.cutrace" 2> /dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["ranks"][0]["coverage"]["damaged_bytes"])')
[ -n "$want" ] && [ "$want" -gt 16 ] && [ "$want" = "$each" ] && [ "$want" = "$got" ] && ok ||
    bad "damaged bytes: info total '$want', its place '$each', report '$got'"
"$cutrace" report "$tmp/bad.cutrace" 2> /dev/null |
    grep -q "^Coverage: $want damaged bytes skipped in $tmp/bad.cutrace ([0-9.]*% of the file)" &&
    ok || bad "report header: no damaged-bytes line"
off=$("$cutrace" info "$tmp/cut.cutrace" | sed -n 's/.*truncated at offset \([0-9]*\) .*/\1/p')
"$cutrace" report "$tmp/cut.cutrace" 2> /dev/null |
    grep -q "^Coverage: $tmp/cut.cutrace truncated at offset $off (no footer" &&
    [ -n "$off" ] && ok || bad "report header: no truncation line at offset '$off'"
"$cutrace" report "$tmp/run/a.cutrace" 2> /dev/null | grep -q "^Coverage:" &&
    bad "report header: a whole trace has a coverage line" || ok

# 5. Bad input: one clear message naming the file, non-zero, never a crash.
check_error() { # expected-rc pattern args...
    local want=$1 pat=$2; shift 2
    local err rc
    err=$("$cutrace" "$@" 2>&1 > /dev/null); rc=$?
    if [ $rc = "$want" ] && grep -q -- "$pat" <<< "$err" && [ "$(wc -l <<< "$err")" = 1 ]; then ok; else
        bad "cutrace $* -> rc=$rc: $err (wanted $want, /$pat/)"; fi
}
echo '{"traceEvents": []}' > "$tmp/kineto.json"
printf 'CUTRACE' > "$tmp/short.cutrace"
mkdir -p "$tmp/empty"
check_error 1 "no-such.cutrace: No such file or directory" info "$tmp/no-such.cutrace"
check_error 1 "kineto.json: not a cutrace trace: offset 0" dump "$tmp/kineto.json"
check_error 1 "short.cutrace: not a cutrace trace" info "$tmp/short.cutrace"
check_error 1 "empty: directory holds no \*.cutrace files" dump "$tmp/empty"
check_error 2 "unknown command 'frobnicate'" frobnicate
check_error 2 "expected at least one trace" dump
cp tests/golden/v1.cutrace "$tmp/v9.cutrace"
printf '\x09' | dd of="$tmp/v9.cutrace" bs=1 seek=16 conv=notrunc 2> /dev/null
check_error 1 "v9.cutrace: trace format version 9 is newer than this cutrace supports (7)" info "$tmp/v9.cutrace"
printf '\x08' | dd of="$tmp/v9.cutrace" bs=1 seek=16 conv=notrunc 2> /dev/null
check_error 1 "v9.cutrace: trace format version 8 is newer than this cutrace supports (7)" info "$tmp/v9.cutrace"

# 5. Run tags: --tag (repeatable) and CUTRACE_TAGS end up in every trace's metadata.
# (A sanitizer build's shim needs its runtime preloaded first, which `cutrace run`
# does not arrange: the shim suites cover those builds. `cat` moves a few bytes:
# CUTRACE_HOST_TRACE_KB=0 gives it a trace all the same.)
if readelf -d "$build/shim/libcutrace.so" | grep -q 'lib[at]san'; then ok
elif CUTRACE_HOST_TRACE_KB=0 CUTRACE_TAGS=fleet=eu "$cutrace" run -o "$tmp/tagged" --tag exp=7 --tag host_class=a -- \
      cat /etc/hostname > /dev/null 2>&1 &&
    "$cutrace" dump --json "$tmp/tagged" | grep -q '"tag.fleet":"eu","tag.exp":"7","tag.host_class":"a"'
then ok; else bad "run tags not in the trace metadata"; fi
check_error 2 "cutrace run: --tag a,b=1: one KEY=VALUE per --tag" run --tag a,b=1 -- true
check_error 2 "cutrace run: --tag =x: tag '=x': expected KEY=VALUE" run --tag =x -- true

# 6. goodput: one job's; several job ids need --job, which must match one.
check_error 2 "cutrace goodput: unknown or incomplete option '--frob'" goodput --frob x
check_error 2 "cutrace goodput: expected a trace file or directory (there is no cutrace-runN" goodput
if readelf -d "$build/shim/libcutrace.so" | grep -q 'lib[at]san'; then ok
else
    for j in jobA jobB; do
        CUTRACE_HOST_TRACE_KB=0 CUTRACE_JOB=$j "$cutrace" run -o "$tmp/two" -- cat /etc/hostname \
            > /dev/null 2>&1 || bad "cutrace run for $j"
    done
    # two cutrace runs: refused as two runs, listed (docs/runs.md "Runs"); --job picks one
    err=$("$cutrace" goodput "$tmp/two" 2>&1 > /dev/null); rc=$?
    [ $rc = 2 ] && grep -q "cutrace goodput: the operands hold 2 separate runs" <<< "$err" && ok ||
        bad "goodput of two runs: rc=$rc $err"
    check_error 2 "cutrace goodput: --job jobC: none of the 2 traces is of that job" goodput --job jobC "$tmp/two"
    out=$("$cutrace" goodput --json --job jobB "$tmp/two")
    python3 -c 'import json,sys; g=json.loads(sys.argv[1]); assert g["job"] == "jobB" and len(g["attempts"]) == 1 \
        and g["attempts"][0]["ended"] == "exit" and g["total_us"] > 0, g' "$out" && ok || bad "goodput --job jobB: $out"
fi

echo "$pass passed, $fail failed"
[ $fail = 0 ]
