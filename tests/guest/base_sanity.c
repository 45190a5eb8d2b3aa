// SPDX-License-Identifier: GPL-2.0
/*
 * The guest kernel has what the kdefrag tests rely on (the config fragment
 * did its job), and stock compaction moves pages without corrupting them.
 */
#include "kdefrag.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

int main(void)
{
	static const char * const paths[] = {
		"/proc/buddyinfo", "/proc/pagetypeinfo", "/proc/kpageflags",
		"/proc/swaps", "/proc/sys/vm/compact_memory",
		"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
		"/sys/kernel/mm/hugepages", "/sys/kernel/debug/gup_test",
		"/sys/kernel/tracing/events/compaction",
		"/sys/devices/system/node/node1",
	};
	int n = sizeof(paths) / sizeof(paths[0]);
	char mounts[8192];
	struct frag f;
	long before;
	size_t bad;

	kt_plan(n + 4);
	for (int i = 0; i < n; i++)
		kt_ok(exists(paths[i]), "%s exists", paths[i]);
	kt_ok(vmstat("compact_migrate_scanned") >= 0, "vmstat has compaction counters");
	read_str("/proc/mounts", mounts, sizeof(mounts));
	kt_ok(strstr(mounts, "/dev/vda /mnt/disk ext4") != NULL, "ext4 on virtio-blk mounted");

	/* Stock compaction over fragmented anon memory keeps every byte. */
	if (fragment_anon(&f, 64 * 1024, 0x5eed) < 0)
		kt_bail("cannot fragment memory");
	before = vmstat("pgmigrate_success");
	write_str("/proc/sys/vm/compact_memory", "1");
	kt_ok(vmstat("pgmigrate_success") > before, "compact_memory migrated pages (%ld)",
	      vmstat("pgmigrate_success") - before);
	bad = frag_check(&f);
	kt_ok(bad == 0, "contents intact after compaction (%zu of %zu pages bad)", bad, f.npages);
	frag_release(&f);
	return kt_done();
}
