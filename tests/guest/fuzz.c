// SPDX-License-Identifier: GPL-2.0
/*
 * Thousands of random and hostile writes, from two writers at once, to
 * every kdefrag file: each write either succeeds because its input is
 * valid (checked against a reference parser written here from the
 * documented syntax) or fails cleanly (EINVAL, or EBUSY/ENOMEM for a valid
 * request that made nothing); a tunable changes only on a valid write.
 * One write in eight is made valid on purpose, so that every file gets
 * valid requests too (coalesce and evacuate ones do real work), and the
 * writers report how many of each kind each file got.
 * Two more writers without privilege, one as nobody and one as root
 * without CAP_SYS_ADMIN (past the file mode, so the kernel's own check is
 * what stops it), get EACCES or EPERM for every write, valid or not, and
 * change nothing.
 */
#include "kdefrag.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIR "/sys/kernel/mm/defrag/"
#define ROUNDS 1500

enum kind { COALESCE, EVACUATE, TUNABLE };

static const struct target {
	const char *path;
	enum kind kind;
	unsigned long min, max;		/* TUNABLE range */
} targets[] = {
	{ DIR "coalesce", COALESCE, 0, 0 },
	{ "/sys/devices/system/node/node0/defrag_coalesce", COALESCE, 0, 0 },
	{ "/sys/devices/system/node/node1/defrag_coalesce", COALESCE, 0, 0 },
	{ DIR "evacuate", EVACUATE, 0, 0 },
	{ DIR "seed_depth", TUNABLE, 1, 10 },
	{ DIR "max_candidates", TUNABLE, 1, 1024 },
	{ DIR "enabled", TUNABLE, 0, 1 },
	{ DIR "direct", TUNABLE, 0, 1 },
	{ DIR "direct_min_order", TUNABLE, 1, 10 },
	{ DIR "target_order", TUNABLE, 1, 10 },
	{ DIR "target_blocks", TUNABLE, 0, 65536 },
	{ "/sys/kernel/debug/defrag/order", TUNABLE, 1, 10 },
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* The guest's memory in pages: valid evacuate requests stay below it. */
static unsigned long mem_pages;

/*
 * Per writer (0: the one that also writes tunables, 1: the other, a child
 * process: shared memory) and file: writes made, those with valid input,
 * and those that succeeded.
 */
struct tally {
	unsigned int writes, valid, done;
};
static struct tally (*tallies)[NTARGETS];


/*
 * One token as the kernel's kstrtoul(s, 0) reads it: an optional '+',
 * "0x" + hex digits, "0" + octal digits or decimal digits, at most one
 * trailing newline, no overflow.
 */
static bool parse_ul(const char *s, size_t len, unsigned long *v)
{
	unsigned int base = 10, digits = 0;
	size_t i = 0;

	*v = 0;
	if (i < len && s[i] == '+')
		i++;
	if (i + 2 < len && s[i] == '0' && (s[i + 1] | 0x20) == 'x' &&
	    isxdigit((unsigned char)s[i + 2])) {
		base = 16;
		i += 2;
	} else if (i < len && s[i] == '0') {
		base = 8;
	}
	for (; i < len; i++, digits++) {
		int c = (unsigned char)s[i], d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && isxdigit(c))
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (d >= (int)base)
			return false;
		if (*v > (ULONG_MAX - d) / base)
			return false;
		*v = *v * base + d;
	}
	if (i < len && s[i] == '\n')
		i++;
	return digits > 0 && i == len;
}

/* The kernel's isspace() also takes Latin-1 NBSP (0xa0). */
static bool kspace(unsigned char c)
{
	return isspace(c) || c == 0xa0;
}

/*
 * Reference parser, from the documented syntax: up to @max numbers
 * separated by blanks, surrounding whitespace ignored, no NULs, under 64
 * bytes.
 */
