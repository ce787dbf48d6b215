# Load and fault programs for the hardening tests (docs/reliability.md).
STRESS_PROGS := $(PROG_DIR)/stress
.PHONY: stress-progs
stress-progs: $(STRESS_PROGS) ## build the stress test programs

$(PROG_DIR)/stress: tests/stress/stress.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -lpthread $(SAN_LDFLAGS)

# A library opened with RTLD_DEEPBIND or dlmopen, and its loader.
stress-progs: $(PROG_DIR)/libbypass.so $(PROG_DIR)/bypass-main
$(PROG_DIR)/libbypass.so: tests/stress/bypass-lib.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)
$(PROG_DIR)/bypass-main: tests/stress/bypass-main.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -ldl $(SAN_LDFLAGS)
