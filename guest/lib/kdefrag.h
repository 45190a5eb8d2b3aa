/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kdefrag guest programs: KTAP reporting, /proc and
 * sysfs access, page contents patterns and memory fragmentation.
 */
#ifndef KDEFRAG_GUEST_H
#define KDEFRAG_GUEST_H

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

/* Reads a counter from /proc/vmstat; -1 if absent. */
long vmstat(const char *name);
/* Free blocks of order >= @order in every zone of /proc/buddyinfo (node -1: all). */
long buddy_blocks(int node, int order);
/* Free pages in those blocks (a made block can merge: blocks may not grow). */
long buddy_pages(int node, int order);
/* Writes @s to @path; 0 or -errno (from write(2) or open(2)). */
int write_str(const char *path, const char *s);
/* Empties the ftrace ring buffer (/sys/kernel/tracing/trace). */
int trace_clear(void);
/* First pfn of the second populated zone in /proc/zoneinfo; 0 if none. */
unsigned long zone_boundary_pfn(void);
/* Reads @path into @buf (NUL-terminated); bytes read or -errno. */
int read_str(const char *path, char *buf, size_t len);
/* Physical frame of a mapped, present page, from /proc/self/pagemap; 0 if none. */
uint64_t virt_to_pfn(const void *addr);
/* /proc/kpageflags bits for @pfn; ~0 on error. */
uint64_t kpageflags(uint64_t pfn);
/* MemFree from /proc/meminfo, in kB. */
long mem_free_kb(void);
/*
 * MemFree once deferred frees have landed and the per-CPU free lists are
 * empty (reading kdefrag's debugfs summary drains them).
 */
long settled_free_kb(void);
/* Pageblocks now MIGRATE_ISOLATE, from /proc/pagetypeinfo; -1 on error. */
long isolated_pageblocks(void);

/* Page contents: a pattern that depends on a seed and the page's index. */
void fill_pages(void *p, size_t npages, uint64_t seed);
/* Number of pages whose contents differ from fill_pages(p, npages, seed). */
size_t check_pages(const void *p, size_t npages, uint64_t seed);

/*
 * Fragment physical memory: map anon memory until @leave_kb of MemFree is
 * left, fill it, then release half of its pages at random, so that most
 * free memory is single-page holes between used pages. Returns 0 or -1;
 * the kept pages keep fill_pages(seed) contents (released pages are
 * MADV_DONTNEED'd: they read back as zero).
 */
struct frag {
	char *base;
	size_t npages;
	uint64_t seed;
};
int fragment_anon(struct frag *f, long leave_kb, uint64_t seed);
/* Pages of @f whose contents are wrong (released pages must be zero). */
size_t frag_check(const struct frag *f);
void frag_release(struct frag *f);

#endif
