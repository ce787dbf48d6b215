#!/usr/bin/env bash
# preload/nvml.h's own NVML declarations against the toolkit's nvml.h: sizes,
# offsets, constants and every prototype we call. Skips (77) without nvml.h.
source "$(dirname "$0")/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
inc=${NVML_INCLUDE:-$CUDA_HOME/include}
[ -f "$inc/nvml.h" ] || skip "no nvml.h at $inc (set CUDA_HOME or NVML_INCLUDE): NVML declarations not checked"
cc=${CC:-cc}
flags=(-std=gnu11 -Wall -Wextra -Werror -Wno-deprecated-declarations -D_GNU_SOURCE -I"$root")
"$cc" "${flags[@]}" -DGMT_NVML_OURS -c "$root/tests/cuda-decls/nvml-check.c" -o ours.o ||
	fail "nvml-check.c with preload/nvml.h"
"$cc" "${flags[@]}" -I"$inc" "$root/tests/cuda-decls/nvml-check.c" ours.o -o nvml-check ||
	fail "a prototype in GMT_NVML_FUNCS differs from nvml.h's"
./nvml-check || fail "preload/nvml.h differs from nvml.h"
echo ok
