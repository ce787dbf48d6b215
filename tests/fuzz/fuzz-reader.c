/* libFuzzer target: an input is a trace file, read by the trace reader and
 * then by one CLI command (chosen by the input's length, so the real traces
 * seeding the corpus stay valid traces). Every command must end with an
 * exit code, never a crash, a sanitizer report or a runaway allocation.
 * Before anything reads it, each whole chunk gets the CRC its (mutated)
 * payload has, so mutations reach the record decoders instead of stopping
 * at the CRC check; one input length in eight keeps the CRCs as they are,
 * so that check is fuzzed too. Built and run by `make fuzz`
 * (docs/reliability.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpumemtrace/format.h>

#include "cli/cli.h"
#include "common/codec.h"
#include "reader/reader.h"

static int trace_fd = -1;
static char trace_path[64];

/* libFuzzer's entry points, found by name. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	trace_fd = memfd_create("fuzz-trace", 0);
	if (trace_fd < 0)
		abort();
	snprintf(trace_path, sizeof trace_path, "/proc/self/fd/%d", trace_fd);
	xalloc_on_failure(diag_out_of_memory); /* as the CLI's main */
	/* The reports themselves are not under test: keep them off the log. */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* The reader alone: every record, to the end or the first error. */
static void read_all(void)
{
	struct gmt_read_error err;
	struct gmt_reader *r = gmt_reader_open(trace_path, &err);
	if (!r)
		return;
	struct gmt_record rec;
	while (gmt_reader_next(r, &rec) > 0)
		;
	gmt_reader_close(r);
}

/* Every whole chunk of the trace in buf gets its payload's CRC. */
static void fix_crcs(uint8_t *buf, size_t size)
{
	if (size < GMT_HEADER_SIZE || memcmp(buf, GMT_MAGIC, GMT_MAGIC_LEN) != 0)
		return;
	size_t off = gmt_get_le16(buf + GMT_HDR_HEADER_SIZE);
	while (off >= GMT_HEADER_SIZE && size - off >= GMT_CHUNK_HEADER_SIZE && off < size) {
		uint32_t magic = gmt_get_le32(buf + off), len = gmt_get_le32(buf + off + 4);
		if ((magic != GMT_CHUNK_MAGIC && magic != GMT_CHUNK_MAGIC_ZSTD) ||
		    len > size - off - GMT_CHUNK_HEADER_SIZE)
			return;
		uint32_t crc = gmt_crc32c(0, buf + off + GMT_CHUNK_HEADER_SIZE, len);
		for (int i = 0; i < 4; i++)
			buf[off + 12 + i] = (uint8_t)(crc >> (8 * i));
		off += GMT_CHUNK_HEADER_SIZE + (size_t)len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		abort();
	memcpy(buf, data, size);
	if ((size / 17) % 8 != 0)
		fix_crcs(buf, size);
	if (ftruncate(trace_fd, 0) != 0 || pwrite(trace_fd, buf, size, 0) != (ssize_t)size)
		abort();
	free(buf);
	read_all();
	char *p = trace_path;
	char *argvs[][7] = {
	    {"explain", p},
	    {"export", "--format", "csv", "-o", "/dev/null", p},
	    {"flamegraph", "-o", "/dev/null", p},
	    {"dump", p},
	    {"summary", "--json", p},
	    {"summary", p},
	    {"top", p},
	    {"growth", p},
	    {"fragmentation", p},
	    {"oom", p},
	    {"leaks", p},
	    {"diff", p, p},
	    {"check", "--max-peak", "1GiB", p},
	    {"accounting", p},
	    {"top", "--by", "range", p},
	    {"plot", "-o", "/dev/null", p},
	    {"flamegraph", "--folded", p},
	    {"export", "--format", "perfetto", "-o", "/dev/null", p},
	    {"export", "--format", "pprof", "-o", "/dev/null", p},
	};
	int (*fns[])(int, char **) = {cmd_explain,	 cmd_export,	 cmd_flamegraph, cmd_dump,
				      cmd_summary,	 cmd_summary,	 cmd_top,	 cmd_growth,
				      cmd_fragmentation, cmd_oom,	 cmd_leaks,	 cmd_diff,
				      cmd_check,	 cmd_accounting, cmd_top,	 cmd_plot,
				      cmd_flamegraph,	 cmd_export,	 cmd_export};
	_Static_assert(sizeof fns / sizeof fns[0] == sizeof argvs / sizeof argvs[0],
		       "one function per command line");
	size_t k = size % (sizeof fns / sizeof fns[0]);
	int argc = 0;
	while (argc < 7 && argvs[k][argc])
		argc++;
	int rc = fns[k](argc, argvs[k]);
	if (rc < 0 || rc > 4)
		abort(); /* only the documented exit codes */
	return 0;
}
