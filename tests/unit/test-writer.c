/* The library's writer (preload/writer.c, encode.c, procinfo.c) against the
 * reader (reader/): every record type the writer makes, written into a
 * real file, once by rows (uncompressed) and once by columns (zstd, when
 * libzstd is here), and read back field by field. A change to either side's
 * encoding that the other does not share fails here. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/codec.h"
#include "preload/real.h"
#include "preload/tracer.h"
#include "preload/writer.h"
#include "reader/reader.h"

/* ---- what the writer calls outside the files under test ---- */

static int notes;
void gmt_note(int level, const char *text)
{
	(void)level;
	(void)text;
	notes++;
}

/* preload/real.c's, which reach libc's loader around our own hooks. */
void *gmt_libc_dlopen(const char *file, int mode)
{
	return dlopen(file, mode);
}
void *gmt_libc_dlsym(void *handle, const char *name)
{
	return dlsym(handle, name);
}
int gmt_libc_dlclose(void *handle)
{
	return dlclose(handle);
}

/* preload/device.c's, which ask the driver: one device, fully known. */
int gmt_device_facts_query(struct gmt_device_facts *f, const uint8_t *skip)
{
	(void)skip;
	f->n = 1;
	f->seen[0] = 1;
	snprintf(f->d[0].name, sizeof f->d[0].name, "Test GPU");
	for (int i = 0; i < 16; i++)
		f->d[0].uuid[i] = (uint8_t)(i + 1);
	f->d[0].total_bytes = 80ull << 30;
	f->d[0].cc_major = 9;
	f->d[0].cc_minor = 0;
	f->d[0].driver_version = 12040;
	return 1;
}
int gmt_device_info_complete(const struct gmt_device_info *d)
{
	return d->name[0] != 0;
}

/* ---- feeding records as the rings hold them ---- */

static uint64_t ring_buf[512];

static const struct gmt_ring_hdr *ring_rec(int type, uint16_t nframes, const void *body, size_t len)
{
	struct gmt_ring_hdr *h = (void *)ring_buf;
	h->len = (uint32_t)gmt_ring_align(sizeof *h + len);
	h->type = (uint16_t)type;
	h->nframes = nframes;
	memcpy(h + 1, body, len);
	return h;
}

