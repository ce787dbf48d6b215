/* reader/reader.c against traces written by tests/tools/trace-builder.c, an
 * independent encoder of format v1. One line per check; exits 1 on failure. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/codec.h"
#include "check.h"
#include "reader/reader.h"
#include "trace-builder.h"

static char dir[] = "/tmp/gmt-test-reader.XXXXXX";

static const char *path_for(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static const char *write_bytes(const char *name, const void *p, size_t len)
{
	const char *path = path_for(name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
	return path;
}

static int streq(struct gmt_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0 && s.s[s.len] == 0;
}

/* What a full read of a file gave. */
struct readout {
	int open_code, errnum;
	char msg[256];
	uint64_t records, events, chunks, last_chunk_index;
	struct gmt_read_info info;
	int last_type;
};

static struct readout read_all(const char *path)
{
	struct readout o = {0};
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	o.open_code = r ? GMT_READ_OK : (int)err.code;
	o.errnum = r ? 0 : err.errnum;
	snprintf(o.msg, sizeof(o.msg), "%s", r ? "" : err.msg);
	if (!r)
		return o;
	struct gmt_record rec;
	while (gmt_reader_next(r, &rec)) {
		if (rec.type == GMT_REC_CHUNK) {
			o.chunks++;
			o.last_chunk_index = rec.u.chunk.index;
			continue;
		}
		if (rec.type == GMT_REC_EVENT)
			o.events++;
		else
			o.records++;
		o.last_type = rec.type;
	}
	o.info = *gmt_reader_info(r);
	gmt_reader_close(r);
	return o;
}

/* ---- every record type round-trips ------------------------------------ */

static const struct tb_event events_in[] = {
    /* time, api, result, device, ptr, size, aux, aux2, stack */
    {1000, GMT_API_cudaMalloc, 0, 0, 0x7f0000000000, 4096, 0, 0, 3},
    {1010, GMT_API_cuMemAlloc_v2, 0, 1, 0x7f0000001000, 1 << 20, 0, 0, 2}, /* device change */
    {1010, GMT_API_cudaFree, 0, 1, 0x7f0000000000, 0, 0, 0, 1},		   /* negative delta */
    {5000, GMT_API_cudaMalloc, 2, 1, 0, 1ull << 40, 0, 0, 3},		   /* failed */
    {5001, GMT_API_cudaMallocPitch, 0, -1, 0x10, 512 * 100, 512, 500, 0},  /* aux, aux2, dev -1 */
    {5002, GMT_API_cuMemMap, 0, 0, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX},
    {5003, GMT_API_cuMemUnmap, UINT64_MAX, INT64_MIN, 0, 0, 0, 0, 0}, /* extremes back to 0 */
    {UINT64_MAX, 63, 0, INT64_MAX, 1, 1, 1, 0, 1},		      /* max time, api 63 */
};
#define NEV (sizeof(events_in) / sizeof(events_in[0]))

static void build_full(struct tb *b)
{
	const char *argv[] = {"./train", "--epochs", "3", "with space"};
	const char *keys[] = {"CUDA_VISIBLE_DEVICES", "EMPTY"};
	const char *vals[] = {"0,1", ""};
	static const uint8_t bid[] = {0xde, 0xad, 0xbe, 0xef, 0x00, 0x01};
	static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	tb_process(b, 4242, 1, 1700000000000000000ull, "host-1", "/usr/bin/python3", 4, argv, 2,
		   keys, vals);
	tb_module(b, 1, 0x7f1200000000, 0x7f1200001000, 0x7f1200400000, "/usr/lib/libcudart.so.12",
		  bid, sizeof(bid));
	tb_module(b, 2, 0, 0x400000, 0x500000, "/work/app", NULL, 0);
	tb_device(b, 0, "NVIDIA H100 80GB HBM3", uuid, 16, 85899345920ull, 9, 0, 12040);
	tb_device(b, -1, "", NULL, 0, 0, 0, 0, 0);
	uint64_t par1[] = {0, 1}, ip1[] = {0x401000, 0x7f1200002000};
	tb_stack(b, 2, par1, ip1);
	tb_chunk(b);
	uint64_t par2[] = {2}, ip2[] = {UINT64_MAX};
	tb_stack(b, 1, par2, ip2);
	tb_thread(b, 77, "worker-0");
	tb_events_begin(b, 77, 900);
	for (size_t i = 0; i < NEV; i++)
		tb_event(b, &events_in[i]);
	tb_events_end(b);
	tb_events_begin(b, 78, 50); /* an empty batch */
	tb_events_end(b);
	tb_lost(b, 78, 12, 6000);
	tb_symbol(b, 0x401000, 2, "train_step", "train.c", 42);
	tb_symbol(b, 0x7f1200002000, 1, "", "", 0);
	tb_note(b, 1, "ring full");
	tb_meminfo(b, 4242, 6500, -1, 123456789, UINT64_MAX, GMT_API_cuMemCreate);
	tb_sample(b, 6600, 3, (const uint8_t *)"0123456789abcdef", 16, 5ull << 30, 80ull << 30,
		  GMT_SAMPLE_PROCESS_KNOWN, 3ull << 30, GMT_SAMPLE_WHY_PEAK);
	tb_range(b, 4242, 6700, GMT_RANGE_PUSH, 0, GMT_RANGE_SRC_NVTX, "forward");
	tb_pyframe(b, 7, "train_step", "train.py", 42);
	static const char *const names[] = {"allocated_bytes.all.current", "num_ooms"};
	static const uint64_t values[] = {3ull << 30, 2};
	tb_counters(b, 4242, 6800, GMT_COUNTERS_WHY_OOM, "torch", "cuda:1", 1, 2, names, values);
	static const char *const fk[] = {"expandable_segments"}, *const fv[] = {"True"};
	tb_fwsnap(b, 4242, 6900, 1700000000000006900ull, 3, GMT_FWSNAP_WHY_OOM, "torch",
		  GMT_FWSNAP_HISTORY | GMT_FWSNAP_PY_STACKS, 100000, 1, fk, fv);
	static const struct tb_fw_entry fe[] = {
	    {GMT_FW_ALLOC, 0x7f0000100000, 4096, 7, 1700000000000006ull, 3},
	    {GMT_FW_OOM, 123, UINT64_MAX, 0, 1700000000000005ull, 0}, /* back in time */
	    {99, UINT64_MAX, 1, UINT64_MAX, 0, 1},		      /* an action no build knows */
	};
	tb_fwtrace(b, 3, -1, GMT_FWTRACE_GAP, 3, fe);
	static const struct tb_fw_block fb[] = {
	    {0x7f0000100000, 4096, 4000, GMT_FWBLOCK_ACTIVE_ALLOCATED, 3},
	    {0x7f0000101200, 1024, 0, 7, 0}, /* 512 bytes after the first: a gap */
	};
	tb_fwseg(b, 3, 1, 0x7f0000100000, 2 << 20, 7, GMT_FWSEG_SMALL | GMT_FWSEG_EXPANDABLE, 2, 2,
		 fb);
	static const char *const fnames[] = {"alloc_size", "device_free"};
	static const uint64_t fvalues[] = {20ull << 20, 0};
	tb_fwoom(b, 4243, 6900, GMT_FWOOM_THREAD, "torch", "torch.OutOfMemoryError", -1, 2, fnames,
		 fvalues, "CUDA out of memory.\nTried to allocate 20.00 MiB.");
	tb_chunk(b);
	tb_exit(b, 6950, GMT_EXIT__EXIT, -3, 0);
	tb_trailer(b, 7000, NEV, 12, 3, GMT_END_EXIT);
}

