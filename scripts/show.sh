#!/bin/bash
# Install, build, boot a guest plan and print what its programs printed.
#   show.sh demo    "make demo": fragment memory, coalesce, /proc/buddyinfo before/after
#   show.sh bench   "make bench": the benchmarks in bench/, each in a boot of
#                   its own; all output in $KDEFRAG_OUT/bench.txt, the
#                   summary (bench/summary.sh) in $KDEFRAG_OUT/bench-summary.md
. "$(dirname "$0")/lib.sh"
plan=${1:-demo}
"$KDEFRAG_ROOT/scripts/deps.sh"
"$KDEFRAG_ROOT/scripts/tree.sh" build
mkdir -p "$KDEFRAG_OUT"
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null
status=0
# The programs' own output, without the KTAP framing.
output() { sed -n 's/^    //p' "$KDEFRAG_OUT/runs/$plan/results.ktap" | grep -v -e '^KTAP' -e '^1\.\.' | tr -d '\r'; }
if [ "$plan" != bench ]; then
	"$KDEFRAG_ROOT/scripts/run-guest.sh" "$plan" || status=$?
	output
	exit $status
fi
# Each benchmark in a boot of its own: every one starts from fresh memory,
# whatever the one before left behind.
out=$KDEFRAG_OUT/bench.txt
: > "$out"
while read -r name _; do
	echo "== $name" | tee -a "$out"
	# A program that could not measure in this boot but may in another
	# says so ("another boot may do": under TCG the guest sometimes
	# cannot calibrate its TSC and stays on jiffies, or the workload
	# left memory unfragmented): boot again, twice at most.
	for try in 1 2 3; do
		rc=0
		"$KDEFRAG_ROOT/scripts/run-guest.sh" -T "$name" "$plan" > /dev/null < /dev/null || rc=$?
		[ $rc -ne 0 ] && [ $try -lt 3 ] &&
			grep -qs 'another boot may do' "$KDEFRAG_OUT/runs/$plan/results.ktap" || break
		log "$name: $(grep -os 'bail out: .*' "$KDEFRAG_OUT/runs/$plan/results.ktap" | head -n 1 | tr -d '\r'); booting again"
	done
	[ $rc -eq 0 ] || status=$rc
	{ output || true; } | tee -a "$out"
done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$KDEFRAG_ROOT/guest/plans/$plan")
summary=$KDEFRAG_OUT/bench-summary.md
{
	echo "# make bench, $(date -u '+%F %T UTC')"
	echo
	echo "Commit $(git -C "$KDEFRAG_ROOT" describe --always --dirty), series $(cd "$KDEFRAG_ROOT/patches" &&
		grep -v -e '^#' -e '^[[:space:]]*$' series | xargs cat | sha1sum | cut -c1-12);" \
		"guest ${KDEFRAG_MEM:-1G}, 2 vCPUs, ${KDEFRAG_ACCEL:-tcg}; host $(nproc) CPUs, $(uname -m)."
	echo
	"$KDEFRAG_ROOT/bench/summary.sh" "$out" || status=$?
	echo
	echo "The other benchmarks, as they printed their figures:"
	echo
	echo '```'
	awk '/^== / { name = $2; other = name !~ /^(pool|thp|mthp)-/; if (other) print; next }
		other && !/^(kdefrag: |ok |not ok |# )/' "$out"
	echo '```'
} > "$summary"
cat "$summary"
exit $status
