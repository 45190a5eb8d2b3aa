#!/bin/bash
# "make demo": install, build, boot; in the guest fragment memory, coalesce,
# show /proc/buddyinfo before and after.
. "$(dirname "$0")/lib.sh"
"$KDEFRAG_ROOT/scripts/deps.sh"
"$KDEFRAG_ROOT/scripts/tree.sh" build
mkdir -p "$KDEFRAG_OUT"
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null
status=0
"$KDEFRAG_ROOT/scripts/run-guest.sh" demo || status=$?
# The demo's own output, without the KTAP framing.
sed -n 's/^    //p' "$KDEFRAG_OUT/runs/demo/results.ktap" | grep -v -e '^KTAP' -e '^1\.\.' | tr -d '\r'
exit $status
