#!/usr/bin/env bash
# Our CUDA declarations (common/cuda-types.h, common/cuda-api.h, and the
# simulator's tests/sim/sim-cuda.h, sim-api.h) against the toolkit's cuda.h
# and cuda_runtime_api.h:
#   1. every prototype in the X-macro lists has the toolkit's type
#      (tests/cuda-decls/signatures.c, in its three modes);
#   2. every size, alignment, member offset and size, integer type and
#      constant value agrees (layout-*.c, compared at run time);
#   3. the layout list leaves out no enum constant or struct member of our
#      headers (a new declaration must be added to the check).
# Skips (77) when the toolkit is absent. GMT_DECLS_ROOT / GMT_DECLS_SIM
# point at another tree holding common/ and at another tests/sim/ (to prove
# a broken declaration fails).
source "$(dirname "$0")/lib.sh"

root=$(cd "$TESTS_DIR/.." && pwd)
droot=${GMT_DECLS_ROOT:-$root}
sim=${GMT_DECLS_SIM:-$root/tests/sim}
decls=$root/tests/cuda-decls
inc=$CUDA_HOME/include
[ -f "$inc/cuda.h" ] && [ -f "$inc/cuda_runtime_api.h" ] ||
	skip "no CUDA toolkit headers at $inc (set CUDA_HOME): declarations not checked"

cc=${CC:-cc}
flags=(-std=gnu11 -Wall -Wextra -Werror -Wno-deprecated-declarations -D_GNU_SOURCE
	-I"$droot" -I"$sim" -I"$decls")

echo "== signatures"
"$cc" "${flags[@]}" -I"$inc" -fsyntax-only "$decls/signatures.c" ||
	fail "a prototype differs from the toolkit's"
"$cc" "${flags[@]}" -I"$inc" -fsyntax-only -DCUDA_API_PER_THREAD_DEFAULT_STREAM \
	"$decls/signatures.c" || fail "a _ptsz prototype differs from the toolkit's"
"$cc" "${flags[@]}" -I"$inc" -fsyntax-only -DGMT_DECLS_LEGACY "$decls/signatures.c" ||
	fail "a legacy prototype differs from the toolkit's"
echo "signatures match"

echo "== layout"
# The toolkit's headers must not see ours, nor ours the toolkit's.
"$cc" "${flags[@]}" -c "$decls/layout-hooks.c" -o hooks.o || fail "layout-hooks.c"
"$cc" "${flags[@]}" -c "$decls/layout-sim.c" -o sim.o || fail "layout-sim.c"
"$cc" -std=gnu11 -Wall -Wextra -Werror -Wno-deprecated-declarations -I"$inc" -I"$decls" \
	-c "$decls/layout-toolkit.c" -o toolkit.o || fail "layout-toolkit.c (a SAME assertion?)"
"$cc" "${flags[@]}" "$decls/layout-main.c" hooks.o sim.o toolkit.o -o layout ||
	fail "linking the layout check"
./layout || fail "layouts differ from the toolkit's"

echo "== coverage"
python3 - "$droot/common/cuda-types.h" "$sim/sim-cuda.h" "$decls/layout-list.h" <<'EOF' ||
import re, sys
listed = open(sys.argv[3]).read()
missing = []
for path in sys.argv[1:3]:
    text = re.sub(r'/\*.*?\*/', '', open(path).read(), flags=re.S)
    # enum constants: NAME = value inside enum bodies
    for body in re.findall(r'enum\s*\w*\s*\{(.*?)\}', text, flags=re.S):
        for name in re.findall(r'(\w+)\s*=', body):
            if not re.search(r'\bCONST\(%s\)' % name, listed):
                missing.append('%s: constant %s' % (path, name))
    # constants spelled as macros (sim-cuda.h's guarded #defines)
    for name in re.findall(r'^#define\s+((?:CU_|cuda|SIM_ERROR|SIM_cudaError)\w+)\s+\S',
                           text, flags=re.M):
        if not re.search(r'\bCONSTX?\(%s\b' % name, listed):
            missing.append('%s: macro %s' % (path, name))
    # struct members: "type name;" or "type name[N];" inside struct bodies
    for tag, body in re.findall(r'struct\s*(\w*)\s*\{((?:[^{}]|\{[^{}]*\})*)\}', text):
        body = re.sub(r'\{[^{}]*\}', '{}', body)  # nested members: checked below
        for name in re.findall(r'[\w\s\*]+?\b(\w+)\s*(?:\[\w*\])?\s*;', body):
            if not re.search(r'FIELD\([^)]*,\s*(\w+\.)?%s\)' % name, listed):
                missing.append('%s: member %s of struct %s' % (path, name, tag or '?'))
for m in missing:
    print('not in tests/cuda-decls/layout-list.h:', m)
print('coverage: %d declarations missing from the check' % len(missing))
sys.exit(1 if missing else 0)
EOF
	fail "layout-list.h does not cover every declaration"
echo "ok"