static void test_roundtrip(void)
{
	struct tb_header h = {.features = GMT_FEAT_STACKS,
			      .start_wall_ns = 1700000000000000000ull,
			      .start_mono_ns = 123456789,
			      .pid = 4242};
	struct tb *b = tb_new(&h);
	build_full(b);
	const char *path = path_for("full.gmt");
	tb_write(b, path);
	size_t len;
	tb_data(b, &len);

	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	CHECK(r != NULL, "roundtrip: opens (%s)", r ? "" : err.msg);
	if (!r)
		return;
	const struct gmt_header *hd = gmt_reader_header(r);
	CHECK(hd->version == GMT_FORMAT_VERSION && hd->header_size == 64 && hd->endian == 1 &&
		  hd->features == GMT_FEAT_STACKS && hd->start_wall_ns == 1700000000000000000ull &&
		  hd->start_mono_ns == 123456789 && hd->pid == 4242,
	      "roundtrip: header fields");

	for (int pass = 0; pass < 2; pass++) {
		struct gmt_record rec;
		int seen[128] = {0};
		size_t ev = 0, modules = 0, devices = 0, stacks = 0, symbols = 0, batches = 0;
		int ok_ev = 1, ok = 1;
		uint64_t expect_node = 1;
		while (gmt_reader_next(r, &rec)) {
			seen[rec.type]++;
			switch (rec.type) {
			case GMT_REC_PROCESS: {
				typeof(rec.u.process) *p = &rec.u.process;
				CHECK(p->pid == 4242 && p->ppid == 1 &&
					  p->start_wall_ns == 1700000000000000000ull &&
					  streq(p->hostname, "host-1") &&
					  streq(p->exe, "/usr/bin/python3") && p->argc == 4 &&
					  streq(p->argv[0], "./train") &&
					  streq(p->argv[3], "with space") && p->nenv == 2 &&
					  streq(p->env[0].key, "CUDA_VISIBLE_DEVICES") &&
					  streq(p->env[0].value, "0,1") &&
					  streq(p->env[1].key, "EMPTY") &&
					  streq(p->env[1].value, ""),
				      "roundtrip[%d]: PROCESS", pass);
				break;
			}
			case GMT_REC_MODULE:
				if (modules++ == 0)
					CHECK(rec.u.module.id == 1 &&
						  rec.u.module.load_bias == 0x7f1200000000 &&
						  rec.u.module.start == 0x7f1200001000 &&
						  rec.u.module.end == 0x7f1200400000 &&
						  streq(rec.u.module.path,
							"/usr/lib/libcudart.so.12") &&
						  rec.u.module.build_id.len == 6 &&
						  memcmp(rec.u.module.build_id.p,
							 "\xde\xad\xbe\xef\x00\x01", 6) == 0,
					      "roundtrip[%d]: MODULE", pass);
				else
					CHECK(rec.u.module.id == 2 &&
						  rec.u.module.build_id.len == 0 &&
						  streq(rec.u.module.path, "/work/app"),
					      "roundtrip[%d]: MODULE without build-id", pass);
				break;
			case GMT_REC_DEVICE:
				if (devices++ == 0)
					CHECK(
					    rec.u.device.ordinal == 0 &&
						streq(rec.u.device.name, "NVIDIA H100 80GB HBM3") &&
						rec.u.device.uuid.len == 16 &&
						rec.u.device.uuid.p[15] == 16 &&
						rec.u.device.total_bytes == 85899345920ull &&
						rec.u.device.cc_major == 9 &&
						rec.u.device.cc_minor == 0 &&
						rec.u.device.driver_version == 12040,
					    "roundtrip[%d]: DEVICE", pass);
				else
					CHECK(rec.u.device.ordinal == -1 &&
						  rec.u.device.name.len == 0,
					      "roundtrip[%d]: DEVICE with ordinal -1", pass);
				break;
			case GMT_REC_STACK:
				stacks++;
				for (size_t i = 0; i < rec.u.stack.count; i++)
					if (rec.u.stack.nodes[i].id != expect_node++)
						ok = 0;
				if (stacks == 1)
					CHECK(ok && rec.u.stack.count == 2 &&
						  rec.u.stack.nodes[0].parent == 0 &&
						  rec.u.stack.nodes[0].ip == 0x401000 &&
						  rec.u.stack.nodes[1].parent == 1 &&
						  rec.u.stack.nodes[1].ip == 0x7f1200002000,
					      "roundtrip[%d]: STACK nodes 1,2", pass);
				else
					CHECK(ok && rec.u.stack.count == 1 &&
						  rec.u.stack.nodes[0].id == 3 &&
						  rec.u.stack.nodes[0].parent == 2 &&
						  rec.u.stack.nodes[0].ip == UINT64_MAX,
					      "roundtrip[%d]: STACK ids continue across records "
					      "and chunks (3)",
					      pass);
				break;
			case GMT_REC_THREAD:
				CHECK(rec.u.thread.tid == 77 &&
					  streq(rec.u.thread.name, "worker-0"),
				      "roundtrip[%d]: THREAD", pass);
				break;
			case GMT_REC_EVENTS:
				if (batches++ == 0)
					CHECK(rec.u.events.tid == 77 &&
						  rec.u.events.base_time_ns == 900 &&
						  rec.u.events.count == NEV,
					      "roundtrip[%d]: EVENTS batch head", pass);
				else
					CHECK(rec.u.events.tid == 78 && rec.u.events.count == 0,
					      "roundtrip[%d]: empty EVENTS batch", pass);
				break;
			case GMT_REC_EVENT: {
				const struct gmt_event *e = &rec.u.event;
				const struct tb_event *w = &events_in[ev < NEV ? ev : 0];
				int same = ev < NEV && e->index == ev && e->time_ns == w->time_ns &&
					   e->tid == 77 && e->api == w->api &&
					   e->result == w->result && e->device == w->device &&
					   e->ptr == w->ptr && e->size == w->size &&
					   e->aux == w->aux && e->aux2 == w->aux2 &&
					   e->stack_id == w->stack_id &&
					   !!(e->flags & GMT_EV_FAILED) == !!w->result;
				if (!same) {
					ok_ev = 0;
					printf("     event %zu: got t=%" PRIu64
					       " api=%u res=%" PRIu64 " dev=%" PRId64
					       " ptr=%#" PRIx64 " size=%" PRIu64 " aux=%" PRIu64
					       " aux2=%" PRIu64 " stk=%" PRIu64 "\n",
					       ev, e->time_ns, e->api, e->result, e->device, e->ptr,
					       e->size, e->aux, e->aux2, e->stack_id);
				}
				ev++;
				break;
			}
			case GMT_REC_LOST:
				CHECK(rec.u.lost.tid == 78 && rec.u.lost.count == 12 &&
					  rec.u.lost.time_ns == 6000,
				      "roundtrip[%d]: LOST", pass);
				break;
			case GMT_REC_SYMBOL:
				if (symbols++ == 0)
					CHECK(rec.u.symbol.ip == 0x401000 &&
						  rec.u.symbol.module_id == 2 &&
						  streq(rec.u.symbol.function, "train_step") &&
						  streq(rec.u.symbol.file, "train.c") &&
						  rec.u.symbol.line == 42,
					      "roundtrip[%d]: SYMBOL", pass);
				else
					CHECK(streq(rec.u.symbol.function, "") &&
						  rec.u.symbol.line == 0,
					      "roundtrip[%d]: SYMBOL unknown", pass);
				break;
			case GMT_REC_NOTE:
				CHECK(rec.u.note.level == 1 && streq(rec.u.note.text, "ring full"),
				      "roundtrip[%d]: NOTE", pass);
				break;
			case GMT_REC_MEMINFO:
				CHECK(rec.u.meminfo.tid == 4242 && rec.u.meminfo.time_ns == 6500 &&
					  rec.u.meminfo.device == -1 &&
					  rec.u.meminfo.free_bytes == 123456789 &&
					  rec.u.meminfo.total_bytes == UINT64_MAX &&
					  rec.u.meminfo.api == GMT_API_cuMemCreate,
				      "roundtrip[%d]: MEMINFO", pass);
				break;
			case GMT_REC_SAMPLE:
				CHECK(rec.u.sample.time_ns == 6600 &&
					  rec.u.sample.nvml_index == 3 &&
					  rec.u.sample.uuid.len == 16 &&
					  !memcmp(rec.u.sample.uuid.p, "0123456789abcdef", 16) &&
					  rec.u.sample.used_bytes == 5ull << 30 &&
					  rec.u.sample.total_bytes == 80ull << 30 &&
					  rec.u.sample.flags == GMT_SAMPLE_PROCESS_KNOWN &&
					  rec.u.sample.process_used_bytes == 3ull << 30 &&
					  rec.u.sample.reason == GMT_SAMPLE_WHY_PEAK,
				      "roundtrip[%d]: SAMPLE", pass);
				break;
			case GMT_REC_RANGE:
				CHECK(rec.u.range.tid == 4242 && rec.u.range.time_ns == 6700 &&
					  rec.u.range.op == GMT_RANGE_PUSH && rec.u.range.id == 0 &&
					  rec.u.range.source == GMT_RANGE_SRC_NVTX &&
					  streq(rec.u.range.text, "forward"),
				      "roundtrip[%d]: RANGE", pass);
				break;
			case GMT_REC_COUNTERS:
				CHECK(
				    rec.u.counters.tid == 4242 && rec.u.counters.time_ns == 6800 &&
					rec.u.counters.reason == GMT_COUNTERS_WHY_OOM &&
					streq(rec.u.counters.source, "torch") &&
					streq(rec.u.counters.device, "cuda:1") &&
					rec.u.counters.ordinal == 1 && rec.u.counters.count == 2 &&
					streq(rec.u.counters.v[0].name,
					      "allocated_bytes.all.current") &&
					rec.u.counters.v[0].value == 3ull << 30 &&
					streq(rec.u.counters.v[1].name, "num_ooms") &&
					rec.u.counters.v[1].value == 2,
				    "roundtrip[%d]: COUNTERS", pass);
				break;
			case GMT_REC_FWOOM:
				CHECK(
				    rec.u.fwoom.tid == 4243 && rec.u.fwoom.time_ns == 6900 &&
					rec.u.fwoom.how == GMT_FWOOM_THREAD &&
					streq(rec.u.fwoom.source, "torch") &&
					streq(rec.u.fwoom.type, "torch.OutOfMemoryError") &&
					rec.u.fwoom.ordinal == -1 && rec.u.fwoom.count == 2 &&
					streq(rec.u.fwoom.v[0].name, "alloc_size") &&
					rec.u.fwoom.v[0].value == 20ull << 20 &&
					streq(rec.u.fwoom.v[1].name, "device_free") &&
					rec.u.fwoom.v[1].value == 0 &&
					streq(rec.u.fwoom.message,
					      "CUDA out of memory.\nTried to allocate 20.00 MiB."),
				    "roundtrip[%d]: FWOOM", pass);
				break;
			case GMT_REC_EXIT:
				CHECK(rec.u.exit.time_ns == 6950 &&
					  rec.u.exit.how == GMT_EXIT__EXIT &&
					  rec.u.exit.status == -3 && rec.u.exit.signal == 0,
				      "roundtrip[%d]: EXIT", pass);
				break;
			case GMT_REC_PYFRAME:
				CHECK(rec.u.pyframe.id == 7 &&
					  streq(rec.u.pyframe.function, "train_step") &&
					  streq(rec.u.pyframe.file, "train.py") &&
					  rec.u.pyframe.line == 42,
				      "roundtrip[%d]: PYFRAME", pass);
				break;
			case GMT_REC_TRAILER:
				CHECK(rec.u.trailer.end_time_ns == 7000 &&
					  rec.u.trailer.events == NEV && rec.u.trailer.lost == 12 &&
					  rec.u.trailer.stack_nodes == 3 &&
					  rec.u.trailer.reason == GMT_END_EXIT,
				      "roundtrip[%d]: TRAILER", pass);
				break;
			case GMT_REC_FWSNAP:
				CHECK(rec.u.fwsnap.tid == 4242 && rec.u.fwsnap.time_ns == 6900 &&
					  rec.u.fwsnap.wall_ns == 1700000000000006900ull &&
					  rec.u.fwsnap.seq == 3 &&
					  rec.u.fwsnap.reason == GMT_FWSNAP_WHY_OOM &&
					  streq(rec.u.fwsnap.source, "torch") &&
					  rec.u.fwsnap.flags == 3 &&
					  rec.u.fwsnap.max_entries == 100000 &&
					  rec.u.fwsnap.count == 1 &&
					  streq(rec.u.fwsnap.settings[0].key,
						"expandable_segments") &&
					  streq(rec.u.fwsnap.settings[0].value, "True"),
				      "roundtrip[%d]: FWSNAP", pass);
				break;
			case GMT_REC_FWTRACE: {
				const struct gmt_fw_entry *v = rec.u.fwtrace.v;
				CHECK(rec.u.fwtrace.seq == 3 && rec.u.fwtrace.device == -1 &&
					  rec.u.fwtrace.flags == GMT_FWTRACE_GAP &&
					  rec.u.fwtrace.base_time_us == 1700000000000006ull &&
					  rec.u.fwtrace.count == 3 && v[0].action == GMT_FW_ALLOC &&
					  v[0].addr == 0x7f0000100000 && v[0].size == 4096 &&
					  v[0].stream == 7 && v[0].time_us == 1700000000000006ull &&
					  v[0].stack_id == 3 && v[1].action == GMT_FW_OOM &&
					  v[1].addr == 123 && v[1].size == UINT64_MAX &&
					  v[1].time_us == 1700000000000005ull &&
					  v[1].stack_id == 0 && v[2].action == 99 &&
					  v[2].addr == UINT64_MAX && v[2].stream == UINT64_MAX &&
					  v[2].time_us == 0 && v[2].stack_id == 1,
				      "roundtrip[%d]: FWTRACE", pass);
				break;
			}
			case GMT_REC_FWSEG: {
				const struct gmt_fw_block *v = rec.u.fwseg.v;
				CHECK(rec.u.fwseg.seq == 3 && rec.u.fwseg.device == 1 &&
					  rec.u.fwseg.address == 0x7f0000100000 &&
					  rec.u.fwseg.total_size == 2 << 20 &&
					  rec.u.fwseg.stream == 7 &&
					  rec.u.fwseg.flags ==
					      (GMT_FWSEG_SMALL | GMT_FWSEG_EXPANDABLE) &&
					  rec.u.fwseg.pool_a == 0 && rec.u.fwseg.stack_id == 2 &&
					  rec.u.fwseg.count == 2 &&
					  v[0].address == 0x7f0000100000 && v[0].size == 4096 &&
					  v[0].requested_size == 4000 &&
					  v[0].state == GMT_FWBLOCK_ACTIVE_ALLOCATED &&
					  v[0].stack_id == 3 && v[1].address == 0x7f0000101200 &&
					  v[1].state == 7 && v[1].stack_id == 0,
				      "roundtrip[%d]: FWSEG", pass);
				break;
			}
			case GMT_REC_CHUNK:
				break;
			}
		}
		CHECK(seen[GMT_REC_FWSNAP] == 1 && seen[GMT_REC_FWTRACE] == 1 &&
			  seen[GMT_REC_FWSEG] == 1,
		      "roundtrip[%d]: one of each framework-history record", pass);
		CHECK(ok_ev && ev == NEV,
		      "roundtrip[%d]: %zu events decode exactly (deltas, negative deltas, device "
		      "changes, failures, aux, 2^64-1)",
		      pass, ev);
		CHECK(seen[GMT_REC_CHUNK] == 3, "roundtrip[%d]: 3 CHUNK records (got %d)", pass,
		      seen[GMT_REC_CHUNK]);
		CHECK(seen[GMT_REC_COUNTERS] == 1, "roundtrip[%d]: 1 COUNTERS record (got %d)",
		      pass, seen[GMT_REC_COUNTERS]);
		CHECK(seen[GMT_REC_FWOOM] == 1 && seen[GMT_REC_EXIT] == 1,
		      "roundtrip[%d]: 1 FWOOM, 1 EXIT record (got %d, %d)", pass,
		      seen[GMT_REC_FWOOM], seen[GMT_REC_EXIT]);
		const struct gmt_read_info *in = gmt_reader_info(r);
		CHECK(in->eof && in->complete && in->stop == GMT_STOP_NONE && in->unreadable == 0 &&
			  in->chunks == 3 && in->events == NEV && in->readable_end == len &&
			  in->seq_gaps == 0,
		      "roundtrip[%d]: complete, clean end, counters", pass);
		gmt_reader_rewind(r);
	}
	gmt_reader_close(r);
	tb_free(b);
}

