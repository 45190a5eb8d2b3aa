// SPDX-License-Identifier: GPL-2.0
/*
 * Background targets: kcompactd keeps target_blocks free blocks of
 * target_order or more in every populated zone, once a target is set.
 *
 * Memory is fragmented (anon pages, every other one released at random).
 * With target_blocks=0, and with enabled=0 and a target just below what a
 * zone has, 32 KiB faults there take order-3 blocks, and no background
 * counter moves and no defrag_target_wake event comes in a few of
 * kcompactd's 500 ms periods. Then, at order 3 and at order 9, a target K
 * above what some zone with room for it has (twice the blocks of the
 * target plus its min watermark, free): kcompactd is woken
 * (defrag_background_wake), makes blocks (defrag_background_success) and
 * every zone with room counts K blocks in /proc/buddyinfo - the test
 * waits for that, with a generous guard against a hang, not a speed
 * bound. Then faults of that size (32 KiB mTHP, 2 MiB THP) that never
 * compact and may not wake kswapd, bound to that zone's node, take blocks
 * until it is below K, the target still set: an allocation there that
 * may wake kswapd (a few order-0 faults follow) must wake kcompactd for
 * it (a defrag_target_wake event from a task other than kcompactd), and
 * the zone must count K blocks again. Then three rounds of churn there
 * (order-0 anon pages allocated and every other one freed, page cache
 * files written and deleted, faults of the target's size taking the zone
 * below K and freed after): every round must wake kcompactd from an
 * allocation, make blocks and bring the zone back to K; what the churn
 * kept reads back right. Proactive compaction and the
 * allocator's direct requests are off meanwhile, so the blocks are
 * kcompactd's targeted work (its counters say so). Every page moved is
 * checked: the fragmenter's and the faults', and no pageblock is left
 * isolated.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS "/sys/kernel/mm/defrag/"
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define GUARD 300	/* seconds: a hang, not a speed bound */
#define QUIET 3		/* seconds of kcompactd's 500 ms periods */
#define MPOL_BIND 2	/* <linux/mempolicy.h> */
#define WAKE_EVENT "/sys/kernel/tracing/events/defrag/defrag_target_wake/enable"

struct zone_count {
	int node;
	char name[16];
	long blocks;		/* free blocks of the order or more, in blocks of it */
	bool roomy;		/* room for the target (decided once) */
};

/* Per zone of /proc/buddyinfo: free blocks of @order or more, in blocks of @order. */
static int zone_counts(struct zone_count *zc, int max, int order)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		kt_bail("cannot read /proc/buddyinfo");
	while (n < max && fgets(line, sizeof(line), f)) {
		char *p = line;
		long cnt;
		int o = 0, off;

		if (sscanf(p, "Node %d, zone %15s%n", &zc[n].node, zc[n].name, &off) != 2)
			continue;
		p += off;
		zc[n].blocks = 0;
		zc[n].roomy = false;
		while (sscanf(p, "%ld%n", &cnt, &off) == 1) {
			if (o >= order)
				zc[n].blocks += cnt << (o - order);
			o++;
			p += off;
		}
		n++;
	}
	fclose(f);
	return n;
}

static long bg(const char *what)
{
	char name[64];

	snprintf(name, sizeof(name), "defrag_background_%s", what);
	return vmstat(name);
}

/* Background counters' sum: whether anything moved. */
static long bg_sum(void)
{
	return bg("wake") + bg("success") + bg("fail");
}

/* Has @node's zone @name @pages free above its min watermark? */
static bool zone_room(int node, const char *name, long pages)
{
	struct zone_info z[16];
	int n = read_zoneinfo(z, 16);

	for (int i = 0; i < n; i++)
		if (z[i].node == node && !strcmp(z[i].name, name))
			return z[i].free - z[i].min >= pages;
	return false;
}

/*
 * Room for a target of @k blocks in @z: twice the blocks it is brought to
 * (a quarter above @k) free above the min watermark. The kernel itself
 * leaves a zone the target is more than half of.
 */
static bool room_for(const struct zone_count *z, int order, long k)
{
	return zone_room(z->node, z->name, 2 * (k + (k + 3) / 4) * (1L << order));
}

