# Process-life test program (fork, exec, _exit, kill -9, late frees).
LIFE := $(PROG_DIR)/life
.PHONY: life-progs
life-progs: $(LIFE)
$(LIFE): tests/life/life.c hooks/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

# An RTLD_LOCAL "extension" linked against the runtime, and its loader.
LOCAL_EXT := $(PROG_DIR)/liblocal-ext.so
LOCAL_MAIN := $(PROG_DIR)/local-main
life-progs: $(LOCAL_EXT) $(LOCAL_MAIN)
$(LOCAL_EXT): tests/life/local-ext.c hooks/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13
$(LOCAL_MAIN): tests/life/local-main.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl
