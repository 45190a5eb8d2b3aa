// SPDX-License-Identifier: GPL-2.0
/*
 * Pages under writeback are never moved. The harness gives the guest a
 * second disk (/dev/vdb, ext4 on its first 32 MiB) whose writes QEMU
 * throttles, so the pages of a file written to it stay under writeback for
 * seconds. A file, not the raw device: a block device's page cache is not
 * movable memory (GFP_USER), so its neighbours are kernel pages that no
 * request could move, while a file's pages sit among movable ones:
 *  - debugfs counts ranges holding them as infeasible ("writeback");
 *  - evacuate on a range holding one fails with EBUSY, reason writeback,
 *    and the page keeps its pfn and contents;
 *  - once writeback has finished, the same range can be evacuated, so the
 *    refusal was for the writeback and nothing else.
 * A sample whose writeback ended before the request returned proves
 * nothing and is not counted, nor is one refused for a kernel page that
 * user space could not tell from a free one; with none left, the case is
 * skipped, not passed.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DISK "/dev/vdb"
#define MNT "/mnt/slow"
#define FILE_PATH MNT "/writeback"
#define EVACUATE "/sys/kernel/mm/defrag/evacuate"
#define LEN (8UL << 20)		/* 32 s of writeback at the throttled rate */
#define SAMPLES 8
#define MPOL_MF_MOVE (1 << 1)	/* <linux/mempolicy.h> */


static bool under_writeback(uint64_t pfn)
{
	uint64_t fl = kpageflags(pfn);

	return fl != ~0ULL && (fl & (1ULL << KPF_WRITEBACK));
}

/* Evacuate the order-4 range around @pfn; 0 or -errno, reason into @why. */
static int evacuate16(uint64_t pfn, char *why, size_t len)
{
	char req[64], last[256], *r;
	int ret;

	snprintf(req, sizeof(req), "%llu 16", (unsigned long long)(pfn & ~15ULL));
	ret = write_str(EVACUATE, req);
	why[0] = '\0';
	if (read_str(EVACUATE, last, sizeof(last)) > 0 && (r = strstr(last, "reason="))) {
		r += strlen("reason=");
		r[strcspn(r, " \n")] = '\0';
		snprintf(why, len, "%s", r);
	}
	return ret;
}

/*
 * The test's own pages by pfn (sorted): the file's, and those of the
 * buffer it was written from, allocated just before and so often their
 * neighbours. A range is sampled only if it holds nothing else but free
 * pages and others' anon or shmem pages (movable_foreign()). Not "every
 * page LRU": ext4's metadata buffers sit in the block device's page cache
 * too, allocated movable (__getblk() asks so, unlike a raw write), and
 * while the journal holds them no migration can move them (reason
 * migrate), writeback or not.
 */
static uint64_t *own_pfns;
static size_t nown_pfns;

