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
 * Compaction: fragment memory, then fault 64 kB mTHP folios with THP defrag=always, so that every
 * order-4 allocation that finds no free block enters direct compaction.
 * Blocks = mTHP faults that got an order-4 folio, less the free order-4
 * blocks there were before; migrated = pgmigrate_success; scanned =
 * migrate + free scanner counts of direct compaction and of kcompactd,
 * which kswapd wakes for the same requests.
 *
 * kdefrag: release everything, fragment again the same way, and ask
 * /sys/kernel/mm/defrag/coalesce for the same number of order-4 blocks.
 * Blocks = made; migrated = defrag_migrated; scanned = defrag_scanned
 * (candidate scoring plus the migration isolation walk).
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
#define FAULTS MTHP "hugepages-64kB/stats/anon_fault_alloc"

static long read_long(const char *path)
{
	char buf[64];

	return read_str(path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 256;
	int kind = frag_kind_parse(argc > 2 ? argv[2] : "anon-runs");
	long f0, mig0, ms0, fs0, blocks, c_mig, c_scan;
	long d_mig0, d_scan0, made, d_mig, d_scan, avail;
	size_t len;
	char last[256], req[64];
	struct frag f;
	char *p;

	if (kind != FRAG_ANON_PAGES && kind != FRAG_ANON_RUNS)
		kt_bail("workload must be anon-pages or anon-runs");
	printf("workload: %s\n", frag_kind_name(kind));
	write_str(MTHP "enabled", "never");
	write_str(MTHP "defrag", "always");
	write_str(MTHP "hugepages-64kB/enabled", "always");

	/* Compaction. */
	if (fragment(&f, kind, 48 * 1024, 0xbe4c1))
		kt_bail("cannot fragment memory");
	/*
	 * Free blocks of order >= 4 that exist already, in order-4 units:
	 * the first faults take those without compaction, so fault that many
	 * more and credit compaction with the blocks beyond them.
	 */
	avail = 0;
	for (int o = 4; o < MAX_ORDER_NR; o++)
		avail += (buddy_blocks(-1, o) - buddy_blocks(-1, o + 1)) << (o - 4);
	len = (size_t)(avail + want) * 16 * PAGE_SIZE;
	f0 = read_long(FAULTS);
	mig0 = vmstat("pgmigrate_success");
	ms0 = vmstat("compact_migrate_scanned") + vmstat("compact_daemon_migrate_scanned");
	fs0 = vmstat("compact_free_scanned") + vmstat("compact_daemon_free_scanned");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(p, len, MADV_HUGEPAGE);
	for (size_t off = 0; off < len; off += 16 * PAGE_SIZE)
		p[off] = 1;
	blocks = read_long(FAULTS) - f0 - avail;
	c_mig = vmstat("pgmigrate_success") - mig0;
	c_scan = vmstat("compact_migrate_scanned") + vmstat("compact_daemon_migrate_scanned") - ms0 +
		 vmstat("compact_free_scanned") + vmstat("compact_daemon_free_scanned") - fs0;
	munmap(p, len);
	frag_release(&f);
	printf("compaction: %ld order-4 blocks beyond the %ld free before, %ld pages migrated, %ld scanned\n",
	       blocks, avail, c_mig, c_scan);
	if (blocks < 1)
		kt_bail("direct compaction produced no order-4 block");

	/* kdefrag, asked for as many blocks. */
	if (fragment(&f, kind, 48 * 1024, 0xbe4c2))
		kt_bail("cannot fragment memory");
	d_mig0 = vmstat("defrag_migrated");
	d_scan0 = vmstat("defrag_scanned");
	snprintf(req, sizeof(req), "4 %ld", blocks);
	write_str("/sys/kernel/mm/defrag/coalesce", req);
	read_str("/sys/kernel/mm/defrag/coalesce", last, sizeof(last));
	made = strtol(strstr(last, "made=") ? strstr(last, "made=") + 5 : "0", NULL, 10);
	d_mig = vmstat("defrag_migrated") - d_mig0;
	d_scan = vmstat("defrag_scanned") - d_scan0;
	printf("kdefrag:    %ld order-4 blocks, %ld pages migrated, %ld scanned\n",
	       made, d_mig, d_scan);
	if (frag_check(&f))
		kt_bail("kdefrag corrupted the workload's pages");
	frag_release(&f);
	if (made < 1)
		kt_bail("kdefrag made no order-4 block");

	printf("per block:  compaction migrated %.2f scanned %.2f; kdefrag migrated %.2f scanned %.2f\n",
	       (double)c_mig / blocks, (double)c_scan / blocks,
	       (double)d_mig / made, (double)d_scan / made);
	printf("ratio kdefrag/compaction: migrated %.3f (target <= 0.333), scanned %.3f (target <= 0.100)\n",
	       ((double)d_mig / made) / ((double)c_mig / blocks),
	       ((double)d_scan / made) / ((double)c_scan / blocks));
	return 0;
}
