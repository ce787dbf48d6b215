# Fuzzing the trace reader and every CLI command with libFuzzer (clang and
# libclang-rt-14-dev): `make fuzz [FUZZ_SECONDS=300]`. The corpus starts from
# the golden traces, tests/fuzz/seeds/*.txt (mktrace scripts) and the
# PyTorch snapshot pickles tests/fuzz/seeds/*.pickle (tests/python/snapgen.py,
# which every command reads through the pickle reader); crashes are
# written to $(FUZZ_DIR)/crash-*; add each to tests/fuzz/regressions/, which
# integration/t-fuzz-regressions replays in `make check`.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz-reader
# The CLI's own sources (cli/cli.mk), less its main: one list to keep.
FUZZ_SRCS := tests/fuzz/fuzz-reader.c $(filter-out cli/main.c,$(CLI_SRCS))
FUZZ_FLAGS := -std=gnu11 -O1 -g -D_GNU_SOURCE -DGMT_VERSION='"$(VERSION)"' -I. -Iinclude \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_BIN): $(FUZZ_SRCS) $(wildcard cli/*.h analysis/*.h model/*.h reader/*.h common/*.h \
		include/gpumemtrace/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_SRCS) -o $@ -ldw -lelf -lz -lm -ldl -lpthread

.PHONY: fuzz-build fuzz-corpus fuzz
fuzz-build: $(FUZZ_BIN) ## build the libFuzzer target (clang)

fuzz-corpus: $(MKTRACE)
	@mkdir -p $(FUZZ_DIR)/corpus
	@cp tests/golden/*.gmt tests/fuzz/regressions/* tests/fuzz/seeds/*.pickle $(FUZZ_DIR)/corpus/ \
		2>/dev/null || true
	@for s in tests/fuzz/seeds/*.txt; do \
		$(MKTRACE) $(FUZZ_DIR)/corpus/seed-$$(basename $$s .txt).gmt <$$s || exit 1; done

fuzz: $(FUZZ_BIN) fuzz-corpus ## fuzz the reader and every command for FUZZ_SECONDS (300)
	@cd $(FUZZ_DIR) && rc=0; ASAN_OPTIONS=detect_leaks=0 ./fuzz-reader \
		-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		-max_len=65536 -close_fd_mask=2 -print_final_stats=1 corpus >fuzz.log 2>&1 || rc=$$?; \
		grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|Test unit written' fuzz.log; \
		echo "fuzz: exit $$rc, log in $(FUZZ_DIR)/fuzz.log"; exit $$rc
