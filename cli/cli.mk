# The gpumemtrace command-line tool: $(BUILD)/gpumemtrace.
# Objects under $(BUILD)/obj/cli/ (built without -fPIC, unlike the library's).

CLI := $(BUILD)/gpumemtrace
CLI_SRCS := $(wildcard cli/*.c analysis/*.c model/*.c reader/*.c) common/api.c common/text.c \
	common/chunk.c common/crc32c.c common/frameworks.c \
	common/symbolize.c common/symbolize-files.c common/symbolize-tables.c common/zstd.c
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/cli/%.o,$(CLI_SRCS))
CLI_LIBS := -ldw -lelf -lz -lm -ldl -lpthread

$(BUILD)/obj/cli/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(CLI): $(CLI_OBJS)
	$(CC) -o $@ $(CLI_OBJS) $(SAN_LDFLAGS) $(LDFLAGS) $(CLI_LIBS)

.PHONY: cli
cli: $(CLI) ## build the gpumemtrace command-line tool

-include $(CLI_OBJS:.o=.d)

# The man page's synopsis and options, docs/cli.md's synopses and flags
# table, and the bash completion come from the commands' option tables
# (t-cli-options-drift fails when they differ).
.PHONY: gen-docs
gen-docs: $(CLI) ## regenerate the option parts of the man page, docs/cli.md and the bash completion
	scripts/gen-docs.sh $(CLI)