static int ref_parse(const char *buf, size_t len, unsigned long *v, int max)
{
	size_t i = 0;
	int n = 0;

	if (!len || len >= 64 || memchr(buf, '\0', len))
		return -1;
	while (len && kspace(buf[len - 1]))
		len--;
	while (i < len && kspace(buf[i]))
		i++;
	while (i < len) {
		size_t j;

		if (buf[i] == ' ' || buf[i] == '\t') {
			i++;
			continue;
		}
		for (j = i; j < len && buf[j] != ' ' && buf[j] != '\t'; j++)
			;
		if (n == max || !parse_ul(buf + i, j - i, &v[n]))
			return -1;
		n++;
		i = j;
	}
	return n;
}

static bool valid(const struct target *t, const char *buf, size_t len, unsigned long *val)
{
	unsigned long v[2] = { 0, 1 };
	int n;

	switch (t->kind) {
	case COALESCE:
		n = ref_parse(buf, len, v, 2);
		return n >= 1 && v[0] >= 1 && v[0] <= 10 && v[1] >= 1 && v[1] <= 65536;
	case EVACUATE:
		/* Validity of a range depends on the memory map: only syntax here. */
		return ref_parse(buf, len, v, 2) == 2 && v[1] >= 1 && v[1] <= (1UL << 18);
	case TUNABLE:
		n = ref_parse(buf, len, v, 1);
		*val = v[0];
		return n == 1 && v[0] >= t->min && v[0] <= t->max;
	}
	return false;
}

static size_t gen(char *buf)
{
	static const char * const pieces[] = {
		"0", "1", "2", "4", "9", "10", "11", "-1", "0x4", "0x", "010", "4294967296",
		"18446744073709551615", "18446744073709551616", "99999999999999999999",
		" ", "  ", "\t", "\n", "\0", "abc", "+3", "1e2", "4,", "\xff", "%s%n",
	};
	size_t len = 0, parts = 1 + rnd() % 4;

	if (rnd() % 4 == 0) {
		/* raw random bytes, NULs included */
		len = rnd() % 80;
		for (size_t i = 0; i < len; i++)
			buf[i] = rnd();
		return len;
	}
	for (size_t i = 0; i < parts; i++) {
		const char *p = pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t l = *p ? strlen(p) : 1;

		memcpy(buf + len, p, l);
		len += l;
		if (rnd() % 2)
			buf[len++] = ' ';
	}
	if (rnd() % 8 == 0) {
		memset(buf + len, '7', 100);
		len += 100;
	}
	return len;
}

/*
 * Valid input for @t, in one of the documented spellings (decimal, 0x hex,
 * blanks around and between, a trailing newline). A request is kept small:
 * order 1..10 and 1..4 blocks, or up to 512 pages from a random pfn below
 * the guest's memory size (which may not be online: EINVAL, cleanly).
 */
static size_t gen_valid(const struct target *t, char *buf, size_t size)
{
	unsigned long v[2] = { 0, 0 };
	const char *fmt = rnd() % 2 ? "%lu" : "%#lx";
	size_t len = 0;
	int n = 1;

	switch (t->kind) {
	case COALESCE:
		v[0] = 1 + rnd() % 10;
		v[1] = 1 + rnd() % 4;
		n = 1 + rnd() % 2;
		break;
	case EVACUATE:
		v[0] = rnd() % mem_pages;
		v[1] = 1 + rnd() % 512;
		n = 2;
		break;
	case TUNABLE:
		v[0] = t->min + rnd() % (t->max - t->min + 1);
		break;
	}
	if (rnd() % 2)
		buf[len++] = ' ';
	len += snprintf(buf + len, size - len, fmt, v[0]);
	if (n == 2) {
		buf[len++] = rnd() % 2 ? ' ' : '\t';
		len += snprintf(buf + len, size - len, fmt, v[1]);
	}
	if (rnd() % 2)
		buf[len++] = '\n';
	return len;
}

