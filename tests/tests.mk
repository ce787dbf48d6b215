# Tests: the simulated CUDA, the programs the integration tests trace, the
# tools, unit tests and the runner. Each part keeps its rules in its own
# fragment.
#
# Conventions (tests/README.md):
#   tests/unit/test-NAME.c     -> $(BUILD)/tests/unit/test-NAME, run directly
#   tests/integration/t-*.sh   -> run by tests/run.sh with BUILD, GMT_LIB,
#                                 GMT_CLI, SIM_DIR, PROG_DIR, TESTS_DIR exported
# Exit 0 passes, 77 skips, anything else fails. `make check T=substring`
# runs some; J=N runs N at a time (default: the CPU count).

TEST_BUILD := $(BUILD)/tests
SIM_DIR := $(BUILD)/sim
PROG_DIR := $(TEST_BUILD)/progs
UNIT_OBJ := $(BUILD)/obj/unit

include tests/sim/sim.mk
include tests/progs/progs.mk
include tests/emu/emu.mk
include tests/tools/tools.mk
# Unit tests link the pieces they test.
UNIT_SRCS_test-ring := preload/ring.c
UNIT_SRCS_test-stacks := preload/stacks.c
UNIT_SRCS_test-clock := preload/clock.c
UNIT_SRCS_test-callers := preload/callers.c
# The writer against the reader: the writer's three files and what they use.
UNIT_SRCS_test-writer := preload/writer.c preload/encode.c preload/procinfo.c common/frameworks.c preload/stacks.c \
	preload/modules.c preload/clock.c common/symbolize.c common/log.c
UNIT_LIBS_test-writer := -ldw -lelf
UNIT_SRCS_test-python-layouts := preload/python-layouts.c
UNIT_SRCS_test-python-walk := preload/python.c preload/python-layouts.c
UNIT_LIBS_test-python-walk := -rdynamic # python.c finds the fake CPython with dlsym
# The analysis layer: without trace.c, or with it (and what it needs).
UNIT_ANALYSIS := common/api.c common/text.c common/frameworks.c reader/diag.c reader/xalloc.c
UNIT_TRACE := analysis/trace.c analysis/trace-records.c analysis/trace-stacks.c analysis/sites.c \
	analysis/frameworks.c \
	analysis/trace-rows.c analysis/replay.c analysis/counters.c analysis/fwhist.c common/symbolize.c \
	$(UNIT_ANALYSIS)
UNIT_SRCS_test-reorder := analysis/replay.c $(UNIT_ANALYSIS)
UNIT_SRCS_test-replay := analysis/replay.c $(UNIT_ANALYSIS)
UNIT_SRCS_test-peakset := analysis/peakset.c analysis/replay.c $(UNIT_ANALYSIS)
UNIT_SRCS_test-phase := analysis/phase.c analysis/replay.c $(UNIT_ANALYSIS)
UNIT_SRCS_test-snapshot := analysis/snapshot.c $(UNIT_TRACE)
UNIT_SRCS_test-check-measure := analysis/check-measure.c $(UNIT_TRACE)
UNIT_SRCS_test-report-base := analysis/report-base.c cli/report-print.c cli/output.c cli/options.c $(UNIT_TRACE)
UNIT_SRCS_test-fragmentation := analysis/fragmentation.c $(UNIT_TRACE)
UNIT_SRCS_test-follow := capi/follow.c analysis/phase.c $(UNIT_TRACE)
UNIT_SRCS_test-live := analysis/live.c $(UNIT_TRACE)
UNIT_SRCS_test-oom := analysis/oom.c analysis/oom-judge.c analysis/accounting.c analysis/peakset.c \
	analysis/report-base.c $(UNIT_TRACE)
UNIT_SRCS_test-accounting := analysis/accounting.c cli/accounting-print.c analysis/peakset.c \
	cli/report-print.c cli/output.c cli/options.c analysis/report-base.c $(UNIT_TRACE)
UNIT_SRCS_test-growth := analysis/growth.c analysis/growth-verdict.c analysis/report-base.c $(UNIT_TRACE)
UNIT_SRCS_test-counters := analysis/fragmentation.c $(UNIT_TRACE)
UNIT_SRCS_test-fwhist := $(UNIT_TRACE)
UNIT_SRCS_test-fwoom-msg := analysis/fwoom-msg.c
UNIT_LIBS_TRACE := -ldw -lelf -lz -lm
UNIT_LIBS_test-snapshot := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-check-measure := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-report-base := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-fragmentation := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-follow := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-live := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-oom := $(UNIT_LIBS_TRACE)
UNIT_SRCS_test-sites := $(UNIT_TRACE)
UNIT_SRCS_test-frameworks := $(UNIT_TRACE)
UNIT_LIBS_test-frameworks := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-sites := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-accounting := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-growth := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-counters := $(UNIT_LIBS_TRACE)
UNIT_LIBS_test-fwhist := $(UNIT_LIBS_TRACE)
UNIT_SRCS_test-peak-watch := analysis/replay.c $(UNIT_ANALYSIS)
# explain reads the other aggregators: all their files, however they split
UNIT_SRCS_test-explain := $(wildcard analysis/explain*.c analysis/growth*.c analysis/oom*.c) \
	analysis/accounting.c analysis/peakset.c analysis/report-base.c $(UNIT_TRACE)
UNIT_LIBS_test-explain := $(UNIT_LIBS_TRACE)
include tests/unit/unit.mk
include tests/golden/golden.mk
include tests/fuzz/fuzz.mk

.PHONY: test check
test: ## install what is missing, build everything, run every test (last line: N passed, N failed)
	@scripts/install-deps.sh --quiet
	@$(MAKE) --no-print-directory check

check: all sim progs emu-progs life-progs stress-progs demo-prog unit-tests ## build and run every test (T=substring: some; J=N: N at a time), without the dependency check
	@BUILD=$(abspath $(BUILD)) CUDA_HOME=$(CUDA_HOME) SANITIZE=$(SANITIZE) CC=$(CC) \
		$(if $(J),JOBS=$(J)) tests/run.sh $(T)

# ThreadSanitizer over the ring buffer's stress unit test, in its own build.
.PHONY: check-tsan
check-tsan: ## build and run the ring stress unit test under TSan (BUILD=build-tsan)
	@$(MAKE) --no-print-directory BUILD=build-tsan SANITIZE=thread build-tsan/tests/unit/test-ring
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/test-ring