static int cmp_pfn(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void note_own_pfns(char *map, char *buf, size_t npages)
{
	nown_pfns = 0;
	for (size_t i = 0; i < 2 * npages; i++) {
		char *page = i < npages ? map + i * PAGE_SIZE : buf + (i - npages) * PAGE_SIZE;
		uint64_t pfn = virt_to_pfn(page);

		if (pfn)
			own_pfns[nown_pfns++] = pfn;
	}
	qsort(own_pfns, nown_pfns, sizeof(*own_pfns), cmp_pfn);
}

static bool own_pfn(uint64_t pfn)
{
	return bsearch(&pfn, own_pfns, nown_pfns, sizeof(pfn), cmp_pfn);
}

/* Not in the uapi header: a kernel-internal bit that /proc/kpageflags shows. */
#define KPF_MLOCKED	33

/*
 * A page of someone else's that evacuate moves as it moves the test's:
 * anon or shmem on the LRU, not under writeback, not unevictable or
 * mlocked. The page cache of this file is allocated among whatever else
 * the guest holds (another process's anon pages, tmpfs pages of earlier
 * tests), the more so when free memory is in single pages. Not another
 * file's page cache: a dirty ext4 folio with buffers can stay busy
 * longer than evacuate retries (seen on the debug kernel).
 */
static bool movable_foreign(uint64_t pfn)
{
	uint64_t fl = kpageflags(pfn);

	return fl != ~0ULL && (fl & (1ULL << KPF_LRU)) &&
	       (fl & ((1ULL << KPF_ANON) | (1ULL << KPF_SWAPBACKED))) &&
	       !(fl & ((1ULL << KPF_WRITEBACK) | (1ULL << KPF_UNEVICTABLE) |
		       (1ULL << KPF_MLOCKED)));
}

/*
 * Every page of the order-4 range around @pfn is the test's own, free or
 * movable: nothing but writeback can stop its evacuation.
 */
static bool range_ours(uint64_t pfn)
{
	for (uint64_t p = pfn & ~15ULL; p < (pfn & ~15ULL) + 16; p++)
		if (!own_pfn(p) && !pfn_free(p) && !movable_foreign(p))
			return false;
	return true;
}

/*
 * A refusal for a kernel page, where the range holds a page that is not
 * the test's own and has no flags: range_ours() let it pass as free (on a
 * per-CPU list, or the tail of a free block), but a flagless kernel page
 * (vmalloc's, say) looks the same from user space. The kernel saw which
 * it was; such a sample proves nothing about writeback.
 */
static bool foreign_kernel_page(uint64_t pfn, int ret, const char *why)
{
	if (ret != -EBUSY || strcmp(why, "kernel"))
		return false;
	for (uint64_t p = pfn & ~15ULL; p < (pfn & ~15ULL) + 16; p++)
		if (!own_pfn(p) && kpageflags(p) == 0)
			return true;
	return false;
}

static bool sampled(const uint64_t *pfns, size_t n, uint64_t pfn)
{
	for (size_t s = 0; s < n; s++)
		if ((pfns[s] & ~15ULL) == (pfn & ~15ULL))
			return true;
	return false;
}

/* For a failure: what each page of the range is now. */
static void diag_range(uint64_t pfn)
{
	char line[16 * 24], *o = line;

	for (uint64_t p = pfn & ~15ULL; p < (pfn & ~15ULL) + 16; p++)
		o += snprintf(o, line + sizeof(line) - o, " %llx%s",
			      (unsigned long long)kpageflags(p), own_pfn(p) ? "*" : "");
	kt_diag("  kpageflags of the range (* the test's own):%s", line);
}

/*
 * Flush the per-CPU LRU batches, where the pages written last still sit
 * (not PageLRU yet): move_pages() of one page to the node it is on moves
 * nothing, but do_pages_move() disables LRU caching, which drains them.
 */
static void lru_drain(void *page)
{
	int node = -1, status;

	if (!syscall(SYS_move_pages, 0, 1, &page, NULL, &node, 0) && node >= 0)
		syscall(SYS_move_pages, 0, 1, &page, &node, &status, MPOL_MF_MOVE);
}

/* faults.c fails writes to this disk later: leave no filesystem mounted. */
static void unmount_slow(void)
{
	unlink(FILE_PATH);
	umount2(MNT, MNT_DETACH);	/* now, even if a bail-out left it busy */
}

int main(void)
{
	size_t npages = LEN / PAGE_SIZE, nwb = 0, nwb_all = 0, conclusive = 0, moved_after = 0;
	uint64_t wb_pfn[SAMPLES];
	size_t wb_idx[SAMPLES];
	char *buf, *map, why[32], sum[16384];
	long infeasible = 0;
	double t0;
	int fd, ret;

	kt_plan(5);
	mkdir(MNT, 0755);
	if (mount(DISK, MNT, "ext4", MS_NOATIME, NULL))
		kt_bail("cannot mount the throttled disk %s on %s: %s", DISK, MNT, strerror(errno));
	atexit(unmount_slow);
	fd = open(FILE_PATH, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		kt_bail("cannot create %s: %s", FILE_PATH, strerror(errno));
	buf = malloc(LEN);
	own_pfns = calloc(2 * npages, sizeof(*own_pfns));
	if (!buf || !own_pfns)
		kt_bail("out of memory");
	fill_pages(buf, npages, 0x3b);
	t0 = now();
	if (pwrite(fd, buf, LEN, 0) != (ssize_t)LEN)
		kt_bail("cannot write %s", FILE_PATH);
	/* The page cache pages, mapped so that pagemap tells their pfns. */
	map = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		kt_bail("cannot map %s", FILE_PATH);
	for (size_t i = 0; i < npages; i++)
		(void)*(volatile char *)(map + i * PAGE_SIZE);
	/* Start writeback of all of it; the throttled disk keeps it in flight. */
	if (sync_file_range(fd, 0, LEN, SYNC_FILE_RANGE_WRITE))
		kt_bail("sync_file_range: %s", strerror(errno));

	/*
	 * The end of the file is written back last: sample from there, one
	 * page per order-4 range that holds only the test's own pages, free
	 * ones and movable ones of others, where writeback is the only thing
	 * that could stop a move.
	 * The pages written last may still be in LRU batches: drain them.
	 * Free pages on pcp lists (not buddy yet) come and go: look again
	 * (up to 3 times) while writeback lasts if no range qualified.
	 */
	for (int pass = 0; pass < 3 && !nwb; pass++) {
		if (pass)
			usleep(200000);	/* let pcp lists drain meanwhile */
		lru_drain(buf);
		note_own_pfns(map, buf, npages);
		nwb_all = 0;
		for (size_t i = npages; i-- > 0;) {
			uint64_t pfn = virt_to_pfn(map + i * PAGE_SIZE);

			if (!pfn || !under_writeback(pfn))
				continue;
			nwb_all++;
			if (nwb < SAMPLES && range_ours(pfn) && !sampled(wb_pfn, nwb, pfn)) {
				wb_pfn[nwb] = pfn;
				wb_idx[nwb++] = i;
			}
		}
		kt_diag("pass %d: %zu of %zu pages under writeback after %ld ms; %zu samples in ranges of the test's own, free and movable pages",
			pass + 1, nwb_all, npages, (long)((now() - t0) * 1000), nwb);
		if (!nwb_all)
			break;
	}
	if (!nwb_all)
		kt_bail("no page under writeback: is %s throttled?", DISK);
	if (!nwb) {
		/* What else the ranges at the end of the file hold. */
		for (size_t k = 0; k < 4 && 16 * k < npages; k++) {
			uint64_t pfn = virt_to_pfn(map + (npages - 1 - 16 * k) * PAGE_SIZE);

			if (pfn)
				diag_range(pfn);
		}
		kt_bail("no page under writeback in a range of the test's own, free and movable pages");
	}

	if (write_str("/sys/kernel/debug/defrag/order", "4") == 0 &&
	    read_str("/sys/kernel/debug/defrag/summary", sum, sizeof(sum)) > 0) {
		for (char *p = sum; (p = strstr(p, " writeback:")); p++)
			infeasible += strtol(p + strlen(" writeback:"), NULL, 10);
	}
	kt_ok(infeasible >= 1 && under_writeback(wb_pfn[0]),
	      "debugfs counts %ld order-4 ranges infeasible for writeback", infeasible);

	{
		size_t ebusy = 0, wrong = 0;

		for (size_t s = 0; s < nwb; s++) {
			/* Before the request: a failed one frees pages others may take. */
			bool ours = range_ours(wb_pfn[s]);

			ret = evacuate16(wb_pfn[s], why, sizeof(why));
			/* Only a page still under writeback afterwards proves anything. */
			if (!under_writeback(wb_pfn[s]))
				continue;
			if (foreign_kernel_page(wb_pfn[s], ret, why)) {
				kt_diag("pfn 0x%llx: reason kernel, a flagless page not ours in the range: not counted",
					(unsigned long long)wb_pfn[s]);
				diag_range(wb_pfn[s]);
				continue;
			}
			/* Refused for another page that came into the range since sampling. */
			if (ret && strcmp(why, "writeback") && !ours) {
				kt_diag("pfn 0x%llx: %s, reason %s, a page not the test's own in the range: not counted",
					(unsigned long long)wb_pfn[s], strerror(-ret), why);
				diag_range(wb_pfn[s]);
				continue;
			}
			conclusive++;
			if (ret == -EBUSY && !strcmp(why, "writeback") &&
			    virt_to_pfn(map + wb_idx[s] * PAGE_SIZE) == wb_pfn[s])
				ebusy++;
			else {
				wrong++;
				kt_diag("pfn 0x%llx: %s, reason %s, pfn now 0x%llx",
					(unsigned long long)wb_pfn[s], strerror(-ret), why,
					(unsigned long long)virt_to_pfn(map + wb_idx[s] * PAGE_SIZE));
			}
		}
		if (!conclusive)
			kt_skip("no sample still under writeback after its request, in a range of ours");
		else
			kt_ok(ebusy == conclusive,
			      "evacuate refused %zu of %zu ranges with a page under writeback (EBUSY, reason writeback, pfn kept)",
			      ebusy, conclusive);
	}

	kt_ok(check_pages(map, npages, 0x3b) == 0,
	      "contents of the %zu written pages intact while under writeback", npages);

	/*
	 * Wait for the disk; then the refusal must go away with the writeback.
	 * This wait bounds the longest uninterruptible sleep of the tests:
	 * the hung-task timeout (config/qemu.config) must stay well above it.
	 */
	{
		double t = now();

		if (fsync(fd))
			kt_bail("fsync: %s", strerror(errno));
		kt_diag("fsync waited %ld ms for the throttled disk",
			(long)((now() - t) * 1000));
	}
	{
		size_t tried = 0;

		/*
		 * Only a sample still in place, in a range that still holds
		 * nothing else: one that moved earlier would pass here for
		 * nothing, and a free page may have been taken meanwhile (also
		 * while the request ran: then the sample proves nothing).
		 */
		lru_drain(buf);
		note_own_pfns(map, buf, npages);
		for (size_t s = 0; s < nwb; s++) {
			if (virt_to_pfn(map + wb_idx[s] * PAGE_SIZE) != wb_pfn[s] ||
			    !range_ours(wb_pfn[s]))
				continue;
			tried++;
			ret = evacuate16(wb_pfn[s], why, sizeof(why));
			if (!ret && virt_to_pfn(map + wb_idx[s] * PAGE_SIZE) != wb_pfn[s]) {
				moved_after++;
				continue;
			}
			kt_diag("after writeback pfn 0x%llx: %s, reason %s",
				(unsigned long long)wb_pfn[s], strerror(-ret), why);
			diag_range(wb_pfn[s]);
			if (ret && (!range_ours(wb_pfn[s]) || foreign_kernel_page(wb_pfn[s], ret, why))) {
				kt_diag("  a page not the test's own is in the range: not counted");
				tried--;
			}
		}
		if (!tried)
			kt_skip("after writeback: every sampled range had moved or taken other pages");
		else
			kt_ok(moved_after == tried,
			      "after writeback, %zu of %zu such ranges evacuated (pages moved)",
			      moved_after, tried);
	}
	kt_ok(check_pages(map, npages, 0x3b) == 0,
	      "contents of the %zu pages intact after being moved", npages);
	munmap(map, LEN);
	close(fd);
	free(buf);
	free(own_pfns);
	return kt_done();
}
