// SPDX-License-Identifier: GPL-2.0
/*
 * Short stress: concurrent coalesce/evacuate/per-node callers at random
 * orders and ranges, while a checker keeps rewriting and verifying patterned
 * memory of several kinds (private, shared, fork-COW, tmpfs, mlocked).
 *   stress [SECONDS]   (default 60)
 * Pass: no page ever reads back wrong, every attempt ends as a success or
 * a failure, no pageblock is left MIGRATE_ISOLATE, MemFree comes back.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGION_PAGES 2048
#define NREGIONS 5


static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Rewrites and verifies random pages until @deadline; returns mismatches. */
static long checker(double deadline, long *verified)
{
	char *r[NREGIONS];
	uint32_t gen[NREGIONS][REGION_PAGES];
	int fd = open("/mnt/tmpfs/stress", O_RDWR | O_CREAT | O_TRUNC, 0600);
	long bad = 0;

	if (fd < 0 || ftruncate(fd, REGION_PAGES * PAGE_SIZE))
		return -1;
	r[0] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r[1] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r[2] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	r[3] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r[4] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int k = 0; k < NREGIONS; k++) {
		if (r[k] == MAP_FAILED)
			return -1;
		madvise(r[k], REGION_PAGES * PAGE_SIZE, MADV_NOHUGEPAGE);
		for (int i = 0; i < REGION_PAGES; i++) {
			gen[k][i] = 0;
			fill_pages(r[k] + (size_t)i * PAGE_SIZE, 1, ((uint64_t)k << 48) + i);
		}
	}
	mlock(r[3], REGION_PAGES * PAGE_SIZE);
	while (now() < deadline) {
		int k = rnd() % NREGIONS, i = rnd() % REGION_PAGES;
		char *pg = r[k] + (size_t)i * PAGE_SIZE;
		uint64_t seed = ((uint64_t)k << 48) + ((uint64_t)gen[k][i] << 24) + i;

		if (check_pages(pg, 1, seed)) {
			printf("# region %d page %d gen %u: wrong contents\n", k, i, gen[k][i]);
			bad++;
		}
		(*verified)++;
		if (rnd() % 4 == 0) {
			gen[k][i]++;
			fill_pages(pg, 1, ((uint64_t)k << 48) + ((uint64_t)gen[k][i] << 24) + i);
		}
		/* Now and then a child shares region 4 copy-on-write and checks it. */
		if (rnd() % 20000 == 0) {
			pid_t pid = fork();
			int st;

			if (pid == 0) {
				long b = 0;

				for (int j = 0; j < REGION_PAGES; j++)
					b += check_pages(r[4] + (size_t)j * PAGE_SIZE, 1,
							 (4ULL << 48) + ((uint64_t)gen[4][j] << 24) + j);
				_exit(b ? 1 : 0);
			}
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				bad++;
		}
	}
	for (int k = 0; k < NREGIONS; k++)
		for (int i = 0; i < REGION_PAGES; i++) {
			bad += check_pages(r[k] + (size_t)i * PAGE_SIZE, 1,
					   ((uint64_t)k << 48) + ((uint64_t)gen[k][i] << 24) + i) != 0;
			(*verified)++;
		}
	for (int k = 0; k < NREGIONS; k++)
		munmap(r[k], REGION_PAGES * PAGE_SIZE);
	close(fd);
	unlink("/mnt/tmpfs/stress");
	return bad;
}

/* Random defrag requests until @deadline; returns the number of requests. */
static long caller(double deadline, unsigned long max_pfn)
{
	char req[64];
	long n = 0;

	while (now() < deadline) {
		switch (rnd() % 3) {
		case 0:
			snprintf(req, sizeof(req), "%d %d", 1 + (int)(rnd() % 10), 1 + (int)(rnd() % 4));
			write_str("/sys/kernel/mm/defrag/coalesce", req);
			break;
		case 1:
			snprintf(req, sizeof(req), "%lu %lu", (unsigned long)(rnd() % max_pfn) & ~15UL,
				 16UL << (rnd() % 6));
			write_str("/sys/kernel/mm/defrag/evacuate", req);
			break;
		default:
			snprintf(req, sizeof(req), "%d", 1 + (int)(rnd() % 10));
			write_str(rnd() % 2 ? "/sys/devices/system/node/node0/defrag_coalesce" :
					      "/sys/devices/system/node/node1/defrag_coalesce", req);
			break;
		}
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 60, pipefd[2], st;
	long att0 = vmstat("defrag_attempt"), succ0 = vmstat("defrag_success");
	long fail0 = vmstat("defrag_fail"), free0, free1, verified = 0, bad, calls = 0;
	double deadline = now() + seconds;
	pid_t callers[3];

	kt_plan(4);
	free0 = settled_free_kb();
	if (pipe(pipefd))
		kt_bail("pipe");
	for (int c = 0; c < 3; c++) {
		callers[c] = fork();
		if (callers[c] == 0) {
			long n;

			rng = 0x57e55 + c;
			n = caller(deadline, 262144);
			if (write(pipefd[1], &n, sizeof(n)) != sizeof(n))
				_exit(1);
			_exit(0);
		}
	}
	rng = 0xc4ec;
	bad = checker(deadline, &verified);
	for (int c = 0; c < 3; c++) {
		long n = 0;

		waitpid(callers[c], &st, 0);
		if (read(pipefd[0], &n, sizeof(n)) == sizeof(n))
			calls += n;
	}
	kt_diag("%ld defrag requests, %ld attempts (%ld succeeded), %ld page checks in %d s",
		calls, vmstat("defrag_attempt") - att0, vmstat("defrag_success") - succ0,
		verified, seconds);
	kt_ok(bad == 0, "no page read back wrong (%ld mismatches in %ld checks)", bad, verified);
	kt_ok(vmstat("defrag_attempt") - att0 ==
	      (vmstat("defrag_success") - succ0) + (vmstat("defrag_fail") - fail0) &&
	      vmstat("defrag_attempt") > att0,
	      "every attempt ended as a success or a failure");
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated (%ld)", isolated_pageblocks());
	free1 = settled_free_kb();
	kt_ok(free1 >= free0 - 16 * 1024, "MemFree came back: %ld kB before, %ld kB after", free0, free1);
	return kt_done();
}