/* The worked example of docs/trace-format.md, byte for byte. */
static void test_worked_example(void)
{
	struct tb *b = tb_new(NULL);
	tb_events_begin(b, 4242, 1000000);
	struct tb_event e1 = {1000250, GMT_API_cudaMalloc, 0, 0, 0x7f3a00000000, 1 << 20, 0, 0, 5};
	struct tb_event e2 = {1000300, GMT_API_cudaFree, 0, 0, 0x7f3a00000000, 0, 0, 0, 6};
	struct tb_event e3 = {1000400, GMT_API_cudaMalloc, 2, 1, 0, 1ull << 40, 0, 0, 5};
	tb_event(b, &e1);
	tb_event(b, &e2);
	tb_event(b, &e3);
	tb_events_end(b);
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	static const uint8_t want[] = {
	    0x06,	      /* tag EVENTS */
	    0x92, 0x21,	      /* tid 4242 */
	    0xc0, 0x84, 0x3d, /* base_time 1000000 */
	    0x03,	      /* count 3 */
	    /* cudaMalloc 1 MiB at 0x7f3a00000000 on device 0, stack 5 */
	    0x80, 0x05,				      /* head: api 40 << 4 */
	    0xfa, 0x01,				      /* dt 250 */
	    0x80, 0x80, 0x80, 0x80, 0xc0, 0xce, 0x3f, /* dptr zigzag(+0x7f3a00000000) */
	    0x80, 0x80, 0x40,			      /* size 1048576 */
	    0x0a,				      /* dstk zigzag(+5) */
	    /* cudaFree of it, stack 6 */
	    0xb0, 0x05, /* head: api 43 << 4 */
	    0x32,	/* dt 50 */
	    0x00, 0x00, /* dptr 0, size 0 */
	    0x02,	/* dstk zigzag(+1) */
	    /* failed cudaMalloc of 1 TiB on device 1: error 2 */
	    0x89, 0x05,				      /* head: api 40, dev_changed | failed */
	    0x64,				      /* dt 100 */
	    0xff, 0xff, 0xff, 0xff, 0xbf, 0xce, 0x3f, /* dptr zigzag(-0x7f3a00000000) */
	    0x80, 0x80, 0x80, 0x80, 0x80, 0x20,	      /* size 2^40 */
	    0x01,				      /* dstk zigzag(-1) */
	    0x02,				      /* result 2 */
	    0x02,				      /* device zigzag(1) */
	};
	size_t off = GMT_HEADER_SIZE + GMT_CHUNK_HEADER_SIZE;
	int same = len == off + sizeof(want) && memcmp(p + off, want, sizeof(want)) == 0;
	if (!same) {
		printf("     got:");
		for (size_t i = off; i < len; i++)
			printf(" %02x", p[i]);
		printf("\n");
	}
	CHECK(same, "worked example: encoder bytes match docs/trace-format.md");
	const char *path = write_bytes("example.gmt", p, len);
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	struct gmt_record rec;
	int n = 0, ok = r != NULL;
	while (r && gmt_reader_next(r, &rec)) {
		if (rec.type != GMT_REC_EVENT)
			continue;
		const struct tb_event *w = n == 0 ? &e1 : n == 1 ? &e2 : &e3;
		ok &= rec.u.event.time_ns == w->time_ns && rec.u.event.ptr == w->ptr &&
		      rec.u.event.size == w->size && rec.u.event.stack_id == w->stack_id &&
		      rec.u.event.device == w->device && rec.u.event.result == w->result &&
		      rec.u.event.api == w->api && rec.u.event.tid == 4242;
		n++;
	}
	CHECK(ok && n == 3, "worked example: reader decodes the 3 events");
	gmt_reader_close(r);
	tb_free(b);
}

