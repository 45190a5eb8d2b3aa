// SPDX-License-Identifier: GPL-2.0
/*
 * A request that could take a zone's free memory below its min watermark
 * is not started: migration needs a free target for every page it moves,
 * isolated pageblocks' free pages do not count as free, and the memory
 * below the min watermark belongs to atomic allocations and reclaim, as
 * compaction_suitable() keeps it. With a zone's free memory just above its
 * min watermark (vm.min_free_kbytes raised until it is; filling memory
 * instead would invite the OOM killer), coalesce of order N on that zone's
 * node fails at once with ENOMEM, reason "watermark", nothing is scored,
 * no range attempted, no page moved; the gate's tracepoint shows the mark
 * it asked for: the min watermark + the range's pageblocks (each page of
 * them either free, and not counted as free while isolated, or in use and
 * needing a migration target). With the
 * watermark back where it was, the same request is not refused for it.
 *
 * Raising min_free_kbytes raises every zone's min in proportion to its
 * size. So that only the zone under test comes near its min, anon memory
 * bound to its node first lowers that zone's share of free pages well
 * below every other zone's: the others stay above their high watermark,
 * allocations never take the slow path, kswapd and the OOM killer stay
 * asleep. The bound memory and the raised value live only in a child
 * process: the parent (out of the OOM killer's reach) puts
 * min_free_kbytes back whatever happens to the child.
 */
#include "kdefrag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIN_FREE "/proc/sys/vm/min_free_kbytes"
#define TRACING "/sys/kernel/tracing"
#define ORDER 10
/* Where the zone's free pages are put: this far above its min watermark. */
#define ABOVE 256L
#define SECONDS 30
#define MPOL_BIND 2		/* <linux/mempolicy.h> */
#define CHUNK (8UL << 20)
#define MAX_CHUNKS 128

/* setup_per_zone_wmarks() shares min_free_kbytes among these by size. */
static bool lowmem(const struct zone_info *z)
{
	return z->managed > 0 && strcmp(z->name, "Movable") && strcmp(z->name, "HighMem");
}

static struct zone_info zone_now(int node, const char *name)
{
	struct zone_info z[16];
	int n = read_zoneinfo(z, 16);

	for (int i = 0; i < n; i++)
		if (z[i].node == node && !strcmp(z[i].name, name))
			return z[i];
	kt_bail("zone %s of node %d not in /proc/zoneinfo", name, node);
}

/* Lowest share of free pages among the other lowmem zones. */
static double others_ratio(int node, const char *name)
{
	struct zone_info z[16];
	int n = read_zoneinfo(z, 16);
	double low = 1.0;

	for (int i = 0; i < n; i++)
		if (lowmem(&z[i]) && !(z[i].node == node && !strcmp(z[i].name, name)) &&
		    (double)z[i].free / z[i].managed < low)
			low = (double)z[i].free / z[i].managed;
	return low;
}

/* Field @key (e.g. "reason=") of a result line; "" if absent. */
static void field(const char *line, const char *key, char *out, size_t len)
{
	const char *p = strstr(line, key);
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	n = strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* The free= and mark= of the last defrag_watermark event; false if none. */
static bool gate_event(long *free, long *mark)
{
	static char buf[1 << 16];
	char *p, *q = NULL;

	if (read_str(TRACING "/trace", buf, sizeof(buf)) < 0)
		return false;
	for (p = strstr(buf, "defrag_watermark:"); p; p = strstr(p + 1, "defrag_watermark:"))
		q = p;
	return q && (p = strstr(q, " free=")) && sscanf(p, " free=%ld mark=%ld", free, mark) == 2;
}

/*
 * What the child saw, for the parent to judge once min_free_kbytes is
 * back: the child alone holds the memory bound to the node and the raised
 * watermark, so whatever happens to it, the parent restores the value.
 */
struct outcome {
	int ret, tries, nchunks;
	bool conclusive, event;
	long datt, dmig, gap, ev_free, ev_mark;
	size_t bad;
	struct zone_info before, after;
	char kb[32], last[200], why[200];
};

static struct outcome *o;

#define CHILD_BAIL(...) do { \
	snprintf(o->why, sizeof(o->why), __VA_ARGS__); \
	_exit(2); \
} while (0)

