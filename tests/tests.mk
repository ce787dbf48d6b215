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
# Unit tests link per-layer static libraries (tests/unit/unit.mk): only a
# test's extra libraries are listed here.
UNIT_LIBS_test-python-walk := -rdynamic # python.c finds the fake CPython with dlsym
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

# ThreadSanitizer over the ring buffer's stress unit test, in its own build
# (-Wno-tsan: gcc warns that TSan ignores fences, which the per-layer
# library's clock.c has; warnings are errors in a checkout).
.PHONY: check-tsan
check-tsan: ## build and run the ring stress unit test under TSan (BUILD=build-tsan)
	@$(MAKE) --no-print-directory BUILD=build-tsan SANITIZE=thread CFLAGS=-Wno-tsan build-tsan/tests/unit/test-ring
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/unit/test-ring