/* Is every roomy zone at @k blocks or more? @zc's roomy flags are kept. */
static bool target_met(struct zone_count *zc, int nz, int order, long k)
{
	struct zone_count now[16];
	bool met = true;

	if (zone_counts(now, 16, order) != nz)
		kt_bail("/proc/buddyinfo changed its zones");
	for (int i = 0; i < nz; i++) {
		zc[i].blocks = now[i].blocks;
		if (zc[i].roomy && now[i].blocks < k)
			met = false;
	}
	return met;
}

static void print_counts(const char *when, const struct zone_count *zc, int nz)
{
	for (int i = 0; i < nz; i++)
		kt_diag("%s: node %d zone %s: %ld blocks%s", when, zc[i].node, zc[i].name,
			zc[i].blocks, zc[i].roomy ? "" : " (no room for the target: not checked)");
}

/* Seconds until target_met(), or -1 after GUARD. */
static double wait_target(struct zone_count *zc, int nz, int order, long k)
{
	double t0 = now(), said = t0;

	while (!target_met(zc, nz, order, k)) {
		if (now() - t0 > GUARD)
			return -1;
		/* Progress, also for the harness's silence watchdog. */
		if (now() - said > 30) {
			print_counts("waiting", zc, nz);
			said = now();
		}
		usleep(200 * 1000);
	}
	return now() - t0;
}

/*
 * Until every background request since the counters were @w0, @s0, @f0
 * has ended (a zone may reach the target while its request goes on to a
 * quarter above it); false after GUARD.
 */
static bool requests_ended(long w0, long s0, long f0)
{
	double t0 = now();

	for (;;) {
		/* Ends before starts: a request counts its start first. */
		long ended = bg("success") - s0 + bg("fail") - f0;

		if (ended >= bg("wake") - w0)
			return true;
		if (now() - t0 > GUARD)
			return false;
		usleep(100 * 1000);
	}
}

static void bind_node(void *p, size_t len, int node)
{
	unsigned long mask = 1UL << node;

	if (syscall(SYS_mbind, p, len, MPOL_BIND, &mask, 8 * sizeof(mask), 0))
		kt_bail("mbind to node %d: %s", node, strerror(errno));
}

/*
 * defrag_target_wake events of tasks other than kcompactd in the trace
 * buffer, for @node at @order (-1: any node or order).
 */
static int target_wakes(int node, int order)
{
	static char buf[1 << 20];
	char *line, *save;
	int n = 0;

	if (read_str("/sys/kernel/tracing/trace", buf, sizeof(buf)) < 0)
		kt_bail("cannot read the trace buffer");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *e = strstr(line, "defrag_target_wake:");
		int nid, o;

		/* An allocation's, not kcompactd's own (its task comes first). */
		if (!e || strstr(line, "kcompactd") || !strstr(e, "node=") || !strstr(e, "order=") ||
		    sscanf(strstr(e, "node="), "node=%d", &nid) != 1 ||
		    sscanf(strstr(e, "order="), "order=%d", &o) != 1)
			continue;
		n += (node < 0 || nid == node) && (order < 0 || o == order);
	}
	return n;
}

#define SMALL_FAULTS (16UL << 20)

/*
 * SMALL_FAULTS bytes of 32 KiB mTHP faults on @node, which take order-3
 * blocks, filled with @seed's pattern; the mapping (*@raw) is the
 * caller's to check and unmap.
 */
static char *small_block_faults(int node, uint64_t seed, char **raw)
{
	char *p;

	setting_set(THP "hugepages-32kB/enabled", "madvise");
	p = map_advised(SMALL_FAULTS, 32 << 10, raw);
	if (!p)
		kt_bail("cannot map %lu bytes: %s", SMALL_FAULTS, strerror(errno));
	bind_node(p, SMALL_FAULTS, node);
	fill_pages(p, SMALL_FAULTS / PAGE_SIZE, seed);
	setting_set(THP "hugepages-32kB/enabled", "never");
	return p;
}

/* Checks and unmaps small_block_faults()' region: its bad pages. */
static size_t small_block_check(char *p, char *raw, uint64_t seed)
{
	size_t bad = check_pages(p, SMALL_FAULTS / PAGE_SIZE, seed);

	munmap(raw, SMALL_FAULTS + (32 << 10));
	return bad;
}

/*
 * Order-0 faults on @node, which may wake kswapd (and so kcompactd for
 * a zone an earlier take left below the target); 0 if they read back right.
 */
static size_t small_faults(int node, uint64_t seed)
{
	size_t len = 64 * PAGE_SIZE, bad;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	madvise(p, len, MADV_NOHUGEPAGE);
	bind_node(p, len, node);
	fill_pages(p, len / PAGE_SIZE, seed);
	bad = check_pages(p, len / PAGE_SIZE, seed);
	munmap(p, len);
	return bad;
}

