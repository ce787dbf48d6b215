# make install PREFIX=... puts the library, the CLI and the headers in
# place, and the installed pieces work together.
. "$TESTS_DIR/integration/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
make -s -C "$root" BUILD="$BUILD" install PREFIX="$PWD/inst" >make.log 2>&1 || fail "$(tail make.log)"
for f in lib/libgpumemtrace.so bin/gpumemtrace include/gpumemtrace/format.h; do
	[ -f "inst/$f" ] || fail "missing inst/$f"
done
LD_PRELOAD=$PWD/inst/lib/libgpumemtrace.so LD_LIBRARY_PATH=$SIM_DIR "$PROG_DIR/life" exit 4
inst/bin/gpumemtrace summary --json "$(the_trace)" >s.json
expect_eq "events" "$(json s.json 'd["events"]')" 7 # 6 + the runtime's context retain

# DESTDIR staging: pkg-config, man pages, completion, and run finds the library.
make -s -C "$root" BUILD="$BUILD" install PREFIX=/usr/local DESTDIR="$PWD/stage" >make2.log 2>&1 || fail "$(tail make2.log)"
s=$PWD/stage/usr/local
for f in lib/pkgconfig/gpumemtrace.pc share/man/man1/gpumemtrace.1 share/man/man7/gpumemtrace.7 \
	share/bash-completion/completions/gpumemtrace; do
	[ -f "$s/$f" ] || fail "missing $f"
done
if command -v pkg-config >/dev/null; then
	expect_eq "pkg-config" "$(echo $(PKG_CONFIG_PATH=$s/lib/pkgconfig pkg-config --cflags --libs gpumemtrace))" \
		"-I/usr/local/include -ldl"
	# one version (the Makefile's): the .pc file, the CLI, the man pages
	v=$("$GMT_CLI" --version | awk '{print $2}')
	expect_eq "pc version" "$(PKG_CONFIG_PATH=$s/lib/pkgconfig pkg-config --modversion gpumemtrace)" "$v"
	for m in man1/gpumemtrace.1 man7/gpumemtrace.7; do
		grep -q "^\.TH .*\"gpumemtrace $v\"" "$s/share/man/$m" || fail "$m: not version $v"
	done
fi
if command -v groff >/dev/null; then
	for m in "$s/share/man/man1/gpumemtrace.1" "$s/share/man/man7/gpumemtrace.7"; do
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1) || fail "groff $m"
		[ -z "$w" ] || fail "groff warnings in $m: $w"
	done
	groff -man -Tutf8 "$s/share/man/man1/gpumemtrace.1" 2>/dev/null | grep -q "flamegraph" || fail "man page lacks flamegraph"
fi
# the completion script loads and completes commands and options
out=$(bash -c '. "$1"; COMP_WORDS=(gpumemtrace fl); COMP_CWORD=1; _gpumemtrace; echo "${COMPREPLY[*]}";
	COMP_WORDS=(gpumemtrace export --f); COMP_CWORD=2; _gpumemtrace; echo "${COMPREPLY[*]}";
	COMP_WORDS=(gpumemtrace export --format ""); COMP_CWORD=3; _gpumemtrace; echo "${COMPREPLY[*]}"' _ \
	"$s/share/bash-completion/completions/gpumemtrace") || fail "completion script"
expect_eq "completion" "$(echo $out)" "flamegraph --format perfetto chrome-json csv pprof parquet"
# the installed CLI finds the installed library by its own path
LD_LIBRARY_PATH=$SIM_DIR inst/bin/gpumemtrace run -q -o run.gmt -- "$PROG_DIR/life" exit 2 2>run.err || fail "run: $(cat run.err)"
[ -f run.gmt ] || fail "installed run wrote no trace"
# and the counters helper it installed
[ -f inst/share/gpumemtrace/counters/sitecustomize.py ] || fail "missing the counters helper"
out=$(inst/bin/gpumemtrace run -q --framework-counters -o run2.gmt -- sh -c 'echo "$PYTHONPATH"' 2>run.err) ||
	fail "run --framework-counters: $(cat run.err)"
expect_eq "installed helper on PYTHONPATH" "${out%%:*}" "$PWD/inst/share/gpumemtrace/counters"

# A program built with the marker API as pkg-config says starts without the
# library on the loader path and does not load it (it would trace every run).
if command -v pkg-config >/dev/null; then
	cat >marks.c <<'C'
#include <gpumemtrace/gpumemtrace.h>
#include <stdio.h>
int main(void)
{
	gpumemtrace_range_push("step");
	gpumemtrace_mark("here");
	gpumemtrace_range_pop();
	puts("marks ok");
	return 0;
}
C
	flags=$(PKG_CONFIG_PATH=$PWD/inst/lib/pkgconfig pkg-config --cflags --libs gpumemtrace) || fail "pkg-config"
	# shellcheck disable=SC2086 # the flags are words
	${CC:-cc} -o marks marks.c $flags 2>cc.err || fail "cc with pkg-config flags: $(cat cc.err)"
	mv inst/lib/libgpumemtrace.so lib.away
	out=$(./marks 2>&1) || fail "marker program without the library: $out"
	expect_eq "marker program" "$out" "marks ok"
	! ldd ./marks | grep -q libgpumemtrace || fail "marker program needs libgpumemtrace: $(ldd ./marks)"
	mv lib.away inst/lib/libgpumemtrace.so
fi
echo ok
