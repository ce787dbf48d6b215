/* Does what the NVTX v3 loader does, without NVIDIA's headers: dlopens
 * NVTX_INJECTION64_PATH, calls its InitializeInjectionNvtx2 with our own
 * export tables, then calls the slots the injection filled, from two
 * threads, around cudaMalloc calls on the simulated runtime.
 *
 * What it records (tests/integration/t-nvtx.sh checks the RANGE records):
 *   main:   push "outer"; push L"inner é"; cudaMalloc 1 MiB; pop; pop
 *           mark "checkpoint"; markEx "ex mark"
 *           start "load" (ended by the worker), startW L"wide start",
 *           startEx registered "registered start" (ended here)
 *           domain "mydomain": pushEx registered "step 1"; cudaMalloc;
 *           pop; markEx L"wide ✓"; startEx "dom range"; end
 *           odd attributes: markEx NULL, size 0, unknown type -> empty text
 *   worker: push "worker"; cudaMalloc 2 MiB; end "load"; pop
 * Prints what the calls returned, never addresses or ids. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <wchar.h>

#include "progs.h"

typedef void (*slot_fn)(void);
enum { CORE_SLOTS = 16, CORE2_SLOTS = 16 };

/* The loader's slots, and its tables of pointers to them. */
static slot_fn core[CORE_SLOTS], core2[CORE2_SLOTS];
static slot_fn *core_table[CORE_SLOTS + 1], *core2_table[CORE2_SLOTS + 1];
static int other_modules_asked;

static int get_module_table(int module, slot_fn ***table, unsigned *count)
{
	if (module == 1) {
		*table = core_table;
		*count = CORE_SLOTS;
		return 1;
	}
	if (module == 5) {
		*table = core2_table;
		*count = CORE2_SLOTS;
		return 1;
	}
	other_modules_asked++;
	return 0;
}

static struct {
	size_t size;
	int (*get)(int, slot_fn ***, unsigned *);
} callbacks = {sizeof callbacks, get_module_table};

static uint32_t tool_version;
static void set_tool_version(uint32_t v)
{
	tool_version = v;
}

static struct {
	size_t size;
	uint32_t version, reserved;
	void (*set)(uint32_t);
} version_info = {sizeof version_info, 3, 0, set_tool_version};

static const void *get_export_table(uint32_t id)
{
	return id == 1 ? (const void *)&callbacks : id == 3 ? (const void *)&version_info : NULL;
}

struct attributes {
	uint16_t version, size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type, reserved;
	uint64_t payload;
	int32_t message_type;
	const void *message;
};

static struct attributes attr(int type, const void *message)
{
	struct attributes a = {
	    .version = 3, .size = sizeof a, .message_type = type, .message = message};
	return a;
}

typedef uint64_t range_id;
#define CALL(table, slot, type) ((type)table[slot])
#define MARK_EX			CALL(core, 1, void (*)(const struct attributes *))
#define MARK_A			CALL(core, 2, void (*)(const char *))
#define START_EX		CALL(core, 4, range_id (*)(const struct attributes *))
#define START_A			CALL(core, 5, range_id (*)(const char *))
#define START_W			CALL(core, 6, range_id (*)(const wchar_t *))
#define END			CALL(core, 7, void (*)(range_id))
#define PUSH_EX			CALL(core, 8, int (*)(const struct attributes *))
#define PUSH_A			CALL(core, 9, int (*)(const char *))
#define PUSH_W			CALL(core, 10, int (*)(const wchar_t *))
#define POP			CALL(core, 11, int (*)(void))
#define D_MARK_EX		CALL(core2, 1, void (*)(void *, const struct attributes *))
#define D_START_EX		CALL(core2, 2, range_id (*)(void *, const struct attributes *))
#define D_END			CALL(core2, 3, void (*)(void *, range_id))
#define D_PUSH_EX		CALL(core2, 4, int (*)(void *, const struct attributes *))
#define D_POP			CALL(core2, 5, int (*)(void *))
#define D_REGISTER_A		CALL(core2, 10, void *(*)(void *, const char *))
#define D_REGISTER_W		CALL(core2, 11, void *(*)(void *, const wchar_t *))
#define D_CREATE_A		CALL(core2, 12, void *(*)(const char *))
#define D_DESTROY		CALL(core2, 14, void (*)(void *))

