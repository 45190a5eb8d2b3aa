// SPDX-License-Identifier: GPL-2.0
/*
 * The high-order allocations users make, on fragmented memory, with
 * kdefrag off (enabled=0: the allocator as on stock 6.12) or serving the
 * allocator's direct compaction (direct=1):
 *
 *   pool  "1000" written to /proc/sys/vm/nr_hugepages once, as an operator
 *         would; the pool's size read back, next to the physical limit.
 *   thp   FAULTS 2 MiB regions of a MADV_HUGEPAGE mapping (THP enabled and
 *         defrag "madvise"), faulted one by one as in mmtests' THP fault
 *         benchmark: per fault, whether it got a huge page, and for those
 *         that did how long the first touch took (allocation, compaction
 *         and zeroing of 2 MiB; a fallback zeroes 4 KiB and is not
 *         comparable). Variant "floor": the same faults on memory never
 *         fragmented (kdefrag off; touched as much first, then freed:
 *         warm_memory()), the latency no defragmentation can go below.
 *   mthp  the same with MFAULTS 64 KiB mTHP faults (order 4; PMD THP off),
 *         the size network buffers and drivers ask for too: whether each
 *         got a 64 KiB folio, and how long those took.
 *
 * Memory is fragmented with "sparse" (guest/lib fragment(): filled but for
 * twice min_free_kbytes and 16 MB, a small tmpfs file every 64 anon pages,
 * then 3 of 4 anon pages released) from a fixed seed, on CPU 0 (so on
 * node 0's side of the fake NUMA split), so that every boot starts from
 * the same kind of memory. The side's setting is applied after that, and
 * proactive compaction and khugepaged are stopped while measuring: the
 * work counted is the allocations' own.
 *
 * Physical limit, per zone, from /proc/kpageflags just before the
 * allocations: the aligned ranges of the size asked for (2 MiB, or 64 KiB
 * for mthp) whose pages are all free or on the LRU (not under writeback),
 * but no more than the zone's free pages above its min watermark (without
 * boost) can hold (each block takes its size in free pages, wherever the
 * pages it displaces go). Compaction stops
 * short of it (it wants the low watermark plus compact_gap() free, and
 * lowmem reserves apply), but reclaim during the allocations can add room
 * (page cache): a run may land on either side of 100%.
 *
 * Work: pages migrated (pgmigrate_success) and scanned (compaction's
 * migrate and free scanners plus kdefrag's scoring), in total and per
 * huge page (per 64 KiB folio for mthp); pages migrated also against the
 * least possible, an estimate from /proc/kpageflags before the
 * allocations: what the cheapest ranges held in use, node 0's first,
 * over as many ranges as the run got blocks beyond those free then
 * (least_migrated()); with kdefrag, the pages each range made migrated
 * (from the defrag trace) next to those ranges' costs. Direct compaction
 * stalls, kdefrag's ranges tried, made and made beyond the one handed
 * over, the ranges given up by reason, and the free memory before the
 * allocations (a run whose workload left blocks for every fault
 * measures nothing).
 *
 *   high_order pool|thp|mthp off|direct|floor SEED
 *
 * Fails only if it cannot measure, or if pages lost their contents; the
 * figures are printed only for a run that measured.
 */
#include "kdefrag.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DEFRAG "/sys/kernel/mm/defrag/"
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"
#define HPAGE_ORDER 9
#define HPAGE (PAGE_SIZE << HPAGE_ORDER)
#define FAULTS 256
#define MTHP_ORDER 4
#define MTHP (PAGE_SIZE << MTHP_ORDER)
#define MFAULTS 2048
#define MTHP_DIR THP "hugepages-64kB/"
#define PMD_DIR THP "hugepages-2048kB/"

