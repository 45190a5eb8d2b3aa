// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/defrag/coalesce on memory fragmented by one workload
 * (argv[1]: anon-pages, anon-runs, tmpfs, ext4 or mix; see fragment()):
 * for each order, a request makes free blocks of at least that order
 * (buddyinfo, debugfs and the counters agree), migrates no more pages than
 * the chosen ranges cost, and every page of the workload keeps its
 * contents. With mix, the pipe pages among the anon ones must show up as
 * ranges that cannot be emptied.
 */
#include "kdefrag.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define COALESCE "/sys/kernel/mm/defrag/coalesce"
#define TRACING "/sys/kernel/tracing"

/* Sum of the values after @key in the debugfs summary for @order. */
static long debugfs_sum(int order, const char *key)
{
	char buf[16384], num[8], *p;
	long total = 0;

	snprintf(num, sizeof(num), "%d", order);
	if (write_str("/sys/kernel/debug/defrag/order", num))
		return -1;
	if (read_str("/sys/kernel/debug/defrag/summary", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; (p = strstr(p, key)); p++)
		total += strtol(p + strlen(key), NULL, 10);
	return total;
}

#define MAX_ZONES 16

/* Free blocks of order >= @order in one zone, by "node zone". */
struct zone_blocks {
	char name[48];
	long blocks;
};

static int buddyinfo_zones(int order, struct zone_blocks *z)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		return -1;
	while (n < MAX_ZONES && fgets(line, sizeof(line), f)) {
		int nid, o = 0, off;
		char zone[32], *p = line;
		long cnt;

		if (sscanf(p, "Node %d, zone %31s%n", &nid, zone, &off) != 2)
			continue;
		snprintf(z[n].name, sizeof(z[n].name), "%d %s", nid, zone);
		z[n].blocks = 0;
		for (p += off; sscanf(p, "%ld%n", &cnt, &off) == 1; p += off, o++)
			if (o >= order)
				z[n].blocks += cnt;
		n++;
	}
	fclose(f);
	return n;
}

/* debugfs summary's "node N zone Z" / "  free_blocks B" pairs. */
static int debugfs_zones(int order, struct zone_blocks *z)
{
	char buf[16384], num[8], zone[32], *p;
	int n = 0, nid;

	snprintf(num, sizeof(num), "%d", order);
	if (write_str("/sys/kernel/debug/defrag/order", num) ||
	    read_str("/sys/kernel/debug/defrag/summary", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; n < MAX_ZONES && (p = strstr(p, "node ")); p++) {
		char *fb;

		if (sscanf(p, "node %d zone %31s", &nid, zone) != 2 ||
		    !(fb = strstr(p, "free_blocks ")))
			continue;
		snprintf(z[n].name, sizeof(z[n].name), "%d %s", nid, zone);
		z[n++].blocks = strtol(fb + strlen("free_blocks "), NULL, 10);
	}
	return n;
}

/*
 * debugfs's free_blocks of each zone lies between buddyinfo's count just
 * before and just after it was read. The read walks every range, which
 * takes a while on a debug kernel; the rest of the system allocates
 * meanwhile, so a count that went up and down again can leave the
 * bracket: ask again, three times at most. A wrong count stays wrong.
 * The read also drains the per-CPU free lists, whose pages may merge
 * into blocks buddyinfo did not see: drain them once before (a first
 * read), and allow 2 blocks for what the test's own reads freed since.
 */
static bool debugfs_agrees(int order)
{
	struct zone_blocks b0[MAX_ZONES], d[MAX_ZONES], b1[MAX_ZONES];

	for (int try = 1; try <= 3; try++) {
		int n0 = debugfs_zones(order, d) < 0 ? -1 : buddyinfo_zones(order, b0);
		int nd = debugfs_zones(order, d);
		int n1 = buddyinfo_zones(order, b1), bad = 0;

		if (n0 < 1 || nd != n0 || n1 != n0) {
			kt_diag("order %d: buddyinfo lists %d then %d zones, debugfs %d",
				order, n0, n1, nd);
			return false;
		}
		for (int i = 0; i < n0; i++) {
			long lo = b0[i].blocks, hi = b1[i].blocks;

			if (lo > hi) {
				lo = b1[i].blocks;
				hi = b0[i].blocks;
			}

			if (strcmp(d[i].name, b0[i].name) || d[i].blocks < lo - 2 ||
			    d[i].blocks > hi + 2) {
				kt_diag("order %d try %d: debugfs zone %s free_blocks %ld, buddyinfo zone %s %ld then %ld",
					order, try, d[i].name, d[i].blocks, b0[i].name,
					b0[i].blocks, b1[i].blocks);
				bad++;
			}
		}
		if (!bad)
			return true;
	}
	return false;
}

/*
 * From the trace of one request: every range that was evacuated, or given
 * up after some pages moved, migrated at most what its candidate was
 * scored at. Returns the number of ranges checked, or -1 on a violation.
 */
static int check_trace_costs(long *migrated_total, long *still_free)
{
	static char buf[1 << 20];
	unsigned long pfns[4096];
	unsigned int costs[4096];
	int ncand = 0, nev = 0;
	char *line, *save;

	*migrated_total = 0;
	*still_free = 0;
	if (read_str(TRACING "/trace", buf, sizeof(buf)) < 0)
		return -1;
	/* Freed pages still on per-CPU lists are not KPF_BUDDY. */
	pcp_drain();
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p;

		if ((p = strstr(line, "defrag_candidate:")) && ncand < 4096) {
			unsigned long pfn;
			unsigned int cost;

			if (sscanf(strstr(p, "pfn="), "pfn=0x%lx", &pfn) == 1 &&
			    sscanf(strstr(p, "cost="), "cost=%u", &cost) == 1) {
				pfns[ncand] = pfn;
				costs[ncand++] = cost;
			}
		} else if ((p = strstr(line, "defrag_range_evacuated:")) ||
			   (p = strstr(line, "defrag_range_failed:"))) {
			unsigned long start, end, nr;
			int i, found = 0;

			if (sscanf(strstr(p, "range="), "range=(0x%lx ~ 0x%lx)", &start, &end) != 2 ||
			    sscanf(strstr(p, "nr_migrated="), "nr_migrated=%lu", &nr) != 1)
				continue;
			/* The latest score of this range before it was evacuated. */
			for (i = ncand - 1; i >= 0; i--) {
				if (pfns[i] == start) {
					found = 1;
					if (nr > costs[i]) {
						kt_diag("range 0x%lx migrated %lu > cost %u", start, nr, costs[i]);
						return -1;
					}
					break;
				}
			}
			if (!found) {
				kt_diag("range 0x%lx evacuated without a candidate event", start);
				return -1;
			}
			*migrated_total += nr;
			nev++;
			/* An evacuated range: is every page of it still free? */
			if (strstr(line, "defrag_range_evacuated:")) {
				unsigned long pfn = start;

				while (pfn < end && pfn_buddy(pfn))
					pfn++;
				*still_free += pfn == end;
			}
		}
	}
	return nev;
}

