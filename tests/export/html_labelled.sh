#!/bin/bash
# e2e: the HTML page of the labelled pipeline job (tests/labelled/w_job.c,
# case `pipe`: 4 stages, 1F1B, Send/Recv between them), recorded under
# `cutrace run` on the simulated device: real shim traces. diagnose finds
# nothing to fix in this schedule while the page's other observations list
# each rank's pipeline bubble and exposed communication: the page's findings
# must be diagnose's (check_html.py --diagnose), not those. The header names
# what the shim recorded: the command, the host, the simulated GPU, the run
# and the cutrace version.
# usage: html_labelled.sh BUILD_ROOT SOURCE_ROOT   (environment: CT_W_JOB,
#        CT_FAKEGPU_DIR, CT_FAKE_CUPTI, as tests/export/meson.build sets them)
set -euo pipefail
build=$1
src=$2
if ! command -v chromium > /dev/null && ! command -v chromium-browser > /dev/null; then
  echo "SKIP: chromium is not installed (scripts/setup installs it)"
  exit 77
fi
cutrace=$build/decoder/cutrace
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH="$CT_FAKEGPU_DIR" CUTRACE_CUPTI_LIB="$CT_FAKE_CUPTI" FAKEGPU_NET_GBPS=1 \
  W_JOB_DIR="$tmp" "$cutrace" run -o "$tmp/traces" -- "$CT_W_JOB" launch 4 pipe > /dev/null
"$cutrace" report --html -o "$tmp/pipe.html" "$tmp/traces"
"$cutrace" report --json -o "$tmp/pipe.json" "$tmp/traces"
"$cutrace" diagnose --json -o "$tmp/pipe.diag.json" "$tmp/traces"
# the run id the shim recorded (every trace's metadata has it)
run=$("$cutrace" dump --json "$(ls "$tmp"/traces/*.cutrace | head -1)" |
  sed -n 's/.*"run_id":"\([^"]*\)".*/\1/p' | head -1)
[ -n "$run" ] || { echo "no run_id in the trace"; exit 1; }
python3 "$src/tests/export/check_html.py" "$tmp/pipe.html" --report "$tmp/pipe.json" \
  --diagnose "$tmp/pipe.diag.json" --ident "id-cmd=tests/labelled/w_job rank 0 4" \
  --ident "id-hosts=4 ranks on 1 host: $(hostname)" --ident "id-gpus=FakeGPU" --ident "id-run=$run" \
  --ident "id-version=traces recorded by cutrace $version" --title "w_job rank 0 4" \
  --title " - 4 ranks on $(hostname)"
# the pipeline's bubbles are observations, not findings
grep -q '"facts":\["rank 0: pipeline bubble' "$tmp/pipe.html" || { echo "no bubble observation"; exit 1; }
echo "html labelled pipe: ok"
