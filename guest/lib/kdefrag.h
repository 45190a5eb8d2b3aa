/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kdefrag guest programs: KTAP reporting, /proc and
 * sysfs access, page contents patterns and memory fragmentation.
 */
#ifndef KDEFRAG_GUEST_H
#define KDEFRAG_GUEST_H

#include <linux/kernel-page-flags.h>	/* KPF_*, the /proc/kpageflags bits */
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define PAGE_SIZE 4096UL
#define MAX_ORDER_NR 11		/* orders 0..10 on x86_64 */

/* KTAP: kt_plan(n) first, then one kt_ok() per case; kt_done() returns the exit status. */
void kt_plan(int n);
bool kt_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kt_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kt_done(void);
/* Abort the whole program: one "not ok" plus the reason, exit 1. */
void kt_bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* xorshift64: reproducible pseudo-random numbers; seed by assigning rng (non-zero). */
extern uint64_t rng;
uint64_t rnd(void);

/* Seconds on CLOCK_MONOTONIC. */
double now(void);

/* Reads a counter from /proc/vmstat; -1 if absent. */
long vmstat(const char *name);
/* Free blocks of order >= @order in every zone of /proc/buddyinfo (node -1: all). */
long buddy_blocks(int node, int order);
/* Free pages in those blocks (a made block can merge: blocks may not grow). */
long buddy_pages(int node, int order);
/* Writes @s to @path; 0 or -errno (from write(2) or open(2)). */
int write_str(const char *path, const char *s);
/* One write(2) of exactly @len bytes (NULs included); 0 or -errno. */
int write_raw(const char *path, const char *buf, size_t len);
/* Empties the ftrace ring buffer (/sys/kernel/tracing/trace). */
int trace_clear(void);
/*
 * One zone of /proc/zoneinfo. Pages; min, low and high as printed (min
 * includes watermark_boost, given apart in boost).
 */
struct zone_info {
	int node;
	char name[16];
	unsigned long start_pfn, spanned, present;
	long managed, free, min, boost, high;
};
/* Every zone of /proc/zoneinfo, populated or not, in its order; their number. */
int read_zoneinfo(struct zone_info *z, int max);
/* First pfn of the second populated zone in /proc/zoneinfo; 0 if none. */
unsigned long zone_boundary_pfn(void);
/* Reads @path into @buf (NUL-terminated); bytes read or -errno. */
int read_str(const char *path, char *buf, size_t len);
/* kdefrag's debugfs count of ranges given up, by reason. */
#define DEFRAG_REASONS "/sys/kernel/debug/defrag/reasons"
/* Prints "ranges given up:" and each reason's count since @before (a read of DEFRAG_REASONS). */
void reasons_print(const char *before);
/*
 * The value a setting file holds, without its newline; of a choice such as
 * THP's "always [madvise] never", the bracketed word. 0 or -errno.
 */
int setting_get(const char *path, char *val, size_t len);
/*
 * Settings a program changes, put back whatever happens: setting_set()
 * saves @path's value the first time it is written (and registers
 * settings_restore() with atexit()), then writes @val; it bails out if
 * either fails. settings_restore() writes every saved value back, the
 * last saved first, and reports those it cannot; in the process that
 * saved them only (a forked child that exits leaves them alone).
 */
void setting_set(const char *path, const char *val);
void settings_restore(void);
/*
 * Turns the allocator's direct requests off (/sys/kernel/mm/defrag/direct,
 * with setting_set(): put back on exit), whatever the default or an
 * earlier program left. They count in the same defrag_* events, reasons
 * and tracepoints as explicit ones and isolate pageblocks too: a test
 * that measures its own requests keeps them out.
 */
void direct_requests_off(void);
/* Physical frame of a mapped, present page, from /proc/self/pagemap; 0 if none. */
uint64_t virt_to_pfn(const void *addr);
/* /proc/kpageflags bits for @pfn; ~0 on error. */
uint64_t kpageflags(uint64_t pfn);
/*
 * /proc/kpagecount for @pfn: how many page tables map it (not its
 * reference count: 0 for free pages and for unmapped kernel or page
 * cache pages alike); ~0 on error.
 */
uint64_t kpagecount(uint64_t pfn);
/*
 * @pfn is free: in a free buddy block (KPF_BUDDY), or a page with no flags
 * that nothing maps (on a per-CPU free list; but also a flagless kernel
 * page that nothing maps, such as a pipe buffer's or vmalloc's).
 */
