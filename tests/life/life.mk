# Process-life test program (fork, exec, _exit, kill -9, late frees).
LIFE := $(PROG_DIR)/life
.PHONY: life-progs
life-progs: $(LIFE)
$(LIFE): tests/life/life.c hooks/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13
