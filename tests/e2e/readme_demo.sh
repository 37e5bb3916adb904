#!/bin/bash
# README's demo output cannot go stale: runs what scripts/demo runs after
# its set-up (scripts/demo-run: the profiled job on the simulated device,
# info, dump, report) and compares what it prints with the fenced block that
# follows `<!-- demo-output -->` in README.md. What differs from run to run
# is masked on both sides first, and nothing else (measured over repeated
# runs of the demo on one machine and between machines):
#   the output folder (mktemp), pids and tids, the host name, the start date,
#   the trace's span, its total record count, its counter (health sample)
#   count and its chunk count (both follow the job's duration), the records'
#   times in the JSON dump, and the report's times, shares and goodput (the
#   job runs in real time on a shared machine). The kernel table, the record
#   counts of every other kind, the health table and the table layouts stay,
#   and must match.
# A difference fails the test with a unified diff of the masked texts:
# regenerate the block with `scripts/demo-run build /tmp/cutrace-demo.XXXXXX`.
# usage: readme_demo.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(mktemp -d "$tmp/cutrace-demo.XXXXXX")
if ! "$src/scripts/demo-run" "$build" "$out" > "$tmp/got" 2>&1; then
  echo "FAIL: scripts/demo-run exited non-zero:"
  cat "$tmp/got"
  echo "0 passed, 1 failed"
  exit 1
fi
python3 - "$src/README.md" "$tmp/got" <<'EOF'
import difflib
import re
import sys

readme, got_path = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
try:
    at = lines.index("<!-- demo-output -->")
    start = at + 1
    while lines[start].strip() == "":
        start += 1
    if not lines[start].startswith("```"):
        raise ValueError
    end = lines.index("```", start + 1)
except ValueError:
    print("FAIL: README.md has no fenced block after a <!-- demo-output --> line")
    print("0 passed, 1 failed")
    sys.exit(1)
want = "\n".join(lines[start + 1:end]) + "\n"
got = open(got_path, encoding="utf-8").read()

DEC = r"-?\d+\.\d+"


def mask(text):
    host = re.search(r"^  host +(\S+)$", text, re.M)
    out = []
    for ln in text.split("\n"):
        ln = re.sub(r"\S*/cutrace-demo\.[A-Za-z0-9]{6}", "DIR", ln)
        if host:
            ln = ln.replace("-" + host.group(1) + "-r", "-HOST-r")  # in the file name
            # the host name, and the spaces that pad it to its column
            ln = re.sub(r"(?<![\w.-])" + re.escape(host.group(1)) + r"(?![\w.])( *)",
                        lambda m: "HOST" + (" " if m.group(1) else ""), ln)
        ln = re.sub(r"-p\d+-(\d+)\.cutrace", r"-pPID-\1.cutrace", ln)
        ln = re.sub(r"\bpid \d+", "pid PID", ln)
        ln = re.sub(r'"(pid|tid|api_tid)":\d+', r'"\1":ID', ln)
        ln = re.sub(r'"(\w*_ns)":\d+', r'"\1":T', ln)
        ln = re.sub(r"^(  started: +)\S+$", r"\1DATE", ln)
        ln = re.sub(r"^(  span: +)" + DEC + " s$", r"\1# s", ln)
        ln = re.sub(r"^(  records: +)\d+ ", r"\1# ", ln)
        ln = re.sub(r"counter \d+\)$", "counter #)", ln)
        ln = re.sub(r"^(  chunks: +)\d+$", r"\1#", ln)
        # the report's real-time figures: header, goodput, the job's
        # breakdown, each rank's row and its idle attribution row
        if (ln.startswith("cutrace report:") or ln.startswith("goodput ")
                or ln.startswith("  compute ") or re.match(r"^  \d+ +HOST ", ln)
                or re.match(r"^  (rank )?\d+ +" + DEC, ln)):
            ln = re.sub(r" *" + DEC, " #", ln)
        out.append(ln)
    return "\n".join(out)


w, g = mask(want), mask(got)
if w == g:
    print("README's demo block matches scripts/demo-run's output (masked)")
    print("1 passed, 0 failed")
    sys.exit(0)
print("FAIL: README.md's demo block differs from what scripts/demo prints today")
print("(masked as tests/e2e/readme_demo.sh says; - README, + now):")
sys.stdout.writelines(difflib.unified_diff(w.splitlines(True), g.splitlines(True),
                                           "README.md", "scripts/demo-run"))
print("\nunmasked output of this run:\n" + got)
print("0 passed, 1 failed")
sys.exit(1)
EOF