static const char * const counters[] = {
	"pgmigrate_success", "compact_migrate_scanned", "compact_free_scanned",
	"compact_stall", "compact_success", "compact_fail", "defrag_scanned",
	"defrag_direct_attempt", "defrag_direct_success", "defrag_direct_fail",
	"defrag_attempt", "defrag_success", "defrag_direct_extra", "thp_fault_alloc", "thp_fault_fallback", "compact_daemon_wake",
};
#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))
enum { MIGRATED, MIGRATE_SCANNED, FREE_SCANNED, STALL, C_SUCCESS, C_FAIL,
       DEFRAG_SCANNED, D_ATTEMPT, D_SUCCESS, D_FAIL, R_ATTEMPT, R_SUCCESS, D_EXTRA, THP_ALLOC, THP_FALLBACK,
       DAEMON_WAKE };

/* mTHP sizes turned off (64 KiB is turned on again for mthp). */
static const char * const mthp_sizes[] = {
	MTHP_DIR "enabled",
	THP "hugepages-16kB/enabled", THP "hugepages-32kB/enabled",
	THP "hugepages-128kB/enabled", THP "hugepages-256kB/enabled",
	THP "hugepages-512kB/enabled", THP "hugepages-1024kB/enabled",
};

/*
 * The ranges of the size asked for at the start, per zone: those that
 * could be emptied, by cost (guest/lib kpf_range_costs()), those free,
 * and how many blocks the zone's free memory above its min watermark
 * holds. The allocator takes free blocks from any zone of its zonelist
 * before it compacts, and then compacts the zones in that order, the
 * local node's first (the workload runs on CPU 0: node 0): roughly, the
 * least any mechanism migrates for k blocks is what the free ranges do
 * not cover, made from the cheapest ranges of node 0's zones as far as
 * their room goes, then of the next node's. The pool is filled from
 * each node in turn: for it, the cheapest of all zones, each within its
 * room. An estimate, not a bound (the blocks made and the pages moved
 * fill other ranges meanwhile, reclaim frees some); for faults, a figure
 * over all zones at once would count ranges a local allocation never
 * uses.
 */
#define MAX_ZONES 16
static struct ranges_zone {
	int node;
	unsigned long start;
	long *cost, n, free, room;
} ranges_at_start[MAX_ZONES];
static int ranges_nz;
static long ranges_free;	/* free ranges over all zones */
/* The pool: hugetlb takes its pages from each node in turn. */
static bool ranges_interleaved;

/* Zonelist order from node 0: by node, higher zones first. */
static int cmp_zone(const void *a, const void *b)
{
	const struct ranges_zone *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->start > y->start ? -1 : x->start < y->start;
}

/*
 * Pages the cheapest ranges at the start migrate for @k blocks, zone by
 * zone in zonelist order, or cheapest first across the zones for the
 * pool (see above); their costs in @costs (room for @k) if not NULL,
 * with their number in *@nc. -1 if the zones could not make that many.
 */
static long least_migrated(long k, long *costs, long *nc)
{
	long sum = 0, next[MAX_ZONES] = { 0 };

	if (nc)
		*nc = 0;
	for (k -= ranges_free; k > 0; k--) {
		int best = -1;

		for (int z = 0; z < ranges_nz; z++) {
			const struct ranges_zone *r = &ranges_at_start[z];

			if (next[z] >= r->n || next[z] >= r->room - r->free)
				continue;
			if (best < 0 || (ranges_interleaved &&
					 r->cost[next[z]] < ranges_at_start[best].cost[next[best]]))
				best = z;
			if (!ranges_interleaved)
				break;
		}
		if (best < 0)
			return -1;
		sum += ranges_at_start[best].cost[next[best]];
		if (costs)
			costs[(*nc)++] = ranges_at_start[best].cost[next[best]];
		next[best]++;
	}
	return sum;
}

/*
 * The physical limit of blocks of @order over every populated zone; fills
 * ranges_at_start.
 */
