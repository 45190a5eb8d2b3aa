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

#define TRACING "/sys/kernel/tracing/"
#define REASONS "/sys/kernel/debug/defrag/reasons"
#define MAX_RANGES 65536

/* Prints the ranges given up by reason, @before to now. */
static void print_reasons(const char *before)
{
	char now[2048], line[256] = "", *p, *q;

	if (read_str(REASONS, now, sizeof(now)) < 0)
		return;
	for (p = now; *p; p = q + 1) {
		char name[32], *b;
		long n, n0 = 0;

		q = strchrnul(p, '\n');
		if (sscanf(p, "%31s %ld", name, &n) != 2)
			break;
		b = strstr(before, name);
		if (b)
			sscanf(b + strlen(name), "%ld", &n0);
		if (n > n0)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s %ld",
				 name, n - n0);
		if (!*q)
			break;
	}
	printf("ranges given up:%s\n", *line ? line : " none");
}

int main(int argc, char **argv)
{
	static struct traced_range r[MAX_RANGES];
	int order = argc > 1 ? atoi(argv[1]) : 9;
	long count = argc > 2 ? atol(argv[2]) : 1000;
	long made = 0, used_before = 0, optimum = 0, mig0, mig1, scan0, scan1, total_kb;
	long made_in[16] = { 0 };
	char req[64], last[512], reasons[2048] = "", num[32];
	struct kpf_zone z[16];
	bool measured = true;
	struct frag f;
	int nz, nr;
	size_t bad;

	if (order < 1 || order > 10 || count < 1)
		kt_bail("usage: coalesce_optimum ORDER COUNT");
	kt_plan(2);
	if (read_str("/proc/meminfo", last, sizeof(last)) < 0 ||
	    sscanf(last, "MemTotal: %ld", &total_kb) != 1)
		kt_bail("cannot read MemTotal");
	if (fragment(&f, FRAG_SPARSE, total_kb * 3 / 100, 0x0971))
		kt_bail("cannot fragment memory");
	write_str(TRACING "buffer_size_kb", "8192");
	write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "1");
	write_str(TRACING "events/defrag/defrag_range_failed/enable", "1");
	trace_clear();
	settled_free_kb();	/* drains the per-CPU lists: kpageflags cannot see them */
	nz = kpf_snapshot(z, 16);
	if (nz < 1) {
		frag_release(&f);
		kt_bail("cannot read /proc/kpageflags");
	}
	read_str(REASONS, reasons, sizeof(reasons));
	mig0 = vmstat("defrag_migrated");
	scan0 = vmstat("defrag_scanned");
	snprintf(req, sizeof(req), "%d %ld", order, count);
	write_str("/sys/kernel/mm/defrag/coalesce", req);
	mig1 = vmstat("defrag_migrated");
	scan1 = vmstat("defrag_scanned");
	read_str("/sys/kernel/mm/defrag/coalesce", last, sizeof(last));
	last[strcspn(last, "\n")] = '\0';
	write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "0");
	write_str(TRACING "events/defrag/defrag_range_failed/enable", "0");
	nr = traced_ranges(r, MAX_RANGES);
	for (int i = 0; i < nr; i++) {
		int k = kpf_zone_of(z, nz, r[i].start);
		long u = k < 0 ? -1 : kpf_used(&z[k], r[i].start, r[i].end);

		if (u < 0) {
			measured = false;
			continue;
		}
		used_before += u;
		if (r[i].made) {
			made_in[k]++;
			made++;
		}
	}
	printf("order %d, asked %ld per zone: %s\n", order, count, last);
	print_reasons(reasons);
	for (int k = 0; k < nz; k++) {
		long free_ranges, opt = kpf_cheapest(&z[k], order, made_in[k], &free_ranges);

		printf("node %d zone %s: %ld made, %ld ranges free before, at most %ld (free pages / 2^order)\n",
		       z[k].node, z[k].name, made_in[k], free_ranges, kpf_free(&z[k]) >> order);
		if (opt < 0)
			measured = false;
		else
			optimum += opt;
	}
	printf("workload: %zu anon pages, %zu kept, %zu files; MemTotal %ld kB, min_free_kbytes %s\n",
	       f.npages, frag_used_pages(&f), f.files, total_kb,
	       read_str("/proc/sys/vm/min_free_kbytes", num, sizeof(num)) > 0 ?
	       strtok(num, "\n") : "?");
	if (made > 0 && optimum > 0 && used_before > 0) {
		double per = (double)(mig1 - mig0) / made;

		printf("per block: migrated %.1f, optimum %.1f, ratio %.3f%s; scanned %.1f\n",
		       per, (double)optimum / made, per / ((double)optimum / made),
		       order == 9 ? " (target <= 1.1)" : order == 4 ? " (target <= 1.2)" : "",
		       (double)(scan1 - scan0) / made);
		printf("moves per page: migrated %ld / in use before in the %d ranges tried %ld = %.3f\n",
		       mig1 - mig0, nr, used_before, (double)(mig1 - mig0) / used_before);
	}
	kt_ok(measured && made > 0 && nr < MAX_RANGES,
	      "order %d: %ld blocks made, %d ranges traced, each in a zone", order, made, nr);
	bad = frag_check(&f);
	kt_ok(bad == 0, "contents of the workload's %zu pages intact (%zu bad)", f.npages, bad);
	kpf_release(z, nz);
	frag_release(&f);
	return kt_done();
}
