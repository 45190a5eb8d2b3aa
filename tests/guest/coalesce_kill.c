// SPDX-License-Identifier: GPL-2.0
/*
 * A coalesce request killed with SIGKILL in the middle of its work gives
 * back every folio it had isolated: nr_isolated_anon + nr_isolated_file in
 * /proc/vmstat come back to their level, no pageblock stays isolated, and
 * the workload's pages keep their contents. A fatal signal that arrives
 * while isolate_migratepages_range() is collecting folios makes it return
 * -EINTR with folios already isolated; they must be put back (a leak is
 * for good: NR_ISOLATED_* stays raised and too_many_isolated() throttles
 * every later isolator).
 *
 * The window is the part of a request spent isolating folios, a few
 * percent of it, so many requests must be interrupted: they are counted
 * from the request file's last result (error=-4), not assumed from the
 * kill.
 */
#include "kdefrag.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COALESCE "/sys/kernel/mm/defrag/coalesce"
#define PROACTIVE "/proc/sys/vm/compaction_proactiveness"
#define WANT_HITS 150
#define MIN_HITS 60
#define SECONDS 100

/* Fold the per-CPU counter deltas first: a few stranded folios hide there. */
static long nr_isolated(void)
{
	write_str("/proc/sys/vm/stat_refresh", "1");
	return vmstat("nr_isolated_anon") + vmstat("nr_isolated_file");
}

/*
 * The level once transient isolations (kswapd, ...) are over: the lowest
 * of up to @tries reads 200 ms apart, stopping at @target. A leak is for
 * good, so waiting longer cannot hide one.
 */
static long settled_isolated(long target, int tries)
{
	long v, low = nr_isolated();

	for (int i = 0; i < tries && low > target; i++) {
		usleep(200 * 1000);
		v = nr_isolated();
		if (v < low)
			low = v;
	}
	return low;
}

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Proactive compaction isolates too, and would move the workload meanwhile. */
static char proactive[16] = "20";
static void restore_proactive(void)
{
	write_str(PROACTIVE, proactive);
}

/* Did the request @req end with -EINTR? Consecutive requests differ. */
static bool interrupted(const char *req)
{
	char buf[160], want[32];

	snprintf(want, sizeof(want), "order=%s ", req);
	return read_str(COALESCE, buf, sizeof(buf)) > 0 &&
	       !strncmp(buf, want, strlen(want)) && strstr(buf, "error=-4 ");
}

static void refragment(struct frag *f, int kind, uint64_t seed)
{
	if (fragment(f, kind, 48 * 1024, seed))
		kt_bail("cannot fragment memory with %s: %s", frag_kind_name(kind),
			strerror(errno));
	/* The children do not copy (nor zap) the workload's page tables. */
	if (f->base && madvise(f->base, f->npages * PAGE_SIZE, MADV_DONTFORK))
		kt_bail("madvise(MADV_DONTFORK): %s", strerror(errno));
}

int main(int argc, char **argv)
{
	static const char * const reqs[] = { "9 1000", "10 500", "6 20000" };
	long base_iso, base_blocks, iso, blocks, worst = 0;
	long fail0 = vmstat("defrag_migrate_fail");
	int hits = 0, kills = 0, finished = 0, refrag = 0;
	size_t bad = 0;
	int kind = frag_kind_parse(argc > 1 ? argv[1] : "anon-pages");
	double t0;
	struct frag f;

	if (kind < 0)
		kt_bail("unknown workload %s", argv[1]);
	kt_plan(4);
	direct_requests_off();
	rng = 0xc0a1e5ce;
	if (read_str(PROACTIVE, proactive, sizeof(proactive)) <= 0)
		kt_bail("cannot read %s", PROACTIVE);
	proactive[strcspn(proactive, "\n")] = '\0';
	atexit(restore_proactive);
	write_str(PROACTIVE, "0");
	refragment(&f, kind, 0x5197ce11);
	base_iso = settled_isolated(0, 25);
	base_blocks = isolated_pageblocks();
	kt_diag("%s: %zu pages, %zu in use; nr_isolated %ld, isolated pageblocks %ld",
		frag_kind_name(kind), f.npages, frag_used_pages(&f), base_iso, base_blocks);

	t0 = now();
	for (int i = 0; hits < WANT_HITS && now() - t0 < SECONDS; i++) {
		const char *req = reqs[i % 3];
		int status;
		pid_t pid = fork();

		if (pid < 0)
			kt_bail("fork: %s", strerror(errno));
		if (pid == 0) {
			write_str(COALESCE, req);
			_exit(0);
		}
		/* Long enough to be working, short enough not to be done. */
		msleep(15 + rnd() % 100);
		kill(pid, SIGKILL);
		if (waitpid(pid, &status, 0) != pid)
			kt_bail("waitpid: %s", strerror(errno));
		kills++;
		if (interrupted(req)) {
			if (++hits % 25 == 0)
				kt_diag("%d requests interrupted after %.0f s", hits, now() - t0);
		} else if (!WIFSIGNALED(status)) {
			/* The request ran out of work: fragment memory again. */
			finished++;
			bad += frag_check(&f);
			frag_release(&f);
			refragment(&f, kind, 0x5197ce11 + ++refrag);
		}
		iso = nr_isolated() - base_iso;
		if (iso > worst)
			worst = iso;
	}
	iso = settled_isolated(base_iso, 50);
	blocks = isolated_pageblocks();
	kt_diag("%d kills, %d requests interrupted, %d finished first, %d refragmentations; "
		"isolated right after a kill: up to %ld above the level; defrag_migrate_fail +%ld",
		kills, hits, finished, refrag, worst, vmstat("defrag_migrate_fail") - fail0);
	kt_ok(hits >= MIN_HITS, "SIGKILL interrupted %d running coalesce requests (at least %d)",
	      hits, MIN_HITS);
	kt_ok(iso <= base_iso, "nr_isolated_anon + nr_isolated_file back at their level (%ld, was %ld)",
	      iso, base_iso);
	kt_ok(blocks >= 0 && blocks <= base_blocks,
	      "no pageblock left isolated (%ld, was %ld)", blocks, base_blocks);
	bad += frag_check(&f);
	kt_ok(bad == 0, "every page of the workload keeps its contents (%zu wrong)", bad);
	frag_release(&f);
	return kt_done();
}