/* ---- torn tails, corruption ------------------------------------------ */

/* Three chunks: A (process + 2 events), B (stack + 1 event), C (note + trailer). */
static struct tb *three_chunks(void)
{
	struct tb *b = tb_new(NULL);
	tb_process(b, 1, 0, 0, "h", "/bin/x", 0, NULL, 0, NULL, NULL);
	tb_events_begin(b, 5, 100);
	struct tb_event e = {100, GMT_API_cudaMalloc, 0, 0, 0x1000, 10, 0, 0, 0};
	tb_event(b, &e);
	e.time_ns = 200;
	e.api = GMT_API_cudaFree;
	tb_event(b, &e);
	tb_chunk(b);
	uint64_t par = 0, ip = 0x400123;
	tb_stack(b, 1, &par, &ip);
	tb_events_begin(b, 5, 300);
	e.time_ns = 300;
	e.api = GMT_API_cuMemAlloc_v2;
	tb_event(b, &e);
	tb_chunk(b);
	tb_note(b, 0, "bye");
	tb_trailer(b, 400, 3, 0, 1, GMT_END_EXIT);
	tb_chunk(b);
	return b;
}

static void test_torn_tail(void)
{
	struct tb *b = three_chunks();
	size_t len, last = tb_chunk_offset(b, 2);
	const uint8_t *p = tb_data(b, &len);
	struct readout full = read_all(write_bytes("three.gmt", p, len));
	CHECK(full.open_code == 0 && full.info.complete && full.chunks == 3 && full.events == 3,
	      "three chunks: complete, 3 chunks, 3 events");
	int ok = 1;
	size_t bad_at = 0;
	for (size_t cut = last; cut < len; cut++) {
		struct readout o = read_all(write_bytes("torn.gmt", p, cut));
		int good = o.open_code == 0 && !o.info.complete && o.chunks == 2 && o.events == 3 &&
			   o.records == 4 && o.info.readable_end == last &&
			   o.info.unreadable == cut - last &&
			   o.info.stop == (cut == last ? GMT_STOP_NONE : GMT_STOP_TORN);
		if (!good && ok) {
			ok = 0;
			bad_at = cut;
		}
	}
	CHECK(ok,
	      "torn tail: cut at each of the %zu offsets of the last chunk: 2 chunks read, "
	      "no error, not complete, torn (first bad cut: %zu)",
	      len - last, bad_at);
	/* a cut inside the second chunk leaves the first */
	size_t second = tb_chunk_offset(b, 1);
	struct readout o = read_all(write_bytes("torn2.gmt", p, second + 20));
	CHECK(o.open_code == 0 && o.chunks == 1 && o.events == 2 && o.info.stop == GMT_STOP_TORN &&
		  o.info.unreadable == 20,
	      "torn tail inside chunk 2: chunk 1 read, 20 bytes unreadable");
	/* zero-filled tail after a crash */
	uint8_t *z = calloc(1, last + 4096);
	memcpy(z, p, last);
	o = read_all(write_bytes("zeros.gmt", z, last + 4096));
	CHECK(o.open_code == 0 && o.chunks == 2 && o.info.stop == GMT_STOP_TORN &&
		  o.info.unreadable == 4096,
	      "zero-filled tail: torn, 4096 bytes unreadable");
	free(z);
	/* a last chunk of full length with a bad CRC: a torn write, not corruption */
	uint8_t *c = malloc(len);
	memcpy(c, p, len);
	c[len - 1] ^= 0x40;
	o = read_all(write_bytes("lastcrc.gmt", c, len));
	CHECK(o.open_code == 0 && o.chunks == 2 && o.info.stop == GMT_STOP_TORN && !o.info.complete,
	      "bad CRC in the last chunk: torn tail, 2 chunks read");
	free(c);
	tb_free(b);
}