bool pfn_free(uint64_t pfn);
/*
 * @pfn is in a free buddy block (kpageflags marks every page of one
 * KPF_BUDDY): free beyond doubt. Pages on the per-CPU free lists are not:
 * pcp_drain() first.
 */
bool pfn_buddy(uint64_t pfn);
/* Returns the per-CPU free lists' pages to the buddy allocator (kdefrag's debugfs summary drains them). */
void pcp_drain(void);
/*
 * @len bytes of a fresh private anonymous mapping, aligned to @align (a
 * power of two) and advised MADV_HUGEPAGE, for THP and mTHP faults: the
 * aligned start, or NULL (errno set). *@raw is the mapping itself,
 * @len + @align bytes, to munmap().
 */
char *map_advised(size_t len, size_t align, char **raw);
/* /proc/kpageflags of one populated zone, read at one moment. */
struct kpf_zone {
	int node;
	char name[16];
	unsigned long start, end;	/* pfns, as /proc/zoneinfo spans them */
	uint64_t *flags;
};
/* Reads every populated zone into @z; their number, or -1. */
int kpf_snapshot(struct kpf_zone *z, int max);
void kpf_release(struct kpf_zone *z, int nz);
/* Index of the zone that holds @pfn, or -1. */
int kpf_zone_of(const struct kpf_zone *z, int nz, unsigned long pfn);
/*
 * Pages of [start, end) that a request would migrate: every page is free
 * (BUDDY) or on the LRU and not under writeback, and this many are in
 * use; -1 if some page is neither (slab, page table, other kernel page,
 * a per-CPU free page: drain first) or the range is not in @z.
 */
long kpf_cost(const struct kpf_zone *z, unsigned long start, unsigned long end);
/* Free (BUDDY) pages of @z. */
long kpf_free(const struct kpf_zone *z);
/* Pages of [start, end) not free (BUDDY), whatever they are; -1 outside @z. */
long kpf_used(const struct kpf_zone *z, unsigned long start, unsigned long end);
/*
 * The least a request can migrate to make @k free order-@order blocks in
 * @z: the cost of its @k cheapest aligned ranges that are not free yet
 * (-1 if fewer can be emptied). *@free_ranges gets those already free.
 */
long kpf_cheapest(const struct kpf_zone *z, int order, long k, long *free_ranges);
/*
 * The costs (kpf_cost()) of the aligned order-@order ranges of the @nz
 * zones @z that are not free but could be emptied, cheapest first, in a
 * malloc()ed array of *@n (NULL if out of memory); *@free_ranges gets
 * the ranges already free.
 */
long *kpf_range_costs(const struct kpf_zone *z, int nz, int order, long *n, long *free_ranges);

/* A range that a request evacuated (made) or gave up, from the defrag trace. */
struct traced_range {
	unsigned long start, end, migrated;
	bool made;
};
/* The ranges of the trace buffer, in order; their number or -1. */
int traced_ranges(struct traced_range *r, int max);
/*
 * Traces the ranges requests evacuate or give up (an 8 MiB buffer,
 * emptied first), or stops: 0, or -1.
 */
int range_trace(bool on);

/* A /proc/meminfo field ("MemTotal"), in kB; -1 if missing. */
long meminfo_kb(const char *name);
/* MemFree from /proc/meminfo, in kB. */
long mem_free_kb(void);
/*
 * MemFree once deferred frees have landed and the per-CPU free lists are
 * empty (reading kdefrag's debugfs summary drains them).
 */
long settled_free_kb(void);
/*
 * How far MemFree may stay below its level after a test without a leak:
 * 16 MB, plus KASAN's quarantine (up to 1/32 of memory) when the kernel
 * has KASAN, since freed slab objects wait there.
 */
long free_slack_kb(void);
/*
 * Pageblocks of migratetype @type ("Movable", "CMA", "Isolate", ... as
 * /proc/pagetypeinfo names them) in zone @zone of node @node (-1, NULL:
 * every one), from /proc/pagetypeinfo; -1 on error or an unknown type.
 */
long pageblocks_of_type(int node, const char *zone, const char *type);
/* "Pages per block" from /proc/pagetypeinfo; 0 on error. */
long pageblock_pages(void);
/* Pageblocks now MIGRATE_ISOLATE, anywhere; -1 on error. */
long isolated_pageblocks(void);

/*
 * Pin [addr, addr + len) long-term through /sys/kernel/debug/gup_test
 * (PIN_LONGTERM_TEST_START, writable): returns an fd to pass to
 * unpin_longterm(), or -errno. One pinned range at a time, system-wide.
 */
int pin_longterm(void *addr, size_t len);
void unpin_longterm(int fd);

