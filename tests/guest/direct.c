// SPDX-License-Identifier: GPL-2.0
/*
 * The allocator's slow path makes the block a waiting allocation needs and
 * hands it over (/sys/kernel/mm/defrag/direct). On fragmented memory, PMD
 * THP faults in a MADV_HUGEPAGE mapping (THP defrag=madvise) enter direct
 * compaction; before each phase, every free block of order 9 and above,
 * on both nodes, is taken by THP faults that may not compact:
 *  1. with direct=1, defrag_direct_attempt rises, and so does
 *     defrag_direct_success: blocks kdefrag made went to the faulting task;
 *  0. at boot, direct is on (CONFIG_MEM_DEFRAG_DIRECT=y, no defrag_direct=
 *     on the command line; guest/plans/isolation boots with
 *     defrag_direct=0 and checks that it is off);
 *  2. with direct=0, defrag_direct_attempt does not move
 *     while direct compaction runs (compact_migrate_scanned rises; with
 *     defrag=madvise these faults do not wake kswapd, so not kcompactd);
 *  3. so with enabled=0 and direct=1; in both, no kdefrag counter moves
 *     (ranges tried, pages scanned, migrated), and with enabled=0 an
 *     explicit coalesce still makes its block;
 *  4. 64 KiB mTHP faults (order 4, below pageblock order: the block is
 *     handed over while its pageblock is still isolated), PMD THP off,
 *     after every free block of order 4 and above was taken the same way:
 *     with direct=1, blocks of order 4 go to the faulting task too;
 *  5. on the same memory, every free block of order 4 and above taken
 *     again, the kernel's KUnit suite defrag-direct, run through debugfs
 *     (its boot run, checked first, found blocks at hand and no request
 *     entering): for its
 *     own task, GFP_ATOMIC, GFP_NOWAIT and other requests without direct
 *     reclaim never enter, a GFP_KERNEL one does, and GFP_NOFS ones (the
 *     flag, and a memalloc_nofs_save() scope) enter with a gfp mask
 *     without __GFP_FS; the stress plan runs this test on the lockdep
 *     and DEBUG_ATOMIC_SLEEP kernel.
 * Nothing else compacts meanwhile: proactive compaction, khugepaged's
 * defrag and watermark boosting (whose kswapd wakeups wake kcompactd) are
 * off for the test, so every counter change is the faults'.
 * The workload's pages and every THP region keep their contents, checked
 * at the end. Every setting is restored on exit. Whether direct=1 gets
 * huge pages more often than direct=0 is a comparison of noisy runs: the
 * bench's, not this test's.
 */
#include "kdefrag.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SYS "/sys/kernel/mm/defrag/"
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define HPAGE (2UL << 20)
#define FAULTS 16		/* THP faults per batch */
#define BATCHES 3		/* per phase at most */
#define MAX_REGIONS (3 * BATCHES)

#define MTHP THP "hugepages-64kB/"
#define PMD THP "hugepages-2048kB/"
#define MTHP_SIZE (64UL << 10)
#define MTHP_FAULTS 64		/* 64 KiB faults per batch */

struct counts {
	long attempt, success, fail, scanned, extra;
	long made;	/* ranges kdefrag emptied (defrag_success) */
	long work;	/* every range kdefrag tried, scored or migrated */
};

static struct counts counts_now(void)
{
	return (struct counts){
		.attempt = vmstat("defrag_direct_attempt"),
		.success = vmstat("defrag_direct_success"),
		.fail = vmstat("defrag_direct_fail"),
		.extra = vmstat("defrag_direct_extra"),
		.made = vmstat("defrag_success"),
		.scanned = vmstat("compact_migrate_scanned"),
		.work = vmstat("defrag_attempt") + vmstat("defrag_scanned") +
			vmstat("defrag_migrated"),
	};
}

static struct region {
	char *raw, *p;
	uint64_t seed;
} regions[MAX_REGIONS];
static int nregions;

/* A huge-page-aligned MADV_HUGEPAGE mapping of @n huge pages. */
static char *map_huge(size_t n, char **raw)
{
	char *p = map_advised(n * HPAGE, HPAGE, raw);

	if (!p)
		kt_bail("mapping %zu huge pages: %s", n, strerror(errno));
	return p;
}

/*
 * Fault a batch of FAULTS huge-page-sized regions, filled with a pattern
 * and kept mapped (freed, its huge pages would serve the next faults).
 */
static void fault_batch(void)
{
	struct region *r;

	if (nregions == MAX_REGIONS)
		kt_bail("too many batches");
	r = &regions[nregions];
	r->seed = 0xd1 + nregions++;
	r->p = map_huge(FAULTS, &r->raw);
	fill_pages(r->p, FAULTS * HPAGE / 4096, r->seed);
}

