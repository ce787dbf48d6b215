# The programs the integration tests trace (each .c says what it calls).
# They run with LD_LIBRARY_PATH=$(SIM_DIR):$(PROG_DIR), never with an rpath,
# so a machine's real libcuda.so.1 is never picked up by accident.

PROG_CFLAGS = $(ALL_CFLAGS) -Itests/sim -Itests/progs
PROG_DEPS := tests/progs/progs.h $(SIM_HEADERS)
PROG_LINK_RT := -L$(SIM_DIR) -l:libcudart.so.13
PROG_LINK_DRV := -L$(SIM_DIR) -l:libcuda.so.1

PROGS := runtime-basic driver-basic dlsym-route procaddr-route static-runtime stackmix \
	hookloop entrypoint-route early-calls threads oom nvtx-client marker accounting clockcheck \
	peak-agree nextmain
PROG_LIBS := libnextcheck.so libnextcheck2.so libfakeblas.so libearly.so

.PHONY: progs
progs: sim $(addprefix $(PROG_DIR)/,$(PROGS) $(PROG_LIBS)) ## build the test programs into build/tests/progs

# Linked against the simulated runtime.
$(PROG_DIR)/runtime-basic $(PROG_DIR)/entrypoint-route $(PROG_DIR)/threads $(PROG_DIR)/oom \
		$(PROG_DIR)/nvtx-client $(PROG_DIR)/marker $(PROG_DIR)/stackmix: \
		$(PROG_DIR)/%: tests/progs/%.c $(PROG_DEPS) $(SIM_LIBCUDART)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< $(PROG_LINK_RT) -ldl -lpthread $(SAN_LDFLAGS)

# Linked against the simulated driver.
$(PROG_DIR)/driver-basic $(PROG_DIR)/accounting $(PROG_DIR)/hookloop \
		$(PROG_DIR)/clockcheck $(PROG_DIR)/peak-agree: $(PROG_DIR)/%: tests/progs/%.c $(PROG_DEPS) \
		$(SIM_LIBCUDA)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< $(PROG_LINK_DRV) $(SAN_LDFLAGS)

# Linked against neither: they find CUDA with dlopen/dlsym.
$(PROG_DIR)/procaddr-route $(PROG_DIR)/nextmain: $(PROG_DIR)/%: tests/progs/%.c $(PROG_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< -ldl $(SAN_LDFLAGS)

# libnextcheck2 must stay in the search order after libnextcheck although
# the program does not reference it: hence --no-as-needed.
$(PROG_DIR)/dlsym-route: tests/progs/dlsym-route.c $(PROG_DEPS) \
		$(PROG_DIR)/libnextcheck.so $(PROG_DIR)/libnextcheck2.so
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(PROG_DIR) -Wl,--no-as-needed -lnextcheck -lnextcheck2 \
		-Wl,--as-needed -ldl $(SAN_LDFLAGS)

$(PROG_DIR)/libnextcheck.so $(PROG_DIR)/libnextcheck2.so: $(PROG_DIR)/lib%.so: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared -Wl,-soname,$(notdir $@) -o $@ $< -ldl $(SAN_LDFLAGS)

# cuBLAS-like: the static runtime embedded, only fakeblas_* exported.
$(PROG_DIR)/libfakeblas.so: tests/progs/fakeblas.c $(SIM_HEADERS) $(SIM_CUDART_STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -fvisibility=hidden -shared -Wl,-soname,libfakeblas.so \
		-Wl,-z,defs -o $@ $< $(SIM_CUDART_STATIC) -ldl -lpthread $(SAN_LDFLAGS)

$(PROG_DIR)/static-runtime: tests/progs/static-runtime.c $(PROG_DIR)/libfakeblas.so
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(PROG_DIR) -lfakeblas $(SAN_LDFLAGS)

$(PROG_DIR)/libearly.so: tests/progs/early.c $(SIM_HEADERS) $(SIM_LIBCUDART)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared -Wl,-soname,libearly.so -o $@ $< \
		$(PROG_LINK_RT) -ldl $(SAN_LDFLAGS)

$(PROG_DIR)/early-calls: tests/progs/early-calls.c $(PROG_DEPS) $(PROG_DIR)/libearly.so
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(PROG_DIR) -learly $(PROG_LINK_RT) $(SAN_LDFLAGS)

$(PROG_DIR)/marker: include/gpumemtrace/gpumemtrace.h
