#!/bin/bash
# Every command follows the same conventions (docs/cli.md):
#   1. `cutrace CMD --help` and `cutrace help CMD` print the same page: its
#      usage, its exit statuses, an example and a reference page that exists;
#   2. one error style: an unknown option gives one line on stderr that
#      starts "cutrace CMD: " and names what the command takes, exit 2;
#   3. one exit-status rule: 0 done, 1 an input that cannot be read or is
#      damaged (the message names it), 2 bad usage;
#   4. --output is accepted wherever -o is;
#   5. `cutrace --version` names the version every JSON document carries;
#   6. with no operand, report, diagnose, goodput, critical-path, whatif and
#      export read the newest cutrace-runN folder here and say so, and give
#      what they give with it named;
#   7. no command but a fleet one with a PostgreSQL store loads libpq (its
#      twenty libraries cost every run ~10 ms of CPU at start);
#   8. report asks for huge pages without re-executing itself.
# usage: cli_conventions.sh BUILD_ROOT SOURCE_ROOT [sanitized]
set -uo pipefail
build=$1
src=$2
sanitized=${3:-}
cutrace=$build/decoder/cutrace
synth=$build/tests/tools/ct_synth_job
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

cmds="run start stop dump-now info salvage dump report diff diagnose export goodput critical-path
whatif fleet summarize"

# 1. help pages
for c in $cmds; do
  out=$("$cutrace" "$c" --help) || bad "$c --help: exit $?"
  [ "$out" = "$("$cutrace" help "$c")" ] || bad "'help $c' differs from '$c --help'"
  grep -q "^usage: cutrace $c" <<< "$out" || bad "$c --help: no usage line"
  grep -q "^exit status:" <<< "$out" || bad "$c --help: no exit statuses"
  grep -A1 "^example:" <<< "$out" | grep -q "cutrace " || bad "$c --help: no example"
  doc=$(sed -n 's/^reference: \([^ ]*\) .*/\1/p' <<< "$out")
  [ -n "$doc" ] && [ -f "$src/$doc" ] || bad "$c --help: reference page '$doc' is not in the tree"
done
"$cutrace" help no-such > /dev/null 2>&1; [ $? = 2 ] || bad "help of an unknown command: not exit 2"

# 2. one error style for an option no command takes
for c in $cmds; do
  err=$("$cutrace" "$c" --no-such-option x 2>&1 > /dev/null); rc=$?
  [ $rc = 2 ] || bad "$c --no-such-option: exit $rc"
  [ "$(wc -l <<< "$err")" = 1 ] || bad "$c --no-such-option: $(wc -l <<< "$err") lines: $err"
  case $c in
    fleet) pre="cutrace fleet: " ;; # a subcommand is expected first
    *) pre="cutrace $c: " ;;
  esac
  [ "${err#"$pre"}" != "$err" ] || bad "$c --no-such-option: '$err' does not start '$pre'"
done

# 3. exit statuses: a good job 0, a damaged file 1, a missing file 1
mkdir "$tmp/job"
"$synth" -d "$tmp/job" --ranks 2 --iterations 6 > /dev/null || bad "ct_synth_job"
head -c 3000 /dev/urandom > "$tmp/damaged.cutrace"
readers="info dump report diagnose goodput critical-path"
for c in $readers; do
  "$cutrace" "$c" "$tmp/job" > /dev/null 2>&1 || bad "$c on a good job: exit $?"
  for f in "$tmp/damaged.cutrace" "$tmp/missing.cutrace"; do
    err=$("$cutrace" "$c" "$f" 2>&1 > /dev/null); rc=$?
    [ $rc = 1 ] || bad "$c $(basename "$f"): exit $rc (wanted 1)"
    grep -q "^cutrace $c: $f: " <<< "$err" || bad "$c $(basename "$f"): '$err' does not name it"
  done
done
"$cutrace" whatif --scale data=0 "$tmp/damaged.cutrace" > /dev/null 2>&1
[ $? = 1 ] || bad "whatif on a damaged file: not exit 1"
"$cutrace" export --format chrome -o "$tmp/x.json" "$tmp/damaged.cutrace" > /dev/null 2>&1
[ $? = 1 ] || bad "export of a damaged file: not exit 1"
"$cutrace" summarize -o "$tmp/s" "$tmp/damaged.cutrace" > /dev/null 2>&1
[ $? = 1 ] || bad "summarize of a damaged file: not exit 1"
"$cutrace" salvage "$tmp/missing.cutrace" > /dev/null 2>&1
[ $? = 1 ] || bad "salvage of a missing file: not exit 1"
"$cutrace" diff "$tmp/damaged.cutrace" "$tmp/job" > /dev/null 2>&1
[ $? = 1 ] || bad "diff of a damaged file: not exit 1"

