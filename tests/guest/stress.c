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
 * Meanwhile the allocator's slow path may make blocks too (direct=1,
 * direct_min_order=1): a faulter keeps a ring of MADV_HUGEPAGE regions of
 * every THP and mTHP size, filled and verified before they go; before a
 * quarter of its faults it first takes every free block of their size
 * (faults that may not compact, that size only) while MemFree stays above
 * a margin, so that those faults compact where the rest of the load has
 * fragmented memory; stress-ng's kernel allocations of order 1 and more
 * may enter the path too. How often it was entered is reported, not
 * required: on the debug kernel, fragmenting memory on purpose first
 * (guest/lib fragment()) took the whole run (tests/guest/direct.c, in
 * this plan too, requires it).
 * Pass: no page ever reads back wrong, pinned pages never move, kdefrag
 * made blocks and migrated pages, the faulter's pages read back right, and pages of the checker's shared anon
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

/* Settings the faulter's phase changes, restored at exit whatever happens. */
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define SYS "/sys/kernel/mm/defrag/"
static const size_t fault_kb[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
#define NSIZES (sizeof(fault_kb) / sizeof(fault_kb[0]))
static char saved_paths[NSIZES + 5][96];
static char saved[NSIZES + 5][64];
static int nsaved;

static void restore_settings(void)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i][0] && write_str(saved_paths[i], saved[i]))
			printf("# cannot restore %s to %s\n", saved_paths[i], saved[i]);
}

/* Save @path's value (once), then write @val; bails on failure. */
static void set(const char *path, const char *val)
{
	int i;

	for (i = 0; i < nsaved && strcmp(saved_paths[i], path); i++)
		;
	if (i == nsaved) {
		if (nsaved == (int)(sizeof(saved) / sizeof(saved[0])) ||
		    setting_get(path, saved[i], sizeof(saved[i])))
			kt_bail("cannot save %s", path);
		snprintf(saved_paths[i], sizeof(saved_paths[i]), "%s", path);
		nsaved++;
	}
	if (write_str(path, val))
		kt_bail("cannot write %s to %s", val, path);
}

static void size_path(char *buf, size_t len, size_t kb, const char *file)
{
	snprintf(buf, len, THP "hugepages-%zukB/%s", kb, file);
}

/* Faults of @kb that got a folio of that size, so far. */
static long fault_allocs(size_t kb)
{
	char path[128], v[32];

	size_path(path, sizeof(path), kb, "stats/anon_fault_alloc");
	return setting_get(path, v, sizeof(v)) ? -1 : atol(v);
}

/* Every THP and mTHP size's "enabled" set to @val, or only @kb's. */
static void sizes_enable(const char *val, size_t only_kb)
{
	char path[128];

	for (size_t i = 0; i < NSIZES; i++) {
		size_path(path, sizeof(path), fault_kb[i], "enabled");
		write_str(path, !only_kb || fault_kb[i] == only_kb ? val : "never");
	}
}

/* MemFree kept while taking blocks: stress-ng and the checker need room. */
#define TAKE_MARGIN_KB (160L << 10)

/*
 * Take every free block of @kb with faults that may not compact (every
 * other size off meanwhile, so that each fault is of @kb), until one
 * falls back, @max are held or MemFree nears TAKE_MARGIN_KB; the mapping
 * is *@raw, *@len bytes, or NULL. True if a fault fell back: no free
 * block of @kb was left.
 */
static bool take_free_blocks(size_t kb, size_t max, char **raw, size_t *len)
{
	size_t sz = kb << 10, n;
	bool used_up = false;
	char *p;

	*len = max * sz + sz;
	write_str(THP "defrag", "never");
	sizes_enable("madvise", kb);
	p = map_advised(max * sz, sz, raw);
	if (!p) {
		*raw = NULL;
	} else {
		/* MemFree looked at every 16 faults: the debug kernel is slow. */
		for (n = 0; n < max && (n % 16 || mem_free_kb() > TAKE_MARGIN_KB); n++) {
			long before = fault_allocs(kb);

			p[n * sz] = 1;
			if (fault_allocs(kb) == before) {
				used_up = true;
				break;
			}
		}
	}
	sizes_enable("madvise", 0);
	write_str(THP "defrag", "madvise");
	return used_up;
}

#define FAULT_RING 16
#define HOARD_MAX_KB (512UL << 10)	/* free blocks taken at once, at most */

struct faulted {
	long regions, bad, used_up;	/* used_up: takes that left no block */
};

/*
 * Until @deadline: replace a random slot of a ring of MADV_HUGEPAGE
 * regions (1..2 faults of a random THP/mTHP size; every slot's contents
 * verified before it is unmapped), a quarter of the time after taking the
 * free blocks of that size, held until the next time.
 */
