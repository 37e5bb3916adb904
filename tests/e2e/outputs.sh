# Sourced by the e2e tests that compare every output of two ways of reading
# a job (summaries.sh, spill.sh). Needs $cutrace.
outputs() { # DIR_A DIR_B OUT: every output of both inputs into OUT/
  local a=$1 b=$2 out=$3
  mkdir -p "$out"
  "$cutrace" report "$a" > "$out/report.txt" 2> "$out/report.err"
  "$cutrace" report --json "$a" > "$out/report.json"
  "$cutrace" report --json --rank-iterations "$a" > "$out/report-iter.json"
  "$cutrace" report --html -o "$out/report.html" "$a"
  "$cutrace" report -o /dev/null --rows "$out/report.rows" "$a"
  "$cutrace" diagnose "$a" > "$out/diagnose.txt"
  "$cutrace" diagnose --json "$a" > "$out/diagnose.json"
  "$cutrace" diagnose -o /dev/null --rows "$out/diagnose.rows" "$a"
  "$cutrace" goodput --json "$a" > "$out/goodput.json"
  "$cutrace" diff "$a" "$b" > "$out/diff.txt" || true  # exit status says whether they differ
  "$cutrace" diff --json "$a" "$b" > "$out/diff.json" || true
}
