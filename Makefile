# kdefrag: the two commands (demo, check) and the development loop.
# Everything big lives in $(KDEFRAG_CACHE) (default ~/.cache/kdefrag).

.PHONY: demo check bench stress selftests-stock build tree export verify-series checkpatch clean help

help:
	@echo "make demo           build, boot, fragment memory, coalesce, show /proc/buddyinfo"
	@echo "make check          every test; ends with 'N passed, N failed'"
	@echo "make bench          benchmarks: kdefrag against stock compaction, ratios"
	@echo "make stress         debug kernel (lockdep, DEBUG_VM, ...) under a long stress (STRESS_SECONDS=600)"
	@echo "make selftests-stock  record the mm selftests on stock 6.12 (tests/selftests/stock.txt)"
	@echo "make build          install packages, apply patches/, build the guest kernel"
	@echo "make tree           developer kernel tree: base + one commit per patch"
	@echo "make export         write the developer tree's commits back to patches/"
	@echo "make verify-series  series applies to a pristine tree, each patch builds, checkpatch"

demo:
	@scripts/show.sh demo

bench:
	@scripts/show.sh bench

stress:
	@scripts/stress.sh

check:
	@T="$(T)" REPEAT="$(REPEAT)" scripts/check.sh

selftests-stock:
	@scripts/selftests-stock.sh

build:
	@scripts/deps.sh
	@scripts/tree.sh build
	@scripts/build.sh

tree:
	@scripts/deps.sh
	@scripts/tree.sh dev

export:
	@scripts/tree.sh export

verify-series:
	@scripts/deps.sh
	@scripts/verify-series.sh

checkpatch:
	@scripts/tree.sh build
	@scripts/checkpatch.sh

clean:
	rm -rf "$${KDEFRAG_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/kdefrag}/out"
