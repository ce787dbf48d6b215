/* Calibrating the TSC against CLOCK_MONOTONIC, and publishing the line.
 * Only the flush thread writes (gmt_clock_tick); gmt_clock_init runs once,
 * at configuration, before that thread exists. */
#include "preload/clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#if GMT_HAVE_TSC
#include <cpuid.h>
#endif

#include "preload/tracer.h"

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
/* Farther than this (or 1000 ppm of the time since the last fit, when
 * that is more) and the TSC is not what we took it for (a migrated VM, a
 * suspend): the line is re-anchored on CLOCK_MONOTONIC. */
#define REANCHOR_NS 1000000
/* Restarts before a first line that give up on the TSC. */
#define MAX_RESTARTS 3

static struct {
	int setting;
	int state;
	uint64_t tsc0, mono0; /* the first pair: every rate is measured from it */
	uint64_t last_fit_mono;
	int restarts;
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

/* The writer's side of the latch read in gmt_clock_read. */
static void publish_line(uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	uint32_t seq = gmt_clock_line.seq;
	for (int i = 0; i < 2; i++) {
		/* Release: the other copy, written last, is complete for a
		 * reader that sees this count. */
		__atomic_store_n(&gmt_clock_line.seq, seq + 1 + i, __ATOMIC_RELEASE);
		/* The count before copy i's stores: pairs with the acquire
		 * fence in gmt_clock_read, whose second seq load then sees it
		 * changed. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		struct gmt_clock_params *p = &gmt_clock_line.p[i];
		__atomic_store_n(&p->base_tsc, base_tsc, __ATOMIC_RELAXED);
		__atomic_store_n(&p->base_ns, base_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&p->mult, mult, __ATOMIC_RELAXED);
	}
}

static void note_once(const char *what)
{
	if (cal.reanchor_noted)
		return;
	cal.reanchor_noted = 1;
	char text[200];
	snprintf(text, sizeof text,
		 "clock: the TSC %s; the line was re-anchored on CLOCK_MONOTONIC (events "
		 "around it may be out of order)",
		 what);
	gmt_note(1, text);
}

/* The pairs disagree with the line or with each other (a migrated VM, a
 * suspend, a counter that went back): calibrate again from this pair. A
 * published line is moved onto the clock at once, at its old rate until a
 * new one is measured; without one, the TSC is given up after a few. */
static void restart(uint64_t tsc, uint64_t mono, const char *what)
{
	cal.tsc0 = tsc;
	cal.mono0 = mono;
	cal.last_fit_mono = mono;
	if (cal.state == CAL_LINE) {
		publish_line(tsc, mono, gmt_clock_line.p[0].mult);
		note_once(what);
	} else if (++cal.restarts >= MAX_RESTARTS) {
		cal.state = CAL_NONE;
		char text[160];
		snprintf(text, sizeof text, "clock: CLOCK_MONOTONIC (the TSC %s)", what);
		gmt_note(0, text);
	}
}

void gmt_clock_step(uint64_t tsc, uint64_t mono)
{
	if (cal.state != CAL_WAITING && cal.state != CAL_LINE)
		return;
	if (tsc <= cal.tsc0 || mono <= cal.mono0) {
		restart(tsc, mono, "went back");
		return;
	}
	if (mono - cal.mono0 < FIRST_FIT_NS || mono - cal.last_fit_mono < REFIT_NS)
		return;
	/* Over the whole span since the first pair: the longer, the finer. */
	double rate = (double)(mono - cal.mono0) / (double)(tsc - cal.tsc0);
	if (!(rate > 0.01 && rate < 100.0)) {
		restart(tsc, mono, "ran at no plausible rate (10 MHz..100 GHz)");
		return;
	}
	uint64_t since_fit = mono - cal.last_fit_mono;
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
	const struct gmt_clock_params *p = &gmt_clock_line.p[0];
	uint64_t on_line = gmt_clock_apply(p->base_tsc, p->base_ns, p->mult, tsc);
	int64_t off = (int64_t)(mono - on_line);
	int64_t limit = REANCHOR_NS > since_fit / 1000 ? REANCHOR_NS : (int64_t)(since_fit / 1000);
	if (off > limit || off < -limit) {
		char what[96];
		snprintf(what, sizeof what, "and CLOCK_MONOTONIC parted by %lld us",
			 (long long)(off / 1000));
		restart(tsc, mono, what);
		return;
	}
	/* The new rate holds until the next refit: spread the correction
	 * over at least twice that, or each refit would overshoot (at refits
	 * 2 s apart and a 1 s horizon, the distance would swing for ever). */
	double horizon = 2.0 * (double)since_fit;
	horizon = horizon > SLEW_HORIZON_NS ? horizon : SLEW_HORIZON_NS;
	double slew = (double)off / horizon;
	slew = slew > MAX_SLEW ? MAX_SLEW : slew < -MAX_SLEW ? -MAX_SLEW : slew;
	publish_line(tsc, on_line, to_mult(rate * (1.0 + slew)));
}

void gmt_clock_test_start(uint64_t tsc0, uint64_t mono0)
{
	memset(&gmt_clock_line, 0, sizeof gmt_clock_line);
	memset(&cal, 0, sizeof cal);
	cal.setting = 2;
	cal.state = CAL_WAITING;
	cal.tsc0 = tsc0;
	cal.mono0 = mono0;
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
	gmt_clock_step(tsc, mono);
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

void gmt_clock_step(uint64_t tsc, uint64_t mono)
{
	(void)tsc;
	(void)mono;
}

void gmt_clock_test_start(uint64_t tsc0, uint64_t mono0)
{
	(void)tsc0;
	(void)mono0;
}

#endif
