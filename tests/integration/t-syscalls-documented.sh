#!/usr/bin/env bash
# The system calls the tracer makes after start-up are listed in
# docs/reliability.md ("Limits: system calls after start-up", issue 29.8):
# a seccomp filter that kills on one of them kills the traced program. A
# traced run under strace -f, once with a few events and once with many
# (a fork, threads, the end); every call it makes after the process's
# first traced call that the untraced run never makes must be named there.
source "$(dirname "$0")/lib.sh"
root=$(cd "$TESTS_DIR/.." && pwd)
command -v strace >/dev/null || skip "no strace here"
[[ ${SANITIZE:-} != *address* ]] || skip "ASan's own calls are not the tracer's"
strace -f -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace refused)"
doc=$(sed -n '/^## Limits: system calls after start-up/,/^## /p' "$root/docs/reliability.md")
[ -n "$doc" ] || fail "no section 'Limits: system calls after start-up' in docs/reliability.md"
# names of the calls in an strace -f log, from line $2 on
names() { awk -v from="${2:-1}" 'NR >= from' "$1" | sed -nE 's/^[0-9]+ +([a-z_0-9]+)\(.*/\1/p' | sort -u; }
for mode in "exit 20" "exit 20000" "fork 200"; do
	rm -f gpumemtrace.*.gmt
	# shellcheck disable=SC2086
	strace -f -qq -o u.txt env LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" "$PROG_DIR/life" $mode >/dev/null ||
		fail "$mode: untraced exit $?"
	# shellcheck disable=SC2086
	strace -f -qq -o t.txt env LD_PRELOAD="$preload" LD_LIBRARY_PATH="$SIM_DIR:$PROG_DIR" \
		"$PROG_DIR/life" $mode >/dev/null || fail "$mode: traced exit $?"
	# start-up ends where the first traced call starts our first thread
	first=$(grep -nE '^[0-9]+ +clone3?\(' t.txt | head -1 | cut -d: -f1)
	[ -n "$first" ] || fail "$mode: the tracer started no thread: $(tail -3 t.txt)"
	extra=$(comm -23 <(names t.txt "$first") <(names u.txt))
	for call in $extra; do
		grep -q "\`$call\`" <<<"$doc" ||
			fail "$mode: the tracer calls $call, not listed in docs/reliability.md: $(grep -m3 " $call(" t.txt)"
	done
done
echo ok
