// SPDX-License-Identifier: GPL-2.0
/*
 * The allocator's slow path makes the block a waiting allocation needs and
 * hands it over (/sys/kernel/mm/defrag/direct). On fragmented memory (no
 * free block of order 9 left), PMD THP faults in a MADV_HUGEPAGE mapping
 * enter direct compaction (before each phase, the free blocks of order 9
 * and above are taken by THP faults that may not compact):
 *  1. with direct=1, defrag_direct_attempt rises, and so does
 *     defrag_direct_success: blocks kdefrag made were captured by the
 *     faulting task, which then maps a huge page (thp_fault_alloc rises);
 *  2. with direct=0 (the default), defrag_direct_attempt does not move
 *     while compaction runs (compact_migrate_scanned rises);
 *  3. so with enabled=0 and direct=1.
 * The workload's pages, and the THP regions' own, keep their contents.
 * Whether direct=1 gets huge pages more often than direct=0 is a
 * comparison of noisy runs: the bench's, not this test's.
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
#define FAULTS 24
#define MAX_FAULTS (4 * FAULTS)

struct counts {
	long attempt, success, fail, thp, scanned;
};

static struct counts counts_now(void)
{
	return (struct counts){
		.attempt = vmstat("defrag_direct_attempt"),
		.success = vmstat("defrag_direct_success"),
		.fail = vmstat("defrag_direct_fail"),
		.thp = vmstat("thp_fault_alloc"),
		.scanned = vmstat("compact_migrate_scanned"),
	};
}

/*
 * Fault @n huge-page-sized, aligned regions, kept mapped; their contents
 * are checked.
 */
static size_t fault_regions(size_t n, uint64_t seed)
{
	size_t len = n * HPAGE, bad;
	char *raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (madvise(p, len, MADV_HUGEPAGE))
		kt_bail("madvise(MADV_HUGEPAGE): %s", strerror(errno));
	fill_pages(p, len / 4096, seed);
	bad = check_pages(p, len / 4096, seed);
	/* Kept: freed, its huge pages would serve the next phase's faults. */
	return bad;
}

/* The value a THP file selects: the bracketed word of "always [madvise] never". */
static void selected(char *buf)
{
	char *l = strchr(buf, '['), *r = l ? strchr(l, ']') : NULL;

	if (!l || !r)
		kt_bail("unexpected THP setting: %s", buf);
	*r = 0;
	memmove(buf, l + 1, r - l);
}

/*
 * Take every free block of order 9 or more with THP faults that may not
 * compact (defrag=never), until one falls back; the regions stay mapped.
 */
