#!/bin/bash
# Every row of the wrap table (shim/cuda_syms.h) must name an ABI the CUDA
# headers declare: PFN_<base>_v<version>, with _ptsz or _ptds for per-thread
# rows. A toolkit upgrade that renames or drops one fails here first.
# usage: abi_rows.sh SOURCE_DIR CUDA_INCLUDE_DIR
set -u
rows=$(sed -n 's/^CT_SYM(\([A-Za-z0-9_]*\), *\([A-Za-z0-9_]*\), *\([0-9]*\), *\([01]\)).*/\1 \2 \3 \4/p' "$1/shim/cuda_syms.h")
hdr="$2/cudaTypedefs.h"
pass=0
fail=0
while read -r exported base ver pt; do
  if [ "$pt" = 1 ]; then pattern="PFN_${base}_v${ver}_(ptsz|ptds)\\b"; else pattern="PFN_${base}_v${ver}\\b"; fi
  if grep -qE "$pattern" "$hdr"; then pass=$((pass + 1)); else
    echo "FAIL: $exported: no $pattern in $hdr"; fail=$((fail + 1)); fi
done <<< "$rows"
[ "$pass" -gt 80 ] || { echo "FAIL: only $pass rows parsed"; fail=$((fail + 1)); }
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
