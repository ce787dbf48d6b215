# Sourced by the tests that run every trace-reading command and format:
# cli_commands (each entry: a command and its options, the trace(s) go
# last; diff takes the trace twice; replay and whatif need a PyTorch
# allocator history, and say so with exit 3 on a trace without one) and cli_commands_cover, which fails
# when `gpumemtrace --help` lists a command that is not in it.
cli_commands=(dump "summary --json" summary explain "explain --json" top growth fragmentation oom
	leaks "check --max-peak 1GiB" diff accounting "top --by range" "plot -o p.svg"
	"flamegraph -o f.svg" "flamegraph --folded" "export --format perfetto"
	"export --format chrome-json" "export --format csv" "export --format pprof -o p.pb.gz"
	"symbolize -o named.gmt" replay "whatif --alloc-conf expandable_segments:True" "watch --once")
cli_commands_cover() {
	$GMT_CLI --help | grep -qE '^  (dump|summary|top|growth|fragmentation|oom|leaks|diff|check) ' ||
		fail "command list changed"
	local c
	for c in $($GMT_CLI --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} /^$/{on=0}'); do
		[ "$c" = run ] && continue # runs a program, reads no trace given to it
		[ "$c" = import ] && continue # reads a PyTorch snapshot, not a trace: t-snap-pickle
		[[ " ${cli_commands[*]} " == *" $c"* ]] || fail "command '$c' is not covered here"
	done
}