static cpu_set_t allowed;	/* the CPUs the test may run on */

static void set_cpu(int cpu)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		kt_bail("sched_setaffinity: %s", strerror(errno));
}

/*
 * Take every free block of order 9 or more with THP faults that may not
 * compact (defrag=never), from each CPU and so each node, until a fault
 * falls back; the regions stay mapped. Returns the huge pages taken.
 */
static long take_free_hugepages(void)
{
	const size_t max = 256;
	long taken = 0;

	setting_set(THP "defrag", "never");
	for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--) {
		char *raw, *p;

		if (!CPU_ISSET(cpu, &allowed))
			continue;
		p = map_huge(max, &raw);
		set_cpu(cpu);
		for (size_t n = 0; n < max; n++) {
			long before = vmstat("thp_fault_alloc");

			p[n * HPAGE] = 1;
			if (vmstat("thp_fault_alloc") == before)
				break;
			taken++;
		}
	}
	setting_set(THP "defrag", "madvise");
	return taken;
}

/*
 * One phase: batches of THP faults until @enough says so or BATCHES
 * were made; the counters' change in *@d.
 */
static int phase(bool (*enough)(const struct counts *), struct counts *d)
{
	struct counts a, b;
	long taken = take_free_hugepages();
	int faults = 0;

	a = counts_now();
	do {
		fault_batch();
		faults += FAULTS;
		b = counts_now();
		*d = (struct counts){
			.attempt = b.attempt - a.attempt, .success = b.success - a.success,
			.fail = b.fail - a.fail, .scanned = b.scanned - a.scanned,
			.extra = b.extra - a.extra, .made = b.made - a.made,
			.work = b.work - a.work,
		};
	} while (!enough(d) && faults < BATCHES * FAULTS);
	kt_diag("took %ld free huge pages; %d THP faults: direct attempts %ld, success %ld, fail %ld; compaction scanned %ld",
		taken, faults, d->attempt, d->success, d->fail, d->scanned);
	return faults;
}

/*
 * mTHP: 64 KiB faults in @n aligned MADV_HUGEPAGE regions of MTHP_FAULTS
 * each, kept mapped and filled; their mTHP allocations counted.
 */
static struct region mregions[BATCHES];
static int nmregions;

static long mthp_allocs(void)
{
	char v[32];

	return setting_get(MTHP "stats/anon_fault_alloc", v, sizeof(v)) ? -1 : atol(v);
}

static void mthp_batch(void)
{
	size_t len = MTHP_FAULTS * MTHP_SIZE;
	struct region *r;

	if (nmregions == BATCHES)
		kt_bail("too many mTHP batches");
	r = &mregions[nmregions];
	r->seed = 0x64 + nmregions++;
	r->p = map_advised(len, MTHP_SIZE, &r->raw);
	if (!r->p)
		kt_bail("mapping 64 KiB pieces: %s", strerror(errno));
	fill_pages(r->p, len / 4096, r->seed);
}

/*
 * Take every free block of order 4 or more with 64 KiB faults that may not
 * compact, until one falls back (PMD THP off, so every fault is 64 KiB).
 */
static long take_free_mthp_blocks(void)
{
	const size_t max = 32768;
	char *raw, *p;
	long taken = 0;

	setting_set(THP "defrag", "never");
	p = map_advised(max * MTHP_SIZE, MTHP_SIZE, &raw);
	if (!p)
		kt_bail("mapping 64 KiB pieces: %s", strerror(errno));
	for (size_t n = 0; n < max; n++) {
		long before = mthp_allocs();

		p[n * MTHP_SIZE] = 1;
		if (mthp_allocs() == before)
			break;
		taken++;
	}
	setting_set(THP "defrag", "madvise");
	return taken;
}

/*
 * The results of the KUnit suite @suite's last run, each of its @want
 * cases one of ours: only "ok" without SKIP passes, and only a case that
 * logged "fragmented memory: yes" (@fragmented) or "no" (cases check what
 * requests do on the memory they find). More or fewer cases than @want,
 * or a plan that says otherwise, fail. @when names the run.
 */
