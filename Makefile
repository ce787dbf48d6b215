# gpumemtrace: `make help` lists the targets.
#
# The library never links libcuda or libcudart: it finds them at run time.
# Everything builds and tests without a GPU or the CUDA toolkit.

# The one version: the CLI's --version, the man pages (make gen-docs),
# gpumemtrace.pc and the Python package (setup.py reads it here) derive from it.
VERSION := 0.1.0
PREFIX ?= /usr/local
BUILD ?= build
CC ?= cc
CUDA_HOME ?= /usr/local/cuda
SANITIZE ?=

# Warnings are errors in `make check`/`make test` (CI) and in a git checkout
# (developers); a release's plain `make` (no .git: a tarball, pip's sdist)
# only warns, so a newer compiler's new warning never stops a user's build.
# WERROR=0/1 decides it.
WERROR ?= $(if $(filter check check-% test,$(MAKECMDGOALS))$(wildcard .git),1,0)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
	-Wno-unused-parameter $(if $(filter 1,$(WERROR)),-Werror)
BASE_CFLAGS := -std=gnu11 -O2 -g -fno-omit-frame-pointer -D_GNU_SOURCE $(WARN) \
	-DGMT_VERSION='"$(VERSION)"' -I. -Iinclude
ifneq ($(SANITIZE),)
BASE_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=$(SANITIZE)
endif
CFLAGS ?=
LDFLAGS ?=
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)

# ---- the preload library ----------------------------------------------
LIB := $(BUILD)/libgpumemtrace.so
# What the library links, listed: the core, its hooks and the shared code
# it needs (make check-layers keeps the rest of common/ out).
LIB_SRCS := $(wildcard preload/*.c preload/hooks/*.c) common/symbolize.c common/symbolize-files.c common/symbolize-tables.c \
	common/chunk.c common/crc32c.c common/log.c common/zstd.c common/frameworks.c
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/lib/%.o,$(LIB_SRCS))
LIB_LIBS := -lunwind -ldw -lelf -ldl -lpthread

.PHONY: all
all: $(LIB) $(BUILD)/gpumemtrace $(BUILD)/libgpumemtrace-reader.so

# ASan's start-up calls dlsym, which ours answers before ASan's shadow
# memory exists: the lookup path stays out of ASan (UBSan still applies).
ifneq ($(findstring address,$(SANITIZE)),)
$(BUILD)/obj/lib/preload/real.o $(BUILD)/obj/lib/preload/hooks/lookup.o: CFLAGS += -fno-sanitize=address
endif
$(BUILD)/obj/lib/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -ftls-model=initial-exec -MMD -MP -c $< -o $@

# The version script: exports.map.in with common/cuda-api.h's hook lists
# expanded, one name a line.
LIB_MAP := $(BUILD)/exports.map
$(LIB_MAP): preload/hooks/exports.map.in common/cuda-api.h
	@mkdir -p $(dir $@)
	$(CC) -E -P -x c -I. $< | sed 's/; *\([^ ]\)/;\n    \1/g' >$@.tmp
	mv $@.tmp $@

$(LIB): $(LIB_OBJS) $(LIB_MAP)
	$(CC) -shared -o $@ $(LIB_OBJS) -Wl,--version-script=$(LIB_MAP) \
		-Wl,-z,defs -Wl,-z,now -Wl,-Bsymbolic $(SAN_LDFLAGS) $(LDFLAGS) $(LIB_LIBS)

-include $(LIB_OBJS:.o=.d)

# ---- the CLI, the simulated CUDA, the tests ----------------------------
include cli/cli.mk
include capi/capi.mk
include tests/tests.mk
include bench/bench.mk

# ---- the demo workload ---------------------------------------------------
DEMO := $(BUILD)/examples/train-loop
.PHONY: demo-prog
demo-prog: $(DEMO)
$(DEMO): examples/train-loop.c common/cuda-types.h | sim
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ -L$(SIM_DIR) -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN/../sim'

# ---- install -----------------------------------------------------------
.PHONY: install
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/gpumemtrace
	install -m 0755 $(LIB) $(READER_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(BUILD)/gpumemtrace $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/gpumemtrace/*.h $(DESTDIR)$(PREFIX)/include/gpumemtrace/
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man7 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' share/gpumemtrace.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/gpumemtrace.pc
	install -m 0644 share/man/gpumemtrace.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 share/man/gpumemtrace.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -d $(DESTDIR)$(PREFIX)/share/gpumemtrace/counters
	install -m 0644 python/gpumemtrace/_counters/sitecustomize.py $(DESTDIR)$(PREFIX)/share/gpumemtrace/counters/
	install -m 0644 share/completion/gpumemtrace.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/gpumemtrace

.PHONY: demo
demo: ## build everything, trace the bundled training-loop sample on the simulated GPU, print its summary
	@scripts/install-deps.sh --quiet
	@$(MAKE) --no-print-directory all sim demo-prog
	@scripts/demo.sh $(BUILD)

.PHONY: deps
deps: ## install the Debian packages the build and tests need
	scripts/install-deps.sh

.PHONY: format
format: ## clang-format every C source in place
	clang-format -i $$(git ls-files '*.c' '*.h')

.PHONY: format-check
format-check: ## check every C source against .clang-format (skips if clang-format is absent)
	@if command -v clang-format >/dev/null; then \
		clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && echo "format-check: clean"; \
	else echo "format-check: clang-format not installed, skipped"; fi

.PHONY: check-layers
check-layers: all ## check that every include and call between our objects follows the layers (docs/design.md)
	@python3 scripts/check-layers.py $(BUILD)

.PHONY: clean
clean: ## remove build/
	rm -rf $(BUILD)

.PHONY: help
help: ## list the targets
	@echo "gpumemtrace make targets:"
	@echo "  all            build $(LIB) and $(BUILD)/gpumemtrace (default)"
	@echo "  install        install lib/, bin/, include/, pkg-config, man pages, bash completion under DESTDIR+PREFIX=$(PREFIX)"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sort | \
		awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
	@echo "Variables: PREFIX, BUILD, CC, CUDA_HOME, SANITIZE=address,undefined"
