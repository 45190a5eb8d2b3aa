// SPDX-License-Identifier: GPL-2.0
/*
 * The background target against a client that cannot wait: loopback TCP
 * streams, whose senders take socket buffer pages with
 * skb_page_frag_refill() - order 3 first, without direct reclaim or
 * compaction, order 0 when no order-3 block is free - on memory a churn
 * keeps fragmenting; with kdefrag off (enabled=0: the allocator as on
 * stock 6.12) or with kcompactd holding a background target of BLOCKS
 * order-3 blocks per zone (default 512):
 *
 *   background_target off|target SEED [BLOCKS]
 *
 * Memory is fragmented with "anon-pages" (guest/lib fragment(): half the
 * pages released at random, so few order-3 blocks are free) from SEED,
 * leaving LEAVE_MB free, on CPU 0. Then for SECONDS: STREAMS TCP
 * connections over lo, each a sender writing 64 KiB buffers and a
 * receiver reading them; and a churn from SEED that competes for the
 * same blocks: 16 MB anon chunks faulted as 32 KiB mTHP folios where an
 * order-3 block is free (THP defrag "never": such faults neither reclaim
 * nor compact, order 0 otherwise), a random half of their pages freed,
 * the oldest of CHUNKS unmapped (its kept pages checked first), and 8 MB
 * page-cache files written to tmpfs, read back and deleted. Proactive
 * compaction and the rest as booted (the same on both sides).
 *
 * Figures: failed allocations by order (kmem:mm_page_alloc, pfn -1), of
 * unmovable ones (order 3: the streams' socket buffers, and slab's first
 * tries at its high orders, which do not reclaim either) apart from the
 * rest (order 3: the churn's mTHP faults falling back), the bytes the streams
 * moved, free blocks of order 3 or more per second (buddyinfo, summed over
 * zones: min and median), kcompactd's CPU time (utime + stime of every
 * kcompactd thread), the background counters, pages migrated and direct
 * compaction stalls.
 *
 * Fails only if it cannot measure, or if pages lost their contents.
 */
#include "kdefrag.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define SECONDS 60
#define STREAMS 4
#define LEAVE_MB 32
#define CHUNK (16UL << 20)
#define CHUNKS 32
#define FILE_MB 8
#define PORT 5800
#define TRACE "/sys/kernel/tracing/"
#define ALLOC_EVENT TRACE "events/kmem/mm_page_alloc/"
#define NR_ORDERS 11
#define THP "/sys/kernel/mm/transparent_hugepage/"

static atomic_bool stop, trace_stop;
static atomic_long streamed;
static atomic_long churn_bad, churn_rounds;
/* Failed allocations by order: [0] unmovable (the streams', slab's), [1] others. */
static long failed[2][NR_ORDERS];
static bool trace_lost;

static void lo_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		kt_bail("socket: %s", strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		kt_bail("SIOCGIFFLAGS lo: %s", strerror(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		kt_bail("SIOCSIFFLAGS lo: %s", strerror(errno));
	close(s);
}

static void *receiver(void *arg)
{
	int fd = (int)(long)arg;
	static __thread char buf[64 << 10];

	while (!stop) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0)
			break;
		streamed += n;
	}
	close(fd);
	return NULL;
}

static void *sender(void *arg)
{
	int fd = (int)(long)arg;
	static __thread char buf[64 << 10];

	memset(buf, 0x5a, sizeof(buf));
	while (!stop)
		if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) < 0)
			break;
	shutdown(fd, SHUT_RDWR);
	close(fd);
	return NULL;
}

/* One connection over lo: a receiver and a sender thread. */
static void stream(int i, pthread_t *t)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT + i) };
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), r, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || c < 0)
		kt_bail("socket: %s", strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)))
		kt_bail("loopback connection %d: %s", i, strerror(errno));
	r = accept(l, NULL, NULL);
	if (r < 0)
		kt_bail("accept: %s", strerror(errno));
	close(l);
	pthread_create(&t[0], NULL, receiver, (void *)(long)r);
	pthread_create(&t[1], NULL, sender, (void *)(long)c);
}