static void faulter(double deadline, struct faulted *res)
{
	struct { char *raw, *p; size_t len, rawlen; uint64_t seed; } ring[FAULT_RING] = { 0 };
	char *hoard = NULL;
	size_t hoard_len = 0;
	uint64_t seed = 0xfa017;

	while (now() < deadline) {
		int slot = rnd() % FAULT_RING;
		size_t kb = fault_kb[rnd() % NSIZES], len = (kb << 10) * (1 + rnd() % 2);

		if (ring[slot].raw) {
			res->bad += check_pages(ring[slot].p, ring[slot].len / PAGE_SIZE,
						ring[slot].seed);
			munmap(ring[slot].raw, ring[slot].rawlen);
			ring[slot].raw = NULL;
		}
		if (rnd() % 4 == 0) {
			if (hoard)
				munmap(hoard, hoard_len);
			res->used_up += take_free_blocks(kb, HOARD_MAX_KB / kb, &hoard, &hoard_len);
		}
		ring[slot].p = map_advised(len, kb << 10, &ring[slot].raw);
		if (!ring[slot].p) {
			ring[slot].raw = NULL;
			continue;
		}
		ring[slot].len = len;
		ring[slot].rawlen = len + (kb << 10);
		ring[slot].seed = seed++;
		fill_pages(ring[slot].p, len / PAGE_SIZE, ring[slot].seed);
		res->regions++;
	}
	for (int i = 0; i < FAULT_RING; i++)
		if (ring[i].raw) {
			res->bad += check_pages(ring[i].p, ring[i].len / PAGE_SIZE, ring[i].seed);
			munmap(ring[i].raw, ring[i].rawlen);
		}
	if (hoard)
		munmap(hoard, hoard_len);
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
	long succ, mig, dir_att0 = vmstat("defrag_direct_attempt");
	long dir_succ0 = vmstat("defrag_direct_success");
	struct faulted fres = { 0 };
	int fpipe[2];
	pid_t faulter_pid;
	unsigned long max_pfn = 0;
	struct zone_info z[16];
	int nz = read_zoneinfo(z, 16);
	bool inject;
	double deadline = now() + seconds;
	struct checked res = { 0 };
	pid_t callers[3], sng;

	kt_plan(7);
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
	/* The slow path for every order from 1; faults of every THP size. */
	atexit(restore_settings);
	set(THP "enabled", "madvise");
	set(THP "defrag", "madvise");
	for (size_t i = 0; i < NSIZES; i++) {
		char path[128];

		size_path(path, sizeof(path), fault_kb[i], "enabled");
		set(path, "madvise");
	}
	set(SYS "enabled", "1");
	set(SYS "direct_min_order", "1");
	set(SYS "direct", "1");
	sng = start_stress_ng(seconds);
	if (sng < 0)
		kt_bail("no stress-ng at %s", STRESS_NG);
	if (pipe(fpipe))
		kt_bail("pipe");
	faulter_pid = fork();
	if (faulter_pid == 0) {
		close(fpipe[0]);
		rng = 0xfa017;
		faulter(deadline, &fres);
		if (write(fpipe[1], &fres, sizeof(fres)) != sizeof(fres))
			_exit(1);
		_exit(0);
	}
	close(fpipe[1]);
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
	close(pipefd[1]);
	rng = 0xc4ec;
	if (checker(deadline, &res)) {
		kill(faulter_pid, SIGKILL);
		waitpid(faulter_pid, &st, 0);
		kt_bail("checker could not set up its memory: %s", strerror(errno));
	}
	for (int c = 0; c < 3; c++) {
		long n = 0;

		waitpid(callers[c], &st, 0);
		if (read(pipefd[0], &n, sizeof(n)) == sizeof(n))
			calls += n;
	}
	if (waitpid(faulter_pid, &st, 0) != faulter_pid || !WIFEXITED(st) || WEXITSTATUS(st) ||
	    read(fpipe[0], &fres, sizeof(fres)) != sizeof(fres)) {
		kt_diag("the faulter died (status %#x)", st);
		fres.bad = -1;
	}
	restore_settings();
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
	kt_diag("faulter: %ld regions, %ld takes used up a size's free blocks; the slow path: %ld direct attempts, %ld blocks handed over",
		fres.regions, fres.used_up, vmstat("defrag_direct_attempt") - dir_att0,
		vmstat("defrag_direct_success") - dir_succ0);
	kt_ok(fres.bad == 0 && fres.regions > 0,
	      "the faulter's THP and mTHP regions read back intact (%ld bad pages, %ld regions)",
	      fres.bad, fres.regions);
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
