// SPDX-License-Identifier: GPL-2.0
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int kt_n, kt_failed;

static int kt_planned = -1;

/* Every line reaches the results port as it is printed, not at exit. */
__attribute__((constructor)) static void kt_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

void kt_plan(int n)
{
	kt_planned = n;
	printf("KTAP version 1\n1..%d\n", n);
	fflush(stdout);
}

bool kt_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", cond ? "" : "not ", ++kt_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		kt_failed++;
	return cond;
}

void kt_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d ", ++kt_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP\n");
	fflush(stdout);
}

void kt_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

int kt_done(void)
{
	kt_diag("%d cases, %d failed", kt_n, kt_failed);
	/* A program that skipped cases it planned has not passed. */
	if (kt_n != kt_planned) {
		kt_diag("planned %d cases, reported %d", kt_planned, kt_n);
		return 1;
	}
	return kt_failed ? 1 : 0;
}

void kt_bail(const char *fmt, ...)
{
	va_list ap;

	printf("not ok %d bail out: ", ++kt_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

uint64_t rng = 1;

uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

long vmstat(const char *name)
{
	char key[128];
	long val, ret = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%127s %ld", key, &val) == 2) {
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	}
	fclose(f);
	return ret;
}

static long buddy_sum(int node, int order, bool pages);

long buddy_blocks(int node, int order)
{
	return buddy_sum(node, order, false);
}

long buddy_pages(int node, int order)
{
	return buddy_sum(node, order, true);
}

static long buddy_sum(int node, int order, bool pages)
{
	char line[512];
	long total = 0;
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int nid, o = 0, off;
		char zone[32];
		char *p = line;
		long cnt;

		if (sscanf(p, "Node %d, zone %31s%n", &nid, zone, &off) != 2)
			continue;
		p += off;
		while (sscanf(p, "%ld%n", &cnt, &off) == 1) {
			if ((node < 0 || node == nid) && o >= order)
				total += pages ? cnt << o : cnt;
			o++;
			p += off;
		}
	}
	fclose(f);
	return total;
}

int write_raw(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

int write_str(const char *path, const char *s)
{
	return write_raw(path, s, strlen(s));
}

int trace_clear(void)
{
	/* Only an O_TRUNC open clears the buffer; a 0-byte write does not. */
	int fd = open("/sys/kernel/tracing/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int read_zoneinfo(struct zone_info *z, int max)
{
	char line[256], name[16];
	int n = 0, node;
	unsigned long u;
	long v;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		struct zone_info *c = n ? &z[n - 1] : NULL;

		if (sscanf(line, "Node %d, zone %15s", &node, name) == 2) {
			if (n == max)
				break;
			z[n] = (struct zone_info){ .node = node };
			strcpy(z[n].name, name);
			n++;
		} else if (!c) {
			continue;
		} else if (sscanf(line, " pages free %ld", &v) == 1) {
			c->free = v;
		} else if (sscanf(line, " min %ld", &v) == 1) {
			c->min = v;
		} else if (sscanf(line, " boost %ld", &v) == 1) {
			c->boost = v;
		} else if (sscanf(line, " high %ld", &v) == 1) {	/* not the pagesets' "high:" */
			c->high = v;
		} else if (sscanf(line, " managed %ld", &v) == 1) {
			c->managed = v;
		} else if (sscanf(line, " spanned %lu", &u) == 1) {
			c->spanned = u;
		} else if (sscanf(line, " present %lu", &u) == 1) {
			c->present = u;
		} else if (sscanf(line, " start_pfn: %lu", &u) == 1) {
			c->start_pfn = u;
		}
	}
	fclose(f);
	return n;
}

unsigned long zone_boundary_pfn(void)
{
	struct zone_info z[16];
	int n = read_zoneinfo(z, 16), populated = 0;

	for (int i = 0; i < n; i++)
		if (z[i].present && ++populated == 2)
			return z[i].start_pfn;
	return 0;
}

int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = 0;

	if (fd < 0)
		return -errno;
	size_t got = 0;

	/* Some files (tracing, seq_file) return one page per read(). */
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd);
	return n < 0 ? -errno : (int)got;
}