# 4. --output wherever -o
for c in report diagnose goodput critical-path; do
  "$cutrace" "$c" --output "$tmp/o-$c.txt" "$tmp/job" > /dev/null 2>&1 && [ -s "$tmp/o-$c.txt" ] ||
    bad "$c --output FILE"
  "$cutrace" "$c" -o "$tmp/s-$c.txt" "$tmp/job" > /dev/null 2>&1
  cmp -s "$tmp/o-$c.txt" "$tmp/s-$c.txt" || bad "$c: --output and -o differ"
done
"$cutrace" export --format chrome --output "$tmp/o.json" "$tmp/job" 2> /dev/null && [ -s "$tmp/o.json" ] ||
  bad "export --output FILE"
"$cutrace" summarize --output "$tmp/sums" "$tmp/job" > /dev/null 2>&1 && ls "$tmp/sums"/*.ctsum > /dev/null 2>&1 ||
  bad "summarize --output DIR"

# 5. the version, in --version and in every JSON document
ver=$("$cutrace" --version | sed -n 's/^cutrace \([^ ]*\) (trace format v[0-9]*.*/\1/p')
[ -n "$ver" ] || bad "--version: '$("$cutrace" --version)'"
[ "$("$cutrace" version)" = "$("$cutrace" --version)" ] || bad "'version' differs from '--version'"
for args in "report --json" "diagnose --json" "goodput --json" "critical-path --json" \
             "whatif --json --scale data=0"; do
  # shellcheck disable=SC2086
  "$cutrace" $args "$tmp/job" 2> /dev/null | grep -q "^{\"schema\":\"cutrace\.[a-z_]*\",\"version\":[0-9]*,\"cutrace_version\":\"$ver\"" ||
    bad "$args: no schema, version and cutrace_version $ver first"
done
"$cutrace" diff --json "$tmp/job" "$tmp/job" 2> /dev/null | grep -q "\"cutrace_version\":\"$ver\"" ||
  bad "diff --json: no cutrace_version"

# 6. no operand: the newest cutrace-runN here, said; none: exit 2, said
mkdir "$tmp/here" && cd "$tmp/here" || exit 1
err=$("$cutrace" report 2>&1 > /dev/null); rc=$?
[ $rc = 2 ] && grep -q "^cutrace report: expected a trace file or directory (there is no cutrace-runN" <<< "$err" ||
  bad "report with no operand and no run folder: rc=$rc: $err"
mkdir cutrace-run2 cutrace-run10 cutrace-run9
cp "$tmp/job"/*.cutrace cutrace-run10/
touch cutrace-run11 # a file, not a folder: not a run
for args in "report" "diagnose" "goodput" "critical-path" "whatif --scale data=0" \
            "report --json" "export --format chrome -o $tmp/n.json"; do
  # shellcheck disable=SC2086
  out=$("$cutrace" $args 2> "$tmp/err"); rc=$?
  c=${args%% *}
  [ $rc = 0 ] || bad "$args with no operand: exit $rc: $(cat "$tmp/err")"
  grep -q "^cutrace $c: reading cutrace-run10, the newest cutrace-runN folder here$" "$tmp/err" ||
    bad "$args with no operand: did not say which folder: $(cat "$tmp/err")"
  case $c in
    export) ;;
    *)
      # shellcheck disable=SC2086
      [ "$out" = "$("$cutrace" $args cutrace-run10 2> /dev/null)" ] ||
        bad "$args with no operand differs from $args cutrace-run10" ;;
  esac
done
cd / || exit 1

# 7. libpq only where a PostgreSQL store is opened (the loader's own log)
LD_DEBUG=files "$cutrace" report "$tmp/job" > /dev/null 2> "$tmp/ld" ||
  bad "report under LD_DEBUG: exit $?"
grep -q "file=libzstd" "$tmp/ld" || bad "LD_DEBUG=files logged no library: cannot check libpq"
if grep -q "file=libpq" "$tmp/ld"; then bad "cutrace report loaded libpq"; fi
# 8. huge pages from a heap reserve, not a second start-up (decoder/util/heap.c), where the
#    kernel gives them on request
#    (a sanitizer's allocator is no glibc heap to reserve in: the fallback runs)
if [ -n "$sanitized" ]; then
  echo "skipped: huge pages (a sanitizer build: its allocator has no heap reserve)"
elif grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null; then
  n=$(grep -c "file=libzstd.*needed by" "$tmp/ld")
  [ "$n" = 1 ] || bad "cutrace report started $n times (re-executed itself for huge pages)"
else
  echo "skipped: huge pages (transparent huge pages are not 'madvise' on this machine)"
fi

if [ $fails = 0 ]; then echo "ok: help, errors, exit statuses, --output, version, default operand, no libpq"; fi
[ $fails = 0 ]
