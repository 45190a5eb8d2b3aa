// SPDX-License-Identifier: GPL-2.0
/*
 * Coalescing under injected failures:
 *  - fail_page_alloc, limited to this task (task-filter + make-it-fail,
 *    switched on only around the requests), fails kdefrag's
 *    migration-target allocations at random;
 *  - fail_make_request fails half the writes to the throttled disk
 *    (/dev/vdb, raw, past the writeback test's filesystem) while its page cache pages, mlocked so that reclaim
 *    cannot drop them, are written back and coalesced around.
 * Requests may fail with ENOMEM or EBUSY, but no page is lost or
 * corrupted, no pageblock stays isolated, and MemFree comes back.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define IO_LEN (2UL << 20)	/* 8 s of writeback on the throttled disk */
#define IO_OFF (48UL << 20)	/* past the writeback test's filesystem */

/*
 * Writes to the page cache of /dev/vdb fail at random while kdefrag
 * coalesces around them. Returns the number of request errors other than
 * EBUSY/ENOMEM; *bad gets pages whose cached contents changed, *injected
 * the I/O failures.
 */
static long io_faults(long *bad, long *injected, int *fsync_err)
{
	long other = 0;
	char req[32], *map, *data;
	int fd = open("/dev/vdb", O_RDWR);

	if (fd < 0)
		kt_bail("no /dev/vdb: %s", strerror(errno));
	data = malloc(IO_LEN);
	fill_pages(data, IO_LEN / PAGE_SIZE, 0x10fa);
	if (pwrite(fd, data, IO_LEN, IO_OFF) != (ssize_t)IO_LEN)
		kt_bail("cannot write /dev/vdb");
	map = mmap(NULL, IO_LEN, PROT_READ, MAP_SHARED, fd, IO_OFF);
	/* A page whose write failed is clean: only mlock keeps it in memory. */
	if (map == MAP_FAILED || mlock(map, IO_LEN))
		kt_bail("cannot map and mlock /dev/vdb: %s", strerror(errno));
	if (fault_arm(FAIL_MAKE_REQUEST, 50, false))
		kt_bail("no fail_make_request");
	write_str("/sys/block/vdb/make-it-fail", "1");
	sync_file_range(fd, IO_OFF, IO_LEN, SYNC_FILE_RANGE_WRITE);
	for (int i = 0; i < 40; i++) {
		int ret;

		snprintf(req, sizeof(req), "%d 4", 2 + i % 8);
		ret = write_str("/sys/kernel/mm/defrag/coalesce", req);
		if (ret && ret != -EBUSY && ret != -ENOMEM)
			other++;
	}
	*fsync_err = fsync(fd) ? errno : 0;
	write_str("/sys/block/vdb/make-it-fail", "0");
	*injected = fault_disarm(FAIL_MAKE_REQUEST);
	*bad = check_pages(map, IO_LEN / PAGE_SIZE, 0x10fa);
	munmap(map, IO_LEN);
	close(fd);
	free(data);
	return other;
}

/* Ranges given up for @reason since boot (debugfs "reasons"); -1 if unknown. */
static long reason_count(const char *reason)
{
	char buf[2048], name[40], *line, *save;
	long n;

	if (read_str("/sys/kernel/debug/defrag/reasons", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%39s %ld", name, &n) == 2 && !strcmp(name, reason))
			return n;
	return -1;
}

int main(void)
{
	long free0, free1, enomem = 0, ok = 0, other = 0, injected, io_bad, io_injected;
	long no_target0, no_target;
	int fsync_err;
	char req[32];
	struct frag f;
	size_t bad;

	kt_plan(9);
	free0 = settled_free_kb();
	if (fragment_anon(&f, 64 * 1024, 0xfa17))
		kt_bail("cannot fragment memory");
	if (fault_arm(FAIL_PAGE_ALLOC, 30, true))
		kt_bail("no fail_page_alloc");
	no_target0 = reason_count("no_target");

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
	injected = fault_disarm(FAIL_PAGE_ALLOC);
	no_target = reason_count("no_target") - no_target0;
	kt_diag("60 requests: %ld ok, %ld ENOMEM, %ld other errors; %ld faults injected",
		ok, enomem, other, injected);
	kt_ok(injected > 0, "faults were injected into this task's page allocations (%ld)", injected);
	/* Not only some allocation: kdefrag's migration targets failed. */
	kt_ok(no_target0 >= 0 && no_target > 0,
	      "ranges given up because a migration target could not be had: %ld (debugfs reasons no_target)",
	      no_target);
	kt_ok(other == 0, "requests fail only with ENOMEM or EBUSY (%ld others)", other);
	bad = frag_check(&f);
	kt_ok(bad == 0, "no page lost or corrupted (%zu bad of %zu)", bad, f.npages);
	frag_release(&f);
	other = io_faults(&io_bad, &io_injected, &fsync_err);
	kt_diag("fail_make_request: %ld writes failed; fsync: %s", io_injected,
		fsync_err ? strerror(fsync_err) : "ok");
	kt_ok(io_injected > 0 && fsync_err == EIO,
	      "writes to /dev/vdb failed (%ld injected) and fsync reported it", io_injected);
	kt_ok(other == 0, "under I/O failures, requests fail only with ENOMEM or EBUSY (%ld others)",
	      other);
	kt_ok(io_bad == 0, "cached contents of the %lu written pages intact (%ld bad)",
	      IO_LEN / PAGE_SIZE, io_bad);
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated");
	free1 = settled_free_kb();
	kt_ok(free1 >= free0 - free_slack_kb(), "MemFree came back: %ld kB before, %ld kB after", free0, free1);
	return kt_done();
}