void reasons_print(const char *before)
{
	char now[2048], line[256] = "", *p, *q;

	if (read_str(DEFRAG_REASONS, now, sizeof(now)) < 0)
		return;
	for (p = now; *p; p = q + 1) {
		char name[32], *b;
		long n, n0 = 0;

		q = strchrnul(p, '\n');
		if (sscanf(p, "%31s %ld", name, &n) != 2)
			break;
		b = strstr(before, name);
		if (b)
			sscanf(b + strlen(name), "%ld", &n0);
		if (n > n0)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %s %ld",
				 name, n - n0);
		if (!*q)
			break;
	}
	printf("ranges given up:%s\n", *line ? line : " none");
}

int setting_get(const char *path, char *val, size_t len)
{
	char buf[256], *l, *r;
	int n = read_str(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (r)
		*r = '\0';
	snprintf(val, len, "%s", r ? l + 1 : buf);
	val[strcspn(val, "\n")] = '\0';
	return 0;
}

#define MAX_SETTINGS 32
static struct {
	char path[128], val[64];
} settings[MAX_SETTINGS];
static int nsettings;
static pid_t settings_owner;	/* the process that saved them */

void settings_restore(void)
{
	/* A forked child's exit() is not the program's end. */
	if (getpid() != settings_owner)
		return;
	for (int i = nsettings - 1; i >= 0; i--)
		if (write_str(settings[i].path, settings[i].val))
			printf("# cannot restore %s to %s\n", settings[i].path, settings[i].val);
}

void setting_set(const char *path, const char *val)
{
	int i;

	for (i = 0; i < nsettings && strcmp(settings[i].path, path); i++)
		;
	if (i == nsettings) {
		if (i == MAX_SETTINGS || strlen(path) >= sizeof(settings[i].path))
			kt_bail("cannot save %s: too many settings or too long a path", path);
		if (setting_get(path, settings[i].val, sizeof(settings[i].val)))
			kt_bail("cannot read %s", path);
		snprintf(settings[i].path, sizeof(settings[i].path), "%s", path);
		if (!nsettings) {
			settings_owner = getpid();
			atexit(settings_restore);
		}
		nsettings++;
	}
	if (write_str(path, val))
		kt_bail("cannot write %s to %s", val, path);
}

void direct_requests_off(void)
{
	setting_set("/sys/kernel/mm/defrag/direct", "0");
}

uint64_t virt_to_pfn(const void *addr)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent), (uintptr_t)addr / PAGE_SIZE * 8) != sizeof(ent))
		ent = 0;
	close(fd);
	if (!(ent & (1ULL << 63)))
		return 0;
	return ent & ((1ULL << 55) - 1);
}

/* One u64 entry of a /proc/kpage* file, kept open in *fd; ~0 on error. */
static uint64_t kpage_entry(const char *path, int *fd, uint64_t pfn)
{
	uint64_t ent;

	if (*fd < 0)
		*fd = open(path, O_RDONLY);
	if (*fd < 0 || pread(*fd, &ent, sizeof(ent), pfn * 8) != sizeof(ent))
		return ~0ULL;
	return ent;
}

uint64_t kpageflags(uint64_t pfn)
{
	static int fd = -1;

	return kpage_entry("/proc/kpageflags", &fd, pfn);
}

uint64_t kpagecount(uint64_t pfn)
{
	static int fd = -1;

	return kpage_entry("/proc/kpagecount", &fd, pfn);
}

int kpf_snapshot(struct kpf_zone *z, int max)
{
	struct zone_info zi[16];
	int nz = read_zoneinfo(zi, 16), n = 0, fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0)
		return -1;
	for (int i = 0; i < nz && n < max; i++) {
		size_t len = zi[i].spanned * 8;

		if (!zi[i].present)
			continue;
		z[n].node = zi[i].node;
		snprintf(z[n].name, sizeof(z[n].name), "%s", zi[i].name);
		z[n].start = zi[i].start_pfn;
		z[n].end = zi[i].start_pfn + zi[i].spanned;
		z[n].flags = malloc(len);
		if (!z[n].flags || pread(fd, z[n].flags, len, z[n].start * 8) != (ssize_t)len) {
			free(z[n].flags);
			kpf_release(z, n);
			close(fd);
			return -1;
		}
		n++;
	}
	close(fd);
	return n;
}

