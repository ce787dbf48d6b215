/* Calibrating the TSC against CLOCK_MONOTONIC, and publishing the line.
 * Only the flush thread writes (gmt_clock_tick); gmt_clock_init runs once,
 * at configuration, before that thread exists. */
#include "clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if GMT_HAVE_TSC
#include <cpuid.h>
#endif

#include "tracer.h"

struct gmt_clock_line gmt_clock_line;

enum {
	CAL_NONE = -1, /* stamps stay clock_gettime's */
	CAL_UNDECIDED = 0,
	CAL_WAITING, /* trusted; the first pair is too recent for a rate */
	CAL_LINE,    /* the line is published */
};

/* The first fit needs this much time since the first pair: with two reads
 * each ~30 ns wide, the rate is then good to a few ppm. */
#define FIRST_FIT_NS 20000000ull
#define REFIT_NS     50000000ull
/* The line corrects its distance from CLOCK_MONOTONIC over about this
 * long, changing its rate by no more than MAX_SLEW. */
#define SLEW_HORIZON_NS 1e9
#define MAX_SLEW	5e-4
/* Farther than this and the TSC is not what we took it for (a migrated
 * VM, a suspend): the line is re-anchored on CLOCK_MONOTONIC. */
#define REANCHOR_NS 1000000

static struct {
	int setting;
	int state;
	uint64_t tsc0, mono0; /* the first pair: every rate is measured from it */
	uint64_t last_fit_mono;
	int reanchor_noted;
} cal;

#if GMT_HAVE_TSC

/* A (tsc, CLOCK_MONOTONIC) pair, the narrowest of three tries. The clock is
 * read after the counter, so line(tsc) = mono is never behind the clock. */
static void read_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;
	*tsc = *mono = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t t1 = gmt_rdtsc_ordered();
		uint64_t m = gmt_mono_ns();
		uint64_t t2 = gmt_rdtsc_ordered();
		if (t2 - t1 < best) {
			best = t2 - t1;
			*tsc = t1;
			*mono = m;
		}
	}
}

/* CPUID 0x80000007 EDX bit 8: the TSC ticks at one rate in every P- and
 * C-state, so a rate measured now holds later. */
static int tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return (d >> 8) & 1;
}

/* A paravirtual clock's vDSO path (kvm-clock, Hyper-V's TSC page) scales
 * the TSC of whichever CPU the caller is on with one set of parameters, and
 * the kernel enables it only when the hypervisor says the TSCs agree
 * (PVCLOCK_TSC_STABLE_BIT); otherwise every read is a system call. So a
 * clock_gettime that never enters the kernel is the kernel vouching. */
static int clock_read_in_user_space(void)
{
	uint64_t vdso = UINT64_MAX, sys = UINT64_MAX;
	struct timespec ts;
	for (int i = 0; i < 16; i++) {
		uint64_t t = gmt_rdtsc_ordered();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = gmt_rdtsc_ordered() - t;
		vdso = t < vdso ? t : vdso;
	}
	for (int i = 0; i < 4; i++) {
		uint64_t t = gmt_rdtsc_ordered();
		syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
		t = gmt_rdtsc_ordered() - t;
		sys = t < sys ? t : sys;
	}
	return vdso * 4 < sys;
}

static char clocksource[64];

static int kernel_vouches_for_tsc(void)
{
	char *name = clocksource;
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, name, sizeof clocksource - 1);
	close(fd);
	if (n <= 0)
		return 0;
	name[strcspn(name, "\n")] = 0;
	if (!strcmp(name, "tsc"))
		return 1; /* passed the kernel's own synchronization checks */
	if (!strcmp(name, "kvm-clock") || !strcmp(name, "hyperv_clocksource_tsc_page"))
		return clock_read_in_user_space();
	return 0;
}

static uint64_t to_mult(double ns_per_tick)
{
	return (uint64_t)(ns_per_tick * 4294967296.0 + 0.5);
}

/* The writer's side of the seqlock in gmt_now_ns. */
static void publish_line(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	uint32_t seq = gmt_clock_line.seq;
	__atomic_store_n(&gmt_clock_line.seq, seq + 1, __ATOMIC_RELAXED);
	/* The odd seq before the fields: pairs with the acquire fence in
	 * gmt_now_ns, whose second seq load then sees a change. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&gmt_clock_line.base_tsc, base_tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&gmt_clock_line.base_ns, base_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&gmt_clock_line.mult, mult, __ATOMIC_RELAXED);
	/* The fields before the even seq: pairs with the acquire load of seq
	 * in gmt_now_ns. */
	__atomic_store_n(&gmt_clock_line.seq, seq + 2, __ATOMIC_RELEASE);
}

