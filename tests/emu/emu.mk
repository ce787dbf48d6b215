# The framework emulators (tests/emu/emu.h says what they are): C programs on
# the simulated CUDA, each reaching the driver by its framework's route.
# Their traces and the verdicts expected of them are in tests/verdicts/.
EMU_DIR := $(TEST_BUILD)/emu
EMU_CFLAGS = $(ALL_CFLAGS) -Itests/sim -Itests/emu
EMU_DEPS := tests/emu/emu.h $(SIM_HEADERS)
EMU_PROGS := $(addprefix $(EMU_DIR)/,emu-torch emu-bfc emu-cupy emu-nccl)

.PHONY: emu-progs
emu-progs: sim $(EMU_PROGS) ## build the framework emulators into build/tests/emu

# PyTorch: libc10_cuda.so links the dynamic runtime (frameworks.md §0.1).
# The caching allocator's rules are the product's model (model/), driven
# against the simulated CUDA.
$(EMU_DIR)/emu-torch: tests/emu/emu-torch.c tests/emu/torch-alloc.c tests/emu/torch-alloc.h \
		tests/emu/torch-history.c tests/emu/torch-history.h include/gpumemtrace/gpumemtrace.h \
		model/torchalloc.c model/torchalloc.h $(EMU_DEPS) $(SIM_LIBCUDART) $(SIM_LIBCUDA)
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -o $@ tests/emu/emu-torch.c tests/emu/torch-alloc.c \
		tests/emu/torch-history.c model/torchalloc.c \
		-L$(SIM_DIR) -l:libcudart.so.13 -l:libcuda.so.1 -ldl -lpthread -lm $(SAN_LDFLAGS)

# TF/XLA/JAX: libcuda by dlopen + dlsym (implib trampolines, §0.3); linked
# to libcuda only for the kernel launches of emu.h.
$(EMU_DIR)/emu-bfc: tests/emu/emu-bfc.c $(EMU_DEPS) $(SIM_LIBCUDA)
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -o $@ $< -L$(SIM_DIR) -l:libcuda.so.1 -ldl -lpthread $(SAN_LDFLAGS)

# CuPy: the dynamic runtime (frameworks.md §3).
$(EMU_DIR)/emu-cupy: tests/emu/emu-cupy.c $(EMU_DEPS) $(SIM_LIBCUDART) $(SIM_LIBCUDA)
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -o $@ $< -L$(SIM_DIR) -l:libcudart.so.13 -l:libcuda.so.1 -ldl -lpthread \
		$(SAN_LDFLAGS)

# NCCL: the static runtime embedded (§0.2), cuMem* by cudaGetDriverEntryPoint.
$(EMU_DIR)/emu-nccl: tests/emu/emu-nccl.c $(EMU_DEPS) $(SIM_CUDART_STATIC) $(SIM_LIBCUDA)
	@mkdir -p $(dir $@)
	$(CC) $(EMU_CFLAGS) -o $@ $< $(SIM_CUDART_STATIC) -L$(SIM_DIR) -l:libcuda.so.1 -ldl -lpthread \
		$(SAN_LDFLAGS)

.PHONY: gen-verdicts-doc
gen-verdicts-doc: $(CLI) ## regenerate docs/reports.md's table of the verdict corpus (tests/verdicts)
	python3 tests/verdicts/check.py $(CLI) --doc docs/reports.md
