# gpumemtrace watch, driven in a terminal (tmux, 80x24) on live-steps, a
# program that runs steps on the simulated CUDA and waits at a gate after
# each: the view's figures are summary's and top's on the same trace at the
# same moment (the program waits, so the trace holds still), the keys
# group, order, pause, restart and quit (the program runs on), and the
# snapshots, --json, a PID, a process killed mid-run, a torn tail and bad
# input each end as documented. Waits poll with a generous limit; nothing
# is timed.
. "$TESTS_DIR/integration/lib.sh"
command -v tmux >/dev/null || skip "tmux not installed (apt-get install tmux)"
export GPUMEMTRACE_LIBRARY=$GMT_LIB
export LD_LIBRARY_PATH=$SIM_DIR:$PROG_DIR
export LC_ALL=C # plain text here; the terminal view below runs in C.UTF-8
prog=$PROG_DIR/live-steps

sock="gmt-watch-$$"
tm() { tmux -L "$sock" -f /dev/null "$@"; }
bg_pids=()
cleanup() {
	tm kill-server >/dev/null 2>&1 || true
	for p in "${bg_pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
pane() { tm capture-pane -p -J -t w 2>/dev/null | sed "s/ *$//" >pane.txt || true; }
# Polls until the pane matches the extended regex (0.1 s apart, 120 s at most).
wait_pane() {
	local i
	for i in $(seq 1200); do
		pane
		grep -Eq -- "$1" pane.txt && return 0
		sleep 0.1
	done
	fail "the view never showed /$1/; the last pane:
$(cat pane.txt)"
}
keys() { tm send-keys -t w "$@"; }
until_file() { # until_file PATH: polls for it (120 s at most)
	local i
	for i in $(seq 1200); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 never appeared"
}

# Whether the pane shows the trace as it is now: the device's figures and
# event count (summary --json) and each site's live bytes (top --depth 0
# --sort end), sizes formatted as the CLI formats them.
figures_match() {
	"$GMT_CLI" summary --json "$1" >s.json 2>/dev/null || return 1
	"$GMT_CLI" top --depth 0 --sort end --json "$1" >top.json 2>/dev/null || return 1
	python3 - >want.txt <<'PY'
import json, re, sys
def fmt(n):
    if n < 1024:
        return "%d B" % n
    v, u = float(n), 0
    while v >= 1024 and u < 4:
        v /= 1024
        u += 1
    return ("%.2f %s" if v < 10 else "%.1f %s" if v < 100 else "%.0f %s") % (v, ["B", "KiB", "MiB", "GiB", "TiB"][u])
s = json.load(open("s.json"))
d = s["devices"][0]
pane = open("pane.txt").read().splitlines()
want = ["traced %s  peak %s" % (fmt(d["live_bytes_at_end"]), fmt(d["peak_bytes"])),
        " %d events " % s["events"]]
ok = all(any(w in line for line in pane) for w in want)
for r in json.load(open("top.json"))["devices"][0]["rows"]:
    if not r["end_bytes"]:
        continue
    # live, then the changes since start and since the step, then the site
    row = re.compile(r"^ *%s +\S+( \S+)? +\S+( \S+)?  %s$" % (re.escape(fmt(r["end_bytes"])), re.escape(r["key"])))
    want.append(row.pattern)
    ok = ok and any(row.match(line) for line in pane)
print("\n".join(want))
sys.exit(0 if ok else 1)
PY
}
# Polls until the pane shows the figures (the view refreshes every 0.2 s;
# the trace holds still while the program waits at its gate).
check_figures() {
	local t i
	t=$(the_trace)
	for i in $(seq 600); do
		pane
		figures_match "$t" && return 0
		sleep 0.1
	done
	fail "the view's figures are not summary's and top's:
expected:
$(cat want.txt)
the pane:
$(cat pane.txt)"
}

# ---- the terminal view --------------------------------------------------
tm new-session -d -s w -x 80 -y 24 \
	"cd '$PWD' && LC_ALL=C.UTF-8 '$GMT_CLI' watch --interval 0.2 -- '$prog' 18 '$PWD'; echo \$? >watch.rc.tmp; mv watch.rc.tmp watch.rc; sleep 600"
wait_pane '1 step, the last "step 1"'
check_figures
grep -q "watch · running" pane.txt || fail "no state: $(cat pane.txt)"
grep -q "live-steps 18 " pane.txt || fail "no command in the title: $(cat pane.txt)"
grep -q "^q quit  p pause  g group: sites" pane.txt || fail "no key line: $(cat pane.txt)"
python3 -c 'import sys; sys.exit(any(len(l) > 80 for l in open("pane.txt", encoding="utf-8").read().splitlines()))' ||
	fail "wider than 80 columns"
pid=$(the_trace | sed 's/[^0-9]//g')

# groupings and orders
keys l
wait_pane "libraries by live"
grep -Eq "^ +67\.0 MiB .* live-steps$" pane.txt || fail "library row: $(cat pane.txt)"
keys t
wait_pane "threads by live"
grep -Eq "^ +2\.00 MiB .*tid [0-9]+ gmt-worker$" pane.txt || fail "thread row: $(cat pane.txt)"
grep -Eq "^ +65\.0 MiB .*tid $pid live-steps$" pane.txt || fail "main thread row: $(cat pane.txt)"
keys g
wait_pane "sites by live"
keys o
wait_pane "sites by since start"
keys o o
wait_pane "sites by live"

# pause: the program moves on, the view does not
keys p
wait_pane "watch · paused"
touch go.1
until_file go.1
for i in $(seq 600); do
	"$GMT_CLI" summary --json "$(the_trace)" >s.json 2>/dev/null || true
	[ "$(json s.json 'd["devices"][0]["live_bytes_at_end"]')" = $((68 << 20)) ] && break
	sleep 0.1
done
pane
grep -q '1 step, the last "step 1"' pane.txt || fail "the paused view moved: $(cat pane.txt)"
keys p
wait_pane '2 steps, the last "step 2"'
check_figures

# r: "vs start" counts from now
grep -Eq "^ +64\.0 MiB +\+64\.0 MiB .*load_weights" pane.txt || fail "vs start before r: $(cat pane.txt)"
keys r
wait_pane "^ +64\.0 MiB +0 B .*load_weights"

# sixteen steps more: a leak suspect, named with its site
for k in $(seq 2 17); do touch go.$k; done
wait_pane '18 steps, the last "step 18"'
wait_pane "leak suspect on GPU 0"
wait_pane "most at leak_cache"
check_figures

# q: the view ends, the program runs on
keys q
until_file watch.rc
expect_eq "watch's status after q" "$(cat watch.rc)" 0
kill -0 "$pid" 2>/dev/null || fail "quitting watch ended the program"
pane
grep -q "runs on; its output goes to gpumemtrace-watch" pane.txt || fail "no goodbye: $(cat pane.txt)"
touch end
for i in $(seq 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
grep -q "^done$" gpumemtrace-watch.*.log || fail "the program's output is not in the log"
tm kill-server
rm -f go.* end gpumemtrace.*.gmt

# ---- the terminal closes under the view (ssh gone): the program runs on ----
mkdir h
tm new-session -d -s w -x 80 -y 24 \
	"cd '$PWD/h' && LC_ALL=C.UTF-8 '$GMT_CLI' watch --interval 0.2 -- '$prog' 2 '$PWD/h'; sleep 600"
wait_pane '1 step, the last "step 1"'
hpid=$(cd h && the_trace | sed 's/[^0-9]//g')
tm kill-server
for i in $(seq 10); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$hpid" 2>/dev/null || fail "the terminal's hangup ended the program"
touch h/go.1 h/end
for i in $(seq 1200); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
grep -q "^done$" h/gpumemtrace-watch.*.log || fail "the program did not finish after the hangup"

# ---- snapshots: not a terminal ----------------------------------------------
rc=0
"$GMT_CLI" watch --interval 0.2 -- "$prog" 3 >snap.txt 2>snap.err || rc=$?
expect_eq "snapshots: the command's status" "$rc" 0
grep -q "^done$" snap.txt || fail "the command's output did not pass through: $(cat snap.txt)"
grep -q "watch - ended: exit status 0" snap.txt || fail "no last snapshot: $(cat snap.txt)"
grep -q "3 steps, the last \"step 3\"" snap.txt || fail "steps: $(cat snap.txt)"
if grep -q $'\033' snap.txt; then fail "escape sequences in a snapshot"; fi
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json
"$GMT_CLI" watch --once --json "$t" >once.json
python3 - "$t" <<'PY' || fail "--once --json against summary --json: $(cat once.json)"
import json, sys
s, w = json.load(open("s.json")), json.load(open("once.json"))
sd, wd = s["devices"][0], w["devices"][0]
assert w["state"].startswith("ended"), w["state"]
assert w["events"] == s["events"], (w["events"], s["events"])
assert wd["live_bytes"] == sd["live_bytes_at_end"], (wd, sd)
assert wd["peak_bytes"] == sd["peak_bytes"], (wd, sd)
assert wd["live_allocations"] == sd["live_allocations_at_end"], (wd, sd)
assert w["steps"] == 3 and w["step"] == "step 3", w
PY
rc=0
"$GMT_CLI" watch --interval 0.2 -- sh -c 'exit 3' >x.txt 2>&1 || rc=$?
expect_eq "a command's own status" "$rc" 3
# run's framework switches, for -- COMMAND (issue 34): --per-tensor's
# caches off, the history's bound, the counters helper on PYTHONPATH
rc=0
"$GMT_CLI" watch --interval 0.2 --per-tensor --history-entries 7 -- sh -c \
	'echo "env: $PYTORCH_NO_CUDA_MEMORY_CACHING $XLA_PYTHON_CLIENT_ALLOCATOR $GPUMEMTRACE_FRAMEWORK_HISTORY $PYTHONPATH"' \
	>fw.txt 2>fw.err || rc=$?
expect_eq "watch --per-tensor --history-entries" "$rc" 0
grep -Eq "^env: 1 platform 7 [^ ]*counters" fw.txt || fail "the framework switches: $(cat fw.txt)"
grep -q "gpumemtrace watch: --per-tensor: PyTorch, JAX and TensorFlow caches off" fw.err ||
	fail "--per-tensor says what it turns off: $(cat fw.err)"
rc=0
"$GMT_CLI" watch --per-tensor "$t" >x.txt 2>err.txt || rc=$?
expect_eq "--per-tensor with a trace" "$rc" 2
rm -f gpumemtrace.*.gmt

# ---- a PID; then the process killed: the trace stops growing --------------
mkdir g
LD_PRELOAD=$GMT_LIB "$prog" 5 "$PWD/g" >/dev/null &
bg_pids+=($!)
ppid=$!
for i in $(seq 1200); do
	"$GMT_CLI" watch --once --json "$ppid" >p.json 2>p.err && grep -q '"steps": 1' p.json && break
	sleep 0.1
done
grep -q '"steps": 1' p.json || fail "watch PID: $(cat p.json p.err)"
t=$(the_trace)
"$GMT_CLI" summary --json "$t" >s.json 2>/dev/null
"$GMT_CLI" watch --once --json "$ppid" >p.json
python3 -c '
import json
s, w = json.load(open("s.json")), json.load(open("p.json"))
assert w["state"] == "running", w["state"]
assert w["devices"][0]["live_bytes"] == s["devices"][0]["live_bytes_at_end"] == (64 + 1 + 2) << 20
assert w["events"] == s["events"]
' || fail "watch PID against summary: $(cat p.json)"
kill -9 "$ppid"
wait "$ppid" 2>/dev/null || true
rc=0
"$GMT_CLI" watch --interval 0.2 "$t" >gone.txt 2>gone.err || rc=$?
expect_eq "a killed process's trace" "$rc" 0
grep -q "is gone and the trace has no trailer" gone.err || fail "no line for a stopped trace: $(cat gone.err)"
expect_eq "one line" "$(wc -l <gone.err)" 1
grep -q "watch - stopped: no trailer" gone.txt || fail "state: $(cat gone.txt)"

# ---- a trace that grows past GPUMEMTRACE_MAX_EXPANSION times the size it
# had when watch opened it: the bound grows with the file
mkdir x
LD_PRELOAD=$GMT_LIB GPUMEMTRACE_OUTPUT=$PWD/x/grow.gmt "$prog" 300 "$PWD/x" >/dev/null &
bg_pids+=($!)
for i in $(seq 1200); do # its header written
	[ "$(stat -c %s x/grow.gmt 2>/dev/null || echo 0)" -ge 64 ] && break
	sleep 0.1
done
GPUMEMTRACE_MAX_EXPANSION=2 "$GMT_CLI" watch --json --interval 0.2 x/grow.gmt >grow.json 2>grow.err &
gw=$!
bg_pids+=($gw)
for i in $(seq 1200); do grep -q '"steps": 1' grow.json 2>/dev/null && break; sleep 0.1; done
grep -q '"steps": 1' grow.json || fail "watch of a growing trace: $(cat grow.json grow.err)"
for k in $(seq 1 299); do touch x/go.$k; done
touch x/end
rc=0
wait "$gw" || rc=$?
expect_eq "a trace that grew past the expansion bound" "$rc" 0
[ ! -s grow.err ] || fail "a growing trace read as damaged: $(cat grow.err)"
tail -n 1 grow.json | grep -q '"steps": 300' || fail "not followed to its end: $(tail -n 1 grow.json)"

# ---- a torn tail, bad input ---------------------------------------------------
size=$(stat -c %s "$t")
head -c $((size - 7)) "$t" >torn.gmt
rc=0
# NVML above the device's total (the emulators' 1.22 GiB on 1 GiB): not
# used, as summary, oom and check --max-smi refuse it; no "120% full"
h=$TESTS_DIR/verdicts/traces/torch.oom-fragmented-history.gmt
COLUMNS=80 "$GMT_CLI" watch --once "$h" >nv.txt || fail "watch --once on the OOM trace"
grep -q "more than its total: its figures are not used" nv.txt || fail "NVML above total: $(cat nv.txt)"
if grep -q "% full" nv.txt; then fail "a full warning from NVML's inconsistent figure: $(cat nv.txt)"; fi
"$GMT_CLI" watch --once --json "$h" | grep -q '"nvml_inconsistent_bytes": 1' || fail "watch --json: no nvml_inconsistent_bytes"
"$GMT_CLI" watch --once torn.gmt >torn.txt 2>torn.err || rc=$?
expect_eq "torn tail" "$rc" 0
grep -q "torn" torn.err || fail "a torn tail is not said: $(cat torn.err)"
sleep 60 &
bg_pids+=($!)
rc=0
"$GMT_CLI" watch $! >x.txt 2>err.txt || rc=$?
expect_eq "a PID with no trace" "$rc" 3
grep -q "has no trace open" err.txt || fail "$(cat err.txt)"
expect_eq "one line" "$(wc -l <err.txt)" 1
rc=0
"$GMT_CLI" watch 999999999 >x.txt 2>err.txt || rc=$?
expect_eq "no such process" "$rc" 3
rc=0
"$GMT_CLI" watch nosuch.gmt >x.txt 2>err.txt || rc=$?
expect_eq "no such file" "$rc" 3
printf 'not a trace at all' >junk.gmt
rc=0
"$GMT_CLI" watch junk.gmt >x.txt 2>err.txt || rc=$?
expect_eq "not a trace" "$rc" 4
rc=0
"$GMT_CLI" watch --interval 0 "$t" >x.txt 2>err.txt || rc=$?
expect_eq "bad interval" "$rc" 2
rc=0
"$GMT_CLI" watch --once -- true >x.txt 2>err.txt || rc=$?
expect_eq "--once with a command" "$rc" 2

# ---- a finished trace named in its process, read elsewhere ------------------
# Its SYMBOL records come at its end, after the events: the sites are named
# as leaks names them (not module+offset), and "vs start" counts from the
# trace's start (it had ended before the watch began), so it is the live
# bytes, and the leak suspect names the site too.
v=$TESTS_DIR/verdicts/traces/torch-async.leak-mid.gmt
"$GMT_CLI" watch --once "$v" >fin.txt 2>fin.err || fail "watch --once a finished trace: $(cat fin.err)"
grep -Eq "^ +281 MiB +\+281 MiB .*torch_malloc \(tests/emu/torch-alloc\.c:200\)" fin.txt ||
	fail "a finished trace: names or vs start: $(cat fin.txt)"
grep -q "leak suspect on GPU 0: .* most at torch_malloc (tests/emu/torch-alloc.c:200)" fin.txt ||
	fail "a finished trace: the leak suspect's site: $(cat fin.txt)"
echo "ok"
