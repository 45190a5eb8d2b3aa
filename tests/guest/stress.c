// SPDX-License-Identifier: GPL-2.0
/*
 * Stress: concurrent coalesce/evacuate/per-node callers at random orders
 * and ranges, while a checker keeps rewriting and verifying patterned
 * memory of every kind kdefrag may move or must not (private and shared
 * anon, fork-COW, tmpfs, mlocked, an ext4 file kept under writeback,
 * long-term pinned), and stress-ng (from the guest's disk) runs vm, mmap,
 * fork, shm, mremap, madvise, hugepage, page-cache and file-I/O stressors
 * with its own verification.
 *   stress [SECONDS]   (default 60)
 * Pass: no page ever reads back wrong, pinned pages never move, kdefrag
 * made blocks and migrated pages, and pages of the checker's shared anon
 * and tmpfs regions (whose pfns nothing but migration changes: no swap,
 * no COW) moved while being verified (the checker also evacuates ranges
 * around them itself now and then), stress-ng reports no failure, no
 * pageblock is left MIGRATE_ISOLATE, MemFree comes back.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REGION_PAGES 2048
enum { PRIVATE, SHARED, TMPFS, MLOCKED, COW, EXT4, PINNED, NREGIONS };
static const char *const region_names[NREGIONS] = {
	"private", "shared", "tmpfs", "mlocked", "cow", "ext4", "pinned",
};
#define STRESS_NG "/mnt/disk/stress-ng/run"

static uint64_t seed_of(int k, uint32_t gen, int i)
{
	return ((uint64_t)k << 48) + ((uint64_t)gen << 24) + i;
}

static char *map_file(const char *path, int *fd)
{
	char *p;

	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (*fd < 0 || ftruncate(*fd, REGION_PAGES * PAGE_SIZE))
		return MAP_FAILED;
	p = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p;
}

struct checked {
	long verified, bad, moved_pins, writebacks, moved, own_evacuated;
};

/* Regions whose pages change pfn only when migrated. */
static bool pfn_stable(int k)
{
	return k == SHARED || k == TMPFS;
}

/* Evacuates the order-4 range around the page at @p; true if it did. */
static bool evacuate_own(const char *p)
{
	uint64_t pfn = virt_to_pfn(p);
	char req[64];

	if (!pfn)
		return false;
	snprintf(req, sizeof(req), "%llu 16", (unsigned long long)(pfn & ~15ULL));
	return write_str("/sys/kernel/mm/defrag/evacuate", req) == 0;
}

