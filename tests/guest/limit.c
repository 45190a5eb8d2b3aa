// SPDX-License-Identifier: GPL-2.0
/*
 * The debugfs "physical limit" (free + feasible order-4 ranges) agrees
 * within 2% with an independent count from /proc/kpageflags, on memory
 * fragmented by anon holes and with a mix of unmovable allocations
 * (page tables, slab from many small files).
 *
 * Independent rule, per aligned 16-page range: feasible when every page
 * is on the LRU (and not unevictable-and-forbidden, which init allows),
 * or free (kpageflags marks every page of a free buddy block BUDDY).
 * Anything else (slab,
 * page tables, reserved, other kernel pages with no flags) makes it
 * infeasible.
 */
#include "kdefrag.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Not in the uapi header: a kernel-internal bit that /proc/kpageflags shows. */
#define KPF_RESERVED	32
#define ORDER		4

/* Populated zones' [start, end) from /proc/zoneinfo. */
static int zones(unsigned long *start, unsigned long *end, int max)
{
	struct zone_info z[16];
	int nz = read_zoneinfo(z, 16), n = 0;

	for (int i = 0; i < nz && n < max; i++) {
		if (!z[i].present)
			continue;
		start[n] = z[i].start_pfn;
		end[n++] = z[i].start_pfn + z[i].spanned;
	}
	return n;
}

/* Ranges found infeasible, by their first bad page: flagless, slab, page table, reserved, other. */
static long why[5];

static long count_limit(unsigned long zs, unsigned long ze)
{
	size_t n = ze - zs;
	uint64_t *fl = malloc(n * 8);
	int fd = open("/proc/kpageflags", O_RDONLY);
	long limit = 0;

	if (!fl || fd < 0 || pread(fd, fl, n * 8, zs * 8) != (ssize_t)(n * 8))
		kt_bail("cannot read /proc/kpageflags");
	close(fd);
	for (unsigned long pfn = (zs + 15) & ~15UL; pfn + 16 <= ze; pfn += 16) {
		int ok = 1;

		for (int j = 0; j < 16 && ok; j++) {
			size_t i = pfn - zs + j;
			uint64_t f = fl[i];

			ok = (f & (1ULL << KPF_BUDDY)) ||
			     ((f & (1ULL << KPF_LRU)) && !(f & (1ULL << KPF_WRITEBACK)));
			if (!ok)
				why[!f ? 0 : f & (1ULL << KPF_SLAB) ? 1 : f & (1ULL << KPF_PGTABLE) ? 2 :
				    f & (1ULL << KPF_RESERVED) ? 3 : 4]++;
		}
		limit += ok;
	}
	free(fl);
	return limit;
}

int main(void)
{
	unsigned long zs[8], ze[8];
	static char buf[16384];
	long dbg = 0, ind = 0;
	struct frag f;
	char *p;
	int nz;

	kt_plan(2);
	/* Unmovable mix: slab (inodes, dentries) from many small files. */
	for (int i = 0; i < 2000; i++) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/mnt/tmpfs/f%d", i);
		fd = open(path, O_CREAT | O_WRONLY, 0600);
		if (fd >= 0) {
			write(fd, path, 8);
			close(fd);
		}
	}
	if (fragment_anon(&f, 96 * 1024, 0x11317))
		kt_bail("cannot fragment memory");
	write_str("/sys/kernel/debug/defrag/order", "4");
	/*
	 * Let deferred frees of earlier tests (RCU, exiting processes) land
	 * first: pages freed between the summary's pcp drain and the
	 * kpageflags read look like kernel pages to kpageflags.
	 */
	sync();
	sleep(3);
	/* Reading summary drains the pcp lists, whose pages kpageflags cannot tell from kernel pages. */
	nz = zones(zs, ze, 8);
	if (read_str("/sys/kernel/debug/defrag/summary", buf, sizeof(buf)) < 0)
		kt_bail("cannot read debugfs summary");
	for (int z = 0; z < nz; z++)
		ind += count_limit(zs[z], ze[z]);
	for (p = buf; (p = strstr(p, "  limit ")); p++)
		dbg += strtol(p + 8, NULL, 10);
	kt_diag("debugfs limit %ld, kpageflags count %ld, %d zones", dbg, ind, nz);
	kt_diag("kpageflags infeasible by first page: flagless %ld slab %ld pgtable %ld reserved %ld other %ld",
		why[0], why[1], why[2], why[3], why[4]);
	fputs(buf, stdout);	/* debugfs summary, for the record */
	kt_ok(dbg > 0 && ind > 0, "both counts found feasible order-4 ranges");
	kt_ok(labs(dbg - ind) * 50 <= dbg,
	      "debugfs physical limit %ld within 2%% of the kpageflags count %ld", dbg, ind);
	frag_release(&f);
	return kt_done();
}