static void test_order(int order)
{
	long blocks0, blocks1, succ0, succ1, mig0, mig1, traced_mig, pages0, pages1, made;
	long pgm0, pgm1;
	long still_free;
	char req[32], last[256];
	int ret, nev;

	trace_clear();
	blocks0 = buddy_blocks(-1, order);
	pages0 = buddy_pages(-1, order);
	succ0 = vmstat("defrag_success");
	mig0 = vmstat("defrag_migrated");
	pgm0 = vmstat("pgmigrate_success");
	snprintf(req, sizeof(req), "%d 2", order);
	ret = write_str(COALESCE, req);
	blocks1 = buddy_blocks(-1, order);
	pages1 = buddy_pages(-1, order);
	succ1 = vmstat("defrag_success");
	mig1 = vmstat("defrag_migrated");
	pgm1 = vmstat("pgmigrate_success");
	read_str(COALESCE, last, sizeof(last));
	last[strcspn(last, "\n")] = '\0';
	kt_diag("order %d: %s; buddyinfo >=%d: %ld -> %ld", order, last, order, blocks0, blocks1);

	kt_ok(ret == 0, "order %d: coalesce write succeeds (%s)", order, ret ? strerror(-ret) : "ok");
	kt_ok(succ1 - succ0 >= 1, "order %d: defrag_success grew by %ld", order, succ1 - succ0);
	made = strstr(last, "made=") ? strtol(strstr(last, "made=") + 5, NULL, 10) : 0;
	nev = check_trace_costs(&traced_mig, &still_free);
	/*
	 * Made blocks may merge with free neighbours: count pages, not
	 * blocks. At low orders the rest of the system allocating and
	 * freeing moves the count as much as a request does; then every
	 * evacuated range being wholly free now (pfn_buddy()) is the
	 * evidence instead.
	 */
	kt_ok(made >= 1 && (pages1 - pages0 >= made << order || still_free >= made),
	      "order %d: made %ld: buddyinfo has %ld more free pages in blocks of order >= %d, %ld evacuated ranges wholly free",
	      order, made, pages1 - pages0, order, still_free);
	kt_ok(debugfs_agrees(order),
	      "order %d: debugfs free_blocks of each zone agrees with buddyinfo", order);
	/* The migration core's own count: others' migrations only add to it. */
	kt_ok(nev >= 1 && traced_mig == mig1 - mig0 && pgm1 - pgm0 >= mig1 - mig0,
	      "order %d: %d ranges tried, each within its cost; traced %ld == defrag_migrated %ld <= pgmigrate_success %ld",
	      order, nev, traced_mig, mig1 - mig0, pgm1 - pgm0);
}

#define NODE_SAMPLES 1024
#define NODE_UNSET INT_MIN	/* not a sample */
#define NODE_NO_QUERY (INT_MIN + 1)	/* move_pages() itself failed */

