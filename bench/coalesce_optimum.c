// SPDX-License-Identifier: GPL-2.0
/*
 * Pages migrated per block by one bulk coalesce request, against the
 * optimum: in each zone, the cheapest K order-aligned ranges of memory as
 * it was just before the request (K = the blocks the request made there),
 * counted from /proc/kpageflags (kpf_cheapest() in guest/lib).
 *
 * Also how often pages moved: what was migrated against the pages that
 * were in use, before the request, in the ranges it evacuated or gave up.
 * Above 1, migration targets landed in ranges evacuated later and those
 * pages moved twice.
 *
 * argv[1]: the order; argv[2]: how many blocks to ask for in each zone.
 * Workload: "sparse" (guest/lib fragment()), memory filled to 97%.
 */
#include "kdefrag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int order = argc > 1 ? atoi(argv[1]) : 9;
	long count = argc > 2 ? atol(argv[2]) : 1000;
	long made = 0, used_before = 0, optimum = 0, traced = 0;
	long made_in[16] = { 0 };
	struct measured_coalesce m;
	bool measured = true;
	char num[32];
	size_t bad;

	if (order < 1 || order > 10 || count < 1)
		kt_bail("usage: coalesce_optimum ORDER COUNT");
	kt_plan(2);
	if (coalesce_measured(&m, order, count, 0x0971))
		kt_bail("cannot fragment memory, trace the range events or read /proc/kpageflags");
	for (int i = 0; i < m.nr; i++) {
		const struct traced_range *r = &m.r[i];
		int k = kpf_zone_of(m.z, m.nz, r->start);
		long u = k < 0 ? -1 : kpf_used(&m.z[k], r->start, r->end);

		if (u < 0) {
			measured = false;
			continue;
		}
		used_before += u;
		traced += r->migrated;
		if (r->made) {
			made_in[k]++;
			made++;
		}
	}
	/* A trace that lost events would give wrong figures. */
	if (traced != m.migrated)
		measured = false;
	printf("order %d, asked %ld per zone: %s\n", order, count, m.result);
	reasons_print(m.reasons_before);
	for (int k = 0; k < m.nz; k++) {
		long free_ranges, opt = kpf_cheapest(&m.z[k], order, made_in[k], &free_ranges);

		printf("node %d zone %s: %ld made, %ld ranges free before, at most %ld (free pages / 2^order)\n",
		       m.z[k].node, m.z[k].name, made_in[k], free_ranges, kpf_free(&m.z[k]) >> order);
		if (opt < 0)
			measured = false;
		else
			optimum += opt;
	}
	printf("workload: %zu anon pages, %zu kept, %zu files; MemTotal %ld kB, min_free_kbytes %s\n",
	       m.f.npages, frag_used_pages(&m.f), m.f.files, meminfo_kb("MemTotal"),
	       read_str("/proc/sys/vm/min_free_kbytes", num, sizeof(num)) > 0 ?
	       strtok(num, "\n") : "?");
	if (measured && made > 0 && optimum > 0 && used_before > 0) {
		double per = (double)m.migrated / made;

		printf("per block: migrated %.1f, optimum %.1f, ratio %.3f%s; scanned %.1f\n",
		       per, (double)optimum / made, per / ((double)optimum / made),
		       order == 9 ? " (target <= 1.1)" : order == 4 ? " (target <= 1.2)" : "",
		       (double)m.scanned / made);
		printf("moves per page: migrated %ld / in use before in the %d ranges tried %ld = %.3f\n",
		       m.migrated, m.nr, used_before, (double)m.migrated / used_before);
	}
	kt_ok(measured && made > 0 && m.nr < MEASURED_MAX_RANGES,
	      "order %d: %ld blocks made, %d ranges traced (%ld migrations, defrag_migrated %ld), each in a zone",
	      order, made, m.nr, traced, m.migrated);
	bad = frag_check(&m.f);
	kt_ok(bad == 0, "contents of the workload's %zu pages and %zu files intact (%zu bad)",
	      m.f.npages, m.f.files, bad);
	measured_release(&m);
	return kt_done();
}