static size_t take_free_hugepages(void)
{
	size_t len = 512 * HPAGE, n;
	char *raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	p = (char *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (write_str(THP "defrag", "never") || madvise(p, len, MADV_HUGEPAGE))
		kt_bail("cannot set up THP faults without compaction");
	for (n = 0; n < len / HPAGE; n++) {
		long before = vmstat("thp_fault_alloc");

		p[n * HPAGE] = 1;
		if (vmstat("thp_fault_alloc") == before)
			break;
	}
	if (write_str(THP "defrag", "madvise"))
		kt_bail("cannot set THP defrag back to madvise");
	return n;
}

/* The failure reasons whose count changed since @before (debugfs "reasons"). */
static void reasons_diag(const char *before)
{
	char now[1024] = "", name[64], line[128];
	const char *p = now;
	long n, old;
	int len;

	read_str("/sys/kernel/debug/defrag/reasons", now, sizeof(now));
	while (sscanf(p, "%63s %ld%n", name, &n, &len) == 2) {
		const char *q = strstr(before, name);

		old = q ? strtol(q + strlen(name), NULL, 10) : 0;
		if (n != old) {
			snprintf(line, sizeof(line), "ranges given up for %s: %ld", name, n - old);
			kt_diag("%s", line);
		}
		p += len;
	}
}

static void set_tunables(const char *enabled, const char *direct)
{
	if (write_str(SYS "enabled", enabled) || write_str(SYS "direct", direct))
		kt_bail("cannot set enabled=%s direct=%s", enabled, direct);
}

int main(void)
{
	char thp_enabled[64] = "", thp_defrag[64] = "";
	char reasons[1024] = "";
	struct counts a, b;
	struct frag f;
	size_t bad;
	int faults;

	kt_plan(7);
	/*
	 * One CPU, so one node: a THP fault takes a huge page only from its
	 * own node, and the free blocks taken first must be that node's.
	 */
	{
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(0, &cpus);
		if (sched_setaffinity(0, sizeof(cpus), &cpus))
			kt_bail("sched_setaffinity: %s", strerror(errno));
	}
	if (read_str(THP "enabled", thp_enabled, sizeof(thp_enabled)) <= 0 ||
	    read_str(THP "defrag", thp_defrag, sizeof(thp_defrag)) <= 0)
		kt_bail("no transparent hugepages");
	selected(thp_enabled);
	selected(thp_defrag);
	/* Madvised mappings only, with direct reclaim and compaction. */
	if (write_str(THP "enabled", "madvise") || write_str(THP "defrag", "madvise") ||
	    write_str(SYS "direct_min_order", "4"))
		kt_bail("cannot set the THP or kdefrag tunables");
	if (fragment(&f, FRAG_ANON_PAGES, 16 * 1024, 0xd1ec7))
		kt_bail("cannot fragment memory: %s", strerror(errno));
	kt_diag("fragmented: %zu pages, %zu held; took %zu free huge pages, %ld order-9 and %ld order-10 free blocks left",
		f.npages, frag_used_pages(&f), take_free_hugepages(),
		buddy_blocks(-1, 9), buddy_blocks(-1, 10));

	set_tunables("1", "1");
	read_str("/sys/kernel/debug/defrag/reasons", reasons, sizeof(reasons));
	/*
	 * kswapd and kcompactd, woken by these faults, make blocks too, and
	 * faults that find one do not compact: fault in batches until a few
	 * blocks were handed over, or MAX_FAULTS.
	 */
	a = counts_now();
	for (faults = 0, bad = 0; faults < MAX_FAULTS;) {
		bad += fault_regions(FAULTS, 2 + faults);
		faults += FAULTS;
		b = counts_now();
		if (b.success - a.success >= 4)
			break;
	}
	reasons_diag(reasons);
	kt_diag("direct=1: %d THP faults: attempts %ld, success %ld, fail %ld, huge pages %ld",
		faults, b.attempt - a.attempt, b.success - a.success, b.fail - a.fail, b.thp - a.thp);
	kt_ok(b.attempt > a.attempt, "direct=1: THP faults entered targeted coalescing (%ld attempts)",
	      b.attempt - a.attempt);
	kt_ok(b.success > a.success && b.thp > a.thp,
	      "direct=1: %ld blocks handed to the faulting task, %ld huge pages mapped",
	      b.success - a.success, b.thp - a.thp);
	kt_ok(b.success + b.fail - a.success - a.fail == b.attempt - a.attempt,
	      "direct=1: every attempt ended in success or fail");
	kt_ok(!bad, "direct=1: contents of the %d THP regions intact (%zu bad)", faults, bad);

	set_tunables("1", "0");
	kt_diag("took %zu free huge pages", take_free_hugepages());
	a = counts_now();
	bad = fault_regions(FAULTS, 100);
	b = counts_now();
	kt_ok(b.attempt == a.attempt && b.scanned > a.scanned && !bad,
	      "direct=0: %ld direct attempts during %d THP faults while compaction scanned %ld pages (%ld huge), %zu bad pages",
	      b.attempt - a.attempt, FAULTS, b.scanned - a.scanned, b.thp - a.thp, bad);

	set_tunables("0", "1");
	kt_diag("took %zu free huge pages", take_free_hugepages());
	a = counts_now();
	bad = fault_regions(FAULTS, 101);
	b = counts_now();
	kt_ok(b.attempt == a.attempt && b.scanned > a.scanned && !bad,
	      "enabled=0: %ld direct attempts during %d THP faults while compaction scanned %ld pages, %zu bad pages",
	      b.attempt - a.attempt, FAULTS, b.scanned - a.scanned, bad);

	set_tunables("1", "0");
	write_str(THP "enabled", thp_enabled);
	write_str(THP "defrag", thp_defrag);
	bad = frag_check(&f);
	kt_ok(bad == 0, "contents of the workload's %zu pages intact (%zu bad)", f.npages, bad);
	frag_release(&f);
	return kt_done();
}
