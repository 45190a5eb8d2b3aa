// SPDX-License-Identifier: GPL-2.0
/*
 * Every kind of movable memory keeps its contents when kdefrag moves it:
 * private anon, shared anon, anon shared copy-on-write with a child,
 * tmpfs, ext4 page cache (clean and dirty; read back through mmap and
 * through read() after dropping caches), mlocked anon, swap cache, mTHP
 * folios and a PMD-mapped THP. Each kind is moved by evacuating the
 * aligned ranges that hold its pages (16 pages; 512 for the THP, which
 * must lie wholly inside the range), which checks that its pages really
 * got new pfns, then
 * a round of coalesce requests moves whatever else it picks; afterwards
 * every page is compared with the pattern it was filled with.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPAGES 512

struct region {
	const char *name;
	char *p;
	size_t npages;
	uint64_t seed;
	size_t moved;		/* pages seen at a new pfn after evacuation */
	size_t span;		/* pages per evacuated range */
};

static char *map(int flags, int fd)
{
	char *p = mmap(NULL, NPAGES * PAGE_SIZE, PROT_READ | PROT_WRITE, flags, fd, 0);

	if (p == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	return p;
}

static int file_fd(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, NPAGES * PAGE_SIZE))
		kt_bail("%s: %s", path, strerror(errno));
	return fd;
}

/*
 * Evacuate the aligned @r->span-page ranges that hold @r's pages, each
 * once; count the pages that got a new pfn.
 */
static void evacuate_region(struct region *r)
{
	uint64_t *pfn = calloc(r->npages, sizeof(*pfn)), last = ~0ULL;

	if (!pfn)
		kt_bail("calloc");
	for (size_t i = 0; i < r->npages; i++)
		pfn[i] = virt_to_pfn(r->p + i * PAGE_SIZE);
	for (size_t i = 0; i < r->npages; i++) {
		uint64_t start = pfn[i] & ~(uint64_t)(r->span - 1);
		char req[64];

		if (!pfn[i] || start == last)
			continue;
		last = start;
		snprintf(req, sizeof(req), "%llu %zu", (unsigned long long)start, r->span);
		write_str("/sys/kernel/mm/defrag/evacuate", req);
	}
	for (size_t i = 0; i < r->npages; i++)
		r->moved += pfn[i] && virt_to_pfn(r->p + i * PAGE_SIZE) != pfn[i];
	free(pfn);
}

/* A 2 MB aligned piece of a fresh anon mapping, advised for THP. */
static char *map_thp(void)
{
	char *raw, *p = map_advised(NPAGES * PAGE_SIZE, NPAGES * PAGE_SIZE, &raw);

	if (!p)
		kt_bail("mapping a THP region: %s", strerror(errno));
	return p;
}

/* All of @r's pages are one PMD-sized folio: contiguous, aligned, THP. */
static bool is_pmd_thp(struct region *r)
{
	uint64_t pfn0 = virt_to_pfn(r->p);

	if (!pfn0 || pfn0 % NPAGES)
		return false;
	for (size_t i = 0; i < r->npages; i++) {
		uint64_t pfn = virt_to_pfn(r->p + i * PAGE_SIZE);

		if (pfn != pfn0 + i || !(kpageflags(pfn) & (1ULL << KPF_THP)))
			return false;
	}
	return true;
}

static size_t count_flag(struct region *r, int bit)
{
	size_t n = 0;

	for (size_t i = 0; i < r->npages; i++) {
		uint64_t pfn = virt_to_pfn(r->p + i * PAGE_SIZE);

		if (pfn && (kpageflags(pfn) & (1ULL << bit)))
			n++;
	}
	return n;
}

#define THP "/sys/kernel/mm/transparent_hugepage/"

/* The selected word of a THP setting; "never" if it cannot be read. */
static void thp_get(const char *path, char *val, size_t len)
{
	if (setting_get(path, val, len))
		snprintf(val, len, "never");
}

static int swap_on(void)
{
	if (system("dd if=/dev/zero of=/mnt/disk/swap bs=1M count=32 2>/dev/null && "
		   "chmod 600 /mnt/disk/swap && mkswap /mnt/disk/swap >/dev/null && "
		   "swapon /mnt/disk/swap"))
		return -1;
	return 0;
}

