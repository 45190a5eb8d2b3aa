#!/bin/bash
# "make check": install, build, boot, run every test; ends with
# "N passed, N failed" and exits non-zero on any failure.
. "$(dirname "$0")/lib.sh"
set +e

pass=0 fail=0
add() { pass=$((pass + $1)); fail=$((fail + $2)); }

"$KDEFRAG_ROOT/scripts/deps.sh" || die "installing packages failed"
"$KDEFRAG_ROOT/scripts/tree.sh" build || die "patches/series does not apply"
mkdir -p "$KDEFRAG_OUT"
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null || die "kernel build failed"

# Style of every patch in the series.
"$KDEFRAG_ROOT/scripts/checkpatch.sh" | tee "$KDEFRAG_OUT/checkpatch.tap" | grep -v "^[0-9]* [0-9]*$"
read -r p f < <(tail -n 1 "$KDEFRAG_OUT/checkpatch.tap")
add "$p" "$f"

# The in-guest tests (KUnit results included).
"$KDEFRAG_ROOT/scripts/run-guest.sh" -t 3000 check
read -r p f < "$KDEFRAG_OUT/runs/check/counts"
add "$p" "$f"

# The kernel's mm selftests under churn, in a fresh boot of their own: the
# stock column (tests/selftests/stock.txt) was recorded that way, and the
# tests above leave memory and settings behind that the selftests notice.
"$KDEFRAG_ROOT/scripts/run-guest.sh" -t 1800 selftests
read -r p f < "$KDEFRAG_OUT/runs/selftests/counts"
add "$p" "$f"

# The harness's own failure paths.
"$KDEFRAG_ROOT/tests/harness/run.sh" | tee "$KDEFRAG_OUT/harness.tap" | grep -v '^[0-9]* [0-9]*$'
read -r p f < <(tail -n 1 "$KDEFRAG_OUT/harness.tap")
add "$p" "$f"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