void gmt_clock_init(int setting)
{
	cal.setting = setting;
	cal.state = setting ? CAL_UNDECIDED : CAL_NONE;
	if (setting)
		read_pair(&cal.tsc0, &cal.mono0);
	else
		gmt_note(0, "clock: CLOCK_MONOTONIC (GPUMEMTRACE_CLOCK=0)");
}

void gmt_clock_tick(void)
{
	if (cal.state == CAL_NONE)
		return;
	if (cal.state == CAL_UNDECIDED) {
		int invariant = tsc_invariant();
		int trusted = invariant && (cal.setting == 2 || kernel_vouches_for_tsc());
		cal.state = trusted ? CAL_WAITING : CAL_NONE;
		if (!trusted) {
			char text[160];
			snprintf(text, sizeof text, "clock: CLOCK_MONOTONIC (%s)",
				 !invariant
				     ? "the CPU's TSC is not invariant"
				     : "the kernel's clocksource does not vouch for the TSC");
			gmt_note(0, text);
			return;
		}
	}
	uint64_t tsc, mono;
	read_pair(&tsc, &mono);
	if (tsc <= cal.tsc0 || mono <= cal.mono0 + FIRST_FIT_NS ||
	    mono - cal.last_fit_mono < REFIT_NS)
		return;
	/* Over the whole run so far: the longer the span, the finer the rate. */
	double rate = (double)(mono - cal.mono0) / (double)(tsc - cal.tsc0);
	if (!(rate > 0.01 && rate < 100.0)) {
		cal.state = CAL_NONE; /* not a counter of 10 MHz..100 GHz */
		return;
	}
	cal.last_fit_mono = mono;
	if (cal.state == CAL_WAITING) {
		publish_line(tsc, mono, to_mult(rate));
		cal.state = CAL_LINE;
		char text[160];
		snprintf(text, sizeof text,
			 "clock: the TSC (%.3f MHz, clocksource %s), fitted to CLOCK_MONOTONIC",
			 1e3 / rate, cal.setting == 2 ? "not checked" : clocksource);
		gmt_note(0, text);
		return;
	}
	/* Refit through the old line's value now, so stamps stay continuous,
	 * with a rate that closes the distance to CLOCK_MONOTONIC. */
	uint64_t on_line = gmt_clock_apply(gmt_clock_line.base_tsc, gmt_clock_line.base_ns,
					   gmt_clock_line.mult, tsc);
	int64_t off = (int64_t)(mono - on_line);
	if (off > REANCHOR_NS || off < -REANCHOR_NS) {
		publish_line(tsc, mono, to_mult(rate));
		if (!cal.reanchor_noted) {
			cal.reanchor_noted = 1;
			char text[160];
			snprintf(
			    text, sizeof text,
			    "clock: the TSC and CLOCK_MONOTONIC parted by %lld us; the line was "
			    "re-anchored (events around it may be out of order)",
			    (long long)(off / 1000));
			gmt_note(1, text);
		}
		return;
	}
	double slew = (double)off / SLEW_HORIZON_NS;
	slew = slew > MAX_SLEW ? MAX_SLEW : slew < -MAX_SLEW ? -MAX_SLEW : slew;
	publish_line(tsc, on_line, to_mult(rate * (1.0 + slew)));
}

unsigned gmt_clock_wait_ms(void)
{
	if (cal.state != CAL_UNDECIDED && cal.state != CAL_WAITING)
		return 0;
	uint64_t now = gmt_mono_ns(), due = cal.mono0 + FIRST_FIT_NS;
	return now >= due ? 1 : (unsigned)((due - now) / 1000000u) + 1;
}

#else

unsigned gmt_clock_wait_ms(void)
{
	return 0;
}

void gmt_clock_init(int setting)
{
	cal.state = CAL_NONE;
	gmt_note(0, setting ? "clock: CLOCK_MONOTONIC (no TSC on this architecture)"
			    : "clock: CLOCK_MONOTONIC (GPUMEMTRACE_CLOCK=0)");
}

void gmt_clock_tick(void)
{
}

#endif
