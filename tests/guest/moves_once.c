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

int main(int argc, char **argv)
{
	int order = argc > 1 ? atoi(argv[1]) : 9;
	long count = argc > 2 ? atol(argv[2]) : 1000;
	long made = 0, used_before = 0, traced = 0, excess = 0;
	struct measured_coalesce m;
	int outside = 0;
	size_t bad;

	if (order < 1 || order > 10 || count < 1)
		kt_bail("usage: moves_once ORDER COUNT");
	kt_plan(4);
	if (coalesce_measured(&m, order, count, 0x0971))
		kt_bail("cannot fragment memory, trace the range events or read /proc/kpageflags");
	kt_diag("order %d, %ld per zone: %s", order, count, m.result);
	for (int i = 0; i < m.nr; i++) {
		const struct traced_range *r = &m.r[i];
		int k = kpf_zone_of(m.z, m.nz, r->start);
		long u = k < 0 ? -1 : kpf_used(&m.z[k], r->start, r->end);

		if (u < 0) {
			outside++;
		} else {
			used_before += u;
			if ((long)r->migrated > u)
				excess += r->migrated - u;
		}
		made += r->made;
		traced += r->migrated;
	}
	kt_ok(m.ret == 0 && made > 0 && m.nr > 0 && m.nr < MEASURED_MAX_RANGES && !outside,
	      "order %d: request made %ld blocks (%s), %d ranges traced, %d outside every zone",
	      order, made, m.ret ? strerror(-m.ret) : "ok", m.nr, outside);
	kt_ok(m.nr > 0 && traced == m.migrated, "order %d: traced migrations %ld == defrag_migrated %ld",
	      order, traced, m.migrated);
	kt_ok(m.nr > 0 && excess * 50 <= used_before + 16 * 50,
	      "order %d: ranges migrated %ld pages beyond what they held before (<= 2%% of %ld, +16): each page moved once (all: %ld, %.3f)",
	      order, excess, used_before, m.migrated,
	      used_before ? (double)m.migrated / used_before : 0.0);
	bad = frag_check(&m.f);
	kt_ok(bad == 0, "contents of the workload's %zu pages and %zu files intact (%zu bad)",
	      m.f.npages, m.f.files, bad);
	measured_release(&m);
	return kt_done();
}
