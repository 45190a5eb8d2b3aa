#!/bin/bash
# "make stress": build the debug profile (qemu.config + debug.config: lockdep,
# DEBUG_VM, DEBUG_PAGEALLOC, page_owner, hung-task/soft-lockup detection,
# fault injection) in its own build directory, boot it with the stress plan
# for STRESS_SECONDS (default 600), and judge the run like make check.
. "$(dirname "$0")/lib.sh"
secs=${STRESS_SECONDS:-600}
"$KDEFRAG_ROOT/scripts/deps.sh"
"$KDEFRAG_ROOT/scripts/tree.sh" build
mkdir -p "$KDEFRAG_OUT"
build=$KDEFRAG_CACHE/build-debug
KDEFRAG_BUILD=$build "$KDEFRAG_ROOT/scripts/build.sh" \
	"$KDEFRAG_ROOT/config/qemu.config" "$KDEFRAG_ROOT/config/debug.config" >/dev/null
status=0
# The debug kernel is several times slower, and the stress test prints its
# results when it ends: a longer silence before the boot counts as hung.
export KDEFRAG_SILENCE=${KDEFRAG_SILENCE:-$((secs + 900))}
"$KDEFRAG_ROOT/scripts/run-guest.sh" -k "$build/arch/x86/boot/bzImage" -t $((secs + 2400)) \
	-a "kdefrag_stress=$secs debug_pagealloc=on page_owner=on" stress || status=$?
res=$KDEFRAG_OUT/runs/stress/results.ktap
splats=$(grep -caE 'BUG: |WARNING: |Kernel panic|Oops: |possible circular locking|possible recursive locking|inconsistent lock state|INFO: task .* blocked|soft lockup|KASAN: |rcu: INFO: ' \
	"$KDEFRAG_OUT/runs/stress/console.log" || true)
echo "stress: $(sed -n 's/.*# \([0-9]* defrag requests.*\)/\1/p' "$res" | tr -d '\r' | head -1)"
echo "stress: $(sed -n 's/.*# \([0-9]* faults injected.*\)/\1/p' "$res" | tr -d '\r' | head -1)"
echo "stress: $(sed -n 's/.*# \(faulter: .*\)/\1/p' "$res" | tr -d '\r' | head -1)"
echo "stress: mismatched pages: $(sed -n 's/.*(\([0-9]*\) mismatches in.*/\1/p' "$res" | head -1); splats in the console: $splats"
read -r p f s < "$KDEFRAG_OUT/runs/stress/counts"
echo "$p passed, $f failed, ${s:-0} skipped"
exit $status
