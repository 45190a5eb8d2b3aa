// SPDX-License-Identifier: GPL-2.0
/*
 * kdefrag and the kernel's other isolators leave each other alone.
 *
 * Memory offline and alloc_contig_range() (CMA, gigantic hugetlb) empty a
 * range by isolating its pageblocks (MIGRATE_ISOLATE), as kdefrag does,
 * and 6.12's isolation has no owner: a second isolator's
 * start_isolate_page_range() fails on a pageblock someone else isolated
 * (offline then fails with EBUSY), and alloc_contig_range() undoes
 * isolation over its whole range when that happens, someone else's
 * included. kdefrag must neither make their work fail nor leave a
 * pageblock isolated or of the wrong type; memory offline waits for a
 * round of kdefrag to end (get_online_mems()).
 *
 * This boot has movable-only memory blocks (movablecore=) and a CMA area
 * (cma=) placed 2 MiB into a 4 MiB-aligned range, so that order-10 ranges
 * hold a CMA pageblock next to another. For SECONDS, concurrently:
 *  - each movable-only memory block is taken offline and online again,
 *    each offline under a timeout (offline_pages() retries until a signal);
 *  - the CMA debugfs allocates and frees runs of pages;
 *  - coalesce makes blocks of orders 4, 9 and 10 in every zone;
 *  - evacuate empties random ranges inside the movable blocks and inside
 *    the CMA area;
 * all of it over memory this program filled with known contents and
 * fragmented. Afterwards:
 *  1. every offline of a movable-only block succeeded, and the block is
 *     online again;
 *  2. no pageblock is left isolated, the CMA pageblocks are as many as the
 *     area holds, and ZONE_MOVABLE holds only movable pageblocks;
 *  3. every page of the program's memory kept its contents;
 *  4. kdefrag made blocks and emptied ranges meanwhile (else nothing here
 *     was tested);
 *  5. no order-10 range that mixes CMA and other pageblocks was ever
 *     attempted (its free pages can never merge into one block), and the
 *     debugfs summary counts them as infeasible, reason "unmergeable";
 *  6. MemFree is back: no free page is kept back by anyone.
 * All of it with the allocator's own requests off (this boot's
 * defrag_direct=0, checked first: the boot parameter works).
 * Then the allocator's own requests (direct=1) beside the offlines and
 * CMA: a faulter makes 64 KiB mTHP faults in madvised regions, splits each
 * region and gives 3 of its 4 pages back, so that free memory soon holds
 * no block of order 4 and each fault makes one in the slow path, in
 * ZONE_MOVABLE too; each offline waits until a direct request handed a
 * block over since the last one (an onlined block refills the free
 * lists). For DIRECT_SECONDS at least, and until DIRECT_HANDED blocks were
 * handed over and DIRECT_OFFLINES offlines made. A direct request holds
 * no hotplug lock; its isolation must not make memory offline fail:
 *  7. every offline succeeded, while direct requests handed blocks over;
 *  8. every page the faulter and the workload kept kept its contents,
 *     no pageblock is left isolated, ZONE_MOVABLE's and CMA's pageblocks
 *     are as many as before.
 */
#include "kdefrag.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECONDS 45
#define OFFLINE_TIMEOUT 20
#define MEMORY "/sys/devices/system/memory"
#define DEFRAG "/sys/kernel/mm/defrag/"
#define TRACING "/sys/kernel/tracing/"
#define MAX_BLOCKS 8
#define ORDER_MIX 10
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define DIRECT_SECONDS 20	/* at least, and until DIRECT_HANDED... */
#define DIRECT_HANDED 64	/* ...blocks were handed over; at most: */
#define DIRECT_MAX_SECONDS 400
#define MTHP_SIZE (64UL << 10)
#define FAULT_REGION (4UL << 20)	/* one faulter cycle */
#define MAX_KEPT 256			/* regions kept, a quarter of each */
#define KEEP_FREE_KB (256L << 10)	/* for an offline's targets: no more kept below */
#define PACE_SECONDS 10
#define DIRECT_OFFLINES 8		/* offlines paced by direct requests */

/* What the children did, in shared memory. */
struct tally {
	long offline_ok, offline_fail, online_fail;
	int last_offline_err;
	long cma_alloc_ok, cma_alloc_fail;
	long coalesce_ok, evacuate_ok, evacuate_tried;
	long regions, split_fail, map_fail, fault_bad;
	long handed_seen;	/* defrag_direct_success at the last offline */
	int nkept;		/* the faulter's regions */
};