/*
 * In the child: lower the zone's share of free pages to 0.6 of the other
 * zones' lowest with memory bound to its node, then raise min_free_kbytes
 * until the zone's min (unboosted, as the gate reads it) is ABOVE pages
 * below its free pages, and ask for one block. A try counts if free
 * memory was within (min, min + gap) before and after the request.
 */
static void child(const struct zone_info *zone, const char *path, const char *req)
{
	char *chunks[MAX_CHUNKS];
	unsigned long nodemask = 1UL << zone->node;
	double t0;

	for (;;) {
		struct zone_info cur = zone_now(zone->node, zone->name);
		char *p;

		if ((double)cur.free / cur.managed < 0.6 * others_ratio(zone->node, zone->name))
			break;
		if (o->nchunks == MAX_CHUNKS ||
		    cur.free - (long)(CHUNK / PAGE_SIZE) < cur.high + 4 * o->gap)
			CHILD_BAIL("node %d has %ld of %ld pages free after %d MiB, others at least %.0f%%: no room to go on",
				   zone->node, cur.free, cur.managed, o->nchunks * 8,
				   100 * others_ratio(zone->node, zone->name));
		p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			CHILD_BAIL("mmap: %s", strerror(errno));
		if (syscall(SYS_mbind, p, CHUNK, MPOL_BIND, &nodemask, 8 * sizeof(nodemask), 0))
			CHILD_BAIL("mbind to node %d: %s", zone->node, strerror(errno));
		fill_pages(p, CHUNK / PAGE_SIZE, 0x3a7e + o->nchunks);
		chunks[o->nchunks++] = p;
	}

	t0 = now();
	while (!o->conclusive && now() - t0 < SECONDS) {
		struct zone_info b = zone_now(zone->node, zone->name), a;
		long want = b.free - ABOVE, lowmem_pages = 0, att, mig;
		struct zone_info z[16];
		int n = read_zoneinfo(z, 16);

		for (int i = 0; i < n; i++)
			if (lowmem(&z[i]))
				lowmem_pages += z[i].managed;
		if (want <= 0)
			CHILD_BAIL("node %d's zone has %ld pages free", zone->node, b.free);
		o->tries++;
		snprintf(o->kb, sizeof(o->kb), "%ld",
			 4 * ((want * lowmem_pages + b.managed - 1) / b.managed));
		if (write_str(MIN_FREE, o->kb))
			CHILD_BAIL("cannot write %s to %s", o->kb, MIN_FREE);
		trace_clear();
		o->last[0] = '\0';
		att = vmstat("defrag_attempt");
		mig = vmstat("defrag_migrated");
		b = zone_now(zone->node, zone->name);
		o->ret = write_str(path, req);
		a = zone_now(zone->node, zone->name);
		o->datt = vmstat("defrag_attempt") - att;
		o->dmig = vmstat("defrag_migrated") - mig;
		read_str(path, o->last, sizeof(o->last));
		o->event = gate_event(&o->ev_free, &o->ev_mark);
		o->before = b;
		o->after = a;
		o->conclusive = b.free > b.min - b.boost && b.free < b.min - b.boost + o->gap &&
				a.free > a.min - a.boost && a.free < a.min - a.boost + o->gap;
	}
	for (int i = 0; i < o->nchunks; i++)
		o->bad += check_pages(chunks[i], CHUNK / PAGE_SIZE, 0x3a7e + i);
	_exit(0);
}

