/* The core's shared state and its thread-locals (preload/state.h): data
 * only, so that every job of the core can read it without calling another. */
#include "preload/state.h"

__thread int gmt_tls_depth __attribute__((tls_model("initial-exec")));
__thread uint64_t gmt_tls_call_start __attribute__((tls_model("initial-exec")));
__thread uintptr_t gmt_tls_hook_frame __attribute__((tls_model("initial-exec")));
__thread struct gmt_ring *gmt_tls_ring __attribute__((tls_model("initial-exec")));
__thread unsigned gmt_tls_exec_holds __attribute__((tls_model("initial-exec")));

const uint32_t gmt_armed_always = 1;

struct gmt_runtime gmt_rt = {
    .setup_lock = PTHREAD_MUTEX_INITIALIZER,
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
    .io_gate = PTHREAD_MUTEX_INITIALIZER,
    .armed = &gmt_armed_always,
};

/* The devices' facts, asked on the program's thread inside the call whose
 * event made the file: the driver is surely up there, while at exit the
 * runtime may have torn it down (seen on an H100: a DEVICE record of
 * zeros). No lock is held across the driver calls, whose first lookups take
 * the loader's lock; the flush thread merges the result. */
struct gmt_early_facts gmt_rt_early = {.lock = PTHREAD_MUTEX_INITIALIZER};
