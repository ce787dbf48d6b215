# The programs the integration tests trace (each .c says what it calls).
# They run with LD_LIBRARY_PATH=$(SIM_DIR):$(PROG_DIR), never with an rpath,
# so a machine's real libcuda.so.1 is never picked up by accident.

PROG_CFLAGS = $(ALL_CFLAGS) -Itests/sim -Itests/progs
PROG_DEPS := tests/progs/progs.h $(SIM_HEADERS)
PROG_LINK_RT := -L$(SIM_DIR) -l:libcudart.so.13
PROG_LINK_DRV := -L$(SIM_DIR) -l:libcuda.so.1

PROGS := runtime-basic runtime-basic-static driver-basic dlsym-route procaddr-route static-runtime stackmix \
	hookloop entrypoint-route early-calls threads oom nvtx-client marker accounting clockcheck \
	peak-agree nextmain live-steps
PROG_LIBS := libnextcheck.so libnextcheck2.so libfakeblas.so libearly.so

.PHONY: progs
progs: sim $(addprefix $(PROG_DIR)/,$(PROGS) $(PROG_LIBS)) ## build the test programs into build/tests/progs

# Linked against the simulated runtime.
$(PROG_DIR)/runtime-basic $(PROG_DIR)/entrypoint-route $(PROG_DIR)/threads $(PROG_DIR)/oom \
		$(PROG_DIR)/nvtx-client $(PROG_DIR)/marker $(PROG_DIR)/stackmix $(PROG_DIR)/live-steps: \
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

# runtime-basic with the static runtime linked into the program: the same
# calls as runtime-basic, seen as driver calls (t-report-sites).
$(PROG_DIR)/runtime-basic-static: tests/progs/runtime-basic.c $(PROG_DEPS) $(SIM_CUDART_STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -o $@ $< $(SIM_CUDART_STATIC) -ldl -lpthread $(SAN_LDFLAGS)

$(PROG_DIR)/static-runtime: tests/progs/static-runtime.c $(PROG_DIR)/libfakeblas.so
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(PROG_DIR) -lfakeblas $(SAN_LDFLAGS)

$(PROG_DIR)/libearly.so: tests/progs/early.c $(SIM_HEADERS) $(SIM_LIBCUDART)
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fPIC -shared -Wl,-soname,libearly.so -o $@ $< \
		$(PROG_LINK_RT) -ldl $(SAN_LDFLAGS)

$(PROG_DIR)/early-calls: tests/progs/early-calls.c $(PROG_DEPS) $(PROG_DIR)/libearly.so
	$(CC) $(PROG_CFLAGS) -o $@ $< -L$(PROG_DIR) -learly $(PROG_LINK_RT) $(SAN_LDFLAGS)

$(PROG_DIR)/marker: include/gpumemtrace/gpumemtrace.h

# Process-life test program (fork, exec, _exit, kill -9, late frees).
LIFE := $(PROG_DIR)/life
.PHONY: life-progs
life-progs: $(LIFE)
$(LIFE): tests/progs/life.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

# The exit's request forced into the flush thread's cycle (t-life-exit-wakeup):
# it defines write and syscall, which the tracer's calls reach (-rdynamic).
life-progs: $(PROG_DIR)/exitwake
$(PROG_DIR)/exitwake: tests/progs/exitwake.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

# The trace's write stuck until the program lets it go (t-life-stall): it
# defines write, which the tracer's calls reach (-rdynamic).
life-progs: $(PROG_DIR)/stallwrite
$(PROG_DIR)/stallwrite: tests/progs/stallwrite.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13
# The same with liblate.so linked in: its destructor's events come after the
# final flush, whose write is stuck (stallwrite late).
life-progs: $(PROG_DIR)/stallwrite-late
$(PROG_DIR)/stallwrite-late: tests/progs/stallwrite.c common/cuda-types.h $(PROG_DIR)/liblate.so | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DSTALL_LATE -rdynamic $< -o $@ -L$(PROG_DIR) -Wl,--no-as-needed -llate -Wl,--as-needed \
		-L$(SIM_DIR) -l:libcudart.so.13 -ldl $(SAN_LDFLAGS)

# The trace file's creation stuck in open() (t-life-stall-open): it defines
# open, which the tracer's calls reach (-rdynamic).
life-progs: $(PROG_DIR)/stallopen
$(PROG_DIR)/stallopen: tests/progs/stallopen.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -lpthread

# exit() from a signal handler that interrupted malloc (t-life-exit-malloc):
# it defines the allocator, which the tracer's calls reach (-rdynamic).
# Never a sanitizer build: it replaces the allocator.
life-progs: $(PROG_DIR)/exitmalloc
$(PROG_DIR)/exitmalloc: tests/progs/exitmalloc.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize%,$(ALL_CFLAGS)) -rdynamic $< -o $@ -L$(SIM_DIR) \
		-l:libcudart.so.13 -lpthread