static range_id load_id;

static void *worker(void *arg)
{
	void *p;
	CHECK(PUSH_A("worker"), 0);
	CHECK(cudaMalloc(&p, 2 * MiB), cudaSuccess);
	END(load_id);
	CHECK(POP(), 0);
	CHECK(cudaFree(p), cudaSuccess);
	return NULL;
}

int main(void)
{
	for (int i = 0; i < CORE_SLOTS; i++)
		core_table[i] = &core[i];
	for (int i = 0; i < CORE2_SLOTS; i++)
		core2_table[i] = &core2[i];
	const char *path = getenv("NVTX_INJECTION64_PATH");
	void *lib = path ? dlopen(path, RTLD_LAZY) : NULL;
	int (*init)(const void *(*)(uint32_t)) =
	    lib ? (int (*)(const void *(*)(uint32_t)))dlsym(lib, "InitializeInjectionNvtx2") : NULL;
	int ok = init && init(get_export_table);
	printf("injection initialized: %s\n", ok ? "yes" : "no");
	if (!ok) {
		void *p;
		CHECK(cudaMalloc(&p, MiB), cudaSuccess);
		CHECK(cudaFree(p), cudaSuccess);
		return prog_failures != 0;
	}
	EXPECT(tool_version == 3);
	EXPECT(other_modules_asked == 0);
	int filled = 0;
	for (int i = 0; i < CORE_SLOTS; i++)
		filled += core[i] != NULL;
	EXPECT(filled == 11); /* 1..11; the naming calls 12..15 stay the loader's */
	EXPECT(core2[6] == NULL && core2[8] == NULL && core2[15] == NULL);

	void *a, *b;
	CHECK(PUSH_A("outer"), 0);
	CHECK(PUSH_W(L"inner \u00e9"), 1);
	CHECK(cudaMalloc(&a, MiB), cudaSuccess);
	CHECK(POP(), 1);
	CHECK(POP(), 0);
	MARK_A("checkpoint");
	struct attributes ex = attr(1, "ex mark");
	MARK_EX(&ex);

	load_id = START_A("load");
	range_id wide_id = START_W(L"wide start");
	void *plain = D_REGISTER_A(NULL, "registered start");
	struct attributes reg = attr(3, plain);
	range_id reg_id = START_EX(&reg);
	EXPECT(load_id && wide_id && reg_id && load_id != wide_id && wide_id != reg_id &&
	       load_id != reg_id);
	END(reg_id);
	END(wide_id);

	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);

	void *dom = D_CREATE_A("mydomain");
	EXPECT(dom != NULL && D_CREATE_A("mydomain") == dom);
	void *step = D_REGISTER_A(dom, "step 1");
	struct attributes s1 = attr(3, step);
	CHECK(D_PUSH_EX(dom, &s1), 0);
	CHECK(cudaMalloc(&b, MiB), cudaSuccess);
	CHECK(D_POP(dom), 0);
	struct attributes wm = attr(2, L"wide \u2713");
	D_MARK_EX(dom, &wm);
	struct attributes dr = attr(1, "dom range");
	range_id dom_id = D_START_EX(dom, &dr);
	D_END(dom, dom_id);
	void *wreg = D_REGISTER_W(dom, L"wide registered");
	struct attributes wr = attr(3, wreg);
	D_MARK_EX(dom, &wr);
	D_DESTROY(dom);

	/* Odd attributes: recorded with an empty text, never a crash. */
	MARK_EX(NULL);
	struct attributes tiny = attr(1, "too short");
	tiny.size = 8;
	MARK_EX(&tiny);
	struct attributes unknown = attr(99, "unknown type");
	MARK_EX(&unknown);
	CHECK(PUSH_EX(NULL), 0);
	CHECK(POP(), 0);
	CHECK(POP(), -1); /* nothing pushed */

	CHECK(cudaFree(a), cudaSuccess);
	CHECK(cudaFree(b), cudaSuccess);
	return prog_failures != 0;
}
