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
 * Meanwhile the allocator's slow path makes blocks too (direct=1,
 * direct_min_order=1, every THP and mTHP size madvised): a faulter spreads
 * the free memory into single pages between pages it keeps, then keeps a
 * ring of MADV_HUGEPAGE regions of every size, filled and verified before
 * they go; before each fault it grows the hugetlb pool past the free 2 MB
 * blocks (those allocations retry compaction, getting through its
 * deferral) and gives it back, and before a quarter of them it takes
 * every free block of the fault's size, so that the fault must compact;
 * stress-ng's kernel allocations of order 1 and more may enter the path
 * too. It goes on past the run's end (3 minutes at most) until a block
 * was handed over. And kcompactd holds an aggressive background target
 * (per zone, order-3 blocks worth an eighth of the guest's memory)
 * meanwhile.
 * Pass: no page ever reads back wrong, pinned pages never move, kdefrag
 * made blocks and migrated pages, the slow path was entered and handed
 * blocks over, kcompactd worked on its target and made blocks, the
 * random callers' own requests made blocks, the faulter's pages read
 * back right, pages of the
 * checker's shared anon and tmpfs regions (whose pfns nothing but
 * migration changes: no swap, no COW) moved while being verified (the
 * checker also evacuates ranges around them itself now and then),
 * stress-ng reports no failure, no pageblock is left MIGRATE_ISOLATE once
 * requests in flight (a kernel thread's, with direct=1) ended, MemFree
 * comes back.
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

/* Closed by the checker once its memory is set up (the faulter waits). */
static int ready_fd = -1;

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

	/* Set up: the faulter may start taking memory now. */
	if (ready_fd >= 0) {
		close(ready_fd);
		ready_fd = -1;
	}
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

#define THP "/sys/kernel/mm/transparent_hugepage/"
#define SYS "/sys/kernel/mm/defrag/"
static const size_t fault_kb[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
#define NSIZES (sizeof(fault_kb) / sizeof(fault_kb[0]))

static void size_path(char *buf, size_t len, size_t kb, const char *file)
{
	snprintf(buf, len, THP "hugepages-%zukB/%s", kb, file);
}

/* Faults of @kb that fell back to smaller pages, so far; -1 if unknown. */
static long fault_fallbacks(size_t kb)
{
	char path[128], v[32];

	size_path(path, sizeof(path), kb, "stats/anon_fault_fallback");
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

/* MemAvailable the spread leaves: stress-ng and the checker need room. */
#define SPREAD_LEAVE_KB (256L << 10)
#define SPREAD_MAX (768UL << 20)

/* Memory the faulter holds, filled from @seed page by page. */
struct held {
	char *raw, *p;
	size_t rawlen, npages, step;	/* pages 0, step, 2 * step, ... filled */
	uint64_t seed;
};

static long held_check(const struct held *h)
{
	long bad = 0;

	for (size_t i = 0; h->raw && i < h->npages; i += h->step)
		bad += check_pages(h->p + i * PAGE_SIZE, 1, h->seed + i);
	return bad;
}

static void held_release(struct held *h, long *bad)
{
	if (!h->raw)
		return;
	*bad += held_check(h);
	munmap(h->raw, h->rawlen);
	h->raw = NULL;
}

/*
 * Spread the free memory into single pages: order-0 pages (no THP) are
 * faulted until MemAvailable nears SPREAD_LEAVE_KB, then every other one
 * is released.
 * The pages kept are movable (direct requests coalesce around them, so
 * they are verified at the end); the free pages between them are mostly
 * single (neighbours in the mapping mostly, not always, are neighbours
 * in memory).
 */
static void spread(struct held *h, uint64_t seed)
{
	size_t chunk = 4UL << 20, len = 0;

	h->raw = h->p = mmap(NULL, SPREAD_MAX, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (h->raw == MAP_FAILED) {
		h->raw = NULL;
		return;
	}
	h->rawlen = SPREAD_MAX;
	h->seed = seed;
	h->step = 2;
	madvise(h->p, SPREAD_MAX, MADV_NOHUGEPAGE);
	while (len + chunk <= SPREAD_MAX && meminfo_kb("MemAvailable") > SPREAD_LEAVE_KB) {
		fill_pages(h->p + len, chunk / PAGE_SIZE, seed + len / PAGE_SIZE);
		len += chunk;
	}
	h->npages = len / PAGE_SIZE;
	for (size_t i = 1; i < h->npages; i += 2)
		madvise(h->p + i * PAGE_SIZE, PAGE_SIZE, MADV_DONTNEED);
}

#define TAKE_BATCH_KB 1024
#define TAKE_MAX_KB (128UL << 10)

/*
 * Take every free block of @kb with faults that may not compact (@kb's
 * size alone enabled meanwhile), 1 MB at a time, until a batch has a
 * fallback or TAKE_MAX_KB are held. These faults do not reclaim (their
 * order-0 fallbacks may). A PMD fault takes from its own node only. True
 * if a fault fell back: no free block of @kb was left there.
 */
static bool take_free_blocks(size_t kb, struct held *t, uint64_t seed)
{
	size_t sz = kb << 10, max = TAKE_MAX_KB / kb, n = 0;
	size_t batch = kb < TAKE_BATCH_KB ? TAKE_BATCH_KB / kb : 1;
	bool used_up = false;

	write_str(THP "defrag", "never");
	sizes_enable("madvise", kb);
	t->p = map_advised(max * sz, sz, &t->raw);
	if (!t->p) {
		t->raw = NULL;
	} else {
		t->rawlen = max * sz + sz;
		t->seed = seed;
		t->step = 1;
		while (!used_up && n < max) {
			long fb = fault_fallbacks(kb);

			for (size_t end = n + batch; n < end && n < max; n++)
				fill_pages(t->p + n * sz, sz / PAGE_SIZE, seed + n * (sz / PAGE_SIZE));
			used_up = fault_fallbacks(kb) != fb;
		}
		t->npages = n * (sz / PAGE_SIZE);
	}
	sizes_enable("madvise", 0);
	write_str(THP "defrag", "madvise");
	return used_up;
}

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"
#define HPAGE_ORDER 9
#define POOL_EXTRA 8

/*
 * Grow the hugetlb pool POOL_EXTRA pages past the free blocks of 2 MB
 * there are, then give it back. The pages beyond them must be made, and
 * each of those allocations retries compaction several times
 * (__GFP_RETRY_MAYFAIL, until a node fails once): deferral skips count
 * per attempt, so these get through where the concurrent load made
 * compaction defer, as single faults often do not.
 */
static void pool_grow(void)
{
	char v[32];

	snprintf(v, sizeof(v), "%ld", buddy_pages(-1, HPAGE_ORDER) / (1L << HPAGE_ORDER) + POOL_EXTRA);
	write_str(NR_HUGEPAGES, v);
	write_str(NR_HUGEPAGES, "0");
}

#define FAULT_RING 16
#define FAULTER_GRACE 180	/* seconds */

struct faulted {
	long regions, bad, used_up, takes, pools;	/* used_up: takes that left no block */
};

/*
 * Until @deadline: first spread free memory into single pages; then
 * replace a random slot of a ring of MADV_HUGEPAGE regions (1..2 faults
 * of a random THP/mTHP size, filled, verified before they go), each time
 * after growing the hugetlb pool past its free blocks and giving it back,
 * and a quarter of the time right after taking every free block of that
 * size, so that those faults must compact (unless the others' frees came
 * first, or compaction is deferred).
 */
static void faulter(double deadline, struct faulted *res)
{
	long served0 = vmstat("defrag_direct_success");
	struct held ring[FAULT_RING] = { 0 }, taken = { 0 }, spread_pages = { 0 };
	uint64_t seed = 0xfa017;

	spread(&spread_pages, seed);
	seed += SPREAD_MAX / PAGE_SIZE;
	/* Past the deadline (bounded) until a block was handed over: slow kernels. */
	while (now() < deadline ||
	       (vmstat("defrag_direct_success") == served0 && now() < deadline + FAULTER_GRACE)) {
		int slot = rnd() % FAULT_RING;
		size_t kb = fault_kb[rnd() % NSIZES], len = (kb << 10) * (1 + rnd() % 2);
		struct held *h = &ring[slot];

		held_release(h, &res->bad);
		pool_grow();
		res->pools++;
		if (rnd() % 4 == 0) {
			held_release(&taken, &res->bad);
			res->used_up += take_free_blocks(kb, &taken, seed);
			seed += taken.npages;
			res->takes++;
		}
		h->p = map_advised(len, kb << 10, &h->raw);
		if (!h->p) {
			h->raw = NULL;
			continue;
		}
		h->rawlen = len + (kb << 10);
		h->npages = len / PAGE_SIZE;
		h->step = 1;
		h->seed = seed;
		seed += h->npages;
		fill_pages(h->p, h->npages, h->seed);
		res->regions++;
	}
	for (int i = 0; i < FAULT_RING; i++)
		held_release(&ring[i], &res->bad);
	held_release(&taken, &res->bad);
	held_release(&spread_pages, &res->bad);
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
 * Requests made, and coalesce requests (sysfs and per node) that made a
 * block: an evacuate request succeeds on a range that was free already.
 */
struct called {
	long n, made;
};

/*
 * Random defrag requests until @deadline. With @inject, every request
 * runs with fail_page_alloc armed.
 */
static struct called caller(double deadline, unsigned long max_pfn, bool inject)
{
	struct called r = { 0 };
	char req[64];
	bool coalesce;
	int ret;

	while (now() < deadline) {
		if (inject)
			write_str("/proc/self/make-it-fail", "1");
		coalesce = true;
		switch (rnd() % 3) {
		case 0:
			snprintf(req, sizeof(req), "%d %d", 1 + (int)(rnd() % 10), 1 + (int)(rnd() % 4));
			ret = write_str("/sys/kernel/mm/defrag/coalesce", req);
			break;
		case 1:
			snprintf(req, sizeof(req), "%lu %lu", (unsigned long)(rnd() % max_pfn) & ~15UL,
				 16UL << (rnd() % 6));
			ret = write_str("/sys/kernel/mm/defrag/evacuate", req);
			coalesce = false;
			break;
		default:
			snprintf(req, sizeof(req), "%d", 1 + (int)(rnd() % 10));
			ret = write_str(rnd() % 2 ? "/sys/devices/system/node/node0/defrag_coalesce" :
						    "/sys/devices/system/node/node1/defrag_coalesce", req);
			break;
		}
		if (inject)
			write_str("/proc/self/make-it-fail", "0");
		r.n++;
		r.made += coalesce && ret == 0;
	}
	return r;
}

/*
 * kcompactd's background target meanwhile, an aggressive one: in every
 * zone, as many order-3 blocks as make an eighth of the guest's memory
 * (a zone the target is more than half of is left alone: on a 1 GiB
 * guest with two nodes, each zone is about 500 MB), at most the 65536
 * target_blocks takes.
 */
#define TARGET_ORDER 3

static long target_blocks(void)
{
	long k = meminfo_kb("MemTotal") / 8 / ((PAGE_SIZE << TARGET_ORDER) >> 10);

	return k < 65536 ? k : 65536;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 60, pipefd[2], st, sng_status = -1;
	long att0 = vmstat("defrag_attempt"), succ0 = vmstat("defrag_success");
	long mig0 = vmstat("defrag_migrated"), free0, free1, injected;
	long succ, mig, dir_att0 = vmstat("defrag_direct_attempt");
	long dir_succ0 = vmstat("defrag_direct_success"), dir_att, dir_succ;
	long dir_made0 = vmstat("defrag_direct_success") + vmstat("defrag_direct_extra") +
			 vmstat("defrag_direct_fail"), dir_made;
	long oom0 = vmstat("oom_kill"), bg_wake0 = vmstat("defrag_background_wake");
	long bg_succ0 = vmstat("defrag_background_success"), bg_target = target_blocks();
	struct called called = { 0 };
	struct faulted fres = { 0 };
	char num[32];
	int fpipe[2], ready[2], waited;
	pid_t faulter_pid;
	unsigned long max_pfn = 0;
	struct zone_info z[16];
	int nz = read_zoneinfo(z, 16);
	bool inject;
	double deadline = now() + seconds;
	struct checked res = { 0 };
	pid_t callers[3], sng;

	kt_plan(9);
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
	setting_set(THP "enabled", "madvise");
	setting_set(THP "defrag", "madvise");
	for (size_t i = 0; i < NSIZES; i++) {
		char path[128];

		size_path(path, sizeof(path), fault_kb[i], "enabled");
		setting_set(path, "madvise");
	}
	setting_set(SYS "enabled", "1");
	setting_set(SYS "direct_min_order", "1");
	setting_set(SYS "direct", "1");
	snprintf(num, sizeof(num), "%d", TARGET_ORDER);
	setting_set(SYS "target_order", num);
	snprintf(num, sizeof(num), "%ld", bg_target);
	setting_set(SYS "target_blocks", num);
	setting_set(NR_HUGEPAGES, "0");
	sng = start_stress_ng(seconds);
	if (sng < 0)
		kt_bail("no stress-ng at %s", STRESS_NG);
	if (pipe(fpipe) || pipe(ready))
		kt_bail("pipe");
	faulter_pid = fork();
	if (faulter_pid < 0)
		kt_bail("fork: %s", strerror(errno));
	if (faulter_pid == 0) {
		char c;

		close(fpipe[0]);
		close(ready[1]);
		/* EOF once the checker's memory is set up, or it failed. */
		if (read(ready[0], &c, 1) < 0)
			_exit(1);
		rng = 0xfa017;
		faulter(deadline, &fres);
		if (write(fpipe[1], &fres, sizeof(fres)) != sizeof(fres))
			_exit(1);
		_exit(0);
	}
	close(fpipe[1]);
	close(ready[0]);
	ready_fd = ready[1];
	for (int c = 0; c < 3; c++) {
		callers[c] = fork();
		if (callers[c] == 0) {
			struct called r;

			close(ready_fd);
			rng = 0x57e55 + c;
			r = caller(deadline, max_pfn, inject && c == 0);
			if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
				_exit(1);
			_exit(0);
		}
	}
	close(pipefd[1]);
	rng = 0xc4ec;
	if (checker(deadline, &res)) {
		close(ready_fd);
		kill(faulter_pid, SIGKILL);
		waitpid(faulter_pid, &st, 0);
		kt_bail("checker could not set up its memory: %s", strerror(errno));
	}
	for (int c = 0; c < 3; c++) {
		struct called r;

		waitpid(callers[c], &st, 0);
		if (read(pipefd[0], &r, sizeof(r)) == sizeof(r)) {
			called.n += r.n;
			called.made += r.made;
		}
	}
	if (waitpid(faulter_pid, &st, 0) != faulter_pid || !WIFEXITED(st) || WEXITSTATUS(st) ||
	    read(fpipe[0], &fres, sizeof(fres)) != sizeof(fres)) {
		kt_diag("the faulter died (status %#x)", st);
		fres.bad = -1;
	}
	settings_restore();
	if (waitpid(sng, &st, 0) == sng && WIFEXITED(st))
		sng_status = WEXITSTATUS(st);
	injected = inject ? fault_disarm(FAIL_PAGE_ALLOC) : 0;
	kt_diag("%ld defrag requests (%ld made a block), %ld attempts (%ld succeeded), %ld page checks in %d s",
		called.n, called.made, vmstat("defrag_attempt") - att0,
		vmstat("defrag_success") - succ0, res.verified, seconds);
	kt_diag("%ld faults injected into one caller's allocations (fail_page_alloc)%s",
		injected, inject ? "" : ": no CONFIG_FAIL_PAGE_ALLOC");
	kt_ok(res.bad == 0, "no page read back wrong (%ld mismatches in %ld checks, %ld ext4 writebacks started)",
	      res.bad, res.verified, res.writebacks);
	dir_att = vmstat("defrag_direct_attempt") - dir_att0;
	dir_succ = vmstat("defrag_direct_success") - dir_succ0;
	dir_made = vmstat("defrag_direct_success") + vmstat("defrag_direct_extra") +
		   vmstat("defrag_direct_fail") - dir_made0;
	kt_diag("faulter: %ld regions, %ld hugetlb pool growths, %ld of %ld takes used up a size's free blocks; %ld OOM kills in the run",
		fres.regions, fres.pools, fres.used_up, fres.takes, vmstat("oom_kill") - oom0);
	kt_ok(fres.bad == 0 && fres.regions > 0,
	      "the faulter's THP and mTHP regions and its spread pages read back intact (%ld bad pages, %ld regions)",
	      fres.bad, fres.regions);
	kt_ok(dir_succ > 0, "the slow path handed blocks over meanwhile: %ld of %ld direct attempts",
	      dir_succ, dir_att);
	kt_ok(res.moved_pins == 0, "long-term pinned pages never moved (%ld did)", res.moved_pins);
	succ = vmstat("defrag_success") - succ0;
	mig = vmstat("defrag_migrated") - mig0;
	/*
	 * The random callers' requests too, by their own results, not only
	 * the checker's own, direct requests or kcompactd's.
	 */
	kt_ok(called.made > 0 && mig > 0 && res.moved > 0,
	      "pages moved under the checker: %ld ranges emptied in all (%ld by the checker itself; %ld of %ld random requests were coalesce requests that made blocks; %ld direct requests), %ld pages migrated; %ld shared-anon and tmpfs pages changed pfn",
	      succ, res.own_evacuated, called.made, called.n, dir_made, mig, res.moved);
	kt_ok(vmstat("defrag_background_wake") > bg_wake0 &&
	      vmstat("defrag_background_success") > bg_succ0,
	      "kcompactd worked on its target meanwhile (order %d, %ld blocks per zone): %ld requests, %ld made blocks",
	      TARGET_ORDER, bg_target, vmstat("defrag_background_wake") - bg_wake0,
	      vmstat("defrag_background_success") - bg_succ0);
	if (sng_status)
		system("tail -n 20 /tmp/stress-ng.log | sed 's/^/# /'");
	kt_ok(sng_status == 0, "stress-ng with --verify passed (exit status %d)", sng_status);
	/*
	 * A request still in flight (a kernel thread's: khugepaged's, a
	 * kworker's, made while direct was 1) ends within milliseconds; a
	 * leak stays.
	 */
	for (waited = 0; waited < 50 && isolated_pageblocks(); waited++)
		usleep(100000);
	kt_ok(isolated_pageblocks() == 0, "no pageblock left isolated (%ld, after %d ms waiting for requests in flight)",
	      isolated_pageblocks(), waited * 100);
	free1 = settled_free_kb();
	kt_ok(free1 >= free0 - free_slack_kb(), "MemFree came back: %ld kB before, %ld kB after", free0, free1);
	return kt_done();
}
