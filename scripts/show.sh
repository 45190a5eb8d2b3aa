#!/bin/bash
# Install, build, boot one guest plan and print what its programs printed.
#   show.sh demo    "make demo": fragment memory, coalesce, /proc/buddyinfo before/after
#   show.sh bench   "make bench": the benchmarks in bench/
. "$(dirname "$0")/lib.sh"
plan=${1:-demo}
"$KDEFRAG_ROOT/scripts/deps.sh"
"$KDEFRAG_ROOT/scripts/tree.sh" build
mkdir -p "$KDEFRAG_OUT"
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null
status=0
"$KDEFRAG_ROOT/scripts/run-guest.sh" "$plan" || status=$?
# The programs' own output, without the KTAP framing.
sed -n 's/^    //p' "$KDEFRAG_OUT/runs/$plan/results.ktap" | grep -v -e '^KTAP' -e '^1\.\.' | tr -d '\r'
exit $status
