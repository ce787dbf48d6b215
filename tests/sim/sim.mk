# The simulated CUDA driver and runtime the integration tests run on
# (tests/sim/driver.c and runtime.c say what they simulate and why).
#
#   $(SIM_DIR)/libcuda.so.1       soname libcuda.so.1, -Bsymbolic (+ libcuda.so)
#   $(SIM_DIR)/libcudart.so.13    cuda* symbols versioned libcudart.so.13
#   $(SIM_DIR)/libcudart_static.a -fPIC -fvisibility=hidden, for embedding
#   $(SIM_DIR)/libnvidia-ml.so.1  NVML: exports exactly what preload/nvml.h lists

SIM_CFLAGS = $(ALL_CFLAGS) -Itests/sim
SIM_HEADERS := tests/sim/sim-cuda.h tests/sim/sim-api.h tests/sim/sim-primary.h common/cuda-types.h common/cuda-api.h
SIM_LIBCUDA := $(SIM_DIR)/libcuda.so.1
SIM_LIBCUDART := $(SIM_DIR)/libcudart.so.13
SIM_CUDART_STATIC := $(SIM_DIR)/libcudart_static.a
SIM_LIBNVML := $(SIM_DIR)/libnvidia-ml.so.1

.PHONY: sim
sim: $(SIM_LIBCUDA) $(SIM_DIR)/libcuda.so $(SIM_LIBCUDART) $(SIM_DIR)/libcudart.so \
	$(SIM_CUDART_STATIC) $(SIM_LIBNVML) ## build the simulated CUDA driver, runtime and NVML into build/sim

# -Bsymbolic: the driver's own addresses (cuGetProcAddress answers) must be
# its own functions, not the same-named exports of a preloaded tracer.
SIM_DRIVER_SRCS := tests/sim/driver.c tests/sim/driver-mem.c tests/sim/driver-vmm.c
$(SIM_LIBCUDA): $(SIM_DRIVER_SRCS) tests/sim/driver.h tests/sim/sim-nvml.h $(SIM_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs \
		-o $@ $(SIM_DRIVER_SRCS) -lpthread $(SAN_LDFLAGS)

$(SIM_DIR)/libcuda.so: $(SIM_LIBCUDA)
	ln -sf libcuda.so.1 $@

$(SIM_LIBCUDART): tests/sim/runtime.c tests/sim/libcudart.map $(SIM_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=tests/sim/libcudart.map -Wl,-z,defs \
		-o $@ $< -ldl -lpthread $(SAN_LDFLAGS)

$(SIM_DIR)/libcudart.so: $(SIM_LIBCUDART)
	ln -sf libcudart.so.13 $@

$(SIM_DIR)/obj/runtime-static.o: tests/sim/runtime.c $(SIM_HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(SIM_CUDART_STATIC): $(SIM_DIR)/obj/runtime-static.o
	rm -f $@
	$(AR) rcs $@ $<

$(SIM_LIBNVML): tests/sim/nvml.c tests/sim/sim-nvml.h preload/nvml.h
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -fPIC -fvisibility=hidden -shared -Wl,-soname,libnvidia-ml.so.1 \
		-Wl,-z,defs -o $@ $< -ldl $(SAN_LDFLAGS)