static long physical_limit(unsigned int order, long *ranges_out)
{
	struct zone_info zi[MAX_ZONES];
	struct kpf_zone z[MAX_ZONES];
	int nz = kpf_snapshot(z, MAX_ZONES), ni = read_zoneinfo(zi, MAX_ZONES);
	long limit = 0, ranges_all = 0;

	if (nz < 0 || ni < 0) {
		if (nz >= 0)
			kpf_release(z, nz);
		return -1;
	}
	for (int k = 0; k < nz; k++) {
		struct ranges_zone *r = &ranges_at_start[k];
		long ranges, room = 0;

		r->cost = kpf_range_costs(&z[k], 1, order, &r->n, &r->free);
		if (!r->cost) {
			kpf_release(z, nz);
			return -1;
		}
		/* Feasible or free: those kpf_range_costs() counted. */
		ranges = r->n + r->free;
		for (int i = 0; i < ni; i++) {
			long min = zi[i].min - zi[i].boost;

			if (zi[i].node == z[k].node && !strcmp(zi[i].name, z[k].name))
				room = zi[i].free > min ? (zi[i].free - min) >> order : 0;
		}
		r->node = z[k].node;
		r->start = z[k].start;
		r->room = room;
		ranges_free += r->free;
		limit += ranges < room ? ranges : room;
		ranges_all += ranges;
	}
	ranges_nz = nz;
	qsort(ranges_at_start, nz, sizeof(ranges_at_start[0]), cmp_zone);
	kpf_release(z, nz);
	*ranges_out = ranges_all;
	return limit;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

#define MAX_TRACED 65536

/*
 * Where the pages migrated went, range by range: what each range made
 * migrated (from the defrag trace; on the stock side there are none),
 * next to what the ranges least_migrated() counts held in use.
 */
static void ranges_print(long got)
{
	static struct traced_range r[MAX_TRACED];
	static long made[MAX_TRACED], least[MAX_TRACED];
	long failed_migrated = 0, nl = 0, k = got - ranges_free;
	int n = traced_ranges(r, MAX_TRACED), nm = 0, nf = 0;

	if (n <= 0)
		return;
	for (int i = 0; i < n; i++) {
		if (r[i].made) {
			made[nm++] = r[i].migrated;
		} else {
			nf++;
			failed_migrated += r[i].migrated;
		}
	}
	if (!nm)
		return;
	qsort(made, nm, sizeof(made[0]), cmp_long);
	printf("pages migrated per range made: p10 %ld p50 %ld p90 %ld max %ld (%d made, %d given up after migrating %ld)",
	       made[nm / 10], made[nm / 2], made[nm * 9 / 10], made[nm - 1], nm, nf, failed_migrated);
	if (k > 0 && k <= MAX_TRACED && least_migrated(got, least, &nl) >= 0 && nl) {
		qsort(least, nl, sizeof(least[0]), cmp_long);
		printf("; the least possible's %ld: p10 %ld p50 %ld p90 %ld max %ld",
		       nl, least[nl / 10], least[nl / 2], least[nl * 9 / 10], least[nl - 1]);
	}
	printf("\n");
}

/* The pool: its size after one write (or -errno), the write's duration in *@t. */
static long grow_pool(double *t)
{
	char val[32];
	double t0 = now();
	/* Short of 1000 the write still succeeds: the pool's size says how far. */
	long got = write_str(NR_HUGEPAGES, "1000");

	*t = now() - t0;
	if (!got)
		got = setting_get(NR_HUGEPAGES, val, sizeof(val)) ? -EIO : atol(val);
	write_str(NR_HUGEPAGES, "0");
	return got;
}

/* Faults that got a 64 KiB mTHP so far. */
static long mthp_allocs(void)
{
	char v[32];

	return setting_get(MTHP_DIR "stats/anon_fault_alloc", v, sizeof(v)) ? -1 : atol(v);
}

/* Faults that wanted a 64 KiB mTHP and fell back, so far. */
static long mthp_fallback_count(void)
{
	char v[32];

	return setting_get(MTHP_DIR "stats/anon_fault_fallback", v, sizeof(v)) ? -1 : atol(v);
}

/* Faults that got a THP of the size faulted so far. */
static long huge_allocs(bool mthp)
{
	return mthp ? mthp_allocs() : vmstat("thp_fault_alloc");
}

/*
 * @n faults of @size (a THP or mTHP size), one region at a time; lat[]
 * gets the first touch's time of each fault that got a folio of that size,
 * *@t their sum. Each region is then filled and, at the end, checked:
 * *@bad gets the pages whose contents were wrong. Returns the faults that
 * got a folio of @size, or -1.
 */
static long fault_thps(bool mthp, double *t, double *lat, size_t *bad)
{
	size_t size = mthp ? MTHP : HPAGE, n = mthp ? MFAULTS : FAULTS;
	char *raw, *p = map_advised(n * size, size, &raw);
	long huge = 0;

	if (!p)
		return -1;
	*t = 0;
	for (size_t i = 0; i < n; i++) {
		long before = huge_allocs(mthp);
		double t0 = now(), dt;

		p[i * size] = 1;
		dt = now() - t0;
		if (huge_allocs(mthp) > before) {
			lat[huge++] = dt;
			*t += dt;
		}
		fill_pages(p + i * size, size / PAGE_SIZE, 0x7b + i);
	}
	*bad = 0;
	for (size_t i = 0; i < n; i++)
		*bad += check_pages(p + i * size, size / PAGE_SIZE, 0x7b + i);
	munmap(raw, (n + 1) * size);
	return huge;
}

/*
 * The floor's faults would be the first touch of most guest memory, which
 * the fragmenting workload touches first on the other runs: under TCG the
 * host backs guest RAM as it is first touched, and that made the floor
 * slower than fragmented runs (p50 8-13 ms, 3.8 ms when the host had it
 * backed). Touch as much as the workload would, in single pages, then
 * give it back: freed whole, it merges into the blocks it came from.
 */
static int warm_memory(void)
{
	long free_kb = mem_free_kb(), leave_kb = 16 * 1024;
	char num[32];
	size_t len;
	void *p;

	if (read_str("/proc/sys/vm/min_free_kbytes", num, sizeof(num)) > 0)
		leave_kb += 2 * atol(num);
	if (free_kb <= leave_kb)
		return -1;
	len = (size_t)(free_kb - leave_kb) * 1024 / PAGE_SIZE * PAGE_SIZE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	madvise(p, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += PAGE_SIZE)
		((volatile char *)p)[off] = 1;
	munmap(p, len);
	return 0;
}

#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/*
 * The kernel starts on jiffies and switches to the TSC once it is
 * calibrated, a few seconds into a TCG boot: latencies measured before
 * would be in 4 ms steps. Wait for it (60 s at most); false if it never came.
 */
static bool fine_clock(char *clock, size_t len)
{
	for (int i = 0; i < 600; i++) {
		if (setting_get(CLOCKSOURCE, clock, len))
			return false;
		if (!strstr(clock, "jiffies"))
			return true;
		usleep(100000);
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "", *variant = argc > 2 ? argv[2] : "";
	bool pool = !strcmp(what, "pool"), floor = !strcmp(variant, "floor");
	bool mthp = !strcmp(what, "mthp");
	unsigned int order = mthp ? MTHP_ORDER : HPAGE_ORDER;
	long faults = mthp ? MFAULTS : FAULTS, allocs0, fallbacks0, mthp_fallbacks;
	bool direct = !strcmp(variant, "direct");
	char *end = NULL, clock[32] = "?";
	uint64_t seed = argc == 4 ? strtoull(argv[3], &end, 0) : 0;
	long before[NR_COUNTERS], d[NR_COUNTERS], limit = -1, ranges = 0, got;
	static double lat[MFAULTS > FAULTS ? MFAULTS : FAULTS];
	static char reasons[2048];
	long free_kb;
	bool traced;
	struct frag f = { .fd = -1 };
	size_t bad = 0, used = 0;
	cpu_set_t cpu0;
	double t = 0;

	/* The workload's generator needs a seed other than 0. */
	if ((!pool && !mthp && strcmp(what, "thp")) || (!floor && !direct && strcmp(variant, "off")) ||
	    (pool && floor) || !end || *end || !seed)
		kt_bail("usage: high_order pool|thp|mthp off|direct|floor SEED (a number, not 0; floor not for pool)");
	kt_plan(1);
	if (!fine_clock(clock, sizeof(clock)))
		kt_bail("the clocksource is still %s after 60 s: latencies would be in jiffies (another boot may do)",
			clock);
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_setaffinity(0, sizeof(cpu0), &cpu0))
		kt_bail("sched_setaffinity: %s", strerror(errno));
	if (access(DEFRAG "direct", W_OK))
		kt_bail("no %sdirect: not a kdefrag kernel?", DEFRAG);
	/* Fragmenting as stock would: kdefrag off. */
	setting_set(DEFRAG "enabled", "0");
	setting_set(DEFRAG "direct", "0");
	setting_set(THP "enabled", "madvise");
	setting_set(THP "defrag", "madvise");
	setting_set(NR_HUGEPAGES, "0");
	/* mthp: 64 KiB folios only, PMD THP off; the other sizes off. */
	for (size_t i = 0; i < sizeof(mthp_sizes) / sizeof(mthp_sizes[0]); i++)
		setting_set(mthp_sizes[i], "never");
	setting_set(PMD_DIR "enabled", mthp ? "never" : "inherit");
	setting_set(MTHP_DIR "enabled", mthp ? "madvise" : "never");
	setting_set(DEFRAG "direct_min_order", "4");
	if (mthp && mthp_allocs() < 0)
		kt_bail("no %sstats/anon_fault_alloc", MTHP_DIR);
	if (!floor && fragment(&f, FRAG_SPARSE, 0, seed)) {
		frag_release(&f);
		kt_bail("cannot fragment memory");
	}
	if (floor && warm_memory())
		kt_bail("cannot touch memory before the floor's faults");
	setting_set("/proc/sys/vm/compaction_proactiveness", "0");
	setting_set(THP "khugepaged/scan_sleep_millisecs", "86400000");
	pcp_drain();
	ranges_interleaved = pool;
	limit = physical_limit(order, &ranges);
	/*
	 * Now and then the workload leaves a large stretch unfragmented
	 * (cause not known yet): blocks at hand for half the allocations or
	 * more leave nothing to measure.
	 */
	if (!floor && ranges_free >= (pool ? 1000 : faults) / 2) {
		frag_release(&f);
		kt_bail("the workload left %ld free blocks of order %u for %ld allocations: memory not fragmented (another boot may do)",
			ranges_free, order, pool ? 1000L : faults);
	}
	free_kb = mem_free_kb();
	setting_set(DEFRAG "enabled", direct ? "1" : "0");
	setting_set(DEFRAG "direct", direct ? "1" : "0");
	read_str(DEFRAG_REASONS, reasons, sizeof(reasons));
	for (size_t i = 0; i < NR_COUNTERS; i++)
		before[i] = vmstat(counters[i]);
	allocs0 = huge_allocs(mthp);
	fallbacks0 = mthp_fallback_count();
	traced = !range_trace(true);
	got = pool ? grow_pool(&t) : fault_thps(mthp, &t, lat, &bad);
	mthp_fallbacks = mthp_fallback_count();
	range_trace(false);
	for (size_t i = 0; i < NR_COUNTERS; i++)
		d[i] = before[i] < 0 ? 0 : vmstat(counters[i]) - before[i];
	if (!floor) {
		bad += frag_check(&f);
		used = frag_used_pages(&f);
	}
	frag_release(&f);
	settings_restore();
	/* Latencies are only as fine as the clock: a demoted TSC leaves jiffies. */
	if (setting_get(CLOCKSOURCE, clock, sizeof(clock)))
		strcpy(clock, "?");

	if (got >= 0 && limit >= 0 && pool) {
		printf("pool %s seed %#llx: nr_hugepages %ld of a physical limit of %ld (%.1f%%; %ld aligned ranges feasible or free) in %.2f s\n",
		       variant, (unsigned long long)seed, got, limit,
		       limit > 0 ? 100.0 * got / limit : 0, ranges, t);
	} else if (got > 0 && limit >= 0) {
		long reach = limit < faults ? limit : faults;

		qsort(lat, got, sizeof(lat[0]), cmp_double);
		printf("%s %s seed %#llx: %ld of %ld faults huge (%.1f%% of the %ld the physical limit allows) in %.2f s; huge fault latency us p50 %.0f p99 %.0f max %.0f\n",
		       what, variant, (unsigned long long)seed, got, faults,
		       reach > 0 ? 100.0 * got / reach : 0, reach, t, lat[got / 2] * 1e6,
		       lat[got * 99 / 100] * 1e6, lat[got - 1] * 1e6);
	}
	if (got > 0 && limit >= 0) {
		printf("per huge page: migrated %.1f, scanned %.1f, seconds %.4f (total: migrated %ld, compaction scanned %ld + free %ld, kdefrag scored %ld)\n",
		       (double)d[MIGRATED] / got,
		       (double)(d[MIGRATE_SCANNED] + d[FREE_SCANNED] + d[DEFRAG_SCANNED]) / got,
		       t / got, d[MIGRATED], d[MIGRATE_SCANNED], d[FREE_SCANNED], d[DEFRAG_SCANNED]);
		printf("compact_stall %ld success %ld fail %ld; defrag_direct attempt %ld success %ld fail %ld, ranges tried %ld made %ld extra %ld; %s %ld fallback %ld; kcompactd wakeups %ld; clocksource %s\n",
		       d[STALL], d[C_SUCCESS], d[C_FAIL], d[D_ATTEMPT], d[D_SUCCESS], d[D_FAIL],
		       d[R_ATTEMPT], d[R_SUCCESS], d[D_EXTRA],
		       mthp ? "64 KiB fault alloc" : "thp_fault_alloc",
		       mthp ? mthp_allocs() - allocs0 : d[THP_ALLOC],
		       mthp ? mthp_fallbacks - fallbacks0 : d[THP_FALLBACK], d[DAEMON_WAKE], clock);
		if (!floor) {
			long least = least_migrated(got, NULL, NULL);

			/* What stock and kdefrag migrated, against what they had to. */
			if (least > 0)
				printf("least possible: the cheapest ranges at the start, %s, migrate %.2f per huge page for %ld (%ld ranges free then); migrated %.2fx that\n",
				       pool ? "of all nodes" : "node 0 first", (double)least / got, got, ranges_free,
				       (double)d[MIGRATED] / least);
			else if (!least)
				printf("least possible: 0 pages to migrate for %ld huge pages (%ld ranges free at the start)\n",
				       got, ranges_free);
			else
				printf("least possible: unknown (fewer ranges could be emptied at the start than the %ld huge pages)\n",
				       got);
		}
		if (traced && !floor)
			ranges_print(got);
		reasons_print(reasons);
		printf("before the allocations: MemFree %ld kB, %ld free ranges of order %u\n",
		       free_kb, ranges_free, order);
	}
	kt_ok(got >= 0 && limit >= 0 && !bad &&
	      (pool || got == huge_allocs(mthp) - allocs0),
	      "%s measured (%ld huge pages); workload's %zu pages and the faulted regions intact (%zu wrong)",
	      what, got, used, bad);
	return kt_done();
}
