// SPDX-License-Identifier: GPL-2.0
/*
 * Two adjacent aligned ranges emptied one after the other are both
 * reported made, and counted in defrag_success.
 *
 * The pair is [s, s + 2 * half) with s aligned to 2 * half, all of it this
 * program's own anon pages. The lower half [s, s + half) is emptied first:
 * its buddy is the upper half, still in use, so it stays one free block
 * headed at s. When the upper half is emptied next, its free block merges
 * with the lower one, its buddy below it (inside the isolated pageblock,
 * pages merge as anywhere else), so the free block that holds the upper
 * half starts at s, below the range asked for. The check that the range
 * is free must look from the head of that larger block, as
 * alloc_contig_range() does; test_pages_isolated() from the range's own
 * start finds no free head there and reports the made block as failed.
 *
 * Halves of 16 pages and of a single page (the smallest evacuate request)
 * are tried. Each pair is checked right after it is emptied: a later
 * pair's pages may then move into it, as into any free memory.
 *
 * Between the two requests, nothing may take the free lower half: a
 * per-CPU list refill could. Single-page holes punched into a second
 * buffer first leave plenty of order-0 free pages that such a refill
 * takes before it. (During a request the pair's pageblock is isolated:
 * the lower half cannot be a migration target.)
 */
#include "kdefrag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EVACUATE "/sys/kernel/mm/defrag/evacuate"
#define NPAGES 16384
#define RUN 32		/* pfns of one pair, at most: a 32-aligned run of ours */
#define WANT 8		/* pairs per half size */
#define HOLES 4096	/* pages of the buffer that every other one is freed from */

struct pg {
	uint64_t pfn;
	size_t idx;
};