static struct tally *t;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/*
 * Is [start, end) (bytes) inside one "System RAM" range of /proc/iomem?
 * offline_pages() refuses a block with a hole (EINVAL), such as the last
 * one when firmware keeps the top of memory.
 */
static bool all_ram(unsigned long long start, unsigned long long end)
{
	char line[256];
	FILE *f = fopen("/proc/iomem", "r");
	bool ok = false;

	while (f && !ok && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;

		if (line[0] != ' ' && strstr(line, " : System RAM") &&
		    sscanf(line, "%llx-%llx", &a, &b) == 2)
			ok = a <= start && end - 1 <= b;
	}
	if (f)
		fclose(f);
	return ok;
}

/*
 * Online memory blocks whose only zone is Movable, with no hole and no
 * page of [avoid, avoid + avoid_pages) (the CMA area, whose allocated
 * pages offline cannot move); their number.
 */
static int movable_blocks(int *ids, int max, unsigned long *block_pages,
			  unsigned long avoid, unsigned long avoid_pages)
{
	char path[320], buf[256];
	struct dirent *e;
	DIR *d = opendir(MEMORY);
	int n = 0;

	if (!d || read_str(MEMORY "/block_size_bytes", buf, sizeof(buf)) < 0)
		kt_bail("no %s: memory hotplug missing from this kernel", MEMORY);
	*block_pages = strtoul(buf, NULL, 16) / PAGE_SIZE;
	while ((e = readdir(d)) && n < max) {
		int id;

		if (sscanf(e->d_name, "memory%d", &id) != 1)
			continue;
		snprintf(path, sizeof(path), MEMORY "/%s/valid_zones", e->d_name);
		if (read_str(path, buf, sizeof(buf)) < 0 || strcmp(buf, "Movable\n"))
			continue;
		snprintf(path, sizeof(path), MEMORY "/%s/state", e->d_name);
		if (read_str(path, buf, sizeof(buf)) < 0 || strcmp(buf, "online\n"))
			continue;
		if (!all_ram((unsigned long long)id * *block_pages * PAGE_SIZE,
			     (unsigned long long)(id + 1) * *block_pages * PAGE_SIZE))
			continue;
		if ((unsigned long)id * *block_pages < avoid + avoid_pages &&
		    avoid < (unsigned long)(id + 1) * *block_pages)
			continue;
		ids[n++] = id;
	}
	closedir(d);
	return n;
}

static int block_state(int id, const char *state)
{
	char path[128];

	snprintf(path, sizeof(path), MEMORY "/memory%d/state", id);
	return write_str(path, state);
}

/* The CMA area's debugfs directory; its first pfn and pages. */
static void cma_area(char *dir, size_t len, unsigned long *base, unsigned long *count)
{
	char path[320], buf[64];
	struct dirent *e;
	DIR *d = opendir("/sys/kernel/debug/cma");

	if (!d)
		kt_bail("no /sys/kernel/debug/cma: CMA_DEBUGFS or the cma= area missing");
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			break;
	if (!e)
		kt_bail("no CMA area in /sys/kernel/debug/cma");
	/* An area's name is short ("reserved" for cma=). */
	snprintf(dir, len, "/sys/kernel/debug/cma/%.64s", e->d_name);
	closedir(d);
	snprintf(path, sizeof(path), "%s/base_pfn", dir);
	if (read_str(path, buf, sizeof(buf)) < 0)
		kt_bail("cannot read %s", path);
	*base = strtoul(buf, NULL, 0);
	snprintf(path, sizeof(path), "%s/count", dir);
	if (read_str(path, buf, sizeof(buf)) < 0)
		kt_bail("cannot read %s", path);
	*count = strtoul(buf, NULL, 0);
}

static pid_t child(void (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGTERM, on_term);
		fn(arg);
		_exit(0);
	}
	return pid;
}

struct blocks {
	int ids[MAX_BLOCKS], n;
	unsigned long pages;
	bool paced;	/* each offline once direct requests handed a block over */
};

/*
 * Until the allocator's direct requests hand a block over after @since
 * (at most PACE_SECONDS): an onlined block refills the free lists, and
 * the next offline is to meet direct requests, not the faults it fed.
 */
static void direct_pace(long since)
{
	for (int i = 0; i < PACE_SECONDS * 100 && !stop; i++) {
		if (vmstat("defrag_direct_success") > since)
			return;
		usleep(10000);
	}
}

