#!/usr/bin/env bash
# make check-layers (scripts/check-layers.py): the real tree passes, and a
# tree with an include against the table, a call against it, or a foreign
# object in the library fails, naming each.
source "$(dirname "$0")/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
check=$root/scripts/check-layers.py

(cd "$root" && python3 "$check" "$BUILD") >real.txt || { cat real.txt; fail "the tree breaks its layers"; }
tail -n 1 real.txt | grep -q ': OK$' || fail "no OK line: $(tail -n 1 real.txt)"

# A small tree that breaks each rule once.
mkdir -p bad/analysis bad/cli bad/preload/hooks bad/common bad/model b/obj/cli/analysis b/obj/cli/cli \
	b/obj/lib/preload/hooks b/obj/lib/preload b/obj/lib/analysis
git -C bad init -q
printf '#include "cli/cli.h"\n' >bad/analysis/a.c
printf '#include "preload/hooks/hooks.h"\n' >bad/preload/core.c
printf '#include "preload/tracer.h"\n#include "preload/ring.h"\n' >bad/preload/hooks/w.c
printf '#include "reader/reader.h"\n' >bad/common/c.c
printf '#include "reader/reader.h"\n' >bad/model/m.c
printf 'int cli_thing(void) { return 1; }\n' >b.c
printf 'int cli_thing(void);\nint analysis_fn(void) { return cli_thing(); }\n' >a.c
printf 'int hook_fn(void) { return 2; }\n' >h.c
printf 'int hook_fn(void);\nint core_fn(void) { return hook_fn(); }\n' >p.c
printf 'int stray(void) { return 3; }\n' >s.c
cc -c b.c -o b/obj/cli/cli/b.o && cc -c a.c -o b/obj/cli/analysis/a.o &&
	cc -c h.c -o b/obj/lib/preload/hooks/h.o && cc -c p.c -o b/obj/lib/preload/p.o &&
	cc -c s.c -o b/obj/lib/analysis/s.o || fail "cannot build the bad tree's objects"
# each object's source is in the tree (an object without one is stale, and skipped)
cp b.c bad/cli/b.c && cp h.c bad/preload/hooks/h.c && cp p.c bad/preload/p.c &&
	cp s.c bad/analysis/s.c || fail "cannot lay out the bad tree's sources"
git -C bad add -A
GMT_LAYERS_ROOT=$PWD/bad python3 "$check" b >bad.txt && { cat bad.txt; fail "a broken tree passed"; }
cat bad.txt
for want in 'analysis/a.c:1: analysis may not include cli' \
	'preload/core.c:1: preload may not include hooks' \
	'common/c.c:1: common may not include reader' \
	'model/m.c:1: model may not include reader' \
	'preload/hooks/w.c:2: hooks reach the core through preload/tracer.h alone' \
	'analysis/a.c: analysis calls cli_thing, defined in cli' \
	'preload/p.c: preload calls hook_fn, defined in hooks' \
	'analysis/s.c: linked into the library'; do
	grep -qF "$want" bad.txt || fail "not reported: $want"
done
echo ok