static void test_corruption(void)
{
	struct tb *b = three_chunks();
	size_t len, second = tb_chunk_offset(b, 1), third = tb_chunk_offset(b, 2);
	const uint8_t *p = tb_data(b, &len);
	uint8_t *c = malloc(len);

	for (size_t at = second + GMT_CHUNK_HEADER_SIZE; at < third; at++) {
		memcpy(c, p, len);
		c[at] ^= 0x10;
		struct readout o = read_all(write_bytes("flip.gmt", c, len));
		if (!(o.open_code == 0 && o.chunks == 1 && o.events == 2 &&
		      o.info.stop == GMT_STOP_CORRUPT && o.info.stop_offset == second &&
		      o.info.readable_end == second && o.info.unreadable == len - second &&
		      !o.info.complete)) {
			CHECK(0, "bit flip at payload byte %zu of the middle chunk", at - second);
			goto next;
		}
	}
	CHECK(1, "bit flip in each payload byte of the middle chunk: corruption at its offset, "
		 "chunk 1 readable");
next:
	memcpy(c, p, len);
	c[second + 12] ^= 1; /* the stored CRC */
	struct readout o = read_all(write_bytes("flipcrc.gmt", c, len));
	CHECK(o.chunks == 1 && o.info.stop == GMT_STOP_CORRUPT && strstr(o.info.stop_msg, "CRC"),
	      "bit flip in the middle chunk's CRC field: corruption (%s)", o.info.stop_msg);

	memcpy(c, p, len);
	c[second] = 'X'; /* chunk magic */
	o = read_all(write_bytes("magic.gmt", c, len));
	CHECK(o.chunks == 1 && o.info.stop == GMT_STOP_CORRUPT && strstr(o.info.stop_msg, "magic"),
	      "bad chunk magic mid-file: corruption (%s)", o.info.stop_msg);

	memcpy(c, p, len);
	uint32_t big = GMT_CHUNK_MAX_PAYLOAD + 1;
	for (int i = 0; i < 4; i++)
		c[second + 4 + i] = (uint8_t)(big >> (8 * i));
	o = read_all(write_bytes("oversized.gmt", c, len));
	CHECK(o.chunks == 1 && o.info.stop == GMT_STOP_CORRUPT && o.info.stop_offset == second &&
		  strstr(o.info.stop_msg, "limit"),
	      "oversized payload_len: corruption (%s)", o.info.stop_msg);
	free(c);
	tb_free(b);

	/* a chunk with a good CRC whose records do not decode */
	b = tb_new(NULL);
	tb_note(b, 0, "first");
	tb_chunk(b);
	tb_note(b, 0, "before the bad batch");
	tb_varint(b, GMT_TAG_EVENTS);
	tb_varint(b, 1);
	tb_varint(b, 0);
	tb_varint(b, 2); /* count 2 but one event follows */
	tb_raw(b, "\x80\x05\x01\x02\x03\x04", 6);
	tb_chunk(b);
	tb_note(b, 0, "after");
	tb_chunk(b);
	p = tb_data(b, &len);
	o = read_all(write_bytes("badrec.gmt", p, len));
	CHECK(o.chunks == 1 && o.records == 1 && o.events == 0 && o.info.stop == GMT_STOP_CORRUPT &&
		  strstr(o.info.stop_msg, "malformed"),
	      "malformed record in a chunk with a good CRC: none of that chunk is handed out (%s)",
	      o.info.stop_msg);
	tb_free(b);

	b = tb_new(NULL);
	tb_varint(b, GMT_TAG_NOTE);
	tb_varint(b, 0);
	tb_varint(b, 1000); /* string longer than the chunk */
	tb_raw(b, "abc", 3);
	p = tb_data(b, &len);
	o = read_all(write_bytes("badstr.gmt", p, len));
	CHECK(o.chunks == 0 && o.info.stop == GMT_STOP_CORRUPT,
	      "string length past the chunk end: corruption, not a crash");
	tb_free(b);

	b = tb_new(NULL);
	tb_varint(b, GMT_TAG_STACK);
	tb_varint(b, UINT64_MAX); /* absurd count */
	tb_raw(b, "\x01\x02", 2);
	p = tb_data(b, &len);
	o = read_all(write_bytes("badcount.gmt", p, len));
	CHECK(o.chunks == 0 && o.info.stop == GMT_STOP_CORRUPT,
	      "absurd STACK count: corruption, no huge allocation");
	tb_free(b);

	b = tb_new(NULL);
	tb_raw(b, "\x05\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12); /* 11-byte varint */
	p = tb_data(b, &len);
	o = read_all(write_bytes("badvarint.gmt", p, len));
	CHECK(o.chunks == 0 && o.info.stop == GMT_STOP_CORRUPT, "over-long varint: corruption");
	tb_free(b);
}

static void test_unknown_tag(void)
{
	struct tb *b = tb_new(NULL);
	tb_note(b, 0, "one");
	tb_varint(b, 42); /* unknown: the rest of the chunk is skipped */
	tb_raw(b, "\x01\x02\x03", 3);
	tb_chunk(b);
	tb_note(b, 0, "two");
	tb_trailer(b, 1, 0, 0, 0, 0);
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	struct readout o = read_all(write_bytes("unknown.gmt", p, len));
	CHECK(o.open_code == 0 && o.chunks == 2 && o.records == 3 && o.info.unknown_chunks == 1 &&
		  o.info.unknown_bytes == 4 && o.info.complete && o.info.stop == GMT_STOP_NONE,
	      "unknown tag ends its chunk; the next chunk is read");
	tb_free(b);
}

/* EVENTCOLS (format v3): tid 7, base 1000, two events by column: a
 * cudaMalloc (aux 9) and the cudaFree of its pointer. `bad` spoils it. */
static const char *eventcols(const char *name, int bad)
{
	static const uint8_t ptr[16] = {0, 0x10, 0, 0, 0, 0x7f, 0, 0, 0, 0x10, 0, 0, 0, 0x7f, 0, 0};
	struct tb *b = tb_new(NULL);
	tb_varint(b, GMT_TAG_EVENTCOLS);
	tb_varint(b, 7);
	tb_varint(b, 1000);
	tb_varint(b, 2);
	/* column lengths: head, dt, ptr, size, dstk, optional */
	uint64_t lens[GMT_EV_COLUMNS] = {4, 2, bad == 1 ? 15 : 16, 3, 2, bad == 2 ? 2 : 1};
	for (int i = 0; i < GMT_EV_COLUMNS; i++)
		tb_varint(b, lens[i]);
	tb_varint(b, (uint64_t)GMT_API_cudaMalloc << GMT_EV_API_SHIFT | GMT_EV_HAS_AUX);
	tb_varint(b, (uint64_t)GMT_API_cudaFree << GMT_EV_API_SHIFT);
	tb_raw(b, "\x00\x05", 2);
	tb_raw(b, ptr, bad == 1 ? 15 : 16);
	tb_raw(b, "\x80\x20\x00", 3); /* 4096, 0 */
	tb_raw(b, "\x02\x01", 2);     /* stack +1, -1 */
	tb_raw(b, bad == 2 ? "\x09\x09" : "\x09", bad == 2 ? 2 : 1);
	tb_chunk(b);
	tb_trailer(b, 2000, 2, 0, 0, 0);
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	const char *path = write_bytes(name, p, len);
	tb_free(b);
	return path;
}

static void test_eventcols(void)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(eventcols("cols.gmt", 0), &err);
	CHECK(r != NULL, "EVENTCOLS trace opens (%s)", err.msg);
	if (!r)
		return;
	struct gmt_record rec;
	struct gmt_event ev[3];
	int n = 0, batches = 0;
	while (gmt_reader_next(r, &rec)) {
		if (rec.type == GMT_REC_EVENTS)
			batches += rec.u.events.columns && rec.u.events.count == 2 &&
				   rec.u.events.tid == 7;
		if (rec.type == GMT_REC_EVENT && n < 3)
			ev[n++] = rec.u.event;
	}
	const struct gmt_read_info *in = gmt_reader_info(r);
	CHECK(n == 2 && batches == 1 && in->complete && in->stop == GMT_STOP_NONE,
	      "EVENTCOLS: one batch of two events (%d, %d)", n, batches);
	if (n == 2) {
		CHECK(ev[0].api == GMT_API_cudaMalloc && ev[0].time_ns == 1000 &&
			  ev[0].ptr == 0x7f0000001000ull && ev[0].size == 4096 &&
			  ev[0].stack_id == 1 && ev[0].aux == 9 && ev[0].tid == 7,
		      "EVENTCOLS: first event decoded");
		CHECK(ev[1].api == GMT_API_cudaFree && ev[1].time_ns == 1005 &&
			  ev[1].ptr == 0x7f0000001000ull && ev[1].size == 0 &&
			  ev[1].stack_id == 0 && ev[1].aux == 0,
		      "EVENTCOLS: second event decoded");
	}
	gmt_reader_close(r);
	struct readout o = read_all(eventcols("cols-ptr.gmt", 1));
	CHECK(o.info.stop == GMT_STOP_CORRUPT && o.events == 0,
	      "EVENTCOLS: a pointer column not 8 bytes per event is corrupt");
	o = read_all(eventcols("cols-extra.gmt", 2));
	CHECK(o.info.stop == GMT_STOP_CORRUPT && o.events == 0 &&
		  strstr(o.info.stop_msg, "malformed event"),
	      "EVENTCOLS: a column with bytes left over is corrupt (%s)", o.info.stop_msg);
}