static void offline_online(void *arg)
{
	struct blocks *b = arg;
	struct sigaction sa = { .sa_handler = on_alarm };

	/* No SA_RESTART: the alarm interrupts an offline that does not end. */
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; !stop; i = (i + 1) % b->n) {
		int err;

		if (b->paced) {
			direct_pace(t->handed_seen);
			if (stop)
				break;
		}
		t->handed_seen = vmstat("defrag_direct_success");
		alarm(OFFLINE_TIMEOUT);
		err = block_state(b->ids[i], "offline");
		alarm(0);
		/* The end of the test, not the offline, interrupted it. */
		if (err == -EINTR && stop)
			break;
		if (err) {
			t->offline_fail++;
			t->last_offline_err = -err;
			continue;
		}
		t->offline_ok++;
		usleep(100000);
		if (block_state(b->ids[i], "online_movable"))
			t->online_fail++;
		usleep(100000);
	}
}

static char cma_dir[128];

static void cma_churn(void *arg)
{
	char path[160];

	(void)arg;
	while (!stop) {
		snprintf(path, sizeof(path), "%s/alloc", cma_dir);
		if (write_str(path, "64"))
			t->cma_alloc_fail++;
		else
			t->cma_alloc_ok++;
		usleep(20000);
		snprintf(path, sizeof(path), "%s/free", cma_dir);
		write_str(path, "64");
	}
}

static void coalesce_loop(void *arg)
{
	static const char *const req[] = { "4 64", "9 8", "10 2" };

	(void)arg;
	for (int i = 0; !stop; i++)
		if (!write_str(DEFRAG "coalesce", req[i % 3]))
			t->coalesce_ok++;
}

struct ranges {
	unsigned long start[MAX_BLOCKS + 1], pages[MAX_BLOCKS + 1];
	int n;
};

static void evacuate_loop(void *arg)
{
	struct ranges *r = arg;
	char buf[64];

	rng = 0x150ca7e;
	while (!stop) {
		int k = rnd() % r->n;
		unsigned long pfn = r->start[k] + rnd() % (r->pages[k] - 32);

		snprintf(buf, sizeof(buf), "%lu 32", pfn);
		t->evacuate_tried++;
		if (!write_str(DEFRAG "evacuate", buf))
			t->evacuate_ok++;
		usleep(2000);
	}
}

struct kept_region {
	char *raw, *p;
	uint64_t seed;
};

/* Check the pages @k kept (every fourth) and unmap it. */
static void region_release(struct kept_region *k)
{
	for (size_t i = 0; i < FAULT_REGION / PAGE_SIZE; i += 4)
		t->fault_bad += check_pages(k->p + i * PAGE_SIZE, 1, k->seed + i);
	munmap(k->raw, FAULT_REGION + MTHP_SIZE);
	k->raw = NULL;
}

/*
 * 64 KiB faults over a region (one write each); the region then split into
 * single pages (split_huge_pages), 3 of each 4 given back and the fourth
 * filled: what free memory gains is scattered single pages, what the
 * faults took were whole order-4 blocks, so free blocks of order 4 soon
 * run out and each fault's allocation enters the slow path. The oldest
 * region goes when a new one comes, unless no direct request was made
 * since the last one: then the regions are too few to cover free memory
 * (at first, and after an online), and one more is kept (the ring only
 * grows, to MAX_KEPT, and while KEEP_FREE_KB stay free).
 */
static void direct_faulter(void *arg)
{
	static struct kept_region kept[MAX_KEPT];
	const size_t npages = FAULT_REGION / PAGE_SIZE;
	int first = 0, used = 0;
	long attempts = vmstat("defrag_direct_attempt");
	char split[128];

	(void)arg;
	for (unsigned long n = 0; !stop; n++) {
		long now = vmstat("defrag_direct_attempt");
		struct kept_region *k;

		if (used && (used == MAX_KEPT || now > attempts ||
			     mem_free_kb() < KEEP_FREE_KB)) {
			region_release(&kept[first]);
			first = (first + 1) % MAX_KEPT;
			used--;
		}
		attempts = now;
		k = &kept[(first + used) % MAX_KEPT];
		k->p = map_advised(FAULT_REGION, MTHP_SIZE, &k->raw);
		if (!k->p) {
			t->map_fail++;
			usleep(10000);
			continue;
		}
		used++;
		t->nkept = used;
		k->seed = 0xd17ec7 + n * npages;
		for (size_t off = 0; off < FAULT_REGION; off += MTHP_SIZE)
			k->p[off] = 1;
		t->regions++;
		snprintf(split, sizeof(split), "%d,0x%lx,0x%lx", getpid(),
			 (unsigned long)k->p, (unsigned long)k->p + FAULT_REGION);
		if (write_str("/sys/kernel/debug/split_huge_pages", split))
			t->split_fail++;
		for (size_t i = 0; i < npages; i += 4) {
			madvise(k->p + (i + 1) * PAGE_SIZE, 3 * PAGE_SIZE, MADV_DONTNEED);
			fill_pages(k->p + i * PAGE_SIZE, 1, k->seed + i);
		}
	}
	for (; used; used--, first = (first + 1) % MAX_KEPT)
		region_release(&kept[first]);
}