static long read_ul(const char *path)
{
	char b[64];

	return read_str(path, b, sizeof(b)) > 0 ? strtol(b, NULL, 0) : -1;
}

/* One writer: returns the number of wrong outcomes. */
static int writer(uint64_t seed, int tunables)
{
	struct tally *tally = tallies[!tunables];
	char buf[256];
	int wrong = 0;

	rng = seed;
	for (int r = 0; r < ROUNDS; r++) {
		unsigned int ti = rnd() % NTARGETS;
		const struct target *t = &targets[ti];
		size_t len = r % 8 == 7 ? gen_valid(t, buf, sizeof(buf)) : gen(buf);
		unsigned long val = 0;
		bool ok = valid(t, buf, len, &val);
		long before, after;
		int fd, ret;
		ssize_t n;

		/* Only one writer checks tunables: the other would race it. */
		if (t->kind == TUNABLE && !tunables)
			continue;
		before = t->kind == TUNABLE ? read_ul(t->path) : 0;
		fd = open(t->path, O_WRONLY);
		if (fd < 0)
			return 1000;
		n = write(fd, buf, len);
		ret = n < 0 ? -errno : 0;
		close(fd);
		if (len == 0)
			continue;	/* a 0-byte write never reaches the file */
		tally[ti].writes++;
		tally[ti].valid += ok;
		tally[ti].done += !ret;
		if (!ok && ret != -EINVAL) {
			printf("# %s: invalid input (%zu bytes) gave %d\n", t->path, len, ret);
			wrong++;
		}
		/* A valid range may not be online: only evacuate may say EINVAL. */
		if (ok && ret && (ret != -EINVAL || t->kind != EVACUATE) &&
		    ret != -EBUSY && ret != -ENOMEM) {
			printf("# %s: valid input gave %d\n", t->path, ret);
			wrong++;
		}
		if (t->kind == TUNABLE) {
			after = read_ul(t->path);
			if (ok ? (after != (long)val) : (after != before)) {
				printf("# %s: %ld -> %ld after %s write\n", t->path, before, after,
				       ok ? "valid" : "invalid");
				wrong++;
			}
		}
	}
	return wrong;
}

/* Drops CAP_SYS_ADMIN from the effective set; 0 or -1. */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

/*
 * An unprivileged writer (@as_nobody, or root without CAP_SYS_ADMIN):
 * every write, valid input or not, must fail with EACCES or EPERM.
 * Returns the number of wrong outcomes (100 if it cannot drop privilege).
 */
static int unprivileged_writer(uint64_t seed, bool as_nobody)
{
	char buf[256];
	int wrong = 0;

	if (as_nobody ? setgid(65534) || setuid(65534) : drop_sys_admin())
		return 100;
	rng = seed;
	for (int r = 0; r < ROUNDS / 3; r++) {
		const struct target *t = &targets[rnd() % NTARGETS];
		size_t len = gen(buf);
		int ret;

		/* Half of them valid-looking: privilege is checked first. */
		if (r % 2)
			len = snprintf(buf, sizeof(buf), "%d", 1 + (int)(rnd() % 10));
		ret = write_raw(t->path, buf, len);
		if (len && ret != -EACCES && ret != -EPERM) {
			printf("# %s %s: write gave %d\n", as_nobody ? "nobody" : "root without CAP_SYS_ADMIN",
			       t->path, ret);
			wrong++;
		}
	}
	return wrong;
}

/* "path: W writes, V valid, D succeeded" per file this writer wrote to. */
static void tally_print(const struct tally *tally, const char *who)
{
	for (unsigned int i = 0; i < NTARGETS; i++)
		if (tally[i].writes)
			printf("# %s: %s: %u writes, %u valid, %u succeeded\n", who,
			       targets[i].path, tally[i].writes, tally[i].valid,
			       tally[i].done);
}

/*
 * Whether every file got valid and invalid writes from this writer, and
 * every valid tunable write was taken.
 */
