// SPDX-License-Identifier: GPL-2.0
/*
 * Work per order-4 block: stock direct compaction against kdefrag, in the
 * same boot, on the same kind of fragmented memory.
 *
 * Workloads (argv[2], see fragment() in guest/lib): anon-runs, anon memory
 * with kept and released runs of 1..64 pages, holes of many sizes as on a
 * system where objects of many sizes have come and gone; anon-pages, half
 * the pages released one by one, the worst case for choosing ranges, since
 * every aligned range then costs about the same.
 *
 * Both sides start the same way: fragment, then fault 64 kB mTHP folios
 * until the free order >= 4 blocks that already exist are used up, so that
 * each side has to make blocks where none are left.
 *
 * Compaction: the faults run with THP defrag=always and proactive
 * compaction off, and continue until direct compaction has run argv[1]
 * times (or 16 faults per run did not get there): every order-4 fault
 * that finds no free block enters direct compaction. Blocks =
 * compact_success (a direct compaction that ended with the folio);
 * migrated = pgmigrate_success; scanned = compaction's migrate + free
 * scanner counts (direct and kcompactd). Failed compactions count as
 * work, as they cost the faulting task as much.
 *
 * kdefrag: the faults run with defrag=never (no compaction), then
 * /sys/kernel/mm/defrag/coalesce is asked for as many order-4 blocks as
 * compaction made (half per zone). Blocks = made; migrated =
 * defrag_migrated; scanned = defrag_scanned (candidate scoring, one step
 * per page or free block, plus the migration isolation walk).
 *
 * Fallbacks (kmem:mm_page_alloc_extfrag) are counted per phase: for
 * compaction they include the faults' own allocations, for kdefrag the
 * faults and the coalescing (isolation, migration targets) apart.
 *
 * Prints both, and the ratios kdefrag/compaction. Not a timed test: the
 * counters are exact whatever else the host is doing.
 */
#include "kdefrag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MTHP "/sys/kernel/mm/transparent_hugepage/"
#define BLOCK (16 * PAGE_SIZE)

struct work {
	long blocks, migrated, scanned, fallbacks, fault_fallbacks;
};

#define TRACING "/sys/kernel/tracing/"
#define EXTFRAG TRACING "events/kmem/mm_page_alloc_extfrag/enable"

/*
 * Fallbacks: allocations that took pages of another migratetype
 * (kmem:mm_page_alloc_extfrag), the fragmentation that isolation and
 * migration targets could cause. Counted from the trace buffer.
 */
static void fallbacks_start(void)
{
	write_str(TRACING "buffer_size_kb", "8192");
	trace_clear();
	write_str(EXTFRAG, "1");
}

static long fallbacks_stop(void)
{
	static char buf[8 << 20];
	long n = 0;

	write_str(EXTFRAG, "0");
	if (read_str(TRACING "trace", buf, sizeof(buf)) < 0)
		return -1;
	for (char *p = buf; (p = strstr(p, "mm_page_alloc_extfrag:")); p++)
		n++;
	return n;
}

static long compaction_scanned(void)
{
	return vmstat("compact_migrate_scanned") + vmstat("compact_daemon_migrate_scanned") +
	       vmstat("compact_free_scanned") + vmstat("compact_daemon_free_scanned");
}

/* Free blocks of order >= 4, in order-4 units. */
static long free_order4_units(void)
{
	long units = 0;

	for (int o = 4; o < MAX_ORDER_NR; o++)
		units += (buddy_blocks(-1, o) - buddy_blocks(-1, o + 1)) << (o - 4);
	return units;
}

static char *mthp_map;
static size_t mthp_len;

/*
 * Fault mTHP-sized, aligned pieces of a fresh mapping (kept until
 * unfault()): @n of them, then, with @stalls, more until direct
 * compaction has run that many times or 16 faults per stall were made.
 */
static void fault_mthp(long n, long stalls)
{
	long max = n + 16 * stalls, stall0 = vmstat("compact_stall");
	char *p;

	mthp_len = (max + 1) * BLOCK;
	p = map_advised(max * BLOCK, BLOCK, &mthp_map);
	if (!p)
		kt_bail("cannot map %ld blocks", max);
	for (long i = 0; i < max; i++) {
		if (i >= n && vmstat("compact_stall") - stall0 >= stalls)
			break;
		p[i * BLOCK] = 1;
	}
}

static void unfault(void)
{
	munmap(mthp_map, mthp_len);
}

