// SPDX-License-Identifier: GPL-2.0
/*
 * kdefrag's interfaces under bad input and the rules about what never
 * moves:
 *  - every request file rejects garbage with EINVAL and changes nothing;
 *  - an unprivileged caller cannot use them;
 *  - evacuate empties a range of our own anon pages, which keep their
 *    contents at new pfns;
 *  - ranges holding long-term pinned pages, slab or page tables are never
 *    evacuated, and coalesce never moves pinned pages;
 *  - a page that holds an extra reference (not a pin) is retried before
 *    evacuate gives up, and moves once the reference is gone.
 */
#include "kdefrag.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIR "/sys/kernel/mm/defrag/"
#define NODE0 "/sys/devices/system/node/node0/defrag_coalesce"


static const char * const counters[] = {
	"defrag_attempt", "defrag_success", "defrag_fail", "defrag_migrated",
	"defrag_migrate_fail", "defrag_scanned", "defrag_candidates",
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static void snap(long *v)
{
	for (size_t i = 0; i < NCOUNTERS; i++)
		v[i] = vmstat(counters[i]);
}

static void test_bad_input(void)
{
	static const char * const bad_order[] = {
		"0", "-1", "11", "12", "4294967300", "99999999999999999999999",
		"abc", "4x", "4 0", "4 -1", "4 x", "4 1 1", "4 65537", " ", "\n",
		"4,1", "0x", "1e3",
	};
	char boundary[64];
	const char * const bad_evac[] = {
		"0", "x y", "1 0", "0 -1", "0xffffffffffff 1", "1 1 1",
		"18446744073709551615 2", "0 262145", "abc 16", boundary,
	};
	static const char * const bad_uint[] = { "0", "-1", "11x", " ", "1 2" };
	char overlong[200], nul[] = "4\0 1";
	unsigned long zb = zone_boundary_pfn();
	long before[NCOUNTERS], after[NCOUNTERS];
	int wrong = 0, ret;

	/* The last bad range spans two zones. */
	if (!zb)
		kt_bail("no zone boundary in /proc/zoneinfo");
	snprintf(boundary, sizeof(boundary), "%lu 2", zb - 1);
	memset(overlong, '1', sizeof(overlong) - 1);
	overlong[sizeof(overlong) - 1] = '\0';
	snap(before);
	for (size_t i = 0; i < sizeof(bad_order) / sizeof(bad_order[0]); i++) {
		const char *files[] = { DIR "coalesce", NODE0 };

		for (int f = 0; f < 2; f++) {
			ret = write_raw(files[f], bad_order[i], strlen(bad_order[i]));
			if (ret != -EINVAL) {
				kt_diag("%s <- '%s': %d, want EINVAL", files[f], bad_order[i], ret);
				wrong++;
			}
		}
	}
	for (size_t i = 0; i < sizeof(bad_evac) / sizeof(bad_evac[0]); i++) {
		ret = write_raw(DIR "evacuate", bad_evac[i], strlen(bad_evac[i]));
		if (ret != -EINVAL) {
			kt_diag("evacuate <- '%s': %d, want EINVAL", bad_evac[i], ret);
			wrong++;
		}
	}
	for (size_t i = 0; i < sizeof(bad_uint) / sizeof(bad_uint[0]); i++) {
		const char *files[] = { DIR "seed_depth", DIR "max_candidates",
					"/sys/kernel/debug/defrag/order" };

		for (int f = 0; f < 3; f++) {
			ret = write_raw(files[f], bad_uint[i], strlen(bad_uint[i]));
			if (ret != -EINVAL) {
				kt_diag("%s <- '%s': %d, want EINVAL", files[f], bad_uint[i], ret);
				wrong++;
			}
		}
	}
	if (write_raw(DIR "coalesce", overlong, strlen(overlong)) != -EINVAL) {
		kt_diag("coalesce accepted an overlong string");
		wrong++;
	}
	if (write_raw(DIR "coalesce", nul, sizeof(nul) - 1) != -EINVAL) {
		kt_diag("coalesce accepted an embedded NUL");
		wrong++;
	}
	kt_ok(wrong == 0, "every bad input is rejected with EINVAL (%d wrong)", wrong);
	snap(after);
	ret = 0;
	for (size_t i = 0; i < NCOUNTERS; i++)
		if (before[i] != after[i]) {
			kt_diag("%s changed %ld -> %ld", counters[i], before[i], after[i]);
			ret = 1;
		}
	kt_ok(!ret, "bad input changed no counter");
}

static void test_tunables(void)
{
	char buf[32];

	kt_ok(write_str(DIR "seed_depth", "2\n") == 0 &&
	      read_str(DIR "seed_depth", buf, sizeof(buf)) > 0 && atoi(buf) == 2 &&
	      write_str(DIR "seed_depth", "10") == 0,
	      "seed_depth accepts a valid value and reads it back");
	kt_ok(write_str(DIR "max_candidates", "0x40") == 0 &&
	      read_str(DIR "max_candidates", buf, sizeof(buf)) > 0 && atoi(buf) == 64 &&
	      write_str(DIR "max_candidates", "32") == 0,
	      "max_candidates accepts a valid value and reads it back");
}

static void test_unprivileged(void)
{
	const char *files[] = { DIR "coalesce", DIR "evacuate", DIR "seed_depth",
				DIR "max_candidates", NODE0 };
	long before = vmstat("defrag_attempt");
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int bad = 0;

		if (setgid(65534) || setuid(65534))
			_exit(100);
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			int ret = write_str(files[i], "4");

			if (ret != -EACCES && ret != -EPERM) {
				printf("# %s as nobody: %d\n", files[i], ret);
				bad++;
			}
		}
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	kt_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	      vmstat("defrag_attempt") == before,
	      "an unprivileged caller is refused (EACCES/EPERM) and nothing runs (status %d)",
	      WEXITSTATUS(status));
}