#define KUNIT_DIR "/sys/kernel/debug/kunit/"
static void kunit_results(const char *suite, int want, bool fragmented, const char *when)
{
	const char *mark = fragmented ? "fragmented memory: yes" : "fragmented memory: no";
	char path[256], line[512], *name;
	int cases = 0, planned = -1, marked = 0;
	FILE *f;

	snprintf(path, sizeof(path), KUNIT_DIR "%s/results", suite);
	f = fopen(path, "r");
	if (!f)
		kt_bail("cannot read %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *l = line + strspn(line, " \t");
		bool ok;

		l[strcspn(l, "\n")] = 0;
		if (l[0] == '#') {
			kt_diag("%s, %s: %s", suite, when, l + 1 + strspn(l + 1, " "));
			if (strstr(l, mark))
				marked++;
			continue;
		}
		/* The cases' lines and plan are indented; the suite's are not. */
		if (l == line)
			continue;
		if (sscanf(l, "1..%d", &planned) == 1)
			continue;
		if (strncmp(l, "ok ", 3) && strncmp(l, "not ok ", 7))
			continue;
		ok = l[0] == 'o';
		/* "ok 2 name [# SKIP reason]" */
		strtol(l + (ok ? 3 : 7), &name, 10);
		name += strspn(name, " ");
		cases++;
		kt_ok(ok && !strstr(name, "# SKIP") && marked == cases,
		      "KUnit %s, %s: %s%s%s", suite, when,
		      ok ? (strstr(name, "# SKIP") ? "skipped: " : "") : "failed: ", name,
		      marked == cases ? "" : " (not on the memory expected)");
	}
	fclose(f);
	kt_ok(cases == want && planned == want, "KUnit %s, %s: %d cases reported, %d planned, %d expected",
	      suite, when, cases, planned, want);
}

/* Run the KUnit suite @suite now, through its debugfs "run" file. */
static void kunit_run(const char *suite)
{
	char path[256];

	snprintf(path, sizeof(path), KUNIT_DIR "%s/run", suite);
	if (write_str(path, "1"))
		kt_bail("cannot run KUnit suite %s: %s", suite, strerror(errno));
}

static bool handed_over(const struct counts *d)
{
	return d->success >= 4;
}

static bool compacted(const struct counts *d)
{
	return d->scanned > 0;
}

/* A phase in which direct compaction runs and kdefrag must not be entered. */
static void no_attempt(const char *setting)
{
	struct counts d;
	int faults = phase(compacted, &d);

	kt_ok(d.scanned > 0 && d.attempt == 0 && d.work == 0,
	      "%s: %ld direct attempts and %ld ranges, pages scanned or migrated by kdefrag in %d faults while compaction scanned %ld pages",
	      setting, d.attempt, d.work, faults, d.scanned);
}

