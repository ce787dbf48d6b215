# DEVICE records: on an H100 with the dynamic runtime, a short program's
# DEVICE record held the name but a zero uuid, total, compute capability and
# driver version, so NVML's samples matched no device and `accounting` had
# nothing to reconcile. Its CUDA work took less than a flush period, so the
# devices were first asked about at exit, after the runtime's teardown had
# deinitialized the driver (cuDeviceGetUuid_v2 returned 4). Now the program's
# own thread asks as its first event makes the file (the driver is up inside
# that call); every query is checked, a complete device is written at once,
# an incomplete one is asked again at later flushes for up to 5 s, what
# earlier askings learnt is kept, and one still incomplete at the end is
# written as it is, with a NOTE naming the query.
# The simulated driver fails cuDeviceGetUuid_v2 the first SIMCUDA_UUID_FAILS
# times, and SIMCUDA_DEINIT_AT_EXIT=1 deinitializes it at exit as the real
# runtime does.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

# A short program, the default flush period, no NVML sampling to wake the
# flush thread early: the driver is gone by exit, the facts must be known.
SIMCUDA_DEINIT_AT_EXIT=1 GPUMEMTRACE_SAMPLE_MS=0 run_both runtime-basic malloc
grep -q 'DEVICE 0 name "Simulated GPU 0" uuid 53494d43-5544-412d-4750-552d30303030 total 17179869184 (16.0 GiB) cc 9.0 driver 13000' dump.txt ||
	{ grep -E 'DEVICE|NOTE' dump.txt || true; fail "device facts asked only after the driver's teardown"; }

next_run
export GPUMEMTRACE_FLUSH_MS=1

# Fails a few times, then answers: the record waits for the answer.
SIMCUDA_UUID_FAILS=3 run_both threads 1 200000
grep -q 'DEVICE 0 name "Simulated GPU 0" uuid 53494d43-5544-412d-4750-552d30303030 total 17179869184' dump.txt ||
	{ grep DEVICE dump.txt || true; fail "the DEVICE record did not wait for the uuid"; }
! grep -q 'NOTE.*cuDeviceGetUuid' dump.txt || fail "a NOTE although the uuid came"

# Never answers: the record is written at the end, the NOTE says why, and
# the CLI still matches the one NVML device to the one CUDA device.
next_run
SIMCUDA_UUID_FAILS=100000000 run_both threads 1 20000
grep -q 'DEVICE 0 name "Simulated GPU 0" uuid 00000000-0000-0000-0000-000000000000 total 17179869184' dump.txt ||
	{ grep DEVICE dump.txt || true; fail "no DEVICE record with what the other queries gave"; }
grep -q 'NOTE warning "device 0: cuDeviceGetUuid_v2 returned 3;' dump.txt ||
	{ grep NOTE dump.txt || true; fail "no NOTE naming the failed query"; }
"$GMT_CLI" accounting "$TRACE" >acct.txt || fail "accounting failed"
grep -q 'nvidia-smi (this process) ' acct.txt && ! grep -q 'nothing to reconcile' acct.txt ||
	{ cat acct.txt; fail "NVML samples not matched to the device without a uuid"; }
echo ok
