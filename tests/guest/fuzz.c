// SPDX-License-Identifier: GPL-2.0
/*
 * Thousands of random and hostile writes, from two writers at once, to
 * every kdefrag file: each write either succeeds because its input is
 * valid (checked against a reference parser written here from the
 * documented syntax) or fails cleanly (EINVAL, or EBUSY/ENOMEM for a valid
 * request that made nothing); a tunable changes only on a valid write.
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
	{ "/sys/kernel/debug/defrag/order", TUNABLE, 1, 10 },
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))


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

static long read_ul(const char *path)
{
	char b[64];

	return read_str(path, b, sizeof(b)) > 0 ? strtol(b, NULL, 0) : -1;
}

/* One writer: returns the number of wrong outcomes. */
static int writer(uint64_t seed, int tunables)
{
	char buf[256];
	int wrong = 0;

	rng = seed;
	for (int r = 0; r < ROUNDS; r++) {
		const struct target *t = &targets[rnd() % NTARGETS];
		size_t len = gen(buf);
		unsigned long val = 0;
		bool ok = valid(t, buf, len, &val);
		long before, after;
		int fd, ret;
		ssize_t n;

		/* Only one writer checks tunables: the other would race it. */
		if (t->kind == TUNABLE && !tunables)
			continue;
		/* Valid coalesce requests do real work: the other tests cover them. */
		if (ok && t->kind == COALESCE)
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
		if (!ok && ret != -EINVAL) {
			printf("# %s: invalid input (%zu bytes) gave %d\n", t->path, len, ret);
			wrong++;
		}
		if (ok && ret && ret != -EINVAL && ret != -EBUSY && ret != -ENOMEM) {
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

int main(void)
{
	int status, wrong;
	pid_t pid;

	kt_plan(5);
	/* A second writer hammers the request files at the same time. */
	pid = fork();
	if (pid == 0)
		_exit(writer(0x5eed2, 0) ? 1 : 0);
	wrong = writer(0x5eed1, 1);
	kt_ok(wrong == 0, "%d random writes: only clean errors, tunables change only when valid (%d wrong)",
	      ROUNDS, wrong);
	waitpid(pid, &status, 0);
	kt_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a concurrent writer saw only clean errors too");
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
	/* Restore defaults for the tests that follow. */
	write_str(DIR "seed_depth", "10");
	write_str(DIR "max_candidates", "32");
	write_str(DIR "enabled", "1");
	write_str(DIR "direct", "0");
	write_str(DIR "direct_min_order", "4");
	write_str("/sys/kernel/debug/defrag/order", "4");
	kt_ok(read_ul(DIR "seed_depth") == 10 && read_ul(DIR "max_candidates") == 32 &&
	      read_ul(DIR "enabled") == 1 && read_ul(DIR "direct") == 0 &&
	      read_ul(DIR "direct_min_order") == 4,
	      "tunables restored");
	return kt_done();
}