/* Pages free above the low watermarks (between min and high) of @node's zones. */
static size_t node_room(int node)
{
	struct zone_info z[16];
	int n = read_zoneinfo(z, 16);
	size_t pages = 0;

	for (int i = 0; i < n; i++)
		if (z[i].node == node && z[i].free > (z[i].min + z[i].high) / 2)
			pages += z[i].free - (z[i].min + z[i].high) / 2;
	return pages;
}

/*
 * Faults of 2^@order pages on @node that never compact, until a roomy
 * zone is below @k or an allocation woke kcompactd for @node's target
 * (kcompactd may make blocks as fast as they are taken), or the node's
 * free memory above its low watermarks is faulted; the region is filled
 * with @seed's pattern. Returns its length (0 if neither happened).
 */
static size_t take_blocks(struct zone_count *zc, int nz, int order, long k, int node,
			  char **raw, size_t *rawlen, char **p, uint64_t seed)
{
	size_t sz = (size_t)PAGE_SIZE << order, n = 0;
	size_t max = node_room(node) / (1UL << order);

	if (!max)
		kt_bail("node %d has no free memory above its low watermark", node);
	*p = map_advised(max * sz, sz, raw);
	if (!*p)
		kt_bail("cannot map %zu bytes: %s", max * sz, strerror(errno));
	*rawlen = max * sz + sz;
	bind_node(*p, max * sz, node);
	/* One batch before the first look: a wake may come before any take. */
	do {
		for (size_t end = n + 16; n < end && n < max; n++)
			fill_pages(*p + n * sz, sz / PAGE_SIZE, seed + n * (sz / PAGE_SIZE));
	} while (n < max && target_met(zc, nz, order, k) && !target_wakes(node, order));
	return target_met(zc, nz, order, k) && !target_wakes(node, order) ? 0 : n * sz;
}

static bool zero_page(const char *p)
{
	for (size_t i = 0; i < PAGE_SIZE; i++)
		if (p[i])
			return false;
	return true;
}

#define CHURN_ROUNDS 3
#define CHURN_PAGES 1024	/* order-0 anon pages per round, half kept */
#define CHURN_FILE_PAGES 512	/* page cache pages per file, 2 files a round */

static void set_policy(int mode, int node)
{
	unsigned long mask = 1UL << node;

	if (syscall(SYS_set_mempolicy, mode, mode ? &mask : NULL, mode ? 8 * sizeof(mask) : 0))
		kt_bail("set_mempolicy(%d, node %d): %s", mode, node, strerror(errno));
}

/* Where the churn's files go: the ext4 disk if the guest has one. */
static const char *churn_dir(void)
{
	static const char *dir;

	if (!dir) {
		int fd = open("/mnt/disk/.churn-probe", O_CREAT | O_WRONLY, 0600);

		dir = fd >= 0 ? "/mnt/disk" : "/mnt/tmpfs";
		if (fd >= 0) {
			close(fd);
			unlink("/mnt/disk/.churn-probe");
		}
	}
	return dir;
}

/* Writes @npages of fill_pages(@seed) to @path; 0 or -1. */
static int write_file(const char *path, size_t npages, uint64_t seed)
{
	static char buf[64 * PAGE_SIZE];
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	if (fd < 0)
		return -1;
	for (size_t i = 0; i < npages; i += 64) {
		size_t n = npages - i < 64 ? npages - i : 64;

		fill_pages(buf, n, seed + i);
		if (pwrite(fd, buf, n * PAGE_SIZE, i * PAGE_SIZE) != (ssize_t)(n * PAGE_SIZE)) {
			close(fd);
			return -1;
		}
	}
	return close(fd);
}

/* Pages of @path that differ from fill_pages(@seed) (all, if unreadable). */
static size_t check_file(const char *path, size_t npages, uint64_t seed)
{
	static char buf[64 * PAGE_SIZE];
	int fd = open(path, O_RDONLY);
	size_t bad = 0;

	if (fd < 0)
		return npages;
	for (size_t i = 0; i < npages; i += 64) {
		size_t n = npages - i < 64 ? npages - i : 64;

		if (pread(fd, buf, n * PAGE_SIZE, i * PAGE_SIZE) != (ssize_t)(n * PAGE_SIZE))
			bad += n;
		else
			bad += check_pages(buf, n, seed + i);
	}
	close(fd);
	return bad;
}