/* Rewrites and verifies random pages until @deadline. */
static int checker(double deadline, struct checked *res)
{
	static uint32_t gen[NREGIONS][REGION_PAGES];
	static uint64_t pin_pfn[REGION_PAGES], pfn0[NREGIONS][REGION_PAGES];
	char *r[NREGIONS];
	int tmpfs_fd, ext4_fd, pin_fd;
	long iter = 0;

	for (int k = 0; k < NREGIONS; k++) {
		int shared = k == SHARED ? MAP_SHARED : MAP_PRIVATE;

		if (k == TMPFS)
			r[k] = map_file("/mnt/tmpfs/stress", &tmpfs_fd);
		else if (k == EXT4)
			r[k] = map_file("/mnt/disk/stress", &ext4_fd);
		else
			r[k] = mmap(NULL, REGION_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
				    shared | MAP_ANONYMOUS, -1, 0);
		if (r[k] == MAP_FAILED)
			return -1;
		madvise(r[k], REGION_PAGES * PAGE_SIZE, MADV_NOHUGEPAGE);
		for (int i = 0; i < REGION_PAGES; i++)
			fill_pages(r[k] + (size_t)i * PAGE_SIZE, 1, seed_of(k, 0, i));
	}
	mlock(r[MLOCKED], REGION_PAGES * PAGE_SIZE);
	pin_fd = pin_longterm(r[PINNED], REGION_PAGES * PAGE_SIZE);
	if (pin_fd < 0)
		return -1;
	for (int i = 0; i < REGION_PAGES; i++)
		pin_pfn[i] = virt_to_pfn(r[PINNED] + (size_t)i * PAGE_SIZE);
	for (int k = 0; k < NREGIONS; k++)
		for (int i = 0; pfn_stable(k) && i < REGION_PAGES; i++)
			pfn0[k][i] = virt_to_pfn(r[k] + (size_t)i * PAGE_SIZE);

	while (now() < deadline) {
		int k = rnd() % NREGIONS, i = rnd() % REGION_PAGES;
		char *pg = r[k] + (size_t)i * PAGE_SIZE;

		if (check_pages(pg, 1, seed_of(k, gen[k][i], i))) {
			printf("# %s page %d gen %u: wrong contents\n", region_names[k], i, gen[k][i]);
			res->bad++;
		}
		res->verified++;
		if (rnd() % 4 == 0) {
			gen[k][i]++;
			fill_pages(pg, 1, seed_of(k, gen[k][i], i));
		}
		/* Keep the ext4 file's pages going to disk, and now and then wait. */
		if (++iter % 512 == 0) {
			sync_file_range(ext4_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			res->writebacks++;
		}
		if (iter % 65536 == 0)
			fsync(ext4_fd);
		/*
		 * Now and then the checker asks for the range around one of
		 * its pfn-stable pages itself, so that pages it verifies move
		 * whatever the random requests hit (a 1 GiB guest holds 128
		 * times these regions).
		 */
		if (iter % 1024 == 0)
			res->own_evacuated += evacuate_own(r[rnd() % 2 ? SHARED : TMPFS] +
							   (size_t)(rnd() % REGION_PAGES) * PAGE_SIZE);
		/* Now and then a child shares the COW region and checks it. */
		if (rnd() % 20000 == 0) {
			pid_t pid = fork();
			int st;

			if (pid == 0) {
				long b = 0;

				for (int j = 0; j < REGION_PAGES; j++)
					b += check_pages(r[COW] + (size_t)j * PAGE_SIZE, 1,
							 seed_of(COW, gen[COW][j], j));
				_exit(b ? 1 : 0);
			}
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				res->bad++;
		}
	}
	for (int k = 0; k < NREGIONS; k++)
		for (int i = 0; i < REGION_PAGES; i++) {
			res->bad += check_pages(r[k] + (size_t)i * PAGE_SIZE, 1,
						seed_of(k, gen[k][i], i)) != 0;
			res->verified++;
		}
	for (int i = 0; i < REGION_PAGES; i++)
		res->moved_pins += virt_to_pfn(r[PINNED] + (size_t)i * PAGE_SIZE) != pin_pfn[i];
	for (int k = 0; k < NREGIONS; k++)
		for (int i = 0; pfn_stable(k) && i < REGION_PAGES; i++)
			res->moved += pfn0[k][i] && virt_to_pfn(r[k] + (size_t)i * PAGE_SIZE) != pfn0[k][i];
	unpin_longterm(pin_fd);
	for (int k = 0; k < NREGIONS; k++)
		munmap(r[k], REGION_PAGES * PAGE_SIZE);
	close(tmpfs_fd);
	close(ext4_fd);
	unlink("/mnt/tmpfs/stress");
	unlink("/mnt/disk/stress");
	return 0;
}

/* stress-ng for @seconds in the background, output in /tmp/stress-ng.log. */
static pid_t start_stress_ng(int seconds)
{
	char timeout[32];
	pid_t pid;

	if (access(STRESS_NG, X_OK))
		return -1;
	snprintf(timeout, sizeof(timeout), "%ds", seconds);
	mkdir("/mnt/disk/stress-ng.tmp", 0700);
	pid = fork();
	if (pid == 0) {
		int fd = open("/tmp/stress-ng.log", O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(STRESS_NG, STRESS_NG, "--timeout", timeout, "--verify",
		      "--temp-path", "/mnt/disk/stress-ng.tmp", "--metrics-brief",
		      "--vm", "1", "--vm-bytes", "64M", "--mmap", "1", "--mmap-bytes", "32M",
		      "--fork", "1", "--shm", "1", "--shm-bytes", "16M",
		      "--mremap", "1", "--mremap-bytes", "16M", "--madvise", "1",
		      "--mmaphuge", "1", "--hdd", "1", "--hdd-bytes", "32M",
		      "--readahead", "1", "--readahead-bytes", "16M", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * Random defrag requests until @deadline; returns the number of requests.
 * With @inject, every request runs with fail_page_alloc armed.
 */
static long caller(double deadline, unsigned long max_pfn, bool inject)
{
	char req[64];
	long n = 0;

	while (now() < deadline) {
		if (inject)
			write_str("/proc/self/make-it-fail", "1");
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
		if (inject)
			write_str("/proc/self/make-it-fail", "0");
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 60, pipefd[2], st, sng_status = -1;
	long att0 = vmstat("defrag_attempt"), succ0 = vmstat("defrag_success");
	long mig0 = vmstat("defrag_migrated"), free0, free1, calls = 0, injected;
	long succ, mig;
	unsigned long max_pfn = 0;
	struct zone_info z[16];
	int nz = read_zoneinfo(z, 16);
	bool inject;
	double deadline = now() + seconds;
	struct checked res = { 0 };
	pid_t callers[3], sng;

	kt_plan(6);
	/* evacuate's ranges anywhere in the guest's memory, whatever its size. */
	for (int i = 0; i < nz; i++)
		if (z[i].present && z[i].start_pfn + z[i].spanned > max_pfn)
			max_pfn = z[i].start_pfn + z[i].spanned;
	if (!max_pfn)
		kt_bail("no populated zone in /proc/zoneinfo");
	free0 = settled_free_kb();
	if (pipe(pipefd))
		kt_bail("pipe");
	/*
	 * One caller's requests (make-it-fail is set around each) get their
	 * migration-target allocations failed at random; its page faults and
	 * everyone else's allocations are left alone.
	 */
	inject = fault_arm(FAIL_PAGE_ALLOC, 10, true) == 0;
	sng = start_stress_ng(seconds);
	if (sng < 0)
		kt_bail("no stress-ng at %s", STRESS_NG);
	for (int c = 0; c < 3; c++) {
		callers[c] = fork();
		if (callers[c] == 0) {
			long n;

			rng = 0x57e55 + c;
			n = caller(deadline, max_pfn, inject && c == 0);
			if (write(pipefd[1], &n, sizeof(n)) != sizeof(n))
				_exit(1);
			_exit(0);
		}
	}
	rng = 0xc4ec;
	if (checker(deadline, &res))
		kt_bail("checker could not set up its memory: %s", strerror(errno));
	for (int c = 0; c < 3; c++) {
		long n = 0;

		waitpid(callers[c], &st, 0);
		if (read(pipefd[0], &n, sizeof(n)) == sizeof(n))
			calls += n;
	}
	if (waitpid(sng, &st, 0) == sng && WIFEXITED(st))
		sng_status = WEXITSTATUS(st);
	injected = inject ? fault_disarm(FAIL_PAGE_ALLOC) : 0;
	kt_diag("%ld defrag requests, %ld attempts (%ld succeeded), %ld page checks in %d s",
		calls, vmstat("defrag_attempt") - att0, vmstat("defrag_success") - succ0,
		res.verified, seconds);
	kt_diag("%ld faults injected into one caller's allocations (fail_page_alloc)%s",
		injected, inject ? "" : ": no CONFIG_FAIL_PAGE_ALLOC");
	kt_ok(res.bad == 0, "no page read back wrong (%ld mismatches in %ld checks, %ld ext4 writebacks started)",
	      res.bad, res.verified, res.writebacks);
	kt_ok(res.moved_pins == 0, "long-term pinned pages never moved (%ld did)", res.moved_pins);
	succ = vmstat("defrag_success") - succ0;
	mig = vmstat("defrag_migrated") - mig0;
	/* The random callers' requests too, not only the checker's own. */
	kt_ok(succ > res.own_evacuated && mig > 0 && res.moved > 0,
	      "pages moved under the checker: %ld ranges emptied (%ld by the checker itself), %ld pages migrated; %ld shared-anon and tmpfs pages changed pfn",
	      succ, res.own_evacuated, mig, res.moved);
	if (sng_status)
		system("tail -n 20 /tmp/stress-ng.log | sed 's/^/# /'");
	kt_ok(sng_status == 0, "stress-ng with --verify passed (exit status %d)", sng_status);
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated (%ld)", isolated_pageblocks());
	free1 = settled_free_kb();
	kt_ok(free1 >= free0 - free_slack_kb(), "MemFree came back: %ld kB before, %ld kB after", free0, free1);
	return kt_done();
}
