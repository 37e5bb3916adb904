#!/bin/bash
# The aarch64 build (Grace hosts: GH200, GB200 NVL72), cross-compiled with
# gcc-aarch64-linux-gnu against the arm64 multiarch -dev packages and run
# under qemu-aarch64 (scripts/setup installs all three; cross file
# cross/aarch64-linux-gnu.ini):
#   1. the whole tree builds for aarch64 (-Wall -Wextra -Werror), the two
#      assembly files included (shim/dlsym_aarch64.S, cuda_stubs_aarch64.S);
#   2. the unit and report suites pass under qemu (the recorder's codec,
#      ring, writer, reader, config and redaction; every analysis);
#   3. the shim, process, io, nvtx and nccl suites pass under qemu: their
#      tests fork and exec aarch64 workloads, which the kernel hands to
#      qemu through binfmt_misc. Without a handler for aarch64 ELF the
#      script registers qemu's own (the line Debian's qemu-user-static
#      ships in /usr/lib/binfmt.d; it names the static qemu, so the host's
#      loader never sees the guest's LD_PRELOAD), as installing
#      qemu-user-binfmt would, and it stays registered. Checks that cannot
#      hold under emulation say so and are left out (CT_EMULATED:
#      tests/unit/helpers.h);
#   4. the aarch64 shim, preloaded into aarch64 programs on the aarch64
#      simulated device and CUPTI, records every driver entry point family
#      exactly through each way a program finds them (linked, dlsym,
#      cuGetProcAddress) and 4 threads' launches, each with its GPU
#      interval; the traces are read back by this machine's (x86-64)
#      decoder: one format on both.
# Left out: the suites that time the simulator in real time (fakegpu
# timing, labelled jobs) are not meaningful under emulation, and the tests
# that link the toolkit's libcudart (x86-64 only here).
# Without root and no handler registered, step 3 is skipped with a line
# saying so.
# usage: aarch64.sh BUILD_ROOT SOURCE_ROOT
set -euo pipefail
build=$1
src=$2
if ! command -v aarch64-linux-gnu-gcc > /dev/null || ! command -v qemu-aarch64 > /dev/null ||
   [ ! -e /usr/lib/aarch64-linux-gnu/libzstd.a ]; then
  echo "SKIP: no aarch64 cross toolchain, arm64 libraries or qemu-user (scripts/setup installs them)"
  exit 77
fi
arm=$build/cross-aarch64
if [ ! -f "$arm/build.ninja" ]; then
  meson setup "$arm" "$src" --cross-file "$src/cross/aarch64-linux-gnu.ini" > "$build/cross-aarch64.log"
fi
ninja -C "$arm" > "$build/cross-aarch64-build.log" ||
  { tail -30 "$build/cross-aarch64-build.log"; exit 1; }
file -L "$arm/shim/libcutrace.so" | grep -q "ARM aarch64" || { echo "not an aarch64 shim"; exit 1; }
CT_EMULATED=qemu-aarch64 meson test -C "$arm" --no-rebuild --suite unit --suite report --no-suite e2e --num-processes 2 \
  > "$build/cross-aarch64-test.log" 2>&1 || { grep -E "FAIL|ERROR" "$build/cross-aarch64-test.log"; exit 1; }
grep -E "^Ok:" "$build/cross-aarch64-test.log"
binfmt=/proc/sys/fs/binfmt_misc
handler() { grep -qs "interpreter .*\(qemu-aarch64\|aarch64-binfmt\)" "$binfmt"/* 2> /dev/null; }
if ! handler && [ "$(id -u)" = 0 ]; then
  [ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2> /dev/null || true
  conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  if [ -w "$binfmt/register" ] && [ -f "$conf" ]; then
    cat "$conf" > "$binfmt/register" 2> /dev/null || true
  fi
fi
if handler; then
  # each Check case's own timeout three times over: qemu runs the
  # workloads several times slower, more beside other suites (a CI run's
  # process suite took 86 s against 30 s alone, its fork case past 60 s)
  CK_TIMEOUT_MULTIPLIER=3 CT_EMULATED=qemu-aarch64 meson test -C "$arm" --no-rebuild --suite shim --suite process --suite io \
    --suite nvtx --suite nccl --num-processes 2 > "$build/cross-aarch64-suites.log" 2>&1 ||
    { grep -E "FAIL|ERROR|:[EF]:" "$build/cross-aarch64-suites.log" "$arm/meson-logs/testlog.txt"; exit 1; }
  echo "shim, process, io, nvtx, nccl under qemu: $(awk '/^Ok:/ { print $2 }' \
    "$build/cross-aarch64-suites.log") tests ok, $(grep -c "skipped under qemu" \
    "$arm/meson-logs/testlog.txt") checks left out under emulation (named in its testlog)"
else
  echo "SKIP: the shim, process, io, nvtx and nccl suites under qemu need a binfmt_misc handler" \
    "for aarch64 (qemu-user-static's; registering it needs root)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cutrace=$build/decoder/cutrace
# qemu-user hands QEMU_SET_ENV to the guest only: LD_PRELOAD must not reach
# the (x86-64) qemu process itself
under_qemu() { # DIR PROGRAM ARGS...
  local dir=$1
  shift
  mkdir -p "$dir"
  QEMU_SET_ENV="LD_PRELOAD=$arm/shim/libcutrace.so,LD_LIBRARY_PATH=$arm/tests/fakegpu,CUTRACE_OUTPUT=$dir,CUTRACE_CUPTI_LIB=$arm/tests/fakegpu/libcupti.so.13" \
    timeout 300 qemu-aarch64 "$@" > "$dir.out" 2> "$dir.err" || { cat "$dir.err"; exit 1; }
  "$cutrace" dump --json "$dir" > "$dir.jsonl"
}
for mode in linked dlsym procaddr; do
  under_qemu "$tmp/$mode" "$arm/tests/workloads/w_families" "$mode"
  grep -q "RESULT bad_launch=400 errno=4321" "$tmp/$mode.out" ||
    { echo "$mode: the driver's error or errno did not come back unchanged"; exit 1; }
  python3 "$src/tests/cross/check_recorded.py" families "$tmp/$mode.out" "$tmp/$mode.jsonl"
done
under_qemu "$tmp/launches" "$arm/tests/workloads/w_launches" 250 4
python3 "$src/tests/cross/check_recorded.py" launches 1000 "$tmp/launches.jsonl"
"$cutrace" info "$tmp/launches" | grep -q "clock tsc" ||
  { echo "the aarch64 recorder did not take the generic timer (cntvct_el0)"; exit 1; }
echo "aarch64: ok"
