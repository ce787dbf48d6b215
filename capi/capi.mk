# libgpumemtrace-reader.so: traces as tables for other languages (the
# Python package's reader, include/gpumemtrace/trace-reader.h). The reader
# and analysis sources again, as position-independent objects under
# $(BUILD)/obj/capi/; only the gmtr_* functions are exported.

READER_LIB := $(BUILD)/libgpumemtrace-reader.so
# The CLI's reading side (cli/cli.mk's list, less cli/ itself): one list.
CAPI_SRCS := $(wildcard capi/*.c) $(filter-out cli/%,$(CLI_SRCS))
CAPI_OBJS := $(patsubst %.c,$(BUILD)/obj/capi/%.o,$(CAPI_SRCS))
CAPI_LIBS := -ldw -lelf -lm -ldl -lpthread

$(BUILD)/obj/capi/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/reader.map: capi/capi.mk
	@mkdir -p $(dir $@)
	printf '{\n  global:\n    gmtr_*;\n  local: *;\n};\n' >$@

$(READER_LIB): $(CAPI_OBJS) $(BUILD)/reader.map
	$(CC) -shared -o $@ $(CAPI_OBJS) -Wl,--version-script=$(BUILD)/reader.map -Wl,-z,defs \
		$(SAN_LDFLAGS) $(LDFLAGS) $(CAPI_LIBS)

.PHONY: reader-lib
reader-lib: $(READER_LIB) ## build libgpumemtrace-reader.so, the trace reader for Python and other languages

-include $(CAPI_OBJS:.o=.d)