static void test_completeness(void)
{
	struct tb *b = tb_new(NULL);
	tb_trailer(b, 1, 0, 0, 0, GMT_END_EXEC);
	tb_chunk(b);
	tb_note(b, 0, "exec failed, still running");
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	struct readout o = read_all(write_bytes("notfinal.gmt", p, len));
	CHECK(o.open_code == 0 && !o.info.complete && o.records == 2,
	      "TRAILER followed by more records: not complete");
	tb_free(b);

	b = tb_new(NULL);
	p = tb_data(b, &len);
	o = read_all(write_bytes("headeronly.gmt", p, len));
	CHECK(o.open_code == 0 && o.chunks == 0 && !o.info.complete && o.info.stop == GMT_STOP_NONE,
	      "header only: readable, empty, not complete");
	tb_free(b);

	struct tb_header h = {.header_size = 80, .pid = 9};
	b = tb_new(&h);
	tb_trailer(b, 1, 0, 0, 0, 0);
	p = tb_data(b, &len);
	o = read_all(write_bytes("bighdr.gmt", p, len));
	CHECK(o.open_code == 0 && o.chunks == 1 && o.info.complete,
	      "header_size 80: chunks start after it");
	tb_free(b);
}

/* ---- headers ----------------------------------------------------------- */

static void test_headers(void)
{
	struct readout o = read_all(path_for("does-not-exist.gmt"));
	CHECK(o.open_code == GMT_READ_ERR_OPEN && o.errnum == ENOENT &&
		  strstr(o.msg, "No such file"),
	      "missing file: cannot open, ENOENT (%s)", o.msg);
	o = read_all(dir);
	CHECK(o.open_code == GMT_READ_ERR_OPEN && o.errnum == EISDIR, "directory: cannot open (%s)",
	      o.msg);

	o = read_all(write_bytes("empty.gmt", "", 0));
	CHECK(o.open_code == GMT_READ_ERR_NOT_TRACE, "empty file: not a trace (%s)", o.msg);

	o = read_all(write_bytes("text.gmt",
				 "hello world, this is not a trace at all, but long enough"
				 " to hold a header\n",
				 74));
	CHECK(o.open_code == GMT_READ_ERR_NOT_TRACE && strstr(o.msg, "magic"),
	      "bad magic: not a trace (%s)", o.msg);

	struct tb_header h = {.version = GMT_FORMAT_VERSION + 1};
	struct tb *b = tb_new(&h);
	tb_note(b, 0, "from the future");
	size_t len;
	const uint8_t *p = tb_data(b, &len);
	o = read_all(write_bytes("future.gmt", p, len));
	char want[64];
	snprintf(want, sizeof(want), "unsupported future version %d", GMT_FORMAT_VERSION + 1);
	CHECK(o.open_code == GMT_READ_ERR_VERSION && strstr(o.msg, want),
	      "future version: unsupported (%s)", o.msg);
	tb_free(b);

	b = tb_new(NULL);
	tb_trailer(b, 1, 0, 0, 0, 0);
	p = tb_data(b, &len);
	int ok = 1;
	for (size_t cut = 1; cut < GMT_HEADER_SIZE; cut++) {
		o = read_all(write_bytes("shorthdr.gmt", p, cut));
		if (o.open_code != GMT_READ_ERR_NOT_TRACE)
			ok = 0;
	}
	CHECK(ok, "truncated header (1..63 bytes): not a trace");
	o = read_all(write_bytes("shorthdr.gmt", p, 40));
	CHECK(strstr(o.msg, "truncated header") != NULL, "truncated header message (%s)", o.msg);

	uint8_t *c = malloc(len);
	memcpy(c, p, len);
	c[GMT_HDR_HEADER_SIZE] = 32;
	o = read_all(write_bytes("hsize-small.gmt", c, len));
	CHECK(o.open_code == GMT_READ_ERR_HEADER, "header_size 32: corrupt header (%s)", o.msg);
	memcpy(c, p, len);
	c[GMT_HDR_HEADER_SIZE] = 0x00;
	c[GMT_HDR_HEADER_SIZE + 1] = 0x10; /* 4096 > file size */
	o = read_all(write_bytes("hsize-big.gmt", c, len));
	CHECK(o.open_code == GMT_READ_ERR_HEADER, "header_size past EOF: corrupt header (%s)",
	      o.msg);
	memcpy(c, p, len);
	c[GMT_HDR_ENDIAN] = 2;
	o = read_all(write_bytes("endian.gmt", c, len));
	CHECK(o.open_code == GMT_READ_ERR_HEADER, "big-endian byte: corrupt header (%s)", o.msg);
	memcpy(c, p, len);
	c[GMT_HDR_VERSION] = 0;
	o = read_all(write_bytes("v0.gmt", c, len));
	CHECK(o.open_code == GMT_READ_ERR_HEADER, "version 0: corrupt header (%s)", o.msg);
	free(c);
	tb_free(b);
}