void kpf_release(struct kpf_zone *z, int nz)
{
	for (int i = 0; i < nz; i++)
		free(z[i].flags);
}

int kpf_zone_of(const struct kpf_zone *z, int nz, unsigned long pfn)
{
	for (int i = 0; i < nz; i++)
		if (pfn >= z[i].start && pfn < z[i].end)
			return i;
	return -1;
}

long kpf_cost(const struct kpf_zone *z, unsigned long start, unsigned long end)
{
	long used = 0;

	if (end <= start || start < z->start || end > z->end)
		return -1;
	for (unsigned long pfn = start; pfn < end; pfn++) {
		uint64_t f = z->flags[pfn - z->start];

		if (f & (1ULL << KPF_BUDDY))
			continue;
		if (!(f & (1ULL << KPF_LRU)) || (f & (1ULL << KPF_WRITEBACK)))
			return -1;
		used++;
	}
	return used;
}

long kpf_free(const struct kpf_zone *z)
{
	long n = 0;

	for (unsigned long pfn = z->start; pfn < z->end; pfn++)
		n += !!(z->flags[pfn - z->start] & (1ULL << KPF_BUDDY));
	return n;
}

long kpf_used(const struct kpf_zone *z, unsigned long start, unsigned long end)
{
	long used = 0;

	if (end <= start || start < z->start || end > z->end)
		return -1;
	for (unsigned long pfn = start; pfn < end; pfn++)
		used += !(z->flags[pfn - z->start] & (1ULL << KPF_BUDDY));
	return used;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

long *kpf_range_costs(const struct kpf_zone *z, int nz, int order, long *n, long *free_ranges)
{
	unsigned long span = 1UL << order;
	long max = 1, *costs;

	for (int k = 0; k < nz; k++)
		max += (z[k].end - z[k].start) / span + 1;
	costs = malloc(max * sizeof(long));
	*n = *free_ranges = 0;
	if (!costs)
		return NULL;
	for (int k = 0; k < nz; k++)
		for (unsigned long pfn = (z[k].start + span - 1) & ~(span - 1);
		     pfn + span <= z[k].end; pfn += span) {
			long c = kpf_cost(&z[k], pfn, pfn + span);

			if (c == 0)
				(*free_ranges)++;
			else if (c > 0)
				costs[(*n)++] = c;
		}
	qsort(costs, *n, sizeof(long), cmp_long);
	return costs;
}

long kpf_cheapest(const struct kpf_zone *z, int order, long k, long *free_ranges)
{
	long n, sum = 0, *costs = kpf_range_costs(z, 1, order, &n, free_ranges);

	if (!costs)
		return -1;
	if (k > n)
		k = -1;
	for (long i = 0; k > 0 && i < k; i++)
		sum += costs[i];
	free(costs);
	return k < 0 ? -1 : sum;
}

int traced_ranges(struct traced_range *r, int max)
{
	static char buf[8 << 20];
	char *line, *save;
	int n = 0;

	if (read_str("/sys/kernel/tracing/trace", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, "defrag_range_evacuated:");
		bool made = p;

		if (!p)
			p = strstr(line, "defrag_range_failed:");
		if (!p || !strstr(p, "range=") || !strstr(p, "nr_migrated=") ||
		    sscanf(strstr(p, "range="), "range=(0x%lx ~ 0x%lx)", &r[n].start, &r[n].end) != 2 ||
		    sscanf(strstr(p, "nr_migrated="), "nr_migrated=%lu", &r[n].migrated) != 1)
			continue;
		r[n++].made = made;
	}
	return n;
}

#define RANGE_EVENTS "/sys/kernel/tracing/events/defrag/"

static int range_events(const char *on)
{
	return write_str(RANGE_EVENTS "defrag_range_evacuated/enable", on) ||
	       write_str(RANGE_EVENTS "defrag_range_failed/enable", on) ? -1 : 0;
}

int range_trace(bool on)
{
	if (!on)
		return range_events("0");
	if (write_str("/sys/kernel/tracing/buffer_size_kb", "8192") || range_events("1"))
		return -1;
	return trace_clear();
}

int coalesce_measured(struct measured_coalesce *m, int order, long count, uint64_t seed)
{
	long total_kb = meminfo_kb("MemTotal"), mig0, scan0;
	char req[64];

	memset(m, 0, sizeof(*m));
	m->nr = -1;
	m->r = malloc(MEASURED_MAX_RANGES * sizeof(*m->r));
	if (total_kb <= 0 || !m->r)
		goto fail;
	/* The request's own ranges only, in the trace and the counters. */
	direct_requests_off();
	if (fragment(&m->f, FRAG_SPARSE, total_kb * 3 / 100, seed))
		goto fail;
	if (range_trace(true))
		goto fail_frag;
	settled_free_kb();	/* drains the per-CPU lists: kpageflags cannot see them */
	m->nz = kpf_snapshot(m->z, 16);
	if (m->nz < 1)
		goto fail_trace;
	read_str(DEFRAG_REASONS, m->reasons_before, sizeof(m->reasons_before));
	mig0 = vmstat("defrag_migrated");
	scan0 = vmstat("defrag_scanned");
	snprintf(req, sizeof(req), "%d %ld", order, count);
	m->ret = write_str("/sys/kernel/mm/defrag/coalesce", req);
	m->migrated = vmstat("defrag_migrated") - mig0;
	m->scanned = vmstat("defrag_scanned") - scan0;
	range_events("0");
	read_str("/sys/kernel/mm/defrag/coalesce", m->result, sizeof(m->result));
	m->result[strcspn(m->result, "\n")] = '\0';
	m->nr = traced_ranges(m->r, MEASURED_MAX_RANGES);
	return 0;
fail_trace:
	range_events("0");
fail_frag:
	frag_release(&m->f);
fail:
	free(m->r);
	m->r = NULL;
	return -1;
}

void measured_release(struct measured_coalesce *m)
{
	kpf_release(m->z, m->nz);
	frag_release(&m->f);
	free(m->r);
	m->r = NULL;
}

bool pfn_free(uint64_t pfn)
{
	uint64_t fl = kpageflags(pfn);

	if (fl == ~0ULL)
		return false;
	return (fl & (1ULL << KPF_BUDDY)) ||
	       (!fl && kpagecount(pfn) == 0);
}

bool pfn_buddy(uint64_t pfn)
{
	uint64_t fl = kpageflags(pfn);

	return fl != ~0ULL && (fl & (1ULL << KPF_BUDDY));
}

char *map_advised(size_t len, size_t align, char **raw)
{
	char *p;

	*raw = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (*raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)*raw + align - 1) & ~(uintptr_t)(align - 1));
	if (madvise(p, len, MADV_HUGEPAGE)) {
		int err = errno;

		munmap(*raw, len + align);
		errno = err;
		return NULL;
	}
	return p;
}