/*
 * Fault injection (@dir: FAIL_PAGE_ALLOC or FAIL_MAKE_REQUEST): fail
 * @probability percent of the calls that may fail, at most FAULT_TIMES
 * times; with @task_only, only calls by tasks whose
 * /proc/self/make-it-fail is 1. Returns -errno without the capability.
 * fault_disarm() stops it and returns the number of faults injected.
 */
#define FAIL_PAGE_ALLOC "/sys/kernel/debug/fail_page_alloc/"
#define FAIL_MAKE_REQUEST "/sys/kernel/debug/fail_make_request/"
#define FAULT_TIMES 1000000
int fault_arm(const char *dir, int probability, bool task_only);
long fault_disarm(const char *dir);

/* Page contents: a pattern that depends on a seed and the page's index. */
void fill_pages(void *p, size_t npages, uint64_t seed);
/* Number of pages whose contents differ from fill_pages(p, npages, seed). */
size_t check_pages(const void *p, size_t npages, uint64_t seed);

/*
 * Fragment physical memory: fill all but @leave_kb of MemFree (at least
 * twice min_free_kbytes and 16 MB more) with one kind
 * of memory, each page with fill_pages(seed + index) contents, then release
 * half of it (sparse: 3 of 4 pages), so that free memory is holes between
 * used pages:
 *  - anon-pages: anon, each page released or not at random (mostly
 *    single-page holes: every aligned range costs about the same);
 *  - anon-runs: anon, alternating kept and released runs of 1..64 pages
 *    (holes of many sizes, as objects of many sizes come and go);
 *  - tmpfs: a shared tmpfs file mapping, runs punched out of the file;
 *  - ext4: a clean ext4 file in the page cache, runs dropped from the
 *    cache with POSIX_FADV_DONTNEED (the file stays whole on disk);
 *  - mix: anon runs with one pipe page (an unmovable kernel allocation)
 *    allocated after every 16 anon pages;
 *  - sparse: anon, a small tmpfs file (inode and dentry slab, a page of
 *    shmem) created after every 64 anon pages, the mapping's page tables
 *    among them too; then 3 of 4 anon pages released at random. With a
 *    small @leave_kb, memory filled to the brim and mostly holes: the
 *    order-9 case of the "engine made safe" issue.
 * Returns 0 or -1 (call frag_release() either way).
 */
enum frag_kind {
	FRAG_ANON_PAGES,
	FRAG_ANON_RUNS,
	FRAG_TMPFS,
	FRAG_EXT4,
	FRAG_MIX,
	FRAG_SPARSE,
	FRAG_NR_KINDS
};

struct frag {
	enum frag_kind kind;
	char *base;		/* the mapping (anon, tmpfs) */
	size_t npages;
	uint64_t seed;
	uint8_t *released;	/* per page: released by the fragmenter */
	int fd;			/* tmpfs, ext4 */
	char path[64];
	int (*pipes)[2];	/* mix */
	size_t npipes, pipe_pages;
	size_t files;		/* sparse: small files made */
};
int fragment(struct frag *f, enum frag_kind kind, long leave_kb, uint64_t seed);
int fragment_anon(struct frag *f, long leave_kb, uint64_t seed);
const char *frag_kind_name(enum frag_kind kind);
int frag_kind_parse(const char *name);
/* Pages of @f whose contents are wrong (released pages must be zero). */
size_t frag_check(const struct frag *f);
/* Pages the workload still holds. */
size_t frag_used_pages(const struct frag *f);
void frag_release(struct frag *f);

/*
 * One bulk coalesce request, measured (tests/guest/moves_once.c,
 * bench/coalesce_optimum.c): memory fragmented with "sparse" filled to
 * 97% (seed @seed), the per-CPU lists drained, /proc/kpageflags read
 * (@z), then "@order @count" written to coalesce with the range events
 * traced. 0, or -1 with nothing left behind if it could not set up.
 */
#define MEASURED_MAX_RANGES 65536
struct measured_coalesce {
	struct frag f;
	struct kpf_zone z[16];
	int nz;
	struct traced_range *r;	/* the ranges the request tried, in order */
	int nr;			/* -1: the trace could not be read */
	int ret;		/* the write's result, 0 or -errno */
	long migrated, scanned;	/* defrag_migrated, defrag_scanned deltas */
	char result[512];	/* coalesce read back, one line */
	char reasons_before[2048];	/* debugfs reasons before the request */
};
int coalesce_measured(struct measured_coalesce *m, int order, long count, uint64_t seed);
void measured_release(struct measured_coalesce *m);

#endif