int main(void)
{
	struct region r[10];
	int nr = 0, pipefd[2], status, fd_tmpfs, fd_ext4, fd_dirty;
	size_t swapcache, thp;
	char thp_pmd[32], thp_64k[32];
	pid_t child;
	char *cow;

	kt_plan(26);
	if (swap_on())
		kt_bail("cannot enable swap on /mnt/disk");

	r[nr++] = (struct region){ "private anon", map(MAP_PRIVATE | MAP_ANONYMOUS, -1), NPAGES, 1, 0, 16 };
	r[nr++] = (struct region){ "shared anon", map(MAP_SHARED | MAP_ANONYMOUS, -1), NPAGES, 2, 0, 16 };
	fd_tmpfs = file_fd("/mnt/tmpfs/data");
	r[nr++] = (struct region){ "tmpfs", map(MAP_SHARED, fd_tmpfs), NPAGES, 3, 0, 16 };
	fd_ext4 = file_fd("/mnt/disk/clean");
	r[nr++] = (struct region){ "ext4 clean", map(MAP_SHARED, fd_ext4), NPAGES, 4, 0, 16 };
	fd_dirty = file_fd("/mnt/disk/dirty");
	r[nr++] = (struct region){ "ext4 dirty", map(MAP_SHARED, fd_dirty), NPAGES, 5, 0, 16 };
	r[nr++] = (struct region){ "mlocked anon", map(MAP_PRIVATE | MAP_ANONYMOUS, -1), NPAGES, 6, 0, 16 };
	r[nr++] = (struct region){ "swap cache", map(MAP_PRIVATE | MAP_ANONYMOUS, -1), NPAGES, 7, 0, 16 };
	r[nr++] = (struct region){ "mTHP 64kB", map(MAP_PRIVATE | MAP_ANONYMOUS, -1), NPAGES, 8, 0, 16 };
	cow = map(MAP_PRIVATE | MAP_ANONYMOUS, -1);
	r[nr++] = (struct region){ "fork-COW anon", cow, NPAGES, 9, 0, 16 };
	r[nr++] = (struct region){ "PMD THP", map_thp(), NPAGES, 10, 0, NPAGES };

	for (int i = 0; i < nr; i++) {
		if (i != 7 && i != 9)
			madvise(r[i].p, NPAGES * PAGE_SIZE, MADV_NOHUGEPAGE);
	}
	/* Restored at the end: later tests and plans expect the boot settings. */
	thp_get(THP "enabled", thp_pmd, sizeof(thp_pmd));
	thp_get(THP "hugepages-64kB/enabled", thp_64k, sizeof(thp_64k));
	write_str(THP "hugepages-64kB/enabled", "always");
	write_str(THP "enabled", "madvise");
	/* Make the order-9 block the THP fault needs (our own tool at work). */
	write_str("/sys/kernel/mm/defrag/coalesce", "9 1");
	for (int i = 0; i < nr; i++)
		fill_pages(r[i].p, r[i].npages, r[i].seed);
	/* Clean page cache: written back, still cached. */
	fsync(fd_ext4);
	if (mlock(r[5].p, NPAGES * PAGE_SIZE))
		kt_bail("mlock: %s", strerror(errno));
	/* Swap out, then fault back in: the pages stay in the swap cache. */
	madvise(r[6].p, NPAGES * PAGE_SIZE, MADV_PAGEOUT);
	kt_ok(check_pages(r[6].p, NPAGES, r[6].seed) == 0, "swapped-out pages read back intact");
	swapcache = count_flag(&r[6], KPF_SWAPCACHE);
	thp = count_flag(&r[7], KPF_THP);
	kt_diag("%zu swap-cache pages, %zu pages in THP folios", swapcache, thp);
	kt_ok(swapcache > 0, "swap-cache pages exist (%zu)", swapcache);
	kt_ok(thp > 0, "mTHP folios exist (%zu pages)", thp);
	kt_ok(is_pmd_thp(&r[9]), "the THP region is one PMD-sized folio");

	/* The child shares the COW pages and checks them after the move. */
	if (pipe(pipefd))
		kt_bail("pipe");
	child = fork();
	if (child == 0) {
		char c;

		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(2);
		_exit(check_pages(cow, NPAGES, 9) ? 1 : 0);
	}
	close(pipefd[0]);

	for (int i = 0; i < nr; i++) {
		evacuate_region(&r[i]);
		kt_ok(r[i].moved > 0, "%s: evacuate moved pages to new pfns (%zu)", r[i].name,
		      r[i].moved);
	}
	write_str("/sys/kernel/mm/defrag/coalesce", "3 64");
	write_str("/sys/kernel/mm/defrag/coalesce", "5 16");
	write_str("/sys/kernel/mm/defrag/coalesce", "9 2");

	for (int i = 0; i < nr; i++) {
		size_t bad = check_pages(r[i].p, r[i].npages, r[i].seed);

		kt_ok(bad == 0, "%s: contents intact (%zu bad pages)", r[i].name, bad);
	}
	if (write(pipefd[1], "x", 1) != 1)
		kt_bail("pipe write");
	waitpid(child, &status, 0);
	kt_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork-COW: the child sees intact contents too");

	/* Page cache after the move reaches the disk correctly. */
	fsync(fd_dirty);
	munmap(r[3].p, NPAGES * PAGE_SIZE);
	munmap(r[4].p, NPAGES * PAGE_SIZE);
	write_str("/proc/sys/vm/drop_caches", "3");
	{
		char *buf = malloc(NPAGES * PAGE_SIZE);
		int ok = 1;
		int fds[2] = { fd_ext4, fd_dirty };
		uint64_t seeds[2] = { 4, 5 };

		for (int k = 0; k < 2; k++) {
			if (pread(fds[k], buf, NPAGES * PAGE_SIZE, 0) != (ssize_t)(NPAGES * PAGE_SIZE) ||
			    check_pages(buf, NPAGES, seeds[k]))
				ok = 0;
		}
		kt_ok(ok, "ext4 files read back intact from disk after dropping caches");
		free(buf);
	}
	system("swapoff /mnt/disk/swap");
	write_str(THP "enabled", thp_pmd);
	write_str(THP "hugepages-64kB/enabled", thp_64k);
	return kt_done();
}
