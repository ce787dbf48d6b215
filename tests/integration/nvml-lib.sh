# Helpers for the t-nvml-*.sh tests: the accounting program's trace, read
# through `gpumemtrace dump`. Sourced after lib.sh.
MiB=$((1024 * 1024))

# dump of the one trace here, once
dumped() {
	[ -f dump.txt ] || "$GMT_CLI" dump "$(the_trace)" >dump.txt
	cat dump.txt
}
# SAMPLE lines with this reason
samples() { dumped | grep ' SAMPLE ' | grep " reason $1\$" || true; }
# a field of the first SAMPLE with this reason: process, used, total
sample_field() { samples "$1" | head -n 1 | sed -n "s/.* $2 \([0-9]*\) .*/\1/p"; }
# a field (size, aux, aux2) of the n-th (1-based) event of this API
event_field() {
	dumped | grep " EVENT " | grep " $1 " | sed -n "${2}p" |
		sed -n "s/.* $3 \([0-9]*\)\( \|$\).*/\1/p"
}
