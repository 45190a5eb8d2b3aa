// SPDX-License-Identifier: GPL-2.0
/*
 * Evidence for split_huge_page_test's rare "No THP is allocated": its
 * split_pte_mapped_thp() maps 8 MiB at the hint 1 GiB without MAP_FIXED
 * and expects four PMD-mapped THPs there. 6.12 randomizes a static
 * binary's brk start over 1 GiB (arch_randomize_brk(), with
 * randomize_va_space 2); when the heap overlaps [1 GiB, 1 GiB + 8 MiB)
 * the hint is refused, and an address found without a hint's THP
 * alignment holds only three whole PMDs.
 *
 * Each of N children repeats the test's allocations (a small one, as
 * stdio's buffer, which starts the heap; memalign(2 MiB, 8 MiB), freed,
 * twice) and then the mapping; the parent counts the children whose
 * mapping is not at the hint (each child a new exec: the layout is
 * randomized at exec, not at fork). No kdefrag involved. With MAX, the
 * case fails if more than MAX were refused.
 *   brk_hint N [MAX]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define HINT (1UL << 30)
#define LEN (8UL << 20)
#define ALIGN (2UL << 20)

static int child(void)
{
	/* stdout's buffer: the test has printed by then, so its heap exists. */
	char *heap = malloc(1024), *p = memalign(ALIGN, LEN), *q;
	void *m;

	if (!heap || !p)
		return 2;
	memset(p, 0, LEN);
	free(p);
	q = memalign(ALIGN, LEN);
	if (!q)
		return 2;
	memset(q, 1, LEN);
	free(q);
	m = mmap((void *)HINT, LEN, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (m == MAP_FAILED)
		return 2;
	return m == (void *)HINT ? 0 : 1;
}

int main(int argc, char **argv)
{
	int n, max = -1, refused = 0, errors = 0;
	char va[16] = "?", *end;
	FILE *f;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	n = argc > 1 ? strtol(argv[1], &end, 10) : 0;
	if (argc < 2 || argc > 3 || *end || n < 1 ||
	    (argc == 3 && ((max = strtol(argv[2], &end, 10)) < 0 || *end))) {
		printf("KTAP version 1\n1..1\nnot ok 1 brk_hint # usage: brk_hint N [MAX]\n");
		return 1;
	}
	f = fopen("/proc/sys/kernel/randomize_va_space", "r");
	if (f) {
		if (!fgets(va, sizeof(va), f))
			strcpy(va, "?");
		va[strcspn(va, "\n")] = '\0';
		fclose(f);
	}
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
			_exit(2);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) == 2)
			errors++;
		else
			refused += WEXITSTATUS(status);
	}
	/* KTAP for the plan's runner; the count is the finding. */
	printf("KTAP version 1\n1..1\n%s 1 brk_hint # randomize_va_space %s: the hint 1 GiB refused in %d of %d runs (%d errors)\n",
	       errors || (max >= 0 && refused > max) ? "not ok" : "ok", va, refused, n, errors);
	return errors || (max >= 0 && refused > max) ? 1 : 0;
}
