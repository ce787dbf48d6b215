# Tools the tests use, not tests themselves: trace-builder.c, a second,
# independent encoder of the trace format (linked into every unit test),
# and mktrace, which writes a trace from a script for the integration
# tests (built to $(BUILD)/tests/unit-tools/, which tests/run.sh does not run).

MKTRACE := $(TEST_BUILD)/unit-tools/mktrace
TRACE_BUILDER := tests/tools/trace-builder.c

$(MKTRACE): $(UNIT_OBJ)/tests/tools/mktrace.o $(UNIT_OBJ)/tests/tools/trace-builder.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(SAN_LDFLAGS) $(LDFLAGS)
