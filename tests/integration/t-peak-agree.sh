#!/usr/bin/env bash
# The library's peak watch (which pokes a PEAK sample at each new high of
# device bytes) and summary's peak follow the same rules (common/events.h):
# a cuMemCreate handle located on the host is not device memory, and a
# handle released while mapped stays held until its unmap. peak-agree holds
# 16 MiB so (released, mapped), then allocates 8 MiB: a peak of 24 MiB that
# the watch must see too. With the NVML simulation a PEAK sample's process
# usage is the context plus the live allocations, so its highest reading
# says which high the watch poked at.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/progs/check.sh"
. "$TESTS_DIR/integration/nvml-lib.sh"
export SIMCUDA_CTX_BYTES=100M GPUMEMTRACE_FLUSH_MS=20 GPUMEMTRACE_SAMPLE_MS=0

run_both peak-agree
peak=$((24 * MiB))
expect_json "device peak" 'd["devices"][0]["peak_bytes"]' $peak \
	"device bytes at the end" 'd["devices"][0]["live_bytes_at_end"]' 0 \
	"host-located handle" 'd["memory"]["vmm_host"]["peak_bytes"]' $((64 * MiB))

[ -n "$(samples peak)" ] || fail "no PEAK sample: $(dumped | grep SAMPLE)"
highest=$(samples peak | sed -n 's/.* process \([0-9]*\) .*/\1/p' | sort -n | tail -n 1)
expect_eq "the watch's peak (highest PEAK sample less the context)" \
	$((highest - 100 * MiB)) $peak
echo ok