static void test_crc(void)
{
	/* the CRC-32C check value, and the library's against the builder's */
	CHECK(tb_crc32c("123456789", 9) == 0xe3069283u &&
		  gmt_crc32c(0, "123456789", 9) == 0xe3069283u,
	      "crc32c(\"123456789\") = 0xe3069283 in both implementations");
}

/* gmt_reader_next_events hands out the events as written, in order, the
 * rest by gmt_reader_next: across batches, chunks and a batch longer than
 * the reader's cache of decoded events. */
static bool same_event(const struct gmt_event *g, const struct tb_event *w, uint64_t index,
		       uint64_t tid)
{
	return g->index == index && g->tid == tid && g->time_ns == w->time_ns && g->api == w->api &&
	       g->result == w->result && g->device == w->device && g->ptr == w->ptr &&
	       g->size == w->size && g->aux == w->aux && g->aux2 == w->aux2 &&
	       g->stack_id == w->stack_id;
}

static void test_next_events(void)
{
	enum { BIG = 40000, SMALL = 300 };
	struct tb_event *in = calloc(BIG + SMALL, sizeof(*in));
	for (uint64_t i = 0; i < BIG; i++)
		in[i] =
		    (struct tb_event){.time_ns = 1000 + 3 * i,
				      .api = i % 3 ? GMT_API_cuMemAlloc_v2 : GMT_API_cuMemFree_v2,
				      .result = i % 97 == 0 ? 2 : 0,
				      .device = (int64_t)(i / 1000 % 3) - 1,
				      .ptr = 0x10000 + (i * 7919 % 4096) * 256,
				      .size = i * 13,
				      .aux = i % 5 == 0 ? i : 0,
				      .stack_id = i % 256};
	for (uint64_t i = 0; i < SMALL; i++)
		in[BIG + i] = (struct tb_event){.time_ns = 500000 + i,
						.api = GMT_API_cudaMalloc,
						.ptr = 0x900000 + i,
						.size = i,
						.aux2 = i + 1,
						.stack_id = 3};
	struct tb *b = tb_new(NULL);
	tb_events_begin(b, 5, 1000);
	for (size_t i = 0; i < BIG; i++)
		tb_event(b, &in[i]);
	tb_events_end(b);
	tb_note(b, 1, "between the batches");
	tb_chunk(b);
	tb_events_begin(b, 6, 500000);
	for (size_t i = BIG; i < BIG + SMALL; i++)
		tb_event(b, &in[i]);
	tb_events_end(b);
	tb_trailer(b, 600000, BIG + SMALL, 0, 0, GMT_END_EXIT);
	const char *path = path_for("next-events.gmt");
	tb_write(b, path);
	tb_free(b);

	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	CHECK(r != NULL, "next_events: open: %s", err.msg);
	if (!r) {
		free(in);
		return;
	}
	for (int pass = 0; pass < 2; pass++) { /* 0: gmt_reader_next only */
		gmt_reader_rewind(r);
		size_t got = 0, batched = 0, records = 0, wrong = 0;
		struct gmt_record rec;
		for (;;) {
			const struct gmt_event *evs;
			size_t k = pass ? gmt_reader_next_events(r, &evs) : 0;
			for (size_t i = 0; i < k; i++, got++)
				wrong += got >= BIG + SMALL ||
					 !same_event(&evs[i], &in[got], got, got < BIG ? 5 : 6);
			batched += k;
			if (k)
				continue;
			if (!gmt_reader_next(r, &rec))
				break;
			if (rec.type == GMT_REC_EVENT) {
				wrong += got >= BIG + SMALL || !same_event(&rec.u.event, &in[got],
									   got, got < BIG ? 5 : 6);
				got++;
			} else {
				records++;
			}
		}
		CHECK(got == BIG + SMALL && wrong == 0, "next_events[%d]: %zu events, %zu wrong",
		      pass, got, wrong);
		CHECK(pass ? batched > 0 && batched < got : 1, "next_events[%d]: %zu came batched",
		      pass, batched);
		CHECK(records == 6, "next_events[%d]: %zu other records", pass, records);
		CHECK(gmt_reader_info(r)->events == BIG + SMALL && gmt_reader_info(r)->complete,
		      "next_events[%d]: info counts %llu events", pass,
		      (unsigned long long)gmt_reader_info(r)->events);
	}
	free(in);
	gmt_reader_close(r);
}

