# Process-life test program (fork, exec, _exit, kill -9, late frees).
LIFE := $(PROG_DIR)/life
.PHONY: life-progs
life-progs: $(LIFE)
$(LIFE): tests/life/life.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

# Preloaded after the tracer: a slow exec that snapshots the trace first.
SLOWEXEC := $(PROG_DIR)/libslowexec.so
life-progs: $(SLOWEXEC)
$(SLOWEXEC): tests/life/slowexec.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)

# Preloaded after the tracer: counts its on-disk lookups of libcuda.
COUNTDL := $(PROG_DIR)/libcountdl.so
life-progs: $(COUNTDL)
$(COUNTDL): tests/life/countdl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)

# A driver first missing, then loaded RTLD_LOCAL as a library's dependency.
DRVUSER := $(PROG_DIR)/libdrvuser.so
life-progs: $(DRVUSER) $(PROG_DIR)/late-driver
$(DRVUSER): tests/life/drvuser.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1 $(SAN_LDFLAGS)
$(PROG_DIR)/late-driver: tests/life/late-driver.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)

# An RTLD_LOCAL "extension" linked against the runtime, and its loader.
LOCAL_EXT := $(PROG_DIR)/liblocal-ext.so
LOCAL_MAIN := $(PROG_DIR)/local-main
life-progs: $(LOCAL_EXT) $(LOCAL_MAIN)
$(LOCAL_EXT): tests/life/local-ext.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13
$(LOCAL_MAIN): tests/life/local-main.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl

# Edges of life (t-life-edges, t-life-exit-race): liblate.so is linked in,
# so its constructor runs before the tracer's and its destructor after.
LIBLATE := $(PROG_DIR)/liblate.so
EDGES := $(PROG_DIR)/edges
life-progs: $(LIBLATE) $(EDGES)
$(LIBLATE): tests/life/liblate.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,liblate.so $< -o $@ \
		-L$(SIM_DIR) -l:libcudart.so.13 $(SAN_LDFLAGS)
$(EDGES): tests/life/edges.c $(LIBLATE)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(PROG_DIR) -llate -L$(SIM_DIR) -l:libcudart.so.13 \
		-lpthread $(SAN_LDFLAGS)

# AT_SECURE (t-settings-secure): loads the driver and the tracer by path.
life-progs: $(PROG_DIR)/secure
$(PROG_DIR)/secure: tests/life/secure.c common/cuda-types.h
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)

# cuGetProcAddress versions, flags, unknown names (t-route-procaddr-edges),
# NULL out-parameters (t-api-null-out).
life-progs: $(PROG_DIR)/procaddr-edges $(PROG_DIR)/null-out
$(PROG_DIR)/procaddr-edges: tests/life/procaddr-edges.c $(PROG_DEPS)
	$(CC) $(PROG_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)
$(PROG_DIR)/null-out: tests/life/null-out.c $(PROG_DEPS) | sim
	$(CC) $(PROG_CFLAGS) $< -o $@ $(PROG_LINK_RT) $(PROG_LINK_DRV) $(SAN_LDFLAGS)

# Ends at odd moments (t-life-stuck-loader, t-life-cancel, t-life-exit-threads),
# and a library whose constructor holds the loader's lock.
life-progs: $(PROG_DIR)/ends $(PROG_DIR)/libstuckctor.so
$(PROG_DIR)/ends: tests/life/ends.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -ldl -lpthread $(SAN_LDFLAGS)
$(PROG_DIR)/libstuckctor.so: tests/life/stuckctor.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ $(SAN_LDFLAGS)
