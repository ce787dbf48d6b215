# Benchmarks: `make bench` (never part of `make check`). bench/run.sh says
# what each part measures; docs/performance.md has the results.

BENCH_DIR := $(BUILD)/bench
BENCH_CFLAGS = -std=gnu11 -O2 -g -D_GNU_SOURCE -pthread $(WARN) -Itests/sim -I. -Iinclude
BENCH_PROGS := $(BENCH_DIR)/hookcost-fp $(BENCH_DIR)/hookcost-nofp $(BENCH_DIR)/workload \
	$(BENCH_DIR)/oneshot $(BENCH_DIR)/burst

.PHONY: bench-progs bench
bench-progs: all sim progs $(BENCH_PROGS)

$(BENCH_DIR)/hookcost-fp: bench/hookcost.c $(SIM_HEADERS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -fno-omit-frame-pointer $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1 -lunwind

$(BENCH_DIR)/hookcost-nofp: bench/hookcost.c $(SIM_HEADERS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -fomit-frame-pointer $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1 -lunwind

$(BENCH_DIR)/workload: bench/workload.c $(SIM_HEADERS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -fno-omit-frame-pointer $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1 -ldl

$(BENCH_DIR)/oneshot: bench/oneshot.c $(SIM_HEADERS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1

$(BENCH_DIR)/burst: bench/burst.c $(SIM_HEADERS) | sim
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcuda.so.1

bench: bench-progs ## run the benchmarks (minutes; needs heaptrack for the anchors), results in bench/results/
	@BUILD=$(abspath $(BUILD)) bench/run.sh $(BENCH)

# The Python frame reader alone (bench/pyframes.py), as an extension of the
# interpreter PY, built from preload/python*.c.
PY ?= python3
.PHONY: bench-pyframes
bench-pyframes: ## ns per Python frame on the hook path, cached and not (PY=python3.X)
	@mkdir -p $(BENCH_DIR)
	$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE -shared -fPIC $(WARN) -I. -Iinclude \
		-I"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		bench/pyframes.c preload/python.c preload/python-layouts.c \
		-o $(BENCH_DIR)/gmtpybench$$($(PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') -ldl -lpthread
	GMT_PYBENCH=$(BENCH_DIR) $(PY) bench/pyframes.py

# The Python package: the reader into Arrow against CSV + pandas, and the
# pytest plugin's cost per test (bench/python.sh; needs build/pyvenv).
.PHONY: bench-python
bench-python: bench-progs ## the Python reader's events/s into Arrow vs CSV + pandas, the pytest plugin's ms per test
	@BUILD=$(abspath $(BUILD)) bench/python.sh $(BENCH)

# gpumemtrace watch's own CPU and memory beside a program whose trace grows
# at 100k events a second, 10M events (bench/watch.sh; about 2 minutes).
.PHONY: bench-watch
bench-watch: bench-progs ## watch's CPU and memory as a share of a 100 s run writing 10M events
	@BUILD=$(abspath $(BUILD)) bench/watch.sh
# Naming frames after the run: 10k and 100k distinct frames in one compile
# unit, 10k stacks over 1,022 frames, nameless against named reports
# (bench/naming.sh; docs/performance.md, "Naming frames").
.PHONY: bench-naming
bench-naming: all sim ## naming speed: symbolize 10k/100k frames, reports on nameless vs named traces
	@BUILD=$(abspath $(BUILD)) bench/naming.sh

# PyTorch memory snapshots: gpumemtrace's reader against PyTorch's own
# _memory_viz.py on a large stand-in (bench/snapshot.sh; docs/performance.md,
# "Memory snapshots"; MEMVIZ=path when torch is not installed).
.PHONY: bench-snapshot
bench-snapshot: all ## snapshot reading: summary/replay/import vs _memory_viz.py stats/trace, time and memory
	@BUILD=$(abspath $(BUILD)) bench/snapshot.sh

# The per-process cost: one allocation, N short processes from one shell,
# untraced / traced / run / run naming after (bench/proccost.sh; BASE=lib.so
# adds a baseline library in the same rounds).
.PHONY: bench-proccost
bench-proccost: bench-progs ## ms and KB a short process pays for being traced (N processes of one allocation)
	@BUILD=$(abspath $(BUILD)) bench/proccost.sh

# The flush's lossless rate under an 8-thread burst paced to RATES, with
# GPUMEMTRACE_FULL_WAIT_MS=0 (never wait) and the default (bench/flushrate.sh).
.PHONY: bench-flushrate
bench-flushrate: bench-progs ## events/s the flush keeps up with, 8 threads, with and without waiting for ring space
	@BUILD=$(abspath $(BUILD)) bench/flushrate.sh
