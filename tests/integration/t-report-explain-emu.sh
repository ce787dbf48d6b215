#!/usr/bin/env bash
# explain on the verdict corpus's emulator traces (tests/verdicts/, issue
# 19): each finding's known answer, from the emulator's own counters (its
# EMU lines: max_memory_reserved, BFC's pool and regions, the retries) and
# from the scenario. The traces are the checked-in ones when present, else
# regen.sh makes them afresh (the emulators run under the tracer).
. "$TESTS_DIR/integration/lib.sh"
v=$TESTS_DIR/verdicts
[ -x "$BUILD/tests/emu/emu-torch" ] || fail "emulators missing: make emu-progs"
if ls "$v"/traces/*.gmt >/dev/null 2>&1; then
	emu=$v/traces
else
	"$v/regen.sh" "$PWD/emu" >regen.txt 2>&1 || fail "regen.sh: $(cat regen.txt)"
	emu=$PWD/emu
fi

n=0
# check NAME EXPR EXPECTED WHY: EXPR on the explain --json of NAME.gmt, with
# t the trace's object and ids its findings' ids
check() {
	[ -f "$1.json" ] || "$GMT_CLI" explain --json "$emu/$1.gmt" >"$1.json" ||
		fail "$1: explain exit $?"
	local got
	got=$(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
ids = [f["id"] for f in t["findings"] if f["id"] != "oom-invisible"]
f = {x["id"]: x for x in t["findings"]}
print(eval(sys.argv[2]))' "$1.json" "$2") || fail "$1: $2 failed"
	[ "$got" == "$3" ] || fail "$1: $2: got '$got', expected '$3' ($4)"
	n=$((n + 1))
}

# PyTorch (frameworks.md §1): the cache's segments at the peak are max_memory_reserved
check torch.clean "t['framework'], t['allocator']" "('PyTorch', 'caching allocator')" "2/20 MiB segments"
check torch.clean "f['torch-cache']['bytes']" 570425344 "EMU max_memory_reserved"
# the simulated NVML counts the context (300 MiB) and the module code loaded lazily
check torch.clean "f['smi-breakdown']['evidence'][1]['text'], f['smi-breakdown']['evidence'][2]['text']" \
	"(\"PyTorch's cache: 544 MiB\", 'CUDA contexts (with the module code loaded with them): 300 MiB')" \
	"every traced byte is the cache's; the simulated context is 300 MiB"
check torch-expandable.clean "t['allocator'], f['torch-cache']['bytes']" \
	"('caching allocator with expandable segments', 318767104)" "EMU memory_reserved, in mapped pages"
check torch-async.clean "t['allocator'], 'pool-reserve' in ids, 'torch-cache' in ids" \
	"('cudaMallocAsync (stream-ordered pool)', True, False)" "the pool, not segments"
# the simulated pool keeps its high-water mark: max_memory_reserved 296419452 -
# memory_allocated 85448864 = 201 MiB, the lower bound; module code shares the rest
check torch-async.clean "f['pool-reserve']['answer'][:53]" "the stream-ordered pool kept between 201 MiB and 274 " \
	"EMU max_memory_reserved less memory_allocated"
check torch-nocache.clean "t['allocator'], 'torch-cache' in ids" "('no caching', False)" "PYTORCH_NO_CUDA_MEMORY_CACHING=1"
check torch.oom-recovered "[i for i in ids if i.startswith('oom')], f['oom-retried']['answer'][:29]" \
	"(['oom-retried'], '2 OOMs were recovered by the ')" \
	"EMU num_alloc_retries 2, ooms 0: every OOM recovered by the retry (§1.4)"
check torch.oom-exhaust "'oom-this-process' in ids, 'oom-other-processes' in ids" "(True, False)" \
	"EMU ooms 1: this process filled the 1 GiB device"
check torch.oom-exceeds "ids[0]" oom-exceeds-device-total "8 GiB asked of a 2 GiB device"
check torch.oom-others "'oom-other-processes' in ids" True "other processes hold 3.2 GiB of 4 GiB"
check torch.oom-fraction "[i for i in ids if i.startswith('oom')]" "[]" \
	"a memory fraction refuses without a driver call: nothing to see (§1.4)"
# TF and JAX's BFC (§2): the preallocation and the regions are the EMU pool
check tf.clean "t['framework'], f['preallocation']['bytes']" "('TensorFlow', 2407530496)" \
	"EMU limit: the free memory less TF's reserve"
check jax.clean "t['framework'], f['preallocation']['bytes']" "('JAX', 3221225472)" "75% of 4 GiB"
check tf-growth.clean "f['bfc-growth']['bytes'], 'in 4 regions' in f['bfc-growth']['answer']" "(301989888, True)" \
	"EMU pool 301989888 in 4 regions"
check jax-growth.leak "f['bfc-growth']['bytes'], 'in 6 regions' in f['bfc-growth']['answer']" "(1107296256, True)" \
	"EMU pool 1107296256 in 6 regions"
check jax-platform.clean "t['allocator'], 'bfc-growth' in ids, 'preallocation' in ids" \
	"('platform allocator (one call per buffer)', False, False)" "one driver call per buffer"
# CuPy (§3): free_all_blocks and a retry
check cupy.clean "t['framework']" CuPy "its module"
check cupy.oom-recovered "[i for i in ids if i.startswith('oom')]" "['oom-retried']" "EMU ooms 0"
echo "$n checks"