/* Anon chunks and page-cache files, allocated and half freed, from a seed. */
static void *churn(void *arg)
{
	uint64_t seed = (uint64_t)(long)arg;
	char *chunk[CHUNKS] = { 0 };
	uint8_t *kept[CHUNKS] = { 0 };
	size_t pages = CHUNK / PAGE_SIZE;
	char path[64];
	long round;

	rng = seed * 0x9e3779b97f4a7c15ULL + 1;	/* rnd() is this thread's alone now */
	for (round = 0; !stop; round++) {
		int c = round % CHUNKS;
		uint64_t s = seed + (uint64_t)round * pages;
		int fd;

		if (chunk[c]) {
			for (size_t i = 0; i < pages; i++)
				if (kept[c][i])
					churn_bad += check_pages(chunk[c] + i * PAGE_SIZE, 1,
								 seed + (uint64_t)(round - CHUNKS) * pages + i);
			munmap(chunk[c], CHUNK);
		}
		chunk[c] = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (chunk[c] == MAP_FAILED)
			kt_bail("mmap: %s", strerror(errno));
		if (!kept[c])
			kept[c] = malloc(pages);
		madvise(chunk[c], CHUNK, MADV_HUGEPAGE);
		fill_pages(chunk[c], pages, s);
		for (size_t i = 0; i < pages; i++) {
			kept[c][i] = rnd() & 1;
			if (!kept[c][i])
				madvise(chunk[c] + i * PAGE_SIZE, PAGE_SIZE, MADV_DONTNEED);
		}
		snprintf(path, sizeof(path), "/mnt/tmpfs/churn-%ld", round % 2);
		fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
		if (fd < 0)
			kt_bail("cannot create %s: %s", path, strerror(errno));
		{
			static char buf[64 * PAGE_SIZE];

			for (size_t off = 0; off < (FILE_MB << 20); off += sizeof(buf)) {
				fill_pages(buf, 64, s + off / PAGE_SIZE);
				if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf))
					break;
			}
			for (size_t off = 0; off < (FILE_MB << 20); off += sizeof(buf))
				if (pread(fd, buf, sizeof(buf), off) != sizeof(buf) ||
				    check_pages(buf, 64, s + off / PAGE_SIZE))
					churn_bad++;
			close(fd);
		}
		snprintf(path, sizeof(path), "/mnt/tmpfs/churn-%ld", (round + 1) % 2);
		unlink(path);
		churn_rounds++;
	}
	for (int c = 0; c < CHUNKS; c++) {
		/* Chunk c was filled in the last round r with r % CHUNKS == c. */
		long r = round - 1 - ((round - 1 - c) % CHUNKS + CHUNKS) % CHUNKS;

		if (!chunk[c])
			continue;
		for (size_t i = 0; i < pages; i++)
			if (kept[c][i])
				churn_bad += check_pages(chunk[c] + i * PAGE_SIZE, 1,
							 seed + (uint64_t)r * pages + i);
		munmap(chunk[c], CHUNK);
		free(kept[c]);
	}
	unlink("/mnt/tmpfs/churn-0");
	unlink("/mnt/tmpfs/churn-1");
	return NULL;
}

/* Counts failed allocations by order from trace_pipe until stopped. */
static void *trace_reader(void *arg)
{
	static char buf[1 << 16];
	char line[512];
	size_t len = 0;
	int fd = open(TRACE "trace_pipe", O_RDONLY | O_NONBLOCK);

	(void)arg;
	if (fd < 0) {
		trace_lost = true;
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0) {
			if (trace_stop)
				break;
			usleep(20 * 1000);
			continue;
		}
		for (ssize_t i = 0; i < n; i++) {
			char *o;
			int order;

			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			/* The ring buffer overwrote events: the counts would be short. */
			if (strstr(line, "[LOST"))
				trace_lost = true;
			o = strstr(line, "mm_page_alloc:");
			if (o && (o = strstr(o, "order=")) && sscanf(o, "order=%d", &order) == 1 &&
			    order >= 0 && order < NR_ORDERS && strstr(o, "migratetype="))
				failed[atoi(strstr(o, "migratetype=") + 12) != 0][order]++;
		}
	}
	close(fd);
	return NULL;
}

/* utime + stime of every kcompactd thread, in seconds. */
static double kcompactd_cpu(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	double secs = 0;
	long hz = sysconf(_SC_CLK_TCK);

	while (d && (e = readdir(d))) {
		char path[300], buf[512], *p;
		unsigned long ut, st;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (read_str(path, buf, sizeof(buf)) <= 0 || !strstr(buf, "(kcompactd"))
			continue;
		p = strrchr(buf, ')');
		/* After ") ": state, then fields 4..13, then utime, stime. */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st) == 2)
			secs += (double)(ut + st) / hz;
	}
	if (d)
		closedir(d);
	return secs;
}

/* Free blocks of order 3 or more, in order-3 blocks, summed over zones. */
static long order3_blocks(void)
{
	char line[512];
	long total = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "zone");
		long cnt;
		int o = 0, off;

		if (!p || sscanf(p, "zone %*s%n", &off) < 0)
			continue;
		p += off;
		while (sscanf(p, "%ld%n", &cnt, &off) == 1) {
			if (o >= 3)
				total += cnt << (o - 3);
			o++;
			p += off;
		}
	}
	if (f)
		fclose(f);
	return total;
}

