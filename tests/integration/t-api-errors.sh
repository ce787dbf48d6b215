# API: failing calls pass through unchanged and are recorded as failed with
# their result: frees of unknown pointers, a double host registration, an
# unregistered host pointer, a cuMemCreate size off the granularity, NULL
# out-parameters, calls before cuInit or without a context. Nothing is
# counted as allocated.
. "$TESTS_DIR/integration/lib.sh"
. "$TESTS_DIR/progs/check.sh"

run_both runtime-basic errors
expect_calls cudaFree=1/1/- cudaFreeHost=1/1/- cudaHostUnregister=2/1/- \
	cudaHostRegister=2/1/8192
expect_call_names cudaFree cudaFreeHost cudaHostUnregister cudaHostRegister
expect_json "failure results" '[f["result"] for f in d["failures"]]' "[1, 1, 713, 712]"
expect_memory registered_host 8192

next_run
run_both driver-basic preinit errors
expect_calls cuMemAlloc_v2=3/3/0 cuMemFree_v2=1/1/- cuMemFreeHost=1/1/- \
	cuMemCreate=1/1/0 cuArrayDestroy=1/1/-
expect_call_names cuMemAlloc_v2 cuMemFree_v2 cuMemFreeHost cuMemCreate cuArrayDestroy
expect_json "failure results" '[f["result"] for f in d["failures"]]' \
	"[3, 201, 1, 1, 1, 1, 1]"
expect_device 0 0
echo ok
