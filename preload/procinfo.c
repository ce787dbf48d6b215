/* The PROCESS record: who the process is (pid, host, executable), its
 * command line and the environment that shapes GPU memory
 * (preload/writer.h). Written once, as the trace is created. */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/codec.h"
#include "gpumemtrace/format.h"
#include "preload/writer.h"

/* The environment that shapes GPU memory, and the process's place in its
 * job, kept in the process record: these names, then every variable with
 * one of recorded_prefixes (at most RECORDED_PREFIXED of them). */
static const char *const recorded_env[] = {
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "TF_ENABLE_GPU_GARBAGE_COLLECTION",
    "TF_DEVICE_MIN_SYS_MEMORY_IN_MB",
    "XLA_CLIENT_MEM_FRACTION",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUBLASLT_WORKSPACE_SIZE",
    "CUPY_GPU_MEMORY_LIMIT",
    /* which process of a job this is, for the reports on several traces */
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
};

static const char *const recorded_prefixes[] = {"XLA_PYTHON_CLIENT_", "NCCL_"};
#define RECORDED_PREFIXED 32

extern char **environ;

/* The value of environ's entry e when its name has one of
 * recorded_prefixes; *klen the name's length. */
static const char *prefixed_env(const char *e, size_t *klen)
{
	const char *eq = strchr(e, '=');
	if (!eq)
		return NULL;
	for (size_t i = 0; i < sizeof recorded_prefixes / sizeof *recorded_prefixes; i++)
		if (strncmp(e, recorded_prefixes[i], strlen(recorded_prefixes[i])) == 0) {
			*klen = (size_t)(eq - e);
			return eq + 1;
		}
	return NULL;
}

static size_t read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t k;
	while (n < size && (k = read(fd, buf + n, size - n)) > 0)
		n += (size_t)k;
	close(fd);
	return n;
}

void gmt_writer_process(struct gmt_writer *w)
{
	char host[256] = "", exe[4096] = "";
	gethostname(host, sizeof host - 1);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = '\0';
	static char cmdline[32768];
	size_t cl = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline);

	size_t need = 64 + strlen(host) + strlen(exe) + cl + 2 * GMT_VARINT_MAX * 64;
	/* Read once: what is sized is what is written, should the program
	 * change its environment meanwhile. */
	struct {
		const char *k, *v;
		size_t kl, vl;
	} env[sizeof recorded_env / sizeof *recorded_env + RECORDED_PREFIXED];
	size_t nenv = 0, nprefixed = 0;
	for (size_t i = 0; i < sizeof recorded_env / sizeof *recorded_env; i++) {
		const char *v = getenv(recorded_env[i]);
		if (v)
			env[nenv++] = (typeof(env[0])){recorded_env[i], v, strlen(recorded_env[i]),
						       strlen(v)};
	}
	for (char **e = environ; e && *e && nprefixed < RECORDED_PREFIXED; e++) {
		size_t kl;
		const char *v = prefixed_env(*e, &kl);
		if (v) {
			env[nenv++] = (typeof(env[0])){*e, v, kl, strlen(v)};
			nprefixed++;
		}
	}
	for (size_t i = 0; i < nenv; i++)
		need += env[i].kl + env[i].vl + 2 * GMT_VARINT_MAX;
	uint8_t *p = gmt_writer_room(w, need);
	if (!p)
		return;
	p = gmt_put_varint(p, GMT_TAG_PROCESS);
	p = gmt_put_varint(p, (uint64_t)getpid());
	p = gmt_put_varint(p, (uint64_t)getppid());
	p = gmt_put_varint(p, gmt_wall_ns());
	p = gmt_writer_put_str(p, host, strlen(host));
	p = gmt_writer_put_str(p, exe, strlen(exe));
	uint64_t argc = 0;
	for (size_t i = 0; i < cl; i++)
		argc += cmdline[i] == '\0';
	if (cl && cmdline[cl - 1] != '\0')
		argc++; /* truncated last argument */
	p = gmt_put_varint(p, argc);
	for (size_t i = 0; i < cl;) {
		size_t k = strnlen(cmdline + i, cl - i);
		p = gmt_writer_put_str(p, cmdline + i, k);
		i += k + 1;
	}
	p = gmt_put_varint(p, nenv);
	for (size_t i = 0; i < nenv; i++) {
		p = gmt_writer_put_str(p, env[i].k, env[i].kl);
		p = gmt_writer_put_str(p, env[i].v, env[i].vl);
	}
	gmt_writer_commit(w, p);
}