void pcp_drain(void)
{
	static char buf[16384];

	read_str("/sys/kernel/debug/defrag/summary", buf, sizeof(buf));
}

/* From mm/gup_test.h */
struct pin_longterm_test {
	uint64_t addr;
	uint64_t size;
	uint32_t flags;
};
#define PIN_LONGTERM_TEST_START	_IOW('g', 7, struct pin_longterm_test)
#define PIN_LONGTERM_TEST_STOP	_IO('g', 8)
#define PIN_LONGTERM_TEST_FLAG_USE_WRITE	1

int pin_longterm(void *addr, size_t len)
{
	struct pin_longterm_test pin = { .addr = (uintptr_t)addr, .size = len,
					 .flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE };
	int fd = open("/sys/kernel/debug/gup_test", O_RDWR), err;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, PIN_LONGTERM_TEST_START, &pin)) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

void unpin_longterm(int fd)
{
	ioctl(fd, PIN_LONGTERM_TEST_STOP);
	close(fd);
}

static int fault_attr(const char *dir, const char *attr, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s%s", dir, attr);
	return write_str(path, val);
}

int fault_arm(const char *dir, int probability, bool task_only)
{
	char buf[32];
	int ret;

	snprintf(buf, sizeof(buf), "%d", FAULT_TIMES);
	ret = fault_attr(dir, "times", buf);
	if (ret)
		return ret;
	fault_attr(dir, "interval", "1");
	fault_attr(dir, "verbose", "0");
	fault_attr(dir, "task-filter", task_only ? "Y" : "N");
	/* fail_page_alloc only: sleeping, highmem and order-0 calls fail too. */
	fault_attr(dir, "ignore-gfp-wait", "N");
	fault_attr(dir, "ignore-gfp-highmem", "N");
	fault_attr(dir, "min-order", "0");
	snprintf(buf, sizeof(buf), "%d", probability);
	return fault_attr(dir, "probability", buf);
}