/* A 32 KiB mTHP counter (stats/ of hugepages-32kB). */
static long mthp_stat(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), THP "hugepages-32kB/stats/%s", name);
	return read_str(path, buf, sizeof(buf)) > 0 ? atol(buf) : -1;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *side = argc > 1 ? argv[1] : "";
	int seed = argc > 2 ? atoi(argv[2]) : 0;
	long blocks = argc > 3 ? atol(argv[3]) : 512;
	bool target = !strcmp(side, "target");
	pthread_t st[STREAMS][2], ct, tt;
	long samples[SECONDS], w0, s0, f0, mig0, defmig0, stall0, mthp0, fb0;
	double cpu0, cpu;
	long bytes;
	struct frag f;
	cpu_set_t cpus;
	char num[32];
	size_t bad;

	if ((!target && strcmp(side, "off")) || seed < 1 || blocks < 1)
		kt_bail("usage: background_target off|target SEED [BLOCKS]");
	kt_plan(2);
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	if (fragment(&f, FRAG_ANON_PAGES, LEAVE_MB * 1024, 0xb4c0 + seed))
		kt_bail("cannot fragment memory");
	sched_setaffinity(0, sizeof(cpus), &(cpu_set_t){ { ~0UL } });
	if (target) {
		setting_set("/sys/kernel/mm/defrag/target_order", "3");
		snprintf(num, sizeof(num), "%ld", blocks);
		setting_set("/sys/kernel/mm/defrag/target_blocks", num);
	} else {
		setting_set("/sys/kernel/mm/defrag/enabled", "0");
	}
	setting_set(THP "defrag", "never");
	setting_set(THP "hugepages-2048kB/enabled", "never");
	setting_set(THP "hugepages-32kB/enabled", "madvise");
	mthp0 = mthp_stat("anon_fault_alloc");
	fb0 = mthp_stat("anon_fault_fallback");
	lo_up();
	if (write_str(TRACE "buffer_size_kb", "4096") ||
	    write_str(ALLOC_EVENT "filter", "pfn == 18446744073709551615") ||
	    write_str(ALLOC_EVENT "enable", "1"))
		kt_bail("cannot trace failed allocations (kmem:mm_page_alloc with a pfn filter)");
	trace_clear();
	pthread_create(&tt, NULL, trace_reader, NULL);
	w0 = vmstat("defrag_background_wake");
	s0 = vmstat("defrag_background_success");
	f0 = vmstat("defrag_background_fail");
	mig0 = vmstat("pgmigrate_success");
	defmig0 = vmstat("defrag_migrated");
	stall0 = vmstat("compact_stall");
	cpu0 = kcompactd_cpu();
	for (int i = 0; i < STREAMS; i++)
		stream(i, st[i]);
	pthread_create(&ct, NULL, churn, (void *)(long)(0xc4a0 + seed));
	for (int t = 0; t < SECONDS; t++) {
		sleep(1);
		samples[t] = order3_blocks();
	}
	/* The window ends here: what stopping the threads does is not counted. */
	write_str(ALLOC_EVENT "enable", "0");
	bytes = streamed;
	cpu = kcompactd_cpu() - cpu0;
	stop = true;
	for (int i = 0; i < STREAMS; i++) {
		pthread_join(st[i][1], NULL);
		pthread_join(st[i][0], NULL);
	}
	pthread_join(ct, NULL);
	trace_stop = true;
	pthread_join(tt, NULL);
	write_str(ALLOC_EVENT "filter", "0");
	qsort(samples, SECONDS, sizeof(samples[0]), cmp_long);

	printf("%s seed %d%s: %d s, %d loopback TCP streams: %.1f MB/s\n", side, seed,
	       target ? "" : " (kdefrag off)", SECONDS, STREAMS,
	       bytes / 1048576.0 / SECONDS);
	if (target)
		printf("target: %ld order-3 blocks per zone\n", blocks);
	printf("failed allocations by order, unmovable:");
	for (int o = 0; o < NR_ORDERS; o++)
		printf(" %ld", failed[0][o]);
	printf("; other migratetypes:");
	for (int o = 0; o < NR_ORDERS; o++)
		printf(" %ld", failed[1][o]);
	printf("\nunmovable order-3 failures (the streams' socket buffers, slab): %ld (%.1f/s)\n",
	       failed[0][3], (double)failed[0][3] / SECONDS);
	printf("free order>=3 blocks (all zones, in order-3 blocks): min %ld median %ld max %ld\n",
	       samples[0], samples[SECONDS / 2], samples[SECONDS - 1]);
	printf("kcompactd cpu %.2f s; background requests %ld (made blocks %ld, none %ld); "
	       "pages migrated %ld (kdefrag %ld); compact_stall %ld\n", cpu,
	       vmstat("defrag_background_wake") - w0, vmstat("defrag_background_success") - s0,
	       vmstat("defrag_background_fail") - f0, vmstat("pgmigrate_success") - mig0,
	       vmstat("defrag_migrated") - defmig0, vmstat("compact_stall") - stall0);
	printf("churn: %ld rounds of %lu MB anon and %d MB page cache; 32 KiB mTHP faults %ld, "
	       "fell back %ld\n", (long)churn_rounds, CHUNK >> 20, FILE_MB,
	       mthp_stat("anon_fault_alloc") - mthp0, mthp_stat("anon_fault_fallback") - fb0);
	kt_ok(!trace_lost && bytes > 0 && churn_rounds > 0,
	      "measured: trace read whole, %ld bytes streamed, %ld churn rounds", bytes,
	      (long)churn_rounds);
	bad = frag_check(&f) + churn_bad;
	kt_ok(bad == 0, "contents of the workload's and the churn's pages intact (%zu bad)", bad);
	frag_release(&f);
	return kt_done();
}
