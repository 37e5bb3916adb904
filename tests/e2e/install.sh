#!/bin/bash
# What `meson install` puts where README's "Install" says: PREFIX/bin/cutrace,
# PREFIX/lib/cutrace/libcutrace.so and PREFIX/include/cutrace/cutrace.h, and
# nothing else; the installed `cutrace run` finds the installed shim beside
# it (no CUTRACE_SHIM) and the job it runs leaves a trace that the installed
# `cutrace info` reads. Installs into a temporary DESTDIR, never the system.
# usage: install.sh BUILD_DIR [sanitized]
set -u
build=$1
sanitized=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
meson=$(command -v meson) || { echo "SKIP: no meson on PATH"; exit 77; }
prefix=$("$meson" introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
if ! "$meson" install -C "$build" --destdir "$tmp/dest" --no-rebuild --quiet > "$tmp/log" 2>&1; then
  bad "meson install failed: $(tail -5 "$tmp/log")"
fi
root=$tmp/dest$prefix
( cd "$tmp/dest" && find . -type f -o -type l | sed 's|^\.||' | sort ) > "$tmp/files"
printf '%s\n' "$prefix/bin/cutrace" "$prefix/include/cutrace/cutrace.h" \
  "$prefix/lib/cutrace/libcutrace.so" | sort > "$tmp/want"
diff "$tmp/want" "$tmp/files" > "$tmp/diff" && ok || bad "installed files differ (- expected, + installed): $(cat "$tmp/diff")"
if [ -n "$sanitized" ]; then
  # a sanitized shim needs its runtime preloaded first, which cutrace run
  # does not arrange: the normal build runs the installed job
  echo "sanitizer build: the installed cutrace run is checked in the normal build"
elif [ -x "$root/bin/cutrace" ]; then
  # a process with data I/O and no GPU work leaves a trace with
  # CUTRACE_HOST_TRACE_KB=0 (docs/recording.md "Which processes leave a trace")
  if env -u CUTRACE_SHIM CUTRACE_HOST_TRACE_KB=0 "$root/bin/cutrace" run -o "$tmp/traces" -- \
       cat /etc/hostname > /dev/null 2> "$tmp/err"; then ok
  else bad "installed cutrace run failed: $(cat "$tmp/err")"; fi
  n=$(ls "$tmp/traces"/*.cutrace 2> /dev/null | wc -l)
  [ "$n" = 1 ] && ok || bad "the installed cutrace run left $n traces, want 1"
  "$root/bin/cutrace" info "$tmp/traces" > "$tmp/info" 2>&1 && grep -q "status:     complete" "$tmp/info" &&
    ok || bad "installed cutrace info: $(cat "$tmp/info")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
