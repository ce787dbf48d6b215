# Golden traces: made once by `make golden-traces` from tests/golden/workload.c
# on the simulated CUDA and checked in; `make golden-update` rewrites the
# expected outputs after an intended change. t-golden.sh compares.
GOLDEN_PROG := $(PROG_DIR)/golden-workload
.PHONY: golden-prog golden-traces golden-update
golden-prog: $(GOLDEN_PROG)
$(GOLDEN_PROG): tests/golden/workload.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

golden-traces: all golden-prog ## re-record the golden traces (then run golden-update)
	BUILD=$(abspath $(BUILD)) tests/golden/golden.sh traces

golden-update: all ## rewrite the golden expected outputs from the checked-in traces
	BUILD=$(abspath $(BUILD)) tests/golden/golden.sh expect
