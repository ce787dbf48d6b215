# Unit tests: every tests/unit/test-NAME.c is a program built to
# $(BUILD)/tests/unit/test-NAME; tests/run.sh runs each binary there.
#
# Each links the test-only trace builder (tests/tools) and one static
# library per layer (reader, model, analysis, capi, cli without its main, common,
# the preload core without its hooks), built from every source of the
# layer: the linker takes the objects the test needs, so no list is kept
# by hand. The hooks stay out: they define exit, dlsym and the CUDA entry
# points, which a test must get from libc and the simulated CUDA. A test
# that needs more libraries names them in UNIT_LIBS_test-NAME
# (tests/tests.mk).

UNIT_TESTS := $(patsubst tests/unit/%.c,$(TEST_BUILD)/unit/%,$(wildcard tests/unit/test-*.c))
# The layers' sources as the builds list them (the Makefile's LIB_SRCS,
# cli/cli.mk's CLI_SRCS, capi/capi.mk's CAPI_SRCS): a test links what ships.
UNIT_SRCS_ALL := $(sort $(LIB_SRCS) $(CLI_SRCS) $(CAPI_SRCS))
UNIT_LAYER_reader := $(filter reader/%,$(UNIT_SRCS_ALL))
UNIT_LAYER_analysis := $(filter analysis/%,$(UNIT_SRCS_ALL))
UNIT_LAYER_model := $(filter model/%,$(UNIT_SRCS_ALL))
UNIT_LAYER_capi := $(filter capi/%,$(UNIT_SRCS_ALL))
UNIT_LAYER_cli := $(filter-out cli/main.c,$(filter cli/%,$(UNIT_SRCS_ALL)))
UNIT_LAYER_common := $(filter common/%,$(UNIT_SRCS_ALL))
UNIT_LAYER_preload := $(filter-out preload/hooks/%,$(filter preload/%,$(UNIT_SRCS_ALL)))
UNIT_LAYER_NAMES := capi cli analysis model reader preload common
UNIT_LAYERS := $(foreach l,$(UNIT_LAYER_NAMES),$(UNIT_OBJ)/lib$(l).a)
UNIT_LINK_LIBS := -ldw -lelf -lz -lm -lunwind -ldl -lpthread

.PHONY: unit-tests
unit-tests: $(UNIT_TESTS) $(MKTRACE) ## build the unit tests and their tools

$(UNIT_OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -Itests/tools -MMD -MP -c $< -o $@

define UNIT_LAYER_RULE
$(UNIT_OBJ)/lib$(1).a: $(patsubst %.c,$(UNIT_OBJ)/%.o,$(UNIT_LAYER_$(1)))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(UNIT_LAYER_NAMES),$(eval $(call UNIT_LAYER_RULE,$(l))))

define UNIT_TEST_RULE
$(TEST_BUILD)/unit/$(1): $(UNIT_OBJ)/tests/unit/$(1).o $(UNIT_OBJ)/$(TRACE_BUILDER:.c=.o) $(UNIT_LAYERS)
	@mkdir -p $$(dir $$@)
	$$(CC) -o $$@ $(UNIT_OBJ)/tests/unit/$(1).o $(UNIT_OBJ)/$(TRACE_BUILDER:.c=.o) \
		-Wl,--start-group $(UNIT_LAYERS) -Wl,--end-group \
		$$(SAN_LDFLAGS) $$(LDFLAGS) $$(UNIT_LIBS_$(1)) $(UNIT_LINK_LIBS)
endef
$(foreach t,$(notdir $(UNIT_TESTS)),$(eval $(call UNIT_TEST_RULE,$(t))))

-include $(wildcard $(UNIT_OBJ)/*/*.d $(UNIT_OBJ)/*/*/*.d)