/* Order-10 trace events for the range at @pfn in the trace buffer. */
static long trace_hits(unsigned long pfn)
{
	char needle[64], line[512];
	FILE *f = fopen(TRACING "trace", "r");
	long n = 0;

	if (!f)
		return -1;
	snprintf(needle, sizeof(needle), "range=(0x%lx ~", pfn);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle) && strstr(line, " order=10 "))
			n++;
	fclose(f);
	return n;
}

/* Sum of "unmergeable:N" over the zones of the debugfs summary at @order. */
static long summary_unmergeable(int order)
{
	static char buf[65536];
	char o[8];
	long total = 0;
	char *p;

	snprintf(o, sizeof(o), "%d", order);
	if (write_str("/sys/kernel/debug/defrag/order", o) ||
	    read_str("/sys/kernel/debug/defrag/summary", buf, sizeof(buf)) < 0)
		return -1;
	for (p = strstr(buf, "unmergeable:"); p; p = strstr(p + 1, "unmergeable:"))
		total += strtol(p + strlen("unmergeable:"), NULL, 10);
	return strstr(buf, "unmergeable:") ? total : -1;
}

int main(void)
{
	struct blocks b = { 0 };
	struct ranges r = { 0 };
	unsigned long cma_base, cma_count, mixed[2];
	long movable_before, cma_blocks, success_before, hits = 0;
	long unmergeable, free_before, free_after, attempt_before, handed_before;
	int nmixed = 0, nblocks = 0, found, status, ids[MAX_BLOCKS];
	unsigned long pages;
	pid_t pids[4];
	struct frag f;
	size_t bad;

	kt_plan(12);
	{
		char v[16] = "?";

		/* guest/plans/isolation boots with defrag_direct=0. */
		kt_ok(!setting_get(DEFRAG "direct", v, sizeof(v)) && !strcmp(v, "0"),
		      "the boot parameter defrag_direct=0 turned direct off (reads %s)", v);
	}
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	memset(t, 0, sizeof(*t));

	cma_area(cma_dir, sizeof(cma_dir), &cma_base, &cma_count);
	found = movable_blocks(b.ids, MAX_BLOCKS, &b.pages, cma_base, cma_count);
	/*
	 * Only blocks that go offline on a quiet system: ZONE_MOVABLE can
	 * hold boot-time allocations that no offline can move.
	 */
	sigaction(SIGALRM, &(struct sigaction){ .sa_handler = on_alarm }, NULL);
	for (int i = 0; i < found; i++) {
		int err;

		alarm(OFFLINE_TIMEOUT);
		err = block_state(b.ids[i], "offline");
		alarm(0);

		if (!err) {
			if (block_state(b.ids[i], "online_movable"))
				kt_bail("memory%d does not come back online", b.ids[i]);
			b.ids[nblocks++] = b.ids[i];
		} else {
			kt_diag("memory%d does not go offline even on a quiet system (errno %d): not used",
				b.ids[i], -err);
		}
	}
	b.n = nblocks;
	if (!b.n)
		kt_bail("no movable-only memory block without holes goes offline (movablecore= missing?)");
	kt_diag("%d movable-only blocks of %lu pages (first memory%d); CMA %s at pfn 0x%lx, %lu pages",
		b.n, b.pages, b.ids[0], cma_dir, cma_base, cma_count);
	for (int i = 0; i < b.n; i++) {
		r.start[r.n] = (unsigned long)b.ids[i] * b.pages;
		r.pages[r.n++] = b.pages;
	}
	r.start[r.n] = cma_base;
	r.pages[r.n++] = cma_count;
	/* Order-10 ranges that hold CMA and other pageblocks. */
	if (cma_base % (1UL << ORDER_MIX))
		mixed[nmixed++] = cma_base & ~((1UL << ORDER_MIX) - 1);
	if ((cma_base + cma_count) % (1UL << ORDER_MIX))
		mixed[nmixed++] = (cma_base + cma_count) & ~((1UL << ORDER_MIX) - 1);
	if (!nmixed)
		kt_bail("the CMA area is 4 MiB-aligned at both ends: no mixed order-10 range to test");

	movable_before = pageblocks_of_type(-1, "Movable", "Movable");
	cma_blocks = pageblocks_of_type(-1, NULL, "CMA");
	kt_diag("pageblocks: ZONE_MOVABLE movable %ld, CMA %ld, isolated %ld",
		movable_before, cma_blocks, isolated_pageblocks());

	free_before = settled_free_kb();
	if (fragment(&f, FRAG_ANON_RUNS, 450 * 1024, 0x150)) {
		frag_release(&f);
		kt_bail("fragmenting memory failed");
	}
	kt_diag("%zu pages of ours in use", frag_used_pages(&f));

	write_str(TRACING "buffer_size_kb", "8192");
	trace_clear();
	write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "1");
	write_str(TRACING "events/defrag/defrag_range_failed/enable", "1");
	success_before = vmstat("defrag_success");

	pids[0] = child(offline_online, &b);
	pids[1] = child(cma_churn, NULL);
	pids[2] = child(coalesce_loop, NULL);
	pids[3] = child(evacuate_loop, &r);
	sleep(SECONDS);
	for (int i = 0; i < 4; i++)
		kill(pids[i], SIGTERM);
	for (int i = 0; i < 4; i++)
		waitpid(pids[i], &status, 0);
	write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "0");
	write_str(TRACING "events/defrag/defrag_range_failed/enable", "0");

	kt_diag("offline ok %ld, failed %ld (last errno %d), online failed %ld; cma alloc ok %ld, failed %ld; coalesce ok %ld; evacuate ok %ld of %ld",
		t->offline_ok, t->offline_fail, t->last_offline_err, t->online_fail,
		t->cma_alloc_ok, t->cma_alloc_fail, t->coalesce_ok, t->evacuate_ok,
		t->evacuate_tried);

	/* A child killed mid-cycle may have left its block offline. */
	for (int i = 0; i < b.n; i++)
		block_state(b.ids[i], "online_movable");
	kt_ok(t->offline_ok > 0 && t->offline_fail == 0 && t->online_fail == 0,
	      "every offline of a movable-only block succeeded (%ld ok, %ld failed, last errno %d; online failed %ld)",
	      t->offline_ok, t->offline_fail, t->last_offline_err, t->online_fail);
	kt_ok(movable_blocks(ids, MAX_BLOCKS, &pages, cma_base, cma_count) == found &&
	      pageblocks_of_type(-1, "Movable", "Movable") == movable_before &&
	      pageblocks_of_type(-1, "Movable", "Unmovable") == 0 &&
	      pageblocks_of_type(-1, "Movable", "Reclaimable") == 0,
	      "the %d movable-only blocks online again, ZONE_MOVABLE with movable pageblocks only (%ld, was %ld)",
	      found, pageblocks_of_type(-1, "Movable", "Movable"), movable_before);
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated (%ld)", isolated_pageblocks());
	kt_ok(pageblocks_of_type(-1, NULL, "CMA") == cma_blocks &&
	      cma_blocks == (long)cma_count / pageblock_pages(),
	      "CMA pageblocks as the area holds (%ld, was %ld, area %ld)",
	      pageblocks_of_type(-1, NULL, "CMA"), cma_blocks,
	      (long)cma_count / pageblock_pages());

	bad = frag_check(&f);
	kt_ok(bad == 0, "every page kept its contents (%zu wrong of %zu)", bad, f.npages);

	kt_ok(vmstat("defrag_success") > success_before && t->evacuate_ok > 0 && t->coalesce_ok > 0,
	      "kdefrag made blocks and emptied ranges meanwhile (defrag_success +%ld, coalesce ok %ld, evacuate ok %ld)",
	      vmstat("defrag_success") - success_before, t->coalesce_ok, t->evacuate_ok);

	for (int i = 0; i < nmixed; i++) {
		long h = trace_hits(mixed[i]);

		kt_diag("order-10 range 0x%lx (CMA and other pageblocks): %ld trace events", mixed[i], h);
		hits += h < 0 ? 1 : h;
	}
	kt_ok(hits == 0, "no order-10 range mixing CMA and other pageblocks was attempted (%ld events)",
	      hits);
	unmergeable = summary_unmergeable(ORDER_MIX);
	kt_ok(unmergeable >= nmixed,
	      "the debugfs summary counts them unmergeable at order 10 (%ld, want at least %d)",
	      unmergeable, nmixed);

	/* The allocator's direct requests, beside memory offline and CMA. */
	setting_set(THP "enabled", "madvise");
	setting_set(THP "defrag", "madvise");
	setting_set(THP "hugepages-2048kB/enabled", "never");
	setting_set(THP "hugepages-64kB/enabled", "madvise");
	setting_set(DEFRAG "direct_min_order", "4");
	setting_set(DEFRAG "enabled", "1");
	setting_set(DEFRAG "direct", "1");
	t->offline_ok = t->offline_fail = t->online_fail = t->last_offline_err = 0;
	t->cma_alloc_ok = t->cma_alloc_fail = 0;
	attempt_before = vmstat("defrag_direct_attempt");
	handed_before = vmstat("defrag_direct_success");
	b.paced = true;
	pids[0] = child(offline_online, &b);
	pids[1] = child(cma_churn, NULL);
	pids[2] = child(direct_faulter, NULL);
	for (int s = 1; s <= DIRECT_MAX_SECONDS; s++) {
		long handed;

		sleep(1);
		handed = vmstat("defrag_direct_success") - handed_before;
		if (s >= DIRECT_SECONDS && handed >= DIRECT_HANDED &&
		    t->offline_ok >= DIRECT_OFFLINES)
			break;
		/* Something for the host's silence watch on slow kernels. */
		if (s % 30 == 0)
			kt_diag("direct: %d s, %ld faulter regions (%d kept), %ld blocks handed over, %ld offlines",
				s, t->regions, t->nkept, handed, t->offline_ok);
	}
	for (int i = 0; i < 3; i++)
		kill(pids[i], SIGTERM);
	for (int i = 0; i < 3; i++)
		waitpid(pids[i], &status, 0);
	setting_set(DEFRAG "direct", "0");
	for (int i = 0; i < b.n; i++)
		block_state(b.ids[i], "online_movable");
	kt_diag("direct: %d regions kept; offline ok %ld, failed %ld (last errno %d), online failed %ld; cma alloc ok %ld, failed %ld; %ld faulter regions (map failed %ld, split failed %ld); direct attempts %ld, handed over %ld",
		t->nkept, t->offline_ok, t->offline_fail, t->last_offline_err, t->online_fail,
		t->cma_alloc_ok, t->cma_alloc_fail, t->regions, t->map_fail, t->split_fail,
		vmstat("defrag_direct_attempt") - attempt_before,
		vmstat("defrag_direct_success") - handed_before);
	kt_ok(t->offline_ok >= DIRECT_OFFLINES && t->offline_fail == 0 && t->online_fail == 0 &&
	      vmstat("defrag_direct_success") - handed_before >= DIRECT_HANDED && !t->split_fail,
	      "direct=1: every offline succeeded (%ld ok, want %d; %ld failed, last errno %d; online failed %ld) while %ld direct requests handed blocks over (want %d)",
	      t->offline_ok, DIRECT_OFFLINES, t->offline_fail, t->last_offline_err,
	      t->online_fail, vmstat("defrag_direct_success") - handed_before, DIRECT_HANDED);
	bad = frag_check(&f);
	kt_ok(bad == 0 && t->fault_bad == 0 && t->regions > 0 && isolated_pageblocks() == 0 &&
	      pageblocks_of_type(-1, "Movable", "Movable") == movable_before &&
	      pageblocks_of_type(-1, NULL, "CMA") == cma_blocks,
	      "direct=1: every page kept its contents (workload %zu wrong, faulter %ld wrong in %ld regions), no pageblock left isolated (%ld), ZONE_MOVABLE and CMA pageblocks as before (%ld, %ld)",
	      bad, t->fault_bad, t->regions, isolated_pageblocks(),
	      pageblocks_of_type(-1, "Movable", "Movable"), pageblocks_of_type(-1, NULL, "CMA"));

	frag_release(&f);
	free_after = settled_free_kb();
	kt_ok(free_after >= free_before - free_slack_kb(),
	      "no free page kept back: MemFree %ld kB, %ld kB before", free_after, free_before);
	write_str(TRACING "buffer_size_kb", "1408");
	return kt_done();
}