static void compaction(int kind, long want, struct work *w)
{
	long mig0, scan0, succ0, avail;
	struct frag f;

	if (fragment(&f, kind, 48 * 1024, 0xbe4c1))
		kt_bail("cannot fragment memory");
	write_str(MTHP "defrag", "always");
	settled_free_kb();	/* pcp pages back in the buddy lists */
	avail = free_order4_units();
	mig0 = vmstat("pgmigrate_success");
	scan0 = compaction_scanned();
	succ0 = vmstat("compact_success");
	fallbacks_start();
	fault_mthp(avail, want);
	w->fallbacks = fallbacks_stop();
	w->blocks = vmstat("compact_success") - succ0;
	w->migrated = vmstat("pgmigrate_success") - mig0;
	w->scanned = compaction_scanned() - scan0;
	printf("compaction: %ld free order-4 units before, used up, then faults until %ld direct compactions: %ld compact_success, %ld pages migrated, %ld scanned, %ld fallbacks while faulting\n",
	       avail, want, w->blocks, w->migrated, w->scanned, w->fallbacks);
	if (frag_check(&f))
		kt_bail("the workload's pages were corrupted");
	unfault();
	frag_release(&f);
}

static void kdefrag(int kind, long want, struct work *w)
{
	long mig0, scan0, avail;
	char last[256], req[64], *m;
	struct frag f;

	if (fragment(&f, kind, 48 * 1024, 0xbe4c2))
		kt_bail("cannot fragment memory");
	write_str(MTHP "defrag", "never");
	settled_free_kb();
	avail = free_order4_units();
	fallbacks_start();
	fault_mthp(avail, 0);
	w->fault_fallbacks = fallbacks_stop();
	mig0 = vmstat("defrag_migrated");
	scan0 = vmstat("defrag_scanned");
	snprintf(req, sizeof(req), "4 %ld", (want + 1) / 2);
	fallbacks_start();
	write_str("/sys/kernel/mm/defrag/coalesce", req);
	w->fallbacks = fallbacks_stop();
	read_str("/sys/kernel/mm/defrag/coalesce", last, sizeof(last));
	m = strstr(last, "made=");
	w->blocks = m ? strtol(m + 5, NULL, 10) : 0;
	w->migrated = vmstat("defrag_migrated") - mig0;
	w->scanned = vmstat("defrag_scanned") - scan0;
	printf("kdefrag:    %ld free order-4 units before, used up (%ld fallbacks while faulting); asked for %s per zone: %ld made, %ld pages migrated, %ld scanned, %ld fallbacks while coalescing\n",
	       avail, w->fault_fallbacks, req + 2, w->blocks, w->migrated, w->scanned,
	       w->fallbacks);
	if (frag_check(&f))
		kt_bail("kdefrag corrupted the workload's pages");
	unfault();
	frag_release(&f);
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 256;
	int kind = frag_kind_parse(argc > 2 ? argv[2] : "anon-runs");
	struct work c, d;
	double cm, cs, dm, ds;

	kt_plan(0);	/* a report, not a test: no cases, but a plan the verdict can check */
	/* Stock direct compaction on one side, an explicit coalesce on the other. */
	direct_requests_off();
	if (kind != FRAG_ANON_PAGES && kind != FRAG_ANON_RUNS)
		kt_bail("workload must be anon-pages or anon-runs");
	printf("workload: %s\n", frag_kind_name(kind));
	write_str(MTHP "enabled", "never");
	write_str(MTHP "hugepages-64kB/enabled", "always");
	/* Only direct compaction: no background compaction between faults. */
	write_str("/proc/sys/vm/compaction_proactiveness", "0");

	compaction(kind, want, &c);
	if (c.blocks < 1)
		kt_bail("direct compaction produced no order-4 block");
	kdefrag(kind, c.blocks, &d);
	if (d.blocks < 1)
		kt_bail("kdefrag made no order-4 block");

	cm = (double)c.migrated / c.blocks;
	cs = (double)c.scanned / c.blocks;
	dm = (double)d.migrated / d.blocks;
	ds = (double)d.scanned / d.blocks;
	printf("per block:  compaction migrated %.2f scanned %.2f; kdefrag migrated %.2f scanned %.2f\n",
	       cm, cs, dm, ds);
	printf("ratio kdefrag/compaction: migrated %.3f (target <= 0.333), scanned %.3f (target <= 0.100)\n",
	       dm / cm, ds / cs);
	return 0;
}