# Killed with no exit path run, GAP_MS after its last event (t-flush-latency).
KILLAFTER := $(PROG_DIR)/killafter
life-progs: $(KILLAFTER)
$(KILLAFTER): tests/progs/killafter.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13

# A child made by _Fork() or a raw clone(SIGCHLD): no fork handlers run.
life-progs: $(PROG_DIR)/forkraw
$(PROG_DIR)/forkraw: tests/progs/forkraw.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 $(SAN_LDFLAGS)

# Preloaded after the tracer: a slow exec that snapshots the trace first.
SLOWEXEC := $(PROG_DIR)/libslowexec.so
life-progs: $(SLOWEXEC)
$(SLOWEXEC): tests/progs/slowexec.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)

# Preloaded after the tracer: counts its on-disk lookups of libcuda.
COUNTDL := $(PROG_DIR)/libcountdl.so
life-progs: $(COUNTDL)
$(COUNTDL): tests/progs/countdl.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)

# A driver first missing, then loaded RTLD_LOCAL as a library's dependency.
DRVUSER := $(PROG_DIR)/libdrvuser.so
life-progs: $(DRVUSER) $(PROG_DIR)/late-driver
$(DRVUSER): tests/progs/drvuser.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1 $(SAN_LDFLAGS)
$(PROG_DIR)/late-driver: tests/progs/late-driver.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)

# An RTLD_LOCAL "extension" linked against the runtime, and its loader.
LOCAL_EXT := $(PROG_DIR)/liblocal-ext.so
LOCAL_MAIN := $(PROG_DIR)/local-main
life-progs: $(LOCAL_EXT) $(LOCAL_MAIN)
$(LOCAL_EXT): tests/progs/local-ext.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13
$(LOCAL_MAIN): tests/progs/local-main.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl

# Edges of life (t-life-edges, t-life-exit-race): liblate.so is linked in,
# so its constructor runs before the tracer's and its destructor after.
LIBLATE := $(PROG_DIR)/liblate.so
EDGES := $(PROG_DIR)/edges
life-progs: $(LIBLATE) $(EDGES)
$(LIBLATE): tests/progs/liblate.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,liblate.so $< -o $@ \
		-L$(SIM_DIR) -l:libcudart.so.13 $(SAN_LDFLAGS)
$(EDGES): tests/progs/edges.c $(LIBLATE)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(PROG_DIR) -llate -L$(SIM_DIR) -l:libcudart.so.13 \
		-lpthread $(SAN_LDFLAGS)

# AT_SECURE (t-settings-secure): loads the driver and the tracer by path.
life-progs: $(PROG_DIR)/secure
$(PROG_DIR)/secure: tests/progs/secure.c common/cuda-types.h
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)

# cuGetProcAddress versions, flags, unknown names (t-route-procaddr-edges),
# NULL out-parameters (t-api-null-out).
life-progs: $(PROG_DIR)/procaddr-edges $(PROG_DIR)/null-out
$(PROG_DIR)/procaddr-edges: tests/progs/procaddr-edges.c $(PROG_DEPS)
	$(CC) $(PROG_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)
