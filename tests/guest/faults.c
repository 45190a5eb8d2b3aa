// SPDX-License-Identifier: GPL-2.0
/*
 * Coalescing under injected allocation failures: fail_page_alloc, limited
 * to this task (task-filter + make-it-fail, switched on only around the
 * requests), fails kdefrag's migration-target allocations at random.
 * Requests may fail with ENOMEM, but no page is lost or corrupted, no
 * pageblock stays isolated, and MemFree comes back.
 */
#include "kdefrag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FPA "/sys/kernel/debug/fail_page_alloc/"
#define TIMES 100000

int main(void)
{
	long free0, free1, enomem = 0, ok = 0, other = 0, left, injected;
	char req[32], buf[64];
	struct frag f;
	size_t bad;

	kt_plan(5);
	free0 = settled_free_kb();
	if (fragment_anon(&f, 64 * 1024, 0xfa17))
		kt_bail("cannot fragment memory");
	write_str(FPA "probability", "30");
	write_str(FPA "interval", "1");
	snprintf(buf, sizeof(buf), "%d", TIMES);
	write_str(FPA "times", buf);
	write_str(FPA "ignore-gfp-wait", "N");
	write_str(FPA "ignore-gfp-highmem", "N");
	write_str(FPA "min-order", "0");
	write_str(FPA "task-filter", "Y");

	for (int i = 0; i < 60; i++) {
		int ret;

		snprintf(req, sizeof(req), "%d 8", 2 + i % 8);
		write_str("/proc/self/make-it-fail", "1");
		ret = write_str("/sys/kernel/mm/defrag/coalesce", req);
		write_str("/proc/self/make-it-fail", "0");
		if (!ret)
			ok++;
		else if (ret == -ENOMEM)
			enomem++;
		else if (ret != -EBUSY)
			other++;
	}
	read_str(FPA "times", buf, sizeof(buf));
	left = strtol(buf, NULL, 10);
	injected = TIMES - left;
	write_str(FPA "probability", "0");
	kt_diag("60 requests: %ld ok, %ld ENOMEM, %ld other errors; %ld faults injected",
		ok, enomem, other, injected);
	kt_ok(injected > 0, "faults were injected into target allocations (%ld)", injected);
	kt_ok(other == 0, "requests fail only with ENOMEM or EBUSY (%ld others)", other);
	bad = frag_check(&f);
	kt_ok(bad == 0, "no page lost or corrupted (%zu bad of %zu)", bad, f.npages);
	frag_release(&f);
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated");
	free1 = settled_free_kb();
	kt_ok(free1 >= free0 - 8 * 1024, "MemFree came back: %ld kB before, %ld kB after", free0, free1);
	return kt_done();
}