static int cmp_pfn(const void *a, const void *b)
{
	const struct pg *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/*
 * One request. On failure, the kernel's own account of it as a diagnostic;
 * *@edge is set when the pageblock could not be isolated (a pageblock at a
 * zone edge, or one isolated by someone else), which is not what this test
 * is about.
 */
static int evacuate(uint64_t pfn, unsigned int nr, bool *edge)
{
	char req[64], last[160];
	int ret;

	snprintf(req, sizeof(req), "%llu %u", (unsigned long long)pfn, nr);
	ret = write_str(EVACUATE, req);
	if (edge)
		*edge = false;
	if (ret && read_str(EVACUATE, last, sizeof(last)) > 0) {
		kt_diag("%s: %s -> %s", req, strerror(-ret), strtok(last, "\n"));
		if (edge && strstr(last, "reason=isolated"))
			*edge = true;
	}
	return ret;
}

static bool all_free(uint64_t pfn, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		if (!pfn_free(pfn + i))
			return false;
	return true;
}

struct tally {
	int lower_tried, lower_ok, edge;
	int cand;		/* upper halves asked for next to a free lower half */
	int upper_ok;		/* ... reported made */
	int merged;		/* ... whose pair was one free block afterwards */
	long success, fail;	/* counter deltas over the upper requests */
	int left;		/* own pages still inside a pair reported made */
};

/* Empty the pairs of @half pages at the runs starting at pgs[first[k]]. */
static void pairs(const struct pg *pgs, const size_t *first, int nruns,
		  unsigned int half, const char *buf, struct tally *t)
{
	for (int k = 0; k < nruns; k++) {
		const struct pg *run = pgs + first[k];
		uint64_t s = run[0].pfn;
		long succ0, fail0;
		bool edge;
		int ret;

		/* Something (kcompactd) may have moved them since they were listed. */
		bool moved = false;

		for (unsigned int j = 0; j < 2 * half; j++)
			moved |= virt_to_pfn(buf + run[j].idx * PAGE_SIZE) != s + j;
		if (moved) {
			kt_diag("pfns %llu+%u are no longer all ours: pair left out",
				(unsigned long long)s, 2 * half);
			continue;
		}
		t->lower_tried++;
		if (evacuate(s, half, &edge)) {
			if (edge) {
				t->edge++;
				t->lower_tried--;
			}
			continue;
		}
		t->lower_ok++;
		/* The lower half must still be free for the halves to merge. */
		if (!all_free(s, half)) {
			kt_diag("pfns %llu+%u were taken again before the upper half",
				(unsigned long long)s, half);
			continue;
		}
		t->cand++;
		succ0 = vmstat("defrag_success");
		fail0 = vmstat("defrag_fail");
		ret = evacuate(s + half, half, NULL);
		t->success += vmstat("defrag_success") - succ0;
		t->fail += vmstat("defrag_fail") - fail0;
		if (!ret)
			t->upper_ok++;
		/* Made or not, did the pair become free (and merge)? */
		if (all_free(s, 2 * half))
			t->merged++;
		else if (ret)
			kt_diag("pair %llu+%u not free after a failed upper half",
				(unsigned long long)s, 2 * half);
		if (ret)
			continue;
		for (unsigned int j = 0; j < 2 * half; j++) {
			uint64_t now = virt_to_pfn(buf + run[j].idx * PAGE_SIZE);

			if (now >= s && now < s + 2 * half)
				t->left++;
		}
	}
}

int main(void)
{
	static struct pg pgs[NPAGES];
	size_t first[2][WANT];
	int nruns[2] = { 0, 0 };
	static const unsigned int halves[2] = { 16, 1 };
	struct tally t[2];
	char *buf, *holes;

	kt_plan(7);
	direct_requests_off();
	if (vmstat("defrag_success") < 0 || vmstat("defrag_fail") < 0)
		kt_bail("no defrag_success/defrag_fail in /proc/vmstat");
	buf = mmap(NULL, NPAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	madvise(buf, NPAGES * PAGE_SIZE, MADV_NOHUGEPAGE);
	fill_pages(buf, NPAGES, 0xad1ace);
	for (size_t i = 0; i < NPAGES; i++)
		pgs[i] = (struct pg){ virt_to_pfn(buf + i * PAGE_SIZE), i };
	qsort(pgs, NPAGES, sizeof(pgs[0]), cmp_pfn);
	holes = mmap(NULL, HOLES * PAGE_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (holes == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	madvise(holes, HOLES * PAGE_SIZE, MADV_NOHUGEPAGE);
	memset(holes, 0x5a, HOLES * PAGE_SIZE);
	for (size_t i = 1; i < HOLES; i += 2)
		madvise(holes + i * PAGE_SIZE, PAGE_SIZE, MADV_DONTNEED);
	/* From the per-CPU lists to the buddy lists, where targets come from. */
	settled_free_kb();
	/* 32-aligned runs of 32 consecutive pfns, all ours: WANT per half size. */
	for (size_t i = 0; i + RUN <= NPAGES && nruns[1] < WANT; i++) {
		uint64_t s = pgs[i].pfn;
		int h = nruns[0] < WANT ? 0 : 1;

		if (!s || s % RUN || pgs[i + RUN - 1].pfn != s + RUN - 1)
			continue;
		first[h][nruns[h]++] = i;
		i += RUN - 1;
	}
	kt_ok(nruns[0] >= 2 && nruns[1] >= 2,
	      "found 32-aligned runs of our own pages (%d and %d, at least 2 each)",
	      nruns[0], nruns[1]);

	memset(t, 0, sizeof(t));
	for (int h = 0; h < 2; h++)
		pairs(pgs, first[h], nruns[h], halves[h], buf, &t[h]);

	kt_ok(t[0].lower_tried > 0 && t[0].lower_ok == t[0].lower_tried &&
	      t[1].lower_tried > 0 && t[1].lower_ok == t[1].lower_tried,
	      "every lower half is reported made (%d of %d, %d of %d; %d at a zone edge left out)",
	      t[0].lower_ok, t[0].lower_tried, t[1].lower_ok, t[1].lower_tried,
	      t[0].edge + t[1].edge);
	for (int h = 0; h < 2; h++) {
		if (!t[h].cand) {
			kt_skip("no %u-page lower half stayed free until its upper half was asked for",
				halves[h]);
			continue;
		}
		kt_ok(t[h].merged > 0 && t[h].upper_ok == t[h].cand,
		      "every %u-page upper half next to a free lower half is reported made (%d of %d; %d pairs merged)",
		      halves[h], t[h].upper_ok, t[h].cand, t[h].merged);
	}
	kt_ok(t[0].success + t[1].success == t[0].cand + t[1].cand &&
	      t[0].fail + t[1].fail == 0,
	      "each upper half counts in defrag_success (+%ld of %d), none in defrag_fail (+%ld)",
	      t[0].success + t[1].success, t[0].cand + t[1].cand,
	      t[0].fail + t[1].fail);
	kt_ok(t[0].left + t[1].left == 0,
	      "no page is left in a pair reported made (%d left)", t[0].left + t[1].left);
	kt_ok(check_pages(buf, NPAGES, 0xad1ace) == 0, "evacuated pages keep their contents");
	munmap(holes, HOLES * PAGE_SIZE);
	munmap(buf, NPAGES * PAGE_SIZE);
	return kt_done();
}
