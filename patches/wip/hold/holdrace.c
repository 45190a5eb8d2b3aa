// SPDX-License-Identifier: GPL-2.0
/*
 * Measurement (not a test): coalesce on fragmented memory while another
 * task allocates and frees order-0 pages as fast as it can, and print
 * how requests ended: attempts, blocks made, and the failure reasons.
 * Compares evacuation behind MIGRATE_ISOLATE with evacuation that holds
 * free pages off the free lists (freed pages can be taken by the
 * allocator before they are held).
 *   holdrace SECONDS ORDER COUNT [churn 0|1]
 */
#include "kdefrag.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR 32

static long reasons(char names[NR][32], long *v)
{
	FILE *f = fopen("/sys/kernel/debug/defrag/reasons", "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < NR && fscanf(f, "%31s %ld", names[n], &v[n]) == 2)
		n++;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3, order = argc > 2 ? atoi(argv[2]) : 4;
	int count = argc > 3 ? atoi(argv[3]) : 1000, churn = argc > 4 ? atoi(argv[4]) : 1;
	char names[NR][32], names2[NR][32], req[32], last[256];
	long v0[NR], v1[NR], att, suc, mig;
	size_t wrong = 0;
	int n;
	pid_t pid = 0;
	double t0, spent = 0;

	if (churn) {
		pid = fork();
		if (pid == 0) {
			for (;;) {
				char *p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

				madvise(p, 4 << 20, MADV_NOHUGEPAGE);
				for (size_t i = 0; i < (4 << 20); i += PAGE_SIZE)
					p[i] = 1;
				munmap(p, 4 << 20);
			}
		}
	}
	n = reasons(names, v0);
	att = vmstat("defrag_attempt");
	suc = vmstat("defrag_success");
	mig = vmstat("defrag_migrated");
	snprintf(req, sizeof(req), "%d %d", order, count);
	for (int r = 0; r < rounds; r++) {
		struct frag f;

		if (fragment(&f, FRAG_ANON_RUNS, 300 * 1024, 0x401d + r))
			kt_bail("fragment");
		t0 = now();
		write_str("/sys/kernel/mm/defrag/coalesce", req);
		spent += now() - t0;
		read_str("/sys/kernel/mm/defrag/coalesce", last, sizeof(last));
		printf("# holdrace round %d: %s", r, last);
		wrong += frag_check(&f);
		frag_release(&f);
	}
	if (pid) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	reasons(names2, v1);
	printf("# holdrace order %d count %d churn %d, %d rounds: attempts %ld, made %ld, migrated %ld, %.1f s in requests\n",
	       order, count, churn, rounds, vmstat("defrag_attempt") - att,
	       vmstat("defrag_success") - suc, vmstat("defrag_migrated") - mig, spent);
	printf("# holdrace reasons:");
	for (int i = 0; i < n; i++)
		if (v1[i] - v0[i])
			printf(" %s %ld", names[i], v1[i] - v0[i]);
	printf("\n# holdrace contents wrong: %zu\n", wrong);
	return 0;
}