int main(void)
{
	struct zone_info z[16], zone = { .node = -1 };
	char path[96], req[16], saved[32], reason[32], v[32], last[200];
	long pb;
	int n, status, ret;
	pid_t pid;

	kt_plan(6);
	direct_requests_off();
	n = read_zoneinfo(z, 16);
	/* The zone of a node with no other populated zone: the request touches only it. */
	for (int i = 0; i < n; i++) {
		int zones = 0;

		for (int j = 0; j < n; j++)
			zones += z[j].node == z[i].node && z[j].managed > 0;
		if (zones == 1 && lowmem(&z[i]))
			zone = z[i];
	}
	if (zone.node < 0)
		kt_bail("no node with a single populated zone in /proc/zoneinfo");
	pb = pageblock_pages();
	if (pb <= 0)
		kt_bail("no \"Pages per block\" in /proc/pagetypeinfo");
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/defrag_coalesce",
		 zone.node);
	snprintf(req, sizeof(req), "%d 1", ORDER);
	if (read_str(MIN_FREE, saved, sizeof(saved)) <= 0)
		kt_bail("cannot read %s", MIN_FREE);
	saved[strcspn(saved, "\n")] = '\0';
	/* The parent must outlive the child to restore min_free_kbytes. */
	write_str("/proc/self/oom_score_adj", "-1000");
	/* Nothing for kswapd to reclaim and give back meanwhile. */
	sync();
	write_str("/proc/sys/vm/drop_caches", "3");
	/* Without it (a kernel without the gate) the cases below say so. */
	if (write_str(TRACING "/events/defrag/defrag_watermark/enable", "1"))
		kt_diag("cannot enable the defrag_watermark tracepoint");

	o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	memset(o, 0, sizeof(*o));
	/*
	 * The gate's margin for one order-N range: its pageblocks, each page
	 * of them either free (not counted as free while isolated) or in use
	 * (needing a target).
	 */
	o->gap = (1L << ORDER) > pb ? (1L << ORDER) : pb;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		kt_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		write_str("/proc/self/oom_score_adj", "0");
		child(&zone, path, req);
	}
	if (waitpid(pid, &status, 0) != pid)
		kt_bail("waitpid: %s", strerror(errno));
	/* Whatever happened to the child. */
	if (write_str(MIN_FREE, saved))
		kt_bail("cannot restore %s to %s", MIN_FREE, saved);
	write_str(TRACING "/events/defrag/defrag_watermark/enable", "0");
	kt_diag("node %d zone %s: %d MiB bound there; %d tries, the last with min_free_kbytes %s: free %ld, min %ld, boost %ld before; free %ld, min %ld, boost %ld after",
		zone.node, zone.name, o->nchunks * 8, o->tries, o->kb,
		o->before.free, o->before.min, o->before.boost,
		o->after.free, o->after.min, o->after.boost);
	o->last[sizeof(o->last) - 1] = '\0';
	o->last[strcspn(o->last, "\n")] = '\0';
	kt_diag("result: %s; gate event: %s free=%ld mark=%ld", o->last,
		o->event ? "yes" : "none", o->ev_free, o->ev_mark);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		kt_bail("the child failed (status 0x%x): %s", status, o->why);
	if (!o->conclusive)
		kt_bail("free memory of node %d's zone never stayed within %ld pages above its min watermark",
			zone.node, o->gap);

	field(o->last, "reason=", reason, sizeof(reason));
	kt_ok(o->ret == -ENOMEM && !strcmp(reason, "watermark"),
	      "coalesce %s on node %d, %ld pages above its min watermark: %s, reason %s (want ENOMEM, watermark)",
	      req, zone.node, o->before.free - (o->before.min - o->before.boost),
	      strerror(-o->ret), reason);
	kt_ok(o->event && o->ev_mark == o->before.min - o->before.boost + o->gap &&
	      o->ev_free <= o->ev_mark,
	      "the gate's mark is the min watermark + the range's pageblocks (%ld = %ld + %ld), free %ld not above it",
	      o->ev_mark, o->before.min - o->before.boost, o->gap, o->ev_free);
	field(o->last, "tried=", v, sizeof(v));
	kt_ok(!strcmp(v, "0") && strstr(o->last, " scanned=0 ") && strstr(o->last, " migrated=0 ") &&
	      o->datt == 0 && o->dmig == 0,
	      "nothing scored, attempted or migrated (tried=%s, defrag_attempt +%ld, defrag_migrated +%ld)",
	      v, o->datt, o->dmig);
	read_str(MIN_FREE, last, sizeof(last));
	kt_ok(atol(last) == atol(saved), "min_free_kbytes back at %s (%ld)", saved, atol(last));

	/* The gate lifts with the watermark. */
	ret = write_str(path, req);
	read_str(path, last, sizeof(last));
	field(last, "reason=", reason, sizeof(reason));
	kt_ok(strcmp(reason, "watermark") != 0,
	      "with min_free_kbytes back, the same request is not refused for the watermark (%s, reason %s)",
	      ret ? strerror(-ret) : "made", reason);
	kt_ok(o->bad == 0, "the %d MiB bound to node %d keep their contents (%zu pages wrong)",
	      o->nchunks * 8, zone.node, o->bad);
	return kt_done();
}
