// SPDX-License-Identifier: GPL-2.0
/*
 * A bulk coalesce request moves each page at most once: its migration
 * targets come only from ranges it does not evacuate, so everything it
 * migrated was in use, before the request, in a range it evacuated or gave
 * up (from a /proc/kpageflags snapshot and the range trace events). A
 * request that takes targets from the cheap ranges it evacuates later
 * moves those pages twice: at order 9 on this workload the series before
 * the fix migrated 1.9 times the pages in use in its ranges.
 *
 * argv[1]: the order; argv[2]: blocks to ask for in each zone.
 * Workload: "sparse" (guest/lib fragment()), memory filled to 97%.
 *
 * Checked per range: what each range migrated beyond what it held before
 * the request, summed, is what moved into it from elsewhere (and then
 * again). Slack: pages the rest of the system allocates in a range between
 * the snapshot and its evacuation also move (2% and 16 pages).
 */
#include "kdefrag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACING "/sys/kernel/tracing/"
#define MAX_RANGES 65536

int main(int argc, char **argv)
{
	static struct traced_range r[MAX_RANGES];
	int order = argc > 1 ? atoi(argv[1]) : 9;
	long count = argc > 2 ? atol(argv[2]) : 1000;
	long made = 0, used_before = 0, traced = 0, excess = 0, migrated, mig0, total_kb;
	char req[64], buf[512];
	struct kpf_zone z[16];
	int nz, nr, outside = 0, ret;
	struct frag f;
	size_t bad;

	if (order < 1 || order > 10 || count < 1)
		kt_bail("usage: moves_once ORDER COUNT");
	kt_plan(4);
	if (read_str("/proc/meminfo", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "MemTotal: %ld", &total_kb) != 1)
		kt_bail("cannot read MemTotal");
	if (fragment(&f, FRAG_SPARSE, total_kb * 3 / 100, 0x0971))
		kt_bail("cannot fragment memory");
	if (write_str(TRACING "buffer_size_kb", "8192") ||
	    write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "1") ||
	    write_str(TRACING "events/defrag/defrag_range_failed/enable", "1")) {
		frag_release(&f);
		kt_bail("cannot enable the range trace events");
	}
	trace_clear();
	settled_free_kb();	/* drains the per-CPU lists: kpageflags cannot see them */
	nz = kpf_snapshot(z, 16);
	if (nz < 1) {
		frag_release(&f);
		kt_bail("cannot read /proc/kpageflags");
	}
	mig0 = vmstat("defrag_migrated");
	snprintf(req, sizeof(req), "%d %ld", order, count);
	ret = write_str("/sys/kernel/mm/defrag/coalesce", req);
	migrated = vmstat("defrag_migrated") - mig0;
	write_str(TRACING "events/defrag/defrag_range_evacuated/enable", "0");
	write_str(TRACING "events/defrag/defrag_range_failed/enable", "0");
	read_str("/sys/kernel/mm/defrag/coalesce", buf, sizeof(buf));
	kt_diag("order %d, %ld per zone: %s", order, count, strtok(buf, "\n"));
	nr = traced_ranges(r, MAX_RANGES);
	for (int i = 0; i < nr; i++) {
		int k = kpf_zone_of(z, nz, r[i].start);
		long u = k < 0 ? -1 : kpf_used(&z[k], r[i].start, r[i].end);

		if (u < 0) {
			outside++;
		} else {
			used_before += u;
			if ((long)r[i].migrated > u)
				excess += r[i].migrated - u;
		}
		made += r[i].made;
		traced += r[i].migrated;
	}
	kt_ok(ret == 0 && made > 0 && nr > 0 && nr < MAX_RANGES && !outside,
	      "order %d: request made %ld blocks (%s), %d ranges traced, %d outside every zone",
	      order, made, ret ? strerror(-ret) : "ok", nr, outside);
	kt_ok(nr > 0 && traced == migrated, "order %d: traced migrations %ld == defrag_migrated %ld",
	      order, traced, migrated);
	kt_ok(nr > 0 && excess * 50 <= used_before + 16 * 50,
	      "order %d: ranges migrated %ld pages beyond what they held before (<= 2%% of %ld, +16): each page moved once (all: %ld, %.3f)",
	      order, excess, used_before, migrated,
	      used_before ? (double)migrated / used_before : 0.0);
	bad = frag_check(&f);
	kt_ok(bad == 0, "contents of the workload's %zu pages and %zu files intact (%zu bad)",
	      f.npages, f.files, bad);
	kpf_release(z, nz);
	frag_release(&f);
	return kt_done();
}
