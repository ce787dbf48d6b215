#!/usr/bin/env bash
# The frameworks' settings that change GPU memory (docs/settings.md, made
# from common/frameworks.c's rows): the library records every one of them
# that is set; PyTorch's allocator settings are read by whichever of
# PYTORCH_ALLOC_CONF and its older name PYTORCH_CUDA_ALLOC_CONF is in force
# (the older wins when both are set: c10/cuda/CUDAAllocatorConfig.h), and
# explain's advice, diff and `explain A B` say which; JAX's fraction by
# XLA_CLIENT_MEM_FRACTION unless the deprecated name is the one set.
. "$TESTS_DIR/integration/lib.sh"
MKTRACE=$BUILD/tests/unit-tools/mktrace
[ -x "$MKTRACE" ] || fail "mktrace missing: make unit-tests"

# ---- recorded: every variable of the table, each set ----
names=$("$GMT_CLI" --gen md-settings | sed -n 's/^| `\([A-Z0-9_]*\)` |.*/\1/p')
[ "$(echo "$names" | wc -w)" -ge 35 ] || fail "only $(echo "$names" | wc -w) variables in md-settings"
envs=()
for n in $names; do envs+=("$n=v_$n"); done
env "${envs[@]}" UNRELATED_SETTING=1 GPUMEMTRACE_OUTPUT="$PWD/rec.gmt" \
	LD_PRELOAD="$GMT_LIB" LD_LIBRARY_PATH="$SIM_DIR" "$PROG_DIR/driver-basic" >/dev/null ||
	fail "traced run"
"$GMT_CLI" dump rec.gmt | grep ' PROCESS ' >process.txt || fail "no PROCESS record"
for n in $names; do
	grep -qF "\"$n\": \"v_$n\"" process.txt || fail "not recorded: $n"
done
! grep -q UNRELATED_SETTING process.txt || fail "recorded a variable off the list"
grep -q '^| `PYTORCH_ALLOC_CONF` |' "$TESTS_DIR/../docs/settings.md" ||
	fail "docs/settings.md has no PYTORCH_ALLOC_CONF row"

