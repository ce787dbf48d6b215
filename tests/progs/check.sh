# Helpers for the route and API integration tests (t-route-*.sh, t-api-*.sh),
# sourced after tests/integration/lib.sh.

# run_both PROG [ARGS...]: runs $PROG_DIR/PROG without and with the tracer;
# both must exit 0 and print the same thing. Leaves the trace's summary in
# s.json and its dump in dump.txt ($TRACE is the trace file).
run_both() {
	local name=$1 rc_u=0 rc_t=0
	shift
	untraced "$PROG_DIR/$name" "$@" >untraced.out 2>untraced.err || rc_u=$?
	[ $rc_u -eq 0 ] || { cat untraced.out untraced.err; fail "$name failed untraced (exit $rc_u)"; }
	! compgen -G 'gpumemtrace.*.gmt' >/dev/null || fail "$name wrote a trace untraced"
	traced "$PROG_DIR/$name" "$@" >traced.out 2>traced.err || rc_t=$?
	[ $rc_t -eq 0 ] || { cat traced.out traced.err; fail "$name failed traced (exit $rc_t)"; }
	diff -u untraced.out traced.out || fail "$name printed something else under the tracer"
	TRACE=$(the_trace)
	"$GMT_CLI" summary --json "$TRACE" >s.json || fail "summary --json failed"
	"$GMT_CLI" dump "$TRACE" >dump.txt || fail "dump failed"
	expect_json "trace complete" 'd["complete"]' True "lost events" 'd["lost_events"]' 0
}

# A fresh directory for a second run in the same test.
next_run() {
	local d
	d=$(mktemp -d "$PWD/run.XXXXXX")
	cd "$d"
}

# expect_json LABEL EXPR EXPECTED [LABEL EXPR EXPECTED...]: like lib.sh's
# json + expect_eq on s.json, but one python run for many checks (python
# starts slowly on a loaded machine). EXPR sees the summary as d.
expect_json() {
	python3 - s.json "$@" <<'PY' || fail "summary figures differ (above)"
import json, sys
d = json.load(open(sys.argv[1]))
args, bad = sys.argv[2:], 0
for label, expr, want in zip(args[0::3], args[1::3], args[2::3]):
    got = str(eval(expr))
    if got != want:
        print("FAIL: %s: got '%s', expected '%s'" % (label, got, want))
        bad = 1
sys.exit(bad)
PY
}

# expect_calls NAME=COUNT/FAILED/BYTES...: the summary's figures for each
# symbol called ("-" skips one; bytes count successful allocations only).
expect_calls() {
	local spec name count failed bytes checks=()
	for spec; do
		name=${spec%%=*}
		IFS=/ read -r count failed bytes <<<"${spec#*=}"
		local c="d['calls'].get('$name', {})"
		checks+=("calls[$name].count" "$c.get('count', 0)" "$count")
		[ "$failed" = - ] || checks+=("calls[$name].failed" "$c.get('failed')" "$failed")
		[ "$bytes" = - ] || checks+=("calls[$name].bytes" "$c.get('bytes')" "$bytes")
	done
	expect_json "${checks[@]}"
}

# expect_call_names NAME...: the summary lists exactly these symbols, the
# context calls aside (the runtime makes one inside its first call; the
# t-nvml-* tests check those).
expect_call_names() {
	local want
	want=$(printf '%s\n' "$@" | LC_ALL=C sort | tr '\n' ' ')
	expect_json "symbols recorded" '"".join(n + " " for n in sorted(d["calls"])
		if not n.startswith(("cuDevicePrimaryCtx", "cuCtxCreate", "cuCtxDestroy")))' "$want"
}

# expect_memory CATEGORY PEAK [LIVE_BYTES LIVE_ALLOCS]: summary["memory"],
# where CATEGORY is device, managed, pinned_host, registered_host,
# reserved_va, arrays, ipc, vmm_host or pools. Defaults: nothing live.
expect_memory() {
	local m="d['memory']['$1']"
	expect_json "$1 peak_bytes" "$m['peak_bytes']" "$2" \
		"$1 live_bytes_at_end" "$m['live_bytes_at_end']" "${3:-0}" \
		"$1 live_allocations_at_end" "$m['live_allocations_at_end']" "${4:-0}"
}

# expect_device INDEX PEAK: devices[INDEX], nothing live at the end.
expect_device() {
	local dv="d['devices'][$1]"
	expect_json "device $1 peak_bytes" "$dv['peak_bytes']" "$2" \
		"device $1 live_bytes_at_end" "$dv['live_bytes_at_end']" 0 \
		"device $1 live_allocations_at_end" "$dv['live_allocations_at_end']" 0
}

# event_count API: EVENT lines of the dump naming API.
event_count() {
	grep -cE "^ *@[0-9]+ +EVENT #[0-9]+ .* $1 " dump.txt || true
}

# stack_of API: the modules and functions of the first API event's stack,
# innermost first, one "module function" line per frame, from dump.txt.
# Frames are named by the trace's SYMBOL records where it has them (the
# library names in-process only with GPUMEMTRACE_SYMBOLIZE=1), else by
# addr2line from the file its MODULE record names: a namer of our own
# would check itself.
stack_of() {
	python3 - "$1" dump.txt <<'PY'
import re, subprocess, sys
api, path = sys.argv[1], sys.argv[2]
modules, parent, ipof, syms, stack = [], {}, {}, {}, None
for line in open(path):
    m = re.search(r'MODULE id (\d+) \[0x([0-9a-f]+), 0x([0-9a-f]+)\) load_bias 0x([0-9a-f]+) path "([^"]*)"', line)
    if m:
        modules.append((int(m[2], 16), int(m[3], 16), m[5], int(m[4], 16)))
    if re.search(r'\bSTACK \d+ nodes:', line):
        for n, p, ip in re.findall(r'#(\d+) parent (\d+) ip 0x([0-9a-f]+)', line):
            parent[int(n)], ipof[int(n)] = int(p), int(ip, 16)
    m = re.search(r'SYMBOL 0x([0-9a-f]+) module \d+ function "([^"]*)"', line)
    if m:
        syms[int(m[1], 16)] = m[2]
    m = re.search(r'EVENT #\d+ .* %s .* stack (\d+)' % re.escape(api), line)
    if m and stack is None:
        stack = int(m[1])
def name(ip, mod):
    if ip in syms:
        return syms[ip]
    if not mod or not mod[2].startswith('/'):
        return '?'
    # A return address points after the call: name the call itself.
    out = subprocess.run(['addr2line', '-f', '-e', mod[2], hex(ip - 1 - mod[3])],
                         capture_output=True, text=True).stdout.split('\n')
    return out[0] if out and out[0] and out[0] != '??' else '?'
while stack:
    ip = ipof[stack]
    mod = next((m for m in modules if m[0] <= ip < m[1]), None)
    print((mod[2] if mod else '?').rsplit('/', 1)[-1], name(ip, mod))
    stack = parent[stack]
PY
}
