# Unit tests: every tests/unit/test-NAME.c is a program built to
# $(BUILD)/tests/unit/test-NAME; tests/run.sh runs each binary there.
# Each links the trace reader, CRC-32C, the test-only trace builder
# (tests/tools) and -lpthread; a test that needs more lists its extra .c
# files in UNIT_SRCS_test-NAME (tests/tests.mk) and its libraries in
# UNIT_LIBS_test-NAME.

UNIT_TESTS := $(patsubst tests/unit/%.c,$(TEST_BUILD)/unit/%,$(wildcard tests/unit/test-*.c))
UNIT_COMMON := reader/reader.c reader/chunks.c reader/records.c reader/pickle.c reader/torchsnap.c \
	reader/snapimport.c reader/twrite.c common/crc32c.c common/zstd.c $(TRACE_BUILDER)

.PHONY: unit-tests
unit-tests: $(UNIT_TESTS) $(MKTRACE) ## build the unit tests and their tools

$(UNIT_OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -Itests/tools -MMD -MP -c $< -o $@

unit_objs = $(patsubst %.c,$(UNIT_OBJ)/%.o,$(UNIT_COMMON) $(UNIT_SRCS_$(1)))

define UNIT_TEST_RULE
$(TEST_BUILD)/unit/$(1): $(UNIT_OBJ)/tests/unit/$(1).o $(call unit_objs,$(1))
	@mkdir -p $$(dir $$@)
	$$(CC) -o $$@ $$^ $$(SAN_LDFLAGS) $$(LDFLAGS) $$(UNIT_LIBS_$(1)) -ldl -lpthread
endef
$(foreach t,$(notdir $(UNIT_TESTS)),$(eval $(call UNIT_TEST_RULE,$(t))))

-include $(wildcard $(UNIT_OBJ)/*/*.d $(UNIT_OBJ)/*/*/*.d)