long fault_disarm(const char *dir)
{
	char path[256], buf[32];

	fault_attr(dir, "probability", "0");
	snprintf(path, sizeof(path), "%stimes", dir);
	if (read_str(path, buf, sizeof(buf)) < 0)
		return 0;
	return FAULT_TIMES - strtol(buf, NULL, 10);
}

long meminfo_kb(const char *name)
{
	char key[64], want[64];
	long val;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%s:", name);
	while (fscanf(f, "%63s %ld kB", key, &val) == 2) {
		if (!strcmp(key, want)) {
			fclose(f);
			return val;
		}
	}
	fclose(f);
	return -1;
}

long mem_free_kb(void)
{
	return meminfo_kb("MemFree");
}

long free_slack_kb(void)
{
	char line[256];
	bool kasan = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	while (f && !kasan && fgets(line, sizeof(line), f))
		kasan = strstr(line, " kasan_quarantine_reduce\n") != NULL;
	if (f)
		fclose(f);
	return 16 * 1024 + (kasan ? meminfo_kb("MemTotal") / 32 : 0);
}

long settled_free_kb(void)
{
	sleep(1);
	pcp_drain();
	return mem_free_kb();
}

long pageblocks_of_type(int node, const char *zone, const char *type)
{
	static char buf[16384];
	char *p, *end, *line;
	int col = -1, n = 0;
	long total = 0;

	if (read_str("/proc/pagetypeinfo", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "Number of blocks type");
	if (!p)
		return -1;
	/* Only this section: page_owner adds a "mixed blocks" one after it. */
	end = strstr(p, "\n\n");
	if (end)
		*end = '\0';
	/* The header names the columns, which depend on the config. */
	line = p + strlen("Number of blocks type");
	end = strchr(line, '\n');
	if (!end)
		return -1;
	*end = '\0';
	for (char *tok = strtok(line, " "); tok; tok = strtok(NULL, " "), n++)
		if (!strcmp(tok, type))
			col = n;
	if (col < 0)
		return -1;
	p = end;
	while ((p = strstr(p + 1, "Node"))) {
		char name[16];
		int nd, off = 0;
		long v;

		/* "Node N, zone NAME <count per type>" */
		if (sscanf(p, "Node %d, zone %15s%n", &nd, name, &off) != 2)
			continue;
		if ((node >= 0 && nd != node) || (zone && strcmp(zone, name)))
			continue;
		line = p + off;
		for (int c = 0; c <= col; c++) {
			int used = 0;

			if (sscanf(line, " %ld%n", &v, &used) != 1)
				return -1;
			line += used;
		}
		total += v;
	}
	return total;
}

long pageblock_pages(void)
{
	char line[256];
	long v = 0;
	FILE *f = fopen("/proc/pagetypeinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pages per block: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

long isolated_pageblocks(void)
{
	return pageblocks_of_type(-1, NULL, "Isolate");
}

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

void fill_pages(void *p, size_t npages, uint64_t seed)
{
	for (size_t i = 0; i < npages; i++) {
		uint64_t *w = (uint64_t *)((char *)p + i * PAGE_SIZE);
		uint64_t v = mix(seed + i);

		for (size_t j = 0; j < PAGE_SIZE / 8; j++)
			w[j] = v + j;
	}
}

size_t check_pages(const void *p, size_t npages, uint64_t seed)
{
	size_t bad = 0;

	for (size_t i = 0; i < npages; i++) {
		const uint64_t *w = (const uint64_t *)((const char *)p + i * PAGE_SIZE);
		uint64_t v = mix(seed + i);

		for (size_t j = 0; j < PAGE_SIZE / 8; j++) {
			if (w[j] != v + j) {
				bad++;
				break;
			}
		}
	}
	return bad;
}

static const char *const frag_names[FRAG_NR_KINDS] = {
	[FRAG_ANON_PAGES] = "anon-pages",
	[FRAG_ANON_RUNS] = "anon-runs",
	[FRAG_TMPFS] = "tmpfs",
	[FRAG_EXT4] = "ext4",
	[FRAG_MIX] = "mix",
	[FRAG_SPARSE] = "sparse",
};

const char *frag_kind_name(enum frag_kind kind)
{
	return frag_names[kind];
}

int frag_kind_parse(const char *name)
{
	for (int k = 0; k < FRAG_NR_KINDS; k++)
		if (!strcmp(name, frag_names[k]))
			return k;
	return -1;
}

/*
 * Which pages to release, reproducibly from the seed: one coin per page
 * (mostly single-page holes), or alternating kept and released runs of
 * 1..64 pages with log-uniform lengths, as when objects of many sizes
 * (files, buffers, processes) come and go on a long-running system.
 */
static void frag_mark(struct frag *f)
{
	uint64_t s = f->seed;
	bool rel = mix(s) & 1;
	size_t i = 0;

	if (f->kind == FRAG_ANON_PAGES || f->kind == FRAG_SPARSE) {
		/* sparse: 3 of 4 */
		unsigned int mask = f->kind == FRAG_SPARSE ? 3 : 1;

		for (i = 0; i < f->npages; i++)
			f->released[i] = !!(mix(f->seed ^ (i * 0x9e3779b97f4a7c15ULL)) & mask);
		return;
	}
	while (i < f->npages) {
		size_t len;

		s = mix(s + 0x9e3779b97f4a7c15ULL);
		len = 1 + (s >> 8) % (1UL << (s % 7));
		while (len-- && i < f->npages)
			f->released[i++] = rel;
		rel = !rel;
	}
}

/* Calls @fn on each run [first, first + n) of released pages. */
static void frag_for_released(struct frag *f, void (*fn)(struct frag *, size_t, size_t))
{
	for (size_t i = 0; i < f->npages;) {
		size_t j = i;

		while (j < f->npages && f->released[j] == f->released[i])
			j++;
		if (f->released[i])
			fn(f, i, j - i);
		i = j;
	}
}

static void release_anon(struct frag *f, size_t first, size_t n)
{
	madvise(f->base + first * PAGE_SIZE, n * PAGE_SIZE, MADV_DONTNEED);
}

static void release_tmpfs(struct frag *f, size_t first, size_t n)
{
	fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  first * PAGE_SIZE, n * PAGE_SIZE);
}

/* Clean page cache leaves memory, not the file: it reads back from disk. */
static void release_cache(struct frag *f, size_t first, size_t n)
{
	posix_fadvise(f->fd, first * PAGE_SIZE, n * PAGE_SIZE, POSIX_FADV_DONTNEED);
}

/* Pipe pages are plain unmovable kernel allocations that userspace holds. */
#define FRAG_PIPES 1024
#define FRAG_PIPE_PAGES 16	/* a pipe's default capacity */
#define FRAG_PIPE_EVERY 16	/* one pipe page after this many anon pages */

static int frag_pipe_page(struct frag *f)
{
	size_t k = f->pipe_pages;
	char page[PAGE_SIZE];

	if (k >= (size_t)FRAG_PIPES * FRAG_PIPE_PAGES)
		return 0;
	fill_pages(page, 1, f->seed + 0x50000000 + k);
	if (write(f->pipes[k % FRAG_PIPES][1], page, PAGE_SIZE) != PAGE_SIZE)
		return -1;
	f->pipe_pages++;
	return 0;
}

/* sparse: a small tmpfs file (an inode, a dentry, a page of shmem). */
#define FRAG_FILES "/mnt/tmpfs/frag-files"
#define FRAG_FILE_EVERY 64	/* one file after this many anon pages */

/* A small file's one page: its own pattern, checked by frag_check(). */
#define FRAG_FILE_SEED(f, n) ((f)->seed + 0x60000000 + (n))

static int frag_small_file(struct frag *f)
{
	static char page[PAGE_SIZE];
	char path[64];
	int fd;

	snprintf(path, sizeof(path), FRAG_FILES "/%zu", f->files);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	fill_pages(page, 1, FRAG_FILE_SEED(f, f->files));
	f->files++;
	if (write(fd, page, PAGE_SIZE) != PAGE_SIZE) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int frag_file(struct frag *f, const char *path, size_t len)
{
	f->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (f->fd < 0)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s", path);
	if (f->kind == FRAG_TMPFS) {
		if (ftruncate(f->fd, len))
			return -1;
		f->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
		if (f->base == MAP_FAILED) {
			f->base = NULL;
			return -1;
		}
		fill_pages(f->base, f->npages, f->seed);
		return 0;
	}
	/* ext4: written, on disk, and only in the page cache (not mapped). */
	for (size_t i = 0; i < f->npages; i += 64) {
		static char buf[64 * PAGE_SIZE];
		size_t n = f->npages - i < 64 ? f->npages - i : 64;

		fill_pages(buf, n, f->seed + i);
		if (pwrite(f->fd, buf, n * PAGE_SIZE, i * PAGE_SIZE) != (ssize_t)(n * PAGE_SIZE))
			return -1;
	}
	return fsync(f->fd);
}

static int do_fragment(struct frag *f, enum frag_kind kind, long leave_kb, uint64_t seed)
{
	long free_kb = mem_free_kb();
	char num[32];
	size_t len;

	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->seed = seed;
	f->fd = -1;
	/*
	 * Stay well above the min watermarks (min_free_kbytes, all zones):
	 * the kernel's own allocations while the workload runs (page tables,
	 * page_owner and lockdep on debug kernels) must not OOM it.
	 */
	if (read_str("/proc/sys/vm/min_free_kbytes", num, sizeof(num)) > 0 &&
	    leave_kb < 2 * atol(num) + 16 * 1024)
		leave_kb = 2 * atol(num) + 16 * 1024;
	if (free_kb < 0 || free_kb <= leave_kb)
		return -1;
	len = (size_t)(free_kb - leave_kb) * 1024 / PAGE_SIZE * PAGE_SIZE;
	if (kind == FRAG_MIX)	/* room for the pipe pages */
		len -= len / (FRAG_PIPE_EVERY + 1) / PAGE_SIZE * PAGE_SIZE;
	if (kind == FRAG_SPARSE)	/* and for the files' pages and slab */
		len -= len / FRAG_FILE_EVERY / PAGE_SIZE * PAGE_SIZE;
	f->npages = len / PAGE_SIZE;
	f->released = calloc(f->npages, 1);
	if (!f->released)
		return -1;
	frag_mark(f);

	switch (kind) {
	case FRAG_TMPFS:
		if (frag_file(f, "/mnt/tmpfs/frag", len))
			return -1;
		frag_for_released(f, release_tmpfs);
		return 0;
	case FRAG_EXT4:
		if (frag_file(f, "/mnt/disk/frag", len))
			return -1;
		frag_for_released(f, release_cache);
		return 0;
	default:
		break;
	}
	f->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f->base == MAP_FAILED) {
		f->base = NULL;
		return -1;
	}
	/* Order-0 pages only: THP would hand us pre-coalesced blocks. */
	madvise(f->base, len, MADV_NOHUGEPAGE);
	if (kind == FRAG_MIX) {
		struct rlimit rl = { 4 * FRAG_PIPES, 4 * FRAG_PIPES };

		f->pipes = calloc(FRAG_PIPES, sizeof(*f->pipes));
		if (!f->pipes || setrlimit(RLIMIT_NOFILE, &rl))
			return -1;
		for (f->npipes = 0; f->npipes < FRAG_PIPES; f->npipes++)
			if (pipe(f->pipes[f->npipes]))
				return -1;
	}
	if (kind == FRAG_SPARSE && mkdir(FRAG_FILES, 0700) && errno != EEXIST)
		return -1;
	/* Page by page, so that the kernel's pages are allocated among the anon ones. */
	for (size_t i = 0; i < f->npages; i++) {
		fill_pages(f->base + i * PAGE_SIZE, 1, seed + i);
		if (kind == FRAG_MIX && i % FRAG_PIPE_EVERY == FRAG_PIPE_EVERY - 1 &&
		    frag_pipe_page(f))
			return -1;
		if (kind == FRAG_SPARSE && i % FRAG_FILE_EVERY == FRAG_FILE_EVERY - 1 &&
		    frag_small_file(f))
			return -1;
	}
	frag_for_released(f, release_anon);
	return 0;
}

int fragment(struct frag *f, enum frag_kind kind, long leave_kb, uint64_t seed)
{
	int saved, ret = do_fragment(f, kind, leave_kb, seed);

	/* Leave nothing behind (a file in tmpfs would pin memory for good). */
	if (ret) {
		saved = errno;
		frag_release(f);
		errno = saved;
	}
	return ret;
}

int fragment_anon(struct frag *f, long leave_kb, uint64_t seed)
{
	return fragment(f, FRAG_ANON_PAGES, leave_kb, seed);
}

size_t frag_check(const struct frag *f)
{
	static char buf[PAGE_SIZE];
	size_t bad = 0;

	for (size_t i = 0; i < f->npages; i++) {
		const char *pg = f->base + i * PAGE_SIZE;

		if (f->kind == FRAG_EXT4) {
			/* Cached or re-read from disk, every page has its pattern. */
			if (pread(f->fd, buf, PAGE_SIZE, i * PAGE_SIZE) != PAGE_SIZE)
				bad++;
			else
				bad += check_pages(buf, 1, f->seed + i);
		} else if (f->released[i]) {
			/* Released: must read back as zero (and is faulted in again). */
			for (size_t j = 0; j < PAGE_SIZE; j += 512)
				if (pg[j]) {
					bad++;
					break;
				}
		} else {
			bad += check_pages(pg, 1, f->seed + i);
		}
	}
	/* Pipe pages come out in the order they went in, per pipe. */
	for (size_t k = 0; k < f->pipe_pages; k++) {
		size_t p = k % FRAG_PIPES;

		if (read(f->pipes[p][0], buf, PAGE_SIZE) != PAGE_SIZE)
			bad++;
		else
			bad += check_pages(buf, 1, f->seed + 0x50000000 + k);
	}
	/* The small files' pages: shmem, moved like the anon ones. */
	for (size_t n = 0; n < f->files; n++) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), FRAG_FILES "/%zu", n);
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, buf, PAGE_SIZE, 0) != PAGE_SIZE)
			bad++;
		else
			bad += check_pages(buf, 1, FRAG_FILE_SEED(f, n));
		if (fd >= 0)
			close(fd);
	}
	return bad;
}

size_t frag_used_pages(const struct frag *f)
{
	size_t used = f->pipe_pages;

	for (size_t i = 0; i < f->npages; i++)
		used += !f->released[i];
	return used;
}

void frag_release(struct frag *f)
{
	for (size_t i = 0; i < f->files; i++) {
		char path[64];

		snprintf(path, sizeof(path), FRAG_FILES "/%zu", i);
		unlink(path);
	}
	if (f->files)
		rmdir(FRAG_FILES);
	if (f->base)
		munmap(f->base, f->npages * PAGE_SIZE);
	if (f->fd >= 0) {
		close(f->fd);
		unlink(f->path);
	}
	for (size_t p = 0; p < f->npipes; p++) {
		close(f->pipes[p][0]);
		close(f->pipes[p][1]);
	}
	free(f->pipes);
	free(f->released);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}