static bool tally_covers_all(const struct tally *tally)
{
	for (unsigned int i = 0; i < NTARGETS; i++)
		if (!tally[i].valid || tally[i].valid == tally[i].writes ||
		    (targets[i].kind == TUNABLE && tally[i].done != tally[i].valid))
			return false;
	return true;
}

int main(void)
{
	long saved[NTARGETS];
	int status, wrong;
	bool restored = true;
	double t0;
	pid_t pid;

	kt_plan(6);
	mem_pages = meminfo_kb("MemTotal") / 4;
	tallies = mmap(NULL, 2 * sizeof(*tallies), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!mem_pages || tallies == MAP_FAILED)
		kt_bail("cannot read MemTotal or map the tallies");
	for (unsigned int i = 0; i < NTARGETS; i++)
		saved[i] = targets[i].kind == TUNABLE ? read_ul(targets[i].path) : 0;
	/* A second writer hammers the request files at the same time. */
	pid = fork();
	if (pid == 0)
		_exit(writer(0x5eed2, 0) ? 1 : 0);
	wrong = writer(0x5eed1, 1);
	kt_ok(wrong == 0, "%d random writes: only clean errors, tunables change only when valid (%d wrong)",
	      ROUNDS, wrong);
	kt_ok(tally_covers_all(tallies[0]),
	      "every file got valid and invalid writes, every valid tunable write taken");
	waitpid(pid, &status, 0);
	kt_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a concurrent writer saw only clean errors too");
	tally_print(tallies[0], "writer");
	tally_print(tallies[1], "request writer");
	/*
	 * The allocator's direct requests and kcompactd's background ones
	 * would count in defrag_attempt too: none from now on, and those
	 * under way ended (they stop once the target is gone).
	 */
	write_str(DIR "direct", "0");
	write_str(DIR "target_blocks", "0");
	for (t0 = now();; usleep(100 * 1000)) {
		/* Ends before starts: a request counts its start first. */
		long ended = vmstat("defrag_background_success") +
			     vmstat("defrag_background_fail");

		if (ended >= vmstat("defrag_background_wake"))
			break;
		if (now() - t0 > 60)
			kt_bail("background requests still under way after 60 s");
	}
	for (int nobody = 1; nobody >= 0; nobody--) {
		long att0 = vmstat("defrag_attempt"), sd0 = read_ul(DIR "seed_depth");
		long mc0 = read_ul(DIR "max_candidates");
		long dir0 = read_ul(DIR "enabled") * 100 + read_ul(DIR "direct") * 10 +
			    read_ul(DIR "direct_min_order");

		pid = fork();
		if (pid == 0)
			_exit(unprivileged_writer(0x5eed3 + nobody, nobody));
		waitpid(pid, &status, 0);
		kt_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		      vmstat("defrag_attempt") == att0 && read_ul(DIR "seed_depth") == sd0 &&
		      read_ul(DIR "max_candidates") == mc0 &&
		      read_ul(DIR "enabled") * 100 + read_ul(DIR "direct") * 10 +
		      read_ul(DIR "direct_min_order") == dir0,
		      "%d writes as %s: all EACCES/EPERM, nothing ran or changed (%d wrong)",
		      ROUNDS / 3, nobody ? "nobody" : "root without CAP_SYS_ADMIN",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	/* Restore what the tests that follow expect: the values found. */
	for (unsigned int i = 0; i < NTARGETS; i++) {
		char b[32];

		if (targets[i].kind != TUNABLE)
			continue;
		snprintf(b, sizeof(b), "%ld", saved[i]);
		write_str(targets[i].path, b);
		if (read_ul(targets[i].path) != saved[i]) {
			printf("# %s: %ld, not restored to %ld\n", targets[i].path,
			       read_ul(targets[i].path), saved[i]);
			restored = false;
		}
	}
	kt_ok(restored, "tunables restored");
	return kt_done();
}