/* A return address inside this program, in its MODULE record's range. */
static __attribute__((noinline)) uint64_t here(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static void put_event(struct gmt_writer *w, struct gmt_ring *r, uint64_t t, uint64_t ptr,
		      uint32_t result, int32_t device, unsigned flags, const uint64_t *ips,
		      unsigned n)
{
	struct {
		struct gmt_raw_event e;
		uint64_t ips[4];
	} b = {.e = {.time_ns = t,
		     .ptr = ptr,
		     .size = 4096,
		     .aux = 7,
		     .aux2 = 9,
		     .result = result,
		     .device = device,
		     .api = GMT_API_cuMemAlloc_v2,
		     .flags = (uint16_t)flags}};
	memcpy(b.ips, ips, n * sizeof *ips);
	gmt_writer_ring_record(w, r, ring_rec(GMT_RING_EVENT, (uint16_t)n, &b, sizeof b.e + n * 8));
}

static uint64_t write_trace(const char *path, int compress, uint64_t ip)
{
	static struct gmt_writer w;
	memset(&w, 0, sizeof w);
	w.fd = -1;
	uint64_t t0 = 1000000;
	CHECK(gmt_writer_open(&w, path, 8, compress, t0) == 0, "open %s", path);
	gmt_writer_compress_init(&w);
	gmt_writer_reserve(&w);
	struct gmt_ring r = {.tid = 42};

	gmt_writer_ring_record(&w, &r, ring_rec(GMT_RING_THREAD, 4, "main", 4));
	uint64_t ips[3] = {ip, ip + 1, GMT_PYFRAME_IP(5)};
	put_event(&w, &r, t0 + 10, 0x7f0000001000, 0, 0, 0, ips, 3);
	put_event(&w, &r, t0 + 20, 0x7f0000002000, 2, 1, GMT_EV_HAS_AUX | GMT_EV_HAS_AUX2, ips, 1);
	struct gmt_raw_meminfo mi = {t0 + 21, 1 << 20, 80ull << 30, 1, GMT_API_cuMemAlloc_v2};
	gmt_writer_ring_record(&w, &r, ring_rec(GMT_RING_MEMINFO, 0, &mi, sizeof mi));
	struct gmt_raw_sample sm = {.time_ns = t0 + 30,
				    .used_bytes = 5 << 20,
				    .total_bytes = 80ull << 30,
				    .process_used_bytes = 3 << 20,
				    .nvml_index = 0,
				    .flags = 1,
				    .reason = GMT_SAMPLE_WHY_PEAK};
	sm.uuid[0] = 0xab;
	gmt_writer_ring_record(&w, &r, ring_rec(GMT_RING_SAMPLE, 0, &sm, sizeof sm));
	struct {
		struct gmt_raw_range rr;
		char text[5];
	} rg = {{t0 + 40, 3, GMT_RANGE_PUSH, GMT_RANGE_SRC_API, 0}, "epoch"};
	gmt_writer_ring_record(&w, &r, ring_rec(GMT_RING_RANGE, 5, &rg, sizeof rg));
	struct {
		struct gmt_raw_pyframe pf;
		char s[11];
	} py = {{5, 12, 5, 5},
		"train"
		"my.py"};
	gmt_writer_ring_record(&w, &r, ring_rec(GMT_RING_PYFRAME, 0, &py, sizeof py.pf + 10));
	uint8_t cb[64], *p = cb;
	p = gmt_put_varint(p, t0 + 50);
	p = gmt_put_varint(p, 1); /* reason */
	p = gmt_put_varint(p, 5);
	memcpy(p, "torch", 5);
	p += 5;
	p = gmt_put_varint(p, 6);
	memcpy(p, "cuda:0", 6);
	p += 6;
	p = gmt_put_varint(p, gmt_zigzag(0));
	p = gmt_put_varint(p, 1);
	p = gmt_put_varint(p, 8);
	memcpy(p, "reserved", 8);
	p += 8;
	p = gmt_put_varint(p, 1 << 20);
	gmt_writer_ring_record(
	    &w, &r, ring_rec(GMT_RING_COUNTERS, (uint16_t)(p - cb), cb, (size_t)(p - cb)));
	uint8_t fb[64], *q = fb; /* a FWOOM body: as gmt_record_fwoom encodes it */
	q = gmt_put_varint(q, t0 + 55);
	q = gmt_put_varint(q, GMT_FWOOM_EXCEPTHOOK);
	q = gmt_put_varint(q, 3);
	memcpy(q, "jax", 3);
	q += 3;
	q = gmt_put_varint(q, 0); /* no type */
	q = gmt_put_varint(q, gmt_zigzag(-1));
	q = gmt_put_varint(q, 0); /* no figures */
	q = gmt_put_varint(q, 18);
	memcpy(q, "RESOURCE_EXHAUSTED", 18);
	q += 18;
	gmt_writer_ring_record(&w, &r,
			       ring_rec(GMT_RING_FWOOM, (uint16_t)(q - fb), fb, (size_t)(q - fb)));
	gmt_writer_end_batch(&w);
	gmt_writer_lost(&w, 42, 3, t0 + 60);
	gmt_writer_note(&w, 1, "a note");
	gmt_writer_devices(&w);
	gmt_writer_exit(&w, t0 + 65, GMT_EXIT_EXIT, 3);
	gmt_writer_trailer(&w, GMT_END_EXIT, t0 + 70);
	CHECK(gmt_writer_flush(&w) == 0, "flush");
	uint64_t nodes = w.stacks.n;
	gmt_writer_abandon(&w);
	return nodes;
}

static int streq(struct gmt_str s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}

static void read_back(const char *path, int compressed, uint64_t ip, uint64_t nodes)
{
	struct gmt_read_error err;
	struct gmt_reader *rd = gmt_reader_open(path, &err);
	CHECK(rd, "reader opens %s: %s", path, rd ? "" : err.msg);
	if (!rd)
		return;
	CHECK(gmt_reader_header(rd)->pid == (uint32_t)getpid(), "header pid");
	unsigned seen = 0; /* 1 << tag */
	int events = 0, modules = 0;
	struct gmt_record rec;
	while (gmt_reader_next(rd, &rec)) {
		if (rec.type < 32)
			seen |= 1u << rec.type;
		switch (rec.type) {
		case GMT_REC_PROCESS:
			CHECK(rec.u.process.pid == (uint64_t)getpid(), "process pid");
			CHECK(rec.u.process.argc >= 1 &&
				  strstr(rec.u.process.argv[0].s, "test-writer"),
			      "process argv[0]");
			break;
		case GMT_REC_DEVICE:
			CHECK(rec.u.device.ordinal == 0 && streq(rec.u.device.name, "Test GPU") &&
				  rec.u.device.total_bytes == 80ull << 30 &&
				  rec.u.device.cc_major == 9 &&
				  rec.u.device.driver_version == 12040 &&
				  rec.u.device.uuid.len == 16 && rec.u.device.uuid.p[15] == 16,
			      "device");
			break;
		case GMT_REC_THREAD:
			CHECK(rec.u.thread.tid == 42 && streq(rec.u.thread.name, "main"), "thread");
			break;
		case GMT_REC_EVENTS:
			CHECK(rec.u.events.columns == compressed, "events by %s",
			      compressed ? "column" : "row");
			break;
		case GMT_REC_EVENT: {
			const struct gmt_event *e = &rec.u.event;
			CHECK(e->tid == 42 && e->api == GMT_API_cuMemAlloc_v2 && e->size == 4096,
			      "event %d", events);
			if (events == 0)
				CHECK(e->time_ns == 1000010 && e->ptr == 0x7f0000001000 &&
					  !e->result && e->device == 0 && e->stack_id == 3 &&
					  !e->aux && !e->aux2,
				      "first event");
			else
				CHECK(e->time_ns == 1000020 && e->ptr == 0x7f0000002000 &&
					  e->result == 2 && e->device == 1 && e->stack_id == 4 &&
					  e->aux == 7 && e->aux2 == 9,
				      "second event: failed, another device, aux fields");
			events++;
			break;
		}
		case GMT_REC_STACK:
			CHECK(rec.u.stack.count == nodes &&
				  rec.u.stack.nodes[0].ip == GMT_PYFRAME_IP(5),
			      "stack nodes, outermost first");
			break;
		case GMT_REC_MODULE:
			modules += rec.u.module.start <= ip && ip < rec.u.module.end &&
				   rec.u.module.build_id.len > 0;
			break;
		case GMT_REC_MEMINFO:
			CHECK(rec.u.meminfo.tid == 42 && rec.u.meminfo.free_bytes == 1 << 20 &&
				  rec.u.meminfo.device == 1,
			      "meminfo");
			break;
		case GMT_REC_SAMPLE:
			CHECK(rec.u.sample.used_bytes == 5 << 20 &&
				  rec.u.sample.process_used_bytes == 3 << 20 &&
				  rec.u.sample.reason == GMT_SAMPLE_WHY_PEAK &&
				  rec.u.sample.uuid.p[0] == 0xab,
			      "sample");
			break;
		case GMT_REC_RANGE:
			CHECK(rec.u.range.tid == 42 && rec.u.range.op == GMT_RANGE_PUSH &&
				  rec.u.range.id == 3 && streq(rec.u.range.text, "epoch"),
			      "range");
			break;
		case GMT_REC_PYFRAME:
			CHECK(rec.u.pyframe.id == 5 && streq(rec.u.pyframe.function, "train") &&
				  streq(rec.u.pyframe.file, "my.py") && rec.u.pyframe.line == 12,
			      "pyframe");
			break;
		case GMT_REC_COUNTERS:
			CHECK(rec.u.counters.tid == 42 && streq(rec.u.counters.source, "torch") &&
				  rec.u.counters.count == 1 &&
				  streq(rec.u.counters.v[0].name, "reserved") &&
				  rec.u.counters.v[0].value == 1 << 20,
			      "counters");
			break;
		case GMT_REC_FWOOM:
			CHECK(rec.u.fwoom.tid == 42 && streq(rec.u.fwoom.source, "jax") &&
				  rec.u.fwoom.how == GMT_FWOOM_EXCEPTHOOK &&
				  rec.u.fwoom.ordinal == -1 && rec.u.fwoom.count == 0 &&
				  streq(rec.u.fwoom.message, "RESOURCE_EXHAUSTED"),
			      "fwoom");
			break;
		case GMT_REC_EXIT:
			CHECK(rec.u.exit.how == GMT_EXIT_EXIT && rec.u.exit.status == 3 &&
				  rec.u.exit.time_ns == 1000065,
			      "exit");
			break;
		case GMT_REC_LOST:
			CHECK(rec.u.lost.tid == 42 && rec.u.lost.count == 3, "lost");
			break;
		case GMT_REC_NOTE:
			break;
		case GMT_REC_TRAILER:
			CHECK(rec.u.trailer.events == 2 && rec.u.trailer.lost == 3 &&
				  rec.u.trailer.stack_nodes == nodes &&
				  rec.u.trailer.end_time_ns == 1000070,
			      "trailer");
			break;
		default:
			break;
		}
	}
	static const int tags[] = {GMT_TAG_PROCESS, GMT_TAG_MODULE,   GMT_TAG_DEVICE, GMT_TAG_STACK,
				   GMT_TAG_THREAD,  GMT_TAG_EVENTS,   GMT_TAG_LOST,   GMT_TAG_NOTE,
				   GMT_TAG_TRAILER, GMT_TAG_MEMINFO,  GMT_TAG_SAMPLE, GMT_TAG_RANGE,
				   GMT_TAG_PYFRAME, GMT_TAG_COUNTERS, GMT_TAG_FWOOM,  GMT_TAG_EXIT};
	for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
		CHECK(seen & (1u << tags[i]), "%s: a %s record read back", path,
		      gmt_rec_type_name(tags[i]));
	CHECK(events == 2, "two events, got %d", events);
	CHECK(modules == 1, "the program's own module, with its build-id, once: %d", modules);
	const struct gmt_read_info *info = gmt_reader_info(rd);
	CHECK(info->complete && !info->damage, "%s reads as complete", path);
	gmt_reader_close(rd);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) != 0, "file made");
}