# ---- PyTorch: the name in force ----
MiB=1048576
torch_oom() { # out env...
	local out=$1
	shift
	{
		echo "process pid=10 ppid=1 exe=/usr/bin/python3 arg=python3 $*"
		cat <<T
module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/torch/lib/libc10_cuda.so
device ord=0 name="Sim GPU" total=$((1024 * MiB)) driver=12080
stack parent=0 ip=0x401000
events tid=1
ev api=cudaMalloc t=1000 ptr=0x10000000 size=$((20 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=2000 ptr=0x20000000 size=$((20 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=3000 ptr=0x30000000 size=$((2 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=4000 ptr=0x40000000 size=$((900 * MiB)) dev=0 stack=1
ev api=cudaMalloc t=5000 ptr=0 size=$((200 * MiB)) dev=0 stack=1 result=2
meminfo tid=1 t=5000 dev=0 free=$((60 * MiB)) total=$((1024 * MiB)) api=cudaMalloc
trailer t=9000
T
	} | "$MKTRACE" "$out"
}
advice() { # trace: the OOM finding's advice
	"$GMT_CLI" explain --json "$1" >"$1.json" || fail "$1: explain"
	json "$1.json" '[f["change"] for f in d["traces"][0]["findings"] if f["id"] == "oom-this-process"][0]'
}
torch_oom none.gmt
torch_oom cur.gmt env=PYTORCH_ALLOC_CONF=max_split_size_mb:256
torch_oom both.gmt env=PYTORCH_ALLOC_CONF=expandable_segments:True \
	env=PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128
torch_oom old.gmt env=PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128
advice none.gmt | grep -qF 'PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF before PyTorch 2.9)' ||
	fail "neither set: $(advice none.gmt)"
advice cur.gmt | grep -qF 'set PYTORCH_ALLOC_CONF=max_split_size_mb:256,expandable_segments:True;' ||
	fail "current name: $(advice cur.gmt)"
advice both.gmt | grep -qF 'PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True (the older name, in force here: PyTorch reads it and ignores PYTORCH_ALLOC_CONF while both are set)' ||
	fail "both set: $(advice both.gmt)"
advice old.gmt | grep -qF '(the older name of PYTORCH_ALLOC_CONF, in force here)' ||
	fail "older name: $(advice old.gmt)"
expect_eq "both: allocator_why" "$(json both.gmt.json 'd["traces"][0]["allocator_why"]')" \
	"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128; PYTORCH_ALLOC_CONF=expandable_segments:True is ignored"
# the mode by the current name alone
torch_oom exp.gmt env=PYTORCH_ALLOC_CONF=expandable_segments:True
"$GMT_CLI" explain --json exp.gmt >exp.json || fail "exp: explain"
expect_eq "PYTORCH_ALLOC_CONF sets the mode" "$(json exp.json 'd["traces"][0]["allocator"]')" \
	"caching allocator with expandable segments"
# diff and explain A B say which name was ignored
"$GMT_CLI" diff cur.gmt both.gmt >d.txt || true
grep -qF 'B: PYTORCH_ALLOC_CONF is ignored while PYTORCH_CUDA_ALLOC_CONF is set' d.txt ||
	fail "diff: $(grep -A20 'allocator environment' d.txt)"
"$GMT_CLI" diff --json cur.gmt both.gmt >d.json || true
expect_eq "diff json ignored" "$(json d.json 'd["allocator_environment_ignored"]')" \
	"[{'trace': 'b', 'key': 'PYTORCH_ALLOC_CONF', 'read': 'PYTORCH_CUDA_ALLOC_CONF', 'error': False}]"
"$GMT_CLI" explain --json cur.gmt both.gmt >ab.json || fail "explain A B"
json ab.json '[e["text"] for f in d["comparison"]["findings"] for e in f["evidence"]]' |
	grep -qF 'B: PYTORCH_ALLOC_CONF=expandable_segments:True is ignored while PYTORCH_CUDA_ALLOC_CONF is set' ||
	fail "explain A B: $(json ab.json 'd["comparison"]')"

# ---- JAX: the fraction's name ----
jax_pre() { # out env...
	local out=$1
	shift
	{
		echo "process pid=11 ppid=1 exe=/usr/bin/python3 arg=python3 $*"
		cat <<T
module id=1 bias=0 start=0x400000 end=0x500000 path=/opt/jax/xla_cuda_plugin.so
module id=2 bias=0 start=0x600000 end=0x700000 path=/opt/jax/libjax_common.so
device ord=0 name="Sim GPU" total=$((80 * 1024 * MiB)) driver=12080
stack parent=0 ip=0x401000
events tid=1
ev api=cuMemAlloc_v2 t=1000 ptr=0x10000000 size=$((60 * 1024 * MiB)) dev=0 stack=1
trailer t=9000
T
	} | "$MKTRACE" "$out"
}
jax_pre j.gmt
jax_pre jold.gmt env=XLA_PYTHON_CLIENT_MEM_FRACTION=.75
pre() { "$GMT_CLI" explain --json "$1" >"$1.json" && json "$1.json" '[f["change"] for f in d["traces"][0]["findings"] if f["id"] == "preallocation"][0]'; }
pre j.gmt | grep -qF 'XLA_CLIENT_MEM_FRACTION=.5 (XLA_PYTHON_CLIENT_MEM_FRACTION in older JAX)' ||
	fail "jax current: $(pre j.gmt)"
pre jold.gmt | grep -qF 'XLA_PYTHON_CLIENT_MEM_FRACTION=.5 (the deprecated name, in force here: XLA_CLIENT_MEM_FRACTION replaces it)' ||
	fail "jax older: $(pre jold.gmt)"
echo ok