/*
 * Node (move_pages with no target: a query) and pfn of each sampled kept
 * page of @f. A page that something (kcompactd's proactive compaction)
 * is migrating right then has a migration entry and reads -ENOENT: such
 * pages are asked again, for up to half a second, before a negative
 * status is taken as what it is.
 */
static void sample_nodes(const struct frag *f, int *nodes, uint64_t *pfns)
{
	void *pages[NODE_SAMPLES];
	size_t n = 0;

	for (size_t i = 0; i < f->npages && n < NODE_SAMPLES; i += f->npages / NODE_SAMPLES + 1)
		if (!f->released[i] && f->base) {
			pfns[n] = virt_to_pfn(f->base + i * PAGE_SIZE);
			pages[n++] = f->base + i * PAGE_SIZE;
		}
	for (size_t j = n; j < NODE_SAMPLES; j++)
		nodes[j] = NODE_UNSET;
	if (n && syscall(SYS_move_pages, 0, n, pages, NULL, nodes, 0))
		for (size_t j = 0; j < n; j++)
			nodes[j] = NODE_NO_QUERY;
	for (int tries = 0; tries < 50; tries++) {
		bool again = false;

		for (size_t j = 0; j < n; j++) {
			if (nodes[j] >= 0)
				continue;
			again = true;
			if (syscall(SYS_move_pages, 0, 1, &pages[j], NULL, &nodes[j], 0))
				nodes[j] = NODE_NO_QUERY;
			pfns[j] = virt_to_pfn(pages[j]);
		}
		if (!again)
			break;
		usleep(10000);
	}
}

int main(int argc, char **argv)
{
	static const int orders[] = { 1, 2, 3, 4, 6, 9, 10 };
	int n = sizeof(orders) / sizeof(orders[0]);
	int kind = frag_kind_parse(argc > 1 ? argv[1] : "anon-pages");
	long kernel0 = 0, kernel1;
	int nodes0[NODE_SAMPLES], nodes1[NODE_SAMPLES], moved_node = 0, sampled = 0, moved = 0, unknown = 0;
	uint64_t pfns0[NODE_SAMPLES], pfns1[NODE_SAMPLES];
	struct frag f;
	size_t bad;

	if (kind < 0)
		kt_bail("unknown workload %s", argv[1]);
	kt_plan(n * 5 + 2 + (kind == FRAG_MIX));
	direct_requests_off();
	if (write_str(TRACING "/events/defrag/enable", "1"))
		kt_bail("cannot enable defrag tracepoints");
	write_str(TRACING "/buffer_size_kb", "4096");
	if (kind == FRAG_MIX)
		kernel0 = debugfs_sum(4, " kernel:");
	if (fragment(&f, kind, 48 * 1024, 0xc0a1e5ce))
		kt_bail("cannot fragment memory with %s: %s", frag_kind_name(kind), strerror(errno));
	kt_diag("%s: %zu pages, %zu in use, %zu pipe pages; MemFree %ld kB",
		frag_kind_name(kind), f.npages, frag_used_pages(&f), f.pipe_pages,
		mem_free_kb());
	if (kind == FRAG_MIX) {
		/* Pipe pages make the order-4 ranges around them infeasible (16 at most share one). */
		kernel1 = debugfs_sum(4, " kernel:");
		kt_ok(kernel1 - kernel0 >= (long)f.pipe_pages / 32,
		      "mix: order-4 ranges infeasible for kernel pages grew %ld -> %ld (%zu pipe pages)",
		      kernel0, kernel1, f.pipe_pages);
	}
	sample_nodes(&f, nodes0, pfns0);
	for (int i = 0; i < n; i++)
		test_order(orders[i]);
	/* Targets come from the range's own zone: no page changes node. */
	sample_nodes(&f, nodes1, pfns1);
	for (int j = 0; j < NODE_SAMPLES; j++) {
		if (nodes0[j] == NODE_UNSET)
			continue;
		/* A mapped page of ours that never gives its node is a failure too. */
		if (nodes0[j] < 0 || nodes1[j] < 0) {
			if (!unknown++)
				kt_diag("sampled page %d: node %d before, %d after", j,
					nodes0[j], nodes1[j]);
			continue;
		}
		sampled++;
		moved += pfns0[j] != pfns1[j];
		moved_node += nodes0[j] != nodes1[j];
	}
	if (f.base)
		kt_ok(moved > 0 && moved_node == 0 && unknown == 0,
		      "%s: of %d sampled pages, %d were migrated, none to another NUMA node (%d changed node, %d gave no node)",
		      frag_kind_name(kind), sampled, moved, moved_node, unknown);
	else
		kt_skip("%s: not mapped, no NUMA node to sample", frag_kind_name(kind));
	bad = frag_check(&f);
	kt_ok(bad == 0, "%s: contents of all %zu pages intact after coalescing (%zu bad)",
	      frag_kind_name(kind), f.npages + f.pipe_pages, bad);
	write_str(TRACING "/events/defrag/enable", "0");
	frag_release(&f);
	return kt_done();
}