/*
 * Churn on @node, the target of @k blocks of @order still set: each round
 * allocates and frees anon memory (order-0 pages, every other one freed)
 * and page cache (two files written, one deleted) there, then faults of
 * the target's size take the zone below @k (as take_blocks()), a few
 * order-0 faults follow; each round must wake kcompactd from an
 * allocation (defrag_target_wake), start a request that makes blocks, and
 * bring the zone back to @k; the large faults are freed after it. What
 * the churn kept reads back right at the end.
 */
static void churn(int order, long k, int node, struct zone_count *zc, int nz, uint64_t seed)
{
	char *anon[CHURN_ROUNDS], path[CHURN_ROUNDS][2][96], *raw, *p;
	int woke = 0, brought = 0, wakes;
	size_t bad = 0, len, rawlen;
	long w0, s0, f0;
	bool ok;

	for (int r = 0; r < CHURN_ROUNDS; r++) {
		uint64_t rs = seed + 0x100000 * (r + 1);

		/* A look arms the zone: the timer's, if the last round's did not. */
		sleep(1);
		if (trace_clear())
			kt_bail("cannot clear the trace buffer");
		w0 = bg("wake");
		s0 = bg("success");
		f0 = bg("fail");
		set_policy(MPOL_BIND, node);
		anon[r] = mmap(NULL, CHURN_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon[r] == MAP_FAILED)
			kt_bail("mmap: %s", strerror(errno));
		madvise(anon[r], CHURN_PAGES * PAGE_SIZE, MADV_NOHUGEPAGE);
		fill_pages(anon[r], CHURN_PAGES, rs);
		for (int i = 0; i < CHURN_PAGES; i += 2)
			madvise(anon[r] + i * PAGE_SIZE, PAGE_SIZE, MADV_DONTNEED);
		for (int j = 0; j < 2; j++) {
			snprintf(path[r][j], sizeof(path[r][j]), "%s/churn-%d-%d-%d", churn_dir(),
				 order, r, j);
			if (write_file(path[r][j], CHURN_FILE_PAGES, rs + 0x10000 * (j + 1)))
				kt_bail("cannot write %s: %s", path[r][j], strerror(errno));
		}
		unlink(path[r][0]);
		len = take_blocks(zc, nz, order, k, node, &raw, &rawlen, &p, rs + 0x40000);
		bad += small_faults(node, rs + 0x80000);
		set_policy(0, node);
		ok = len && wait_target(zc, nz, order, k) >= 0;
		/* Every round's requests end in it, whatever happened. */
		ok = requests_ended(w0, s0, f0) && ok && bg("wake") > w0 && bg("success") > s0;
		wakes = target_wakes(node, order);
		woke += wakes > 0;
		brought += ok;
		kt_diag("order %d churn round %d: took %zu kB, %d wakes, %ld requests, %ld made "
			"blocks, target %s", order, r + 1, len >> 10, wakes, bg("wake") - w0,
			bg("success") - s0, ok ? "met again" : "NOT met");
		if (len)
			bad += check_pages(p, len / PAGE_SIZE, rs + 0x40000);
		munmap(raw, rawlen);
	}
	kt_ok(woke == CHURN_ROUNDS && brought == CHURN_ROUNDS,
	      "order %d: %d rounds of anon and page-cache churn on node %d: %d woke kcompactd, "
	      "%d brought back to %ld blocks", order, CHURN_ROUNDS, node, woke, brought, k);
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		uint64_t rs = seed + 0x100000 * (r + 1);

		/* Kept pages hold their pattern, freed ones read as zero. */
		for (int i = 0; i < CHURN_PAGES; i++)
			bad += i % 2 ? check_pages(anon[r] + i * PAGE_SIZE, 1, rs + i) != 0
				     : !zero_page(anon[r] + i * PAGE_SIZE);
		munmap(anon[r], CHURN_PAGES * PAGE_SIZE);
		bad += check_file(path[r][1], CHURN_FILE_PAGES, rs + 0x20000);
		unlink(path[r][1]);
	}
	kt_ok(!bad, "order %d: the churn's kept pages and files read back right (%zu bad)",
	      order, bad);
}