$(PROG_DIR)/null-out: tests/progs/null-out.c $(PROG_DEPS) | sim
	$(CC) $(PROG_CFLAGS) $< -o $@ $(PROG_LINK_RT) $(PROG_LINK_DRV) $(SAN_LDFLAGS)

# Load and fault programs for the hardening tests (docs/reliability.md).
STRESS_PROGS := $(PROG_DIR)/stress
.PHONY: stress-progs
stress-progs: $(STRESS_PROGS) ## build the stress test programs

$(PROG_DIR)/stress: tests/progs/stress.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -lpthread $(SAN_LDFLAGS)

# A library opened with RTLD_DEEPBIND or dlmopen, and its loader.
stress-progs: $(PROG_DIR)/libbypass.so $(PROG_DIR)/bypass-main
$(PROG_DIR)/libbypass.so: tests/progs/bypass-lib.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl $(SAN_LDFLAGS)
$(PROG_DIR)/bypass-main: tests/progs/bypass-main.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -ldl $(SAN_LDFLAGS)

# Descriptors: the program's fds 0-2 closed, a daemon that closes and reopens (t-life-fds).
# fdclash-noeh: the same without unwind tables, so that libunwind falls back
# to checking addresses through its pipe on every walk.
life-progs: $(PROG_DIR)/fdclash $(PROG_DIR)/fdclash-noeh
$(PROG_DIR)/fdclash: tests/progs/fdclash.c $(PROG_DEPS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $< -o $@ $(PROG_LINK_RT) $(SAN_LDFLAGS)
$(PROG_DIR)/fdclash-noeh: tests/progs/fdclash.c $(PROG_DEPS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@ \
		$(PROG_LINK_RT) $(SAN_LDFLAGS)

# Many threads alive at once (t-stress-thread-memory).
life-progs: $(PROG_DIR)/manythreads
$(PROG_DIR)/manythreads: tests/progs/manythreads.c $(PROG_DEPS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) $< -o $@ $(PROG_LINK_DRV) -lpthread $(SAN_LDFLAGS)

# Ends at odd moments (t-life-stuck-loader, t-life-cancel, t-life-exit-threads),
# and a library whose constructor holds the loader's lock.
life-progs: $(PROG_DIR)/ends $(PROG_DIR)/libstuckctor.so
$(PROG_DIR)/ends: tests/progs/ends.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -ldl -lpthread $(SAN_LDFLAGS)
$(PROG_DIR)/libstuckctor.so: tests/progs/stuckctor.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ $(SAN_LDFLAGS)

# A plugin linked against the runtime, closed and opened again (t-reload);
# the program links no CUDA library, so the plugin's dlclose unloads the runtime.
stress-progs: $(PROG_DIR)/libreload-plugin.so $(PROG_DIR)/reload-main
$(PROG_DIR)/libreload-plugin.so: tests/progs/reload-plugin.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared -Wl,-soname,libreload-plugin.so $< -o $@ \
		-L$(SIM_DIR) -l:libcudart.so.13 $(SAN_LDFLAGS)
$(PROG_DIR)/reload-main: tests/progs/reload-main.c common/cuda-types.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -ldl $(SAN_LDFLAGS)

# _exit while another thread records (t-life-exit-late-writer).
life-progs: $(PROG_DIR)/exitbusy
$(PROG_DIR)/exitbusy: tests/progs/exitbusy.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -lpthread

# Harsh corners: SIGTERM into exit(), a tight RLIMIT_AS at exit, small
# thread stacks, dlerror after a miss (t-life-sigterm-exit and friends).
life-progs: $(PROG_DIR)/harsh
$(PROG_DIR)/harsh: tests/progs/harsh.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -ldl -lpthread $(SAN_LDFLAGS)

# The reader library with each allocation failing in turn (t-capi-oom): it
# defines malloc, calloc and realloc, which the library's calls reach
# (-rdynamic). Never a sanitizer build: it replaces the allocator.
progs: $(PROG_DIR)/capi-oom
$(PROG_DIR)/capi-oom: tests/progs/capi-oom.c include/gpumemtrace/trace-reader.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -fsanitize%,$(ALL_CFLAGS)) -rdynamic $< -o $@ -ldl
