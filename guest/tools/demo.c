// SPDX-License-Identifier: GPL-2.0
/*
 * make demo: fragment memory with a workload that keeps half of its pages,
 * show /proc/buddyinfo, ask kdefrag for free blocks, show it again, and
 * check that the workload's data survived the migration.
 */
#include "kdefrag.h"

#include <stdio.h>
#include <string.h>

static void show(const char *title)
{
	char buf[4096];

	printf("\n== %s\n", title);
	if (read_str("/proc/buddyinfo", buf, sizeof(buf)) > 0)
		fputs(buf, stdout);
	printf("free blocks: order>=4: %ld  order>=9: %ld\n",
	       buddy_blocks(-1, 4), buddy_blocks(-1, 9));
}

static void request(const char *req)
{
	char last[256];
	int ret = write_str("/sys/kernel/mm/defrag/coalesce", req);

	read_str("/sys/kernel/mm/defrag/coalesce", last, sizeof(last));
	printf("\n# echo %s > /sys/kernel/mm/defrag/coalesce: %s\n  %s", req,
	       ret ? strerror(-ret) : "ok", last);
}

int main(void)
{
	static const char * const counters[] = {
		"defrag_attempt", "defrag_success", "defrag_fail", "defrag_migrated",
		"defrag_migrate_fail", "defrag_scanned", "defrag_candidates",
	};
	struct frag f;
	size_t bad;

	kt_plan(0);	/* a report, not a test: no cases, but a plan the verdict can check */
	if (fragment_anon(&f, 48 * 1024, 0xde0))
		kt_bail("cannot fragment memory");
	printf("workload: %zu pages mapped, half of them released at random\n", f.npages);
	show("before: fragmented");
	request("4 64");
	request("9 4");
	show("after: kdefrag coalesce");
	printf("\n");
	for (unsigned int i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		printf("%-20s %ld\n", counters[i], vmstat(counters[i]));
	bad = frag_check(&f);
	printf("\nworkload data check: %zu of %zu pages wrong\n", bad, f.npages);
	frag_release(&f);
	return bad ? 1 : 0;
}
