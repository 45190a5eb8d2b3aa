// SPDX-License-Identifier: GPL-2.0
/*
 * The stock kernel's way of moving a process's pages, THPs whole, while it
 * runs: every few milliseconds, migrate_pages(2) moves all pages of every
 * process whose name starts with NAME from one fake NUMA node to the other,
 * then back, until SIGTERM; then one line of counts. The comparison for
 * churn (kdefrag's requests) under the mm selftests: what a test does when
 * anything migrates its pages, with no kdefrag involved.
 *   migrator NAME [interval_ms]
 */
#include "kdefrag.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* Migrate every process named @name* from node @from to the other one. */
static int migrate_named(const char *name, int from, long *moved, long *calls)
{
	unsigned long old = 1UL << from, new = 1UL << !from;
	struct dirent *d;
	DIR *proc = opendir("/proc");
	int found = 0;

	if (!proc)
		return 0;
	while ((d = readdir(proc))) {
		char path[64], comm[32] = "";
		long pid = atol(d->d_name), ret;

		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		if (read_str(path, comm, sizeof(comm)) <= 0 ||
		    strncmp(comm, name, strlen(name)))
			continue;
		found++;
		ret = syscall(SYS_migrate_pages, pid, 8 * sizeof(old), &old, &new);
		(*calls)++;
		if (ret >= 0)
			(*moved)++;
	}
	closedir(proc);
	return found;
}

int main(int argc, char **argv)
{
	long interval = argc > 2 ? atol(argv[2]) : 5, rounds = 0, calls = 0, moved = 0;
	struct timespec ts = { 0, interval * 1000000L };
	int from = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: migrator NAME [interval_ms]\n");
		return 2;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	while (!stop) {
		if (migrate_named(argv[1], from, &moved, &calls))
			rounds++;
		from = !from;
		nanosleep(&ts, NULL);
	}
	printf("# migrator: %ld rounds found %s*, %ld migrate_pages(2) calls, %ld succeeded\n",
	       rounds, argv[1], calls, moved);
	return 0;
}
