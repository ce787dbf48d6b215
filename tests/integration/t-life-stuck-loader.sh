# _exit, _Exit and execv while another thread's dlopen is stuck in a
# library's constructor (20 s here), the loader's lock held: the process
# ends at once, as untraced, with or without a trace under way (5 s bound;
# both used to wait out the constructor, the dlsym of the real function
# taking the loader's lock). With a trace, it is complete; also with
# GPUMEMTRACE_SYMBOLIZE=1, whose naming (libdw) may itself wait for the
# loader (issue 29: 10.3 s when frames were named at exit).
. "$TESTS_DIR/integration/lib.sh"

for run in stuck-exit stuck-_Exit stuck-execv stuck-exit:named; do
	mode=${run%:named}
	export GPUMEMTRACE_SYMBOLIZE=0
	[ "$run" = "$mode" ] || GPUMEMTRACE_SYMBOLIZE=1
	for cuda in "" cuda; do
		rm -f gpumemtrace.*
		set +e
		untraced timeout 5 "$PROG_DIR/ends" "$mode" $cuda
		rc_u=$?
		traced timeout 5 "$PROG_DIR/ends" "$mode" $cuda
		rc=$?
		set -e
		expect_eq "$mode $cuda untraced exit code" "$rc_u" 5
		expect_eq "$mode $cuda traced exit code (124: stuck)" "$rc" 5
		if [ -n "$cuda" ]; then
			t=$(the_trace)
			"$GMT_CLI" summary --json "$t" >s.json
			expect_eq "$mode events" "$(json s.json 'd["events"]')" 3 # + the context retain
			expect_eq "$mode complete" "$(json s.json 'd["complete"]')" True
		else
			[ ! -e gpumemtrace.*.gmt ] || fail "$mode: a trace without CUDA calls"
		fi
	done
done
echo ok