/* One order: the target reached, taken away by faults, reached again. */
static void one_order(int order, struct frag *f)
{
	struct zone_count zc[16];
	long k = 0, w0, s0, f0;
	int below = 0, node = -1, wakes;
	bool ok;
	size_t len, rawlen;
	char *raw, *p, v[32], size_path[128];
	double secs;
	int nz;
	uint64_t seed = 0xb9c0000 + order;

	/* Counted once freed pages have merged (the last order's faults). */
	settled_free_kb();
	nz = zone_counts(zc, 16, order);

	/*
	 * K above what some zone has now (at order 3, 32 MB more), the
	 * lowest such K that zone has room for: zones with more blocks
	 * already meet it (what earlier tests left free may be in one).
	 */
	for (int i = 0; i < nz; i++) {
		long ki = zc[i].blocks + (order >= 9 ? 8 : (32L << 20) / (PAGE_SIZE << order));

		if ((!k || ki < k) && ki <= 65536 && room_for(&zc[i], order, ki)) {
			k = ki;
			node = zc[i].node;	/* the faults below take its blocks */
		}
	}
	if (!k) {
		print_counts("before", zc, nz);
		kt_bail("order %d: no zone has room for a target above its blocks", order);
	}
	for (int i = 0; i < nz; i++) {
		zc[i].roomy = room_for(&zc[i], order, k);
		below += zc[i].roomy && zc[i].blocks < k;
	}
	print_counts("before", zc, nz);
	kt_diag("order %d: target %ld blocks per zone, %d zone(s) with room below it", order, k,
		below);

	snprintf(v, sizeof(v), "%d", order);
	setting_set(SYS "target_order", v);
	w0 = bg("wake");
	s0 = bg("success");
	f0 = bg("fail");
	snprintf(v, sizeof(v), "%ld", k);
	setting_set(SYS "target_blocks", v);
	secs = wait_target(zc, nz, order, k);
	print_counts("target set", zc, nz);
	/* The condition first: kt_ok()'s arguments are read in no set order. */
	ok = secs >= 0 && requests_ended(w0, s0, f0) && bg("wake") > w0 && bg("success") > s0;
	kt_ok(ok,
	      "order %d: kcompactd brought every zone with room to %ld blocks (%.1f s; "
	      "%ld requests, %ld made blocks, %ld made none)", order, k, secs,
	      bg("wake") - w0, bg("success") - s0, bg("fail") - f0);

	/*
	 * Faults of this size that do not compact, on a roomy zone's node,
	 * take the blocks again, the target still set: the next allocation
	 * there that may wake kswapd wakes kcompactd (the order-0 faults
	 * after them), and its timer looks too.
	 */
	snprintf(size_path, sizeof(size_path), THP "hugepages-%lukB/enabled",
		 (PAGE_SIZE << order) >> 10);
	setting_set(size_path, "madvise");
	if (write_str(WAKE_EVENT, "1") || trace_clear())
		kt_bail("cannot trace defrag_target_wake");
	w0 = bg("wake");
	s0 = bg("success");
	f0 = bg("fail");
	len = take_blocks(zc, nz, order, k, node, &raw, &rawlen, &p, seed);
	print_counts("taken", zc, nz);
	ok = !small_faults(node, seed ^ 0x5a11);
	secs = len ? wait_target(zc, nz, order, k) : -1;
	print_counts("again", zc, nz);
	ok = ok && len && secs >= 0 && requests_ended(w0, s0, f0) && bg("wake") > w0 &&
	     bg("success") > s0;
	kt_ok(ok,
	      "order %d: after faults took %zu kB on node %d, kcompactd brought them back to %ld "
	      "blocks (%.1f s, %ld requests, %ld made blocks)", order, len >> 10, node, k, secs,
	      bg("wake") - w0, bg("success") - s0);
	wakes = target_wakes(node, order);
	kt_ok(len && wakes > 0,
	      "order %d: an allocation on node %d woke kcompactd for the target "
	      "(%d defrag_target_wake events)", order, node, wakes);
	kt_ok(len && !check_pages(p, len / PAGE_SIZE, seed) && !frag_check(f),
	      "order %d: the faults' and the fragmenter's pages read back right", order);
	munmap(raw, rawlen);
	churn(order, k, node, zc, nz, seed);
	write_str(WAKE_EVENT, "0");
	setting_set(SYS "target_blocks", "0");
	requests_ended(w0, s0, f0);
	setting_set(size_path, "never");
}

