// SPDX-License-Identifier: GPL-2.0
/*
 * Background targets: kcompactd keeps target_blocks free blocks of
 * target_order or more in every populated zone, once a target is set.
 *
 * Memory is fragmented (anon pages, every other one released at random),
 * then, at order 3 and at order 9, a target K above what some zone with
 * room for it has: with target_blocks=0, or with enabled=0, no background counter
 * moves in a few of kcompactd's 500 ms periods; with both set, kcompactd
 * is woken (defrag_background_wake), makes blocks
 * (defrag_background_success) and every zone that has room for them
 * (twice the blocks of the target plus its min watermark, free) counts K
 * blocks in /proc/buddyinfo again - the test waits for that, with a
 * generous guard against a hang, not a speed bound. Then faults of that
 * size (32 KiB mTHP, 2 MiB THP) that never compact, and do not wake
 * kcompactd, take blocks until a zone is below K again, the target still
 * set, and the same must happen again (kcompactd's own timer). Proactive
 * compaction and the allocator's direct requests are off meanwhile, so
 * the blocks are kcompactd's targeted work (its counters say so; a block
 * that stock compaction made on a kernel high-order allocation's wake
 * would only help). Every page moved is checked: the fragmenter's and the
 * faults', and no pageblock is left isolated.
 */
#include "kdefrag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SYS "/sys/kernel/mm/defrag/"
#define THP "/sys/kernel/mm/transparent_hugepage/"
#define GUARD 300	/* seconds: a hang, not a speed bound */
#define QUIET 3		/* seconds of kcompactd's 500 ms periods */

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

/*
 * Faults of 2^@order pages that never compact, until a roomy zone is
 * below @k (or half of MemFree is faulted); the region is filled with
 * @seed's pattern. Returns its length (0 if none was below @k at the end).
 */
static size_t take_blocks(struct zone_count *zc, int nz, int order, long k,
			  char **raw, size_t *rawlen, char **p, uint64_t seed)
{
	size_t sz = (size_t)PAGE_SIZE << order, n = 0;
	size_t max = (size_t)meminfo_kb("MemFree") / 2 * 1024 / sz;

	*p = map_advised(max * sz, sz, raw);
	if (!*p)
		kt_bail("cannot map %zu bytes: %s", max * sz, strerror(errno));
	*rawlen = max * sz + sz;
	while (n < max && target_met(zc, nz, order, k)) {
		for (size_t end = n + 16; n < end && n < max; n++)
			fill_pages(*p + n * sz, sz / PAGE_SIZE, seed + n * (sz / PAGE_SIZE));
	}
	return target_met(zc, nz, order, k) ? 0 : n * sz;
}

/* One order: the target reached, taken away by faults, reached again. */
static void one_order(int order, struct frag *f)
{
	struct zone_count zc[16];
	long k = 0, w0, s0, f0;
	int below = 0;
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

		if ((!k || ki < k) && ki <= 65536 && room_for(&zc[i], order, ki))
			k = ki;
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
	 * Faults of this size that do not compact take the blocks again,
	 * the target still set: kcompactd must notice by itself (its timer:
	 * these faults do not wake it).
	 */
	snprintf(size_path, sizeof(size_path), THP "hugepages-%lukB/enabled",
		 (PAGE_SIZE << order) >> 10);
	setting_set(size_path, "madvise");
	w0 = bg("wake");
	s0 = bg("success");
	f0 = bg("fail");
	len = take_blocks(zc, nz, order, k, &raw, &rawlen, &p, seed);
	print_counts("taken", zc, nz);
	secs = len ? wait_target(zc, nz, order, k) : -1;
	print_counts("again", zc, nz);
	ok = len && secs >= 0 && requests_ended(w0, s0, f0) && bg("wake") > w0 &&
	     bg("success") > s0;
	kt_ok(ok,
	      "order %d: after faults took %zu kB, kcompactd brought them back to %ld "
	      "blocks (%.1f s, %ld requests, %ld made blocks)", order, len >> 10, k, secs,
	      bg("wake") - w0, bg("success") - s0);
	kt_ok(len && !check_pages(p, len / PAGE_SIZE, seed) && !frag_check(f),
	      "order %d: the faults' and the fragmenter's pages read back right", order);
	setting_set(SYS "target_blocks", "0");
	requests_ended(w0, s0, f0);
	setting_set(size_path, "never");
	munmap(raw, rawlen);
}

int main(void)
{
	struct frag f;
	char old_o[32], old_b[32], now_o[32], now_b[32];
	bool bad_ok = true;
	long s0, total_kb = meminfo_kb("MemTotal");

	kt_plan(11);
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

	/* A target far above what there is: nothing while it is 0 or kdefrag is off. */
	setting_set(SYS "target_order", "3");
	s0 = bg_sum();
	sleep(QUIET);
	kt_ok(bg_sum() == s0, "target_blocks=0: no background request in %d s", QUIET);
	setting_set(SYS "enabled", "0");
	setting_set(SYS "target_blocks", "65536");
	s0 = bg_sum();
	sleep(QUIET);
	kt_ok(bg_sum() == s0, "enabled=0 with a target: no background request in %d s", QUIET);
	setting_set(SYS "target_blocks", "0");
	setting_set(SYS "enabled", "1");

	one_order(3, &f);
	one_order(9, &f);

	kt_ok(!frag_check(&f), "the fragmenter's pages read back right at the end");
	frag_release(&f);
	kt_ok(isolated_pageblocks() == 0, "no pageblock is left isolated");
	return kt_done();
}