static int tasks(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Reads every record (after a rewind midway), folding what it saw into a
 * hash; *nt: this process's threads once reading has begun. */
static uint64_t read_hashed(const char *path, int *nt, struct gmt_read_info *info)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(path, &err);
	if (!r)
		return 0;
	struct gmt_record rec;
	uint64_t h = 0, n = 0;
	for (int pass = 0; pass < 2; pass++) {
		gmt_reader_rewind(r);
		h = 1469598103934665603ull;
		n = 0;
		while (gmt_reader_next(r, &rec)) {
			if (n++ == 0)
				*nt = tasks();
			uint64_t v[4] = {rec.type, rec.offset, 0, 0};
			if (rec.type == GMT_REC_EVENT) {
				v[2] = rec.u.event.index ^ rec.u.event.ptr;
				v[3] = rec.u.event.time_ns ^ rec.u.event.stack_id;
			}
			for (int i = 0; i < 4; i++)
				h = (h ^ v[i]) * 1099511628211ull;
			if (pass == 0 && n == 500)
				break; /* the worker is ahead: the rewind drops its chunk */
		}
	}
	*info = *gmt_reader_info(r);
	gmt_reader_close(r);
	return h ^ n;
}

/* The worker thread (GPUMEMTRACE_READER_THREADS=1) reads as the serial
 * reader (=0) does, and stops where it does, with the same counts. */
static void test_worker(void)
{
	struct tb *b = tb_new(NULL);
	uint64_t idx = 0;
	for (int c = 0; c < 6; c++) {
		tb_events_begin(b, 7, 1000 * (uint64_t)c);
		for (int i = 0; i < 400; i++, idx++)
			tb_event(b, &(struct tb_event){.time_ns = 1000 * (uint64_t)c + (uint64_t)i,
						       .api = GMT_API_cudaMalloc,
						       .ptr = 0x1000 + idx * 64,
						       .size = idx,
						       .stack_id = idx % 5});
		tb_events_end(b);
		tb_chunk(b);
	}
	tb_trailer(b, 99999, idx, 0, 0, GMT_END_EXIT);
	const char *good = strdup(path_for("worker.gmt"));
	tb_write(b, good);
	tb_free(b);
	FILE *f = fopen(good, "rb");
	static uint8_t buf[1 << 20];
	size_t len = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	buf[len * 2 / 3] ^= 0x10; /* a CRC mismatch in a middle chunk */
	const char *bad = strdup(write_bytes("worker-bad.gmt", buf, len));
	const char *paths[] = {good, bad};
	for (int p = 0; p < 2; p++) {
		struct gmt_read_info info[2];
		uint64_t h[2];
		int nt[2] = {0, 0};
		for (int t = 0; t < 2; t++) {
			setenv("GPUMEMTRACE_READER_THREADS", t ? "1" : "0", 1);
			h[t] = read_hashed(paths[p], &nt[t], &info[t]);
		}
		unsetenv("GPUMEMTRACE_READER_THREADS");
		/* relative: a sanitizer may run a thread of its own */
		CHECK(nt[0] >= 1 && nt[1] == nt[0] + 1,
		      "worker[%d]: %d threads serial, %d with the worker", p, nt[0], nt[1]);
		CHECK(h[0] == h[1] && h[0] != 0, "worker[%d]: the same records", p);
		CHECK(info[0].chunks == info[1].chunks && info[0].events == info[1].events &&
			  info[0].stop == info[1].stop &&
			  info[0].stop_offset == info[1].stop_offset &&
			  info[0].readable_end == info[1].readable_end &&
			  !strcmp(info[0].stop_msg, info[1].stop_msg),
		      "worker[%d]: the same end: %llu chunks, stop %d '%s' / %d '%s'", p,
		      (unsigned long long)info[1].chunks, info[0].stop, info[0].stop_msg,
		      info[1].stop, info[1].stop_msg);
		CHECK(p ? info[1].stop == GMT_STOP_CORRUPT
			: info[1].complete && info[1].chunks >= 6,
		      "worker[%d]: %s", p, p ? "stops at the bad chunk" : "reads to the trailer");
	}
	free((void *)good);
	free((void *)bad);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_crc();
	test_roundtrip();
	test_worked_example();
	test_torn_tail();
	test_corruption();
	test_unknown_tag();
	test_eventcols();
	test_completeness();
	test_headers();
	test_next_events();
	test_worker();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