int main(void)
{
	struct frag f;
	char old_o[32], old_b[32], now_o[32], now_b[32], v[32];
	bool bad_ok = true;
	long s0, total_kb = meminfo_kb("MemTotal");
	struct zone_count zc[16];
	size_t bad;
	int wakes, nz, qz = -1;
	char *p, *raw;

	kt_plan(17);
	if (vmstat("defrag_background_wake") < 0 || access(SYS "target_blocks", F_OK))
		kt_bail("no background targets in this kernel");

	/* Bad input: EINVAL, the old values kept. */
	setting_get(SYS "target_order", old_o, sizeof(old_o));
	setting_get(SYS "target_blocks", old_b, sizeof(old_b));
	bad_ok &= write_str(SYS "target_order", "0") == -EINVAL;
	bad_ok &= write_str(SYS "target_order", "11") == -EINVAL;
	bad_ok &= write_str(SYS "target_blocks", "65537") == -EINVAL;
	bad_ok &= write_str(SYS "target_blocks", "-1") == -EINVAL;
	bad_ok &= write_str(SYS "target_blocks", "3 4") == -EINVAL;
	setting_get(SYS "target_order", now_o, sizeof(now_o));
	setting_get(SYS "target_blocks", now_b, sizeof(now_b));
	kt_ok(bad_ok && !strcmp(old_o, now_o) && !strcmp(old_b, now_b) && !strcmp(now_b, "0"),
	      "bad target values rejected with EINVAL, old ones kept (order %s, blocks %s: none by default)",
	      now_o, now_b);

	direct_requests_off();
	setting_set("/proc/sys/vm/compaction_proactiveness", "0");
	setting_set(THP "defrag", "never");
	setting_set(THP "hugepages-2048kB/enabled", "never");
	setting_set(THP "hugepages-32kB/enabled", "never");
	if (fragment_anon(&f, total_kb / 40, 0xb9c))
		kt_bail("cannot fragment memory");

	/*
	 * Nothing while the target is 0 or kdefrag is off, though faults take
	 * order-3 blocks (no request, no wake): with kdefrag off, a target
	 * just below what the zone with most blocks has, which the faults
	 * take it below, as kcompactd would keep it.
	 */
	settled_free_kb();
	nz = zone_counts(zc, 16, 3);
	for (int i = 0; i < nz; i++)
		if (zc[i].blocks >= 256 && (qz < 0 || zc[i].blocks > zc[qz].blocks))
			qz = i;
	if (qz < 0)
		kt_bail("no zone has 256 free order-3 blocks");
	if (write_str(WAKE_EVENT, "1") || trace_clear())
		kt_bail("cannot trace defrag_target_wake");
	setting_set(SYS "target_order", "3");
	s0 = bg_sum();
	p = small_block_faults(zc[qz].node, 0x9e1, &raw);
	sleep(QUIET);
	bad = small_block_check(p, raw, 0x9e1);
	wakes = target_wakes(-1, -1);
	kt_ok(bg_sum() == s0 && !wakes && !bad,
	      "target_blocks=0: no background request in %d s of order-3 faults "
	      "(%d wakes, %zu bad pages)", QUIET, wakes, bad);
	setting_set(SYS "enabled", "0");
	nz = zone_counts(zc, 16, 3);
	snprintf(v, sizeof(v), "%ld", zc[qz].blocks > 256 ? zc[qz].blocks - 128 : 128);
	setting_set(SYS "target_blocks", v);
	s0 = bg_sum();
	/* Kept mapped while kcompactd could look: the zone stays below. */
	p = small_block_faults(zc[qz].node, 0x9e2, &raw);
	nz = zone_counts(zc, 16, 3);
	sleep(QUIET);
	bad = small_block_check(p, raw, 0x9e2);
	wakes = target_wakes(-1, -1);
	kt_ok(bg_sum() == s0 && !wakes && !bad,
	      "enabled=0 with a target of %s blocks: no background request in %d s of "
	      "order-3 faults, node %d zone %s at %ld blocks (%d wakes, %zu bad pages)",
	      v, QUIET, zc[qz].node, zc[qz].name, zc[qz].blocks, wakes, bad);
	write_str(WAKE_EVENT, "0");
	setting_set(SYS "target_blocks", "0");
	setting_set(SYS "enabled", "1");

	one_order(3, &f);
	one_order(9, &f);

	kt_ok(!frag_check(&f), "the fragmenter's pages read back right at the end");
	frag_release(&f);
	kt_ok(isolated_pageblocks() == 0, "no pageblock is left isolated");
	return kt_done();
}