static void test_evacuate_own(void)
{
	size_t npages = 1024, moved = 0, tries = 0, stayed = 0;
	char *buf = mmap(NULL, npages * PAGE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char req[64];

	madvise(buf, npages * PAGE_SIZE, MADV_NOHUGEPAGE);
	fill_pages(buf, npages, 0xe7ac);
	for (size_t i = 0; i < npages && tries < 64; i += 37, tries++) {
		uint64_t pfn = virt_to_pfn(buf + i * PAGE_SIZE), start = pfn & ~15ULL, now;

		snprintf(req, sizeof(req), "%llu 16", (unsigned long long)start);
		if (write_str(DIR "evacuate", req))
			continue;
		now = virt_to_pfn(buf + i * PAGE_SIZE);
		if (now >= start && now < start + 16)
			stayed++;
		moved++;
	}
	kt_ok(moved > 0 && stayed == 0,
	      "evacuate empties ranges of our pages (%zu of %zu tries; %zu pages still inside)",
	      moved, tries, stayed);
	kt_ok(check_pages(buf, npages, 0xe7ac) == 0, "evacuated pages keep their contents");
	munmap(buf, npages * PAGE_SIZE);
}

static void test_pinned(void)
{
	size_t npages = 256, bad_ret = 0, bad_pfn = 0;
	char *buf = mmap(NULL, npages * PAGE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t pfns[256];
	char req[64];
	int fd;

	madvise(buf, npages * PAGE_SIZE, MADV_NOHUGEPAGE);
	fill_pages(buf, npages, 0x919);
	fd = pin_longterm(buf, npages * PAGE_SIZE);
	if (fd < 0)
		kt_bail("cannot pin pages with gup_test: %s", strerror(-fd));
	for (size_t i = 0; i < npages; i++)
		pfns[i] = virt_to_pfn(buf + i * PAGE_SIZE);
	for (size_t i = 0; i < npages; i += 16) {
		snprintf(req, sizeof(req), "%llu 16", (unsigned long long)(pfns[i] & ~15ULL));
		if (write_str(DIR "evacuate", req) != -EBUSY)
			bad_ret++;
	}
	/* Aggressive coalescing must route around the pins too. */
	write_str(DIR "coalesce", "2 256");
	write_str(DIR "coalesce", "4 64");
	for (size_t i = 0; i < npages; i++)
		if (virt_to_pfn(buf + i * PAGE_SIZE) != pfns[i])
			bad_pfn++;
	kt_ok(bad_ret == 0, "evacuate of ranges with long-term pinned pages fails with EBUSY (%zu wrong)",
	      bad_ret);
	kt_ok(bad_pfn == 0, "pinned pages never move (%zu moved)", bad_pfn);
	unpin_longterm(fd);
	kt_ok(check_pages(buf, npages, 0x919) == 0, "pinned pages keep their contents");
	munmap(buf, npages * PAGE_SIZE);
}

/* Ranges around slab and page-table pages (found in /proc/kpageflags). */
static void test_unmovable_kernel_pages(void)
{
	int found[2] = { 0, 0 }, wrong = 0;
	const int bits[2] = { KPF_SLAB, KPF_PGTABLE };
	size_t span = 64UL << 21;
	char req[64], *p;

	/* One page every 2 MB: each touch needs a page-table page of its own. */
	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	for (size_t off = 0; off < span; off += 1UL << 21)
		p[off] = 1;

	for (uint64_t pfn = 16; pfn < 262144 && (found[0] < 8 || found[1] < 8); pfn++) {
		uint64_t fl = kpageflags(pfn);

		if (fl == ~0ULL)
			break;
		for (int k = 0; k < 2; k++) {
			if (!(fl & (1ULL << bits[k])) || found[k] >= 8)
				continue;
			found[k]++;
			snprintf(req, sizeof(req), "%llu 16", (unsigned long long)(pfn & ~15ULL));
			if (write_str(DIR "evacuate", req) != -EBUSY || !(kpageflags(pfn) & (1ULL << bits[k]))) {
				kt_diag("range with %s pfn %llu not refused",
					k ? "page-table" : "slab", (unsigned long long)pfn);
				wrong++;
			}
		}
	}
	munmap(p, span);
	kt_ok(found[0] && found[1] && !wrong,
	      "ranges with slab (%d) and page-table (%d) pages are refused with EBUSY (%d wrong)",
	      found[0], found[1], wrong);
}

/*
 * A tmpfs page that a pipe holds (vmsplice() takes a plain reference, not
 * a pin) cannot migrate: its refcount does not match. evacuate retries it
 * with sleeps of at least 4, 8, 16 and 32 ms before it gives up, so the
 * refusal takes 60 ms or more (without retries it takes microseconds);
 * the page keeps its pfn and contents, and moves once the pipe lets go.
 */
static void test_transient_reference(void)
{
	size_t npages = 8;
	int fd = open("/dev/shm/kdefrag-evacuate", O_RDWR | O_CREAT | O_TRUNC, 0600);
	char *buf, req[64];
	struct iovec iov;
	uint64_t pfn;
	double t0, ms;
	int p[2], ret;

	if (fd < 0 || ftruncate(fd, npages * PAGE_SIZE) || pipe(p))
		kt_bail("tmpfs file or pipe: %s", strerror(errno));
	buf = mmap(NULL, npages * PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf == MAP_FAILED)
		kt_bail("mmap: %s", strerror(errno));
	madvise(buf, npages * PAGE_SIZE, MADV_NOHUGEPAGE);
	fill_pages(buf, npages, 0x7e5f);
	iov.iov_base = buf + 3 * PAGE_SIZE;
	iov.iov_len = PAGE_SIZE;
	if (vmsplice(p[1], &iov, 1, 0) != PAGE_SIZE)
		kt_bail("vmsplice: %s", strerror(errno));
	pfn = virt_to_pfn(iov.iov_base);
	snprintf(req, sizeof(req), "%llu 1", (unsigned long long)pfn);
	t0 = now();
	ret = write_str(DIR "evacuate", req);
	ms = (now() - t0) * 1000;
	kt_ok(ret == -EBUSY && ms >= 50 && virt_to_pfn(iov.iov_base) == pfn,
	      "a page held by a pipe is retried, then refused: %s after %.0f ms (>= 50), pfn kept",
	      strerror(-ret), ms);
	close(p[0]);
	close(p[1]);
	ret = write_str(DIR "evacuate", req);
	kt_ok(ret == 0 && virt_to_pfn(iov.iov_base) != pfn &&
	      check_pages(buf, npages, 0x7e5f) == 0,
	      "once the pipe let go it moves (%s), contents intact", strerror(-ret));
	munmap(buf, npages * PAGE_SIZE);
	close(fd);
	unlink("/dev/shm/kdefrag-evacuate");
}

int main(void)
{
	kt_plan(13);
	direct_requests_off();
	test_bad_input();
	test_tunables();
	test_unprivileged();
	test_evacuate_own();
	test_pinned();
	test_unmovable_kernel_pages();
	test_transient_reference();
	return kt_done();
}