/* When an event the program did not wait for is the stuck write's: never a
 * write under way for less than GMT_STALL_MIN_MS, whatever FULL_WAIT_MS
 * says (FULL_WAIT_MS=0 called every write during a burst "a stalled file
 * system", on the program's stderr). */
static void stall_rule(void)
{
	const uint64_t ms = 1000000u;
	CHECK(!gmt_lost_to_stall(0, 0, 1), "no write under way: not a stall");
	CHECK(!gmt_lost_to_stall(2 * ms, 0, 1), "FULL_WAIT_MS=0, a 2 ms write: not a stall");
	CHECK(!gmt_lost_to_stall(99 * ms, 50 * ms, 1),
	      "FULL_WAIT_MS=50, a 99 ms write: not a stall");
	CHECK(gmt_lost_to_stall(100 * ms, 0, 0), "FULL_WAIT_MS=0, a 100 ms write: a stall");
	CHECK(gmt_lost_to_stall(1000 * ms, 1000 * ms, 0), "stuck FULL_WAIT_MS: a stall");
	CHECK(!gmt_lost_to_stall(500 * ms, 1000 * ms, 0), "stuck less, own wait not over: waits");
	CHECK(gmt_lost_to_stall(500 * ms, 1000 * ms, 1),
	      "stuck 500 ms, own wait over: the stall's");
	CHECK(gmt_stall_ms(0) == GMT_STALL_MIN_MS && gmt_stall_ms(1000) == 1000, "stall ms %d %d",
	      gmt_stall_ms(0), gmt_stall_ms(1000));
}

int main(void)
{
	stall_rule();
	char dir[] = "/tmp/gmt-test-writer.XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	uint64_t ip = here();
	for (int compress = 0; compress <= 1; compress++) {
		char path[256];
		snprintf(path, sizeof path, "%s/t%d.gmt", dir, compress);
		uint64_t nodes = write_trace(path, compress, ip);
		read_back(path, compress, ip, nodes);
		unlink(path);
	}
	rmdir(dir);
	printf("%s\n", failures ? "test-writer: FAILED" : "test-writer: ok");
	return failures ? 1 : 0;
}