int main(void)
{
	struct counts d;
	struct frag f;
	size_t bad = 0;
	int faults;

	kt_plan(20);
	{
		char v[16] = "?";

		kt_ok(!setting_get(SYS "direct", v, sizeof(v)) && !strcmp(v, "1"),
		      "at boot, direct is on by default (reads %s)", v);
	}
	/* At boot, with blocks at hand, the suite saw no request enter. */
	kunit_results("defrag-direct", 2, false, "at boot");
	/* Madvised mappings only, with direct reclaim and compaction; nothing else compacting. */
	setting_set(THP "enabled", "madvise");
	setting_set(THP "defrag", "madvise");
	setting_set(THP "khugepaged/defrag", "0");
	setting_set("/proc/sys/vm/compaction_proactiveness", "0");
	/* Pageblocks stolen by the faults would boost watermarks and wake kcompactd. */
	setting_set("/proc/sys/vm/watermark_boost_factor", "0");
	setting_set(SYS "direct_min_order", "4");
	/* One CPU (so one node) faults; take_free_hugepages() visits each. */
	if (sched_getaffinity(0, sizeof(allowed), &allowed) || !CPU_ISSET(0, &allowed))
		kt_bail("sched_getaffinity: %s, or CPU 0 not allowed", strerror(errno));
	kt_diag("%d CPUs", CPU_COUNT(&allowed));
	set_cpu(0);
	if (fragment(&f, FRAG_ANON_PAGES, 16 * 1024, 0xd1ec7))
		kt_bail("cannot fragment memory: %s", strerror(errno));
	kt_diag("fragmented: %zu pages, %zu held", f.npages, frag_used_pages(&f));

	setting_set(SYS "enabled", "1");
	setting_set(SYS "direct", "1");
	faults = phase(handed_over, &d);
	kt_ok(d.attempt > 0, "direct=1: THP faults entered targeted coalescing (%ld attempts in %d faults)",
	      d.attempt, faults);
	/* Extra blocks are for orders below pageblock_order only. */
	kt_ok(d.extra == 0 && d.made >= d.success,
	      "direct=1: no extra block for THP faults (%ld), %ld ranges emptied for %ld handed over",
	      d.extra, d.made, d.success);
	kt_ok(d.success > 0, "direct=1: %ld blocks handed to the faulting task", d.success);
	kt_ok(d.success + d.fail == d.attempt, "direct=1: every attempt ended in success or fail");

	setting_set(SYS "direct", "0");
	no_attempt("direct=0");
	setting_set(SYS "enabled", "0");
	setting_set(SYS "direct", "1");
	no_attempt("enabled=0");
	{
		/* Explicit requests are not the allocator's: they still run. */
		long made = vmstat("defrag_success");
		int err = write_str(SYS "coalesce", "4 1");

		kt_ok(!err && vmstat("defrag_success") > made,
		      "enabled=0: an explicit coalesce of one order-4 block still works (%s, %ld ranges emptied)",
		      err ? strerror(-err) : "ok", vmstat("defrag_success") - made);
	}

	/* Order 4: the block handed over while its pageblock is isolated. */
	setting_set(PMD "enabled", "never");
	setting_set(MTHP "enabled", "madvise");
	setting_set(SYS "enabled", "1");
	setting_set(SYS "direct", "1");
	{
		long taken = take_free_mthp_blocks(), allocs = mthp_allocs();
		struct counts a = counts_now(), b;
		int batches = 0;

		long success, extra, fail, made;

		do {
			mthp_batch();
			batches++;
			b = counts_now();
		} while ((b.success - a.success < 4 || b.extra == a.extra) && batches < BATCHES);
		success = b.success - a.success;
		extra = b.extra - a.extra;
		fail = b.fail - a.fail;
		made = b.made - a.made;
		kt_diag("took %ld free order-4 blocks; %d mTHP faults: %ld of them 64 KiB; direct attempts %ld, success %ld, fail %ld, extra %ld; ranges emptied %ld",
			taken, batches * MTHP_FAULTS, mthp_allocs() - allocs, b.attempt - a.attempt,
			success, fail, extra, made);
		kt_ok(b.attempt > a.attempt,
		      "direct=1, 64 KiB mTHP: faults entered targeted coalescing (%ld attempts)",
		      b.attempt - a.attempt);
		kt_ok(success > 0, "direct=1, 64 KiB mTHP: %ld blocks of order 4 handed to the faulting task",
		      success);
		/*
		 * Below pageblock order a request makes cheap blocks for the
		 * next faults too: ranges as cheap as the one handed over,
		 * which the coin-flip workload leaves many of.
		 */
		kt_ok(extra > 0 && extra <= 2 * success,
		      "direct=1, 64 KiB mTHP: %ld blocks made beyond those handed over (some, at most 2 each)",
		      extra);
		/*
		 * Only direct requests run here, and none has a capture
		 * refused (no CMA area in this boot; a movable pageblock is
		 * not tried for a non-movable request): each range emptied
		 * was handed over or counted as extra, but for one per failed
		 * request (made, then compaction_capture() had filled the
		 * request's capture_control first).
		 */
		kt_ok(success + extra <= made && made <= success + extra + fail,
		      "direct=1, 64 KiB mTHP: the %ld ranges emptied are the %ld handed over, the %ld extra and at most the %ld failed requests",
		      made, success, extra, fail);
	}

	/* What the slow path lets in, on this memory: the kernel's own cases. */
	{
		long taken = take_free_mthp_blocks();

		kt_diag("took %ld free order-4 blocks for the KUnit suite; %ld left",
			taken, buddy_blocks(-1, 4));
	}
	kunit_run("defrag-direct");
	kunit_results("defrag-direct", 2, true, "on this memory");

	for (int i = 0; i < nregions; i++)
		bad += check_pages(regions[i].p, FAULTS * HPAGE / 4096, regions[i].seed);
	for (int i = 0; i < nmregions; i++)
		bad += check_pages(mregions[i].p, MTHP_FAULTS * MTHP_SIZE / 4096, mregions[i].seed);
	kt_ok(bad == 0, "contents of the %d THP and %d mTHP regions intact (%zu bad)",
	      nregions * FAULTS, nmregions * MTHP_FAULTS, bad);
	bad = frag_check(&f);
	kt_ok(bad == 0, "contents of the workload's %zu pages intact (%zu bad)", f.npages, bad);
	for (int i = 0; i < nregions; i++)
		munmap(regions[i].raw, FAULTS * HPAGE + HPAGE);
	for (int i = 0; i < nmregions; i++)
		munmap(mregions[i].raw, MTHP_FAULTS * MTHP_SIZE + MTHP_SIZE);
	frag_release(&f);
	return kt_done();
}
