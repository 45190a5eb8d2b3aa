// SPDX-License-Identifier: GPL-2.0
/*
 * kdefrag in the background, aggressively: random coalesce requests (all
 * orders, whole system and per node) and evacuations of random ranges,
 * every few milliseconds, until SIGTERM; then one line of counts. Used
 * while the kernel's mm selftests run, so that their pages move under
 * them. Without kdefrag (stock kernel) it says so and exits 0.
 *   churn [interval_ms]
 */
#include "kdefrag.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIR "/sys/kernel/mm/defrag/"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	long interval = argc > 1 ? atol(argv[1]) : 5, reqs = 0, ok = 0, busy = 0, other = 0;
	unsigned long end = zone_boundary_pfn() ? zone_boundary_pfn() * 2 : 1UL << 18;
	struct timespec ts = { 0, interval * 1000000L };
	char req[64];

	if (access(DIR "coalesce", W_OK)) {
		printf("# churn: no kdefrag here (%s)\n", DIR);
		return 0;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	rng = 0xc4a2 ^ (uint64_t)getpid();
	while (!stop) {
		unsigned int op = rnd() % 8;
		const char *path = DIR "coalesce";
		int ret;

		if (op < 5) {
			snprintf(req, sizeof(req), "%u %u", 1 + (unsigned int)(rnd() % (MAX_ORDER_NR - 1)),
				 1 + (unsigned int)(rnd() % 4));
		} else if (op < 7) {
			path = rnd() & 1 ? "/sys/devices/system/node/node0/defrag_coalesce" :
					   "/sys/devices/system/node/node1/defrag_coalesce";
			snprintf(req, sizeof(req), "%u", 1 + (unsigned int)(rnd() % (MAX_ORDER_NR - 1)));
		} else {
			unsigned int order = rnd() % 10;

			path = DIR "evacuate";
			snprintf(req, sizeof(req), "%lu %u",
				 (unsigned long)(rnd() % end) & ~((1UL << order) - 1), 1U << order);
		}
		ret = write_str(path, req);
		reqs++;
		if (!ret)
			ok++;
		else if (ret == -EBUSY || ret == -ENOMEM)
			busy++;
		else if (!other++)
			printf("# churn: first other error: %s <- \"%s\": %s\n",
			       path, req, strerror(-ret));
		nanosleep(&ts, NULL);
	}
	printf("# churn: %ld requests: %ld made or evacuated, %ld busy/nomem, %ld other errors\n",
	       reqs, ok, busy, other);
	return 0;
}
