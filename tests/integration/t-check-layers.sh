#!/usr/bin/env bash
# make check-layers (scripts/check-layers.py): the real tree passes, and a
# tree with an include against the table, a call against it, a foreign
# object in the library, or a cli/ file that walks events itself fails,
# naming each (cmd-dump.c, the format printed record by record, may walk).
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
printf 'int trace_replay(void);\nint cmd_walk(void) { return trace_replay(); }\n' >w.c
printf 'int gmt_reader_next(void);\nint cmd_dump(void) { return gmt_reader_next(); }\n' >d.c
cc -c b.c -o b/obj/cli/cli/b.o && cc -c a.c -o b/obj/cli/analysis/a.o &&
	cc -c h.c -o b/obj/lib/preload/hooks/h.o && cc -c p.c -o b/obj/lib/preload/p.o &&
	cc -c s.c -o b/obj/lib/analysis/s.o && cc -c w.c -o b/obj/cli/cli/cmd-walk.o &&
	cc -c d.c -o b/obj/cli/cli/cmd-dump.o || fail "cannot build the bad tree's objects"
# each object's source is in the tree (an object without one is stale, and skipped)
cp b.c bad/cli/b.c && cp h.c bad/preload/hooks/h.c && cp p.c bad/preload/p.c &&
	cp s.c bad/analysis/s.c && cp w.c bad/cli/cmd-walk.c && cp d.c bad/cli/cmd-dump.c ||
	fail "cannot lay out the bad tree's sources"
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
	'analysis/s.c: linked into the library' \
	'cli/cmd-walk.c: cli walks events itself (trace_replay)'; do
	grep -qF "$want" bad.txt || fail "not reported: $want"
done
! grep -q 'cmd-dump' bad.txt || fail "cmd-dump.c reported: $(grep cmd-dump bad.txt)"
echo ok
