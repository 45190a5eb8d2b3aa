#!/bin/bash
# "make check": install, build, boot, run every test; ends with
# "N passed, N failed, N skipped" and exits non-zero on any failure.
#   T=GLOBS    only the guest tests whose names match (comma-separated
#              globs, e.g. T=writeback or T='coalesce-*'); no checkpatch,
#              no harness self-tests
#   REPEAT=N   boot each selected plan N times on the one build, print each
#              boot's verdict and a tally (to show a flake and its fix)
# Either makes the run partial, and $KDEFRAG_OUT/last-check says so: only a
# complete run of a clean checkout tests a commit.
. "$(dirname "$0")/lib.sh"
set +e

T=${T:-}
REPEAT=${REPEAT:-1}
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "REPEAT must be a positive number, not '$REPEAT'"
[[ "$T" =~ ^[][A-Za-z0-9_.*?,-]*$ ]] || die "T: test names and globs only, comma-separated: '$T'"

pass=0 fail=0 skip=0
add() { pass=$((pass + $1)); fail=$((fail + $2)); skip=$((skip + ${3:-0})); }
# read_counts < FILE: "P F [S]" from a stage's last line; a stage that
# wrote none (or garbage) counts as one failure.
read_counts() {
	local p f s
	read -r p f s _ || true
	[[ "$p" =~ ^[0-9]+$ && "$f" =~ ^[0-9]+$ ]] || { p=0 f=1; }
	[[ "$s" =~ ^[0-9]+$ ]] || s=0
	echo "$p $f $s"
}

# What this run tests, for $KDEFRAG_OUT/last-check.
commit=$(git -C "$KDEFRAG_ROOT" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
partial=()
[ -n "$T" ] && partial+=("T=$T")
[ "$REPEAT" -gt 1 ] && partial+=("REPEAT=$REPEAT")
[ -z "$(git -C "$KDEFRAG_ROOT" status --porcelain 2>/dev/null)" ] ||
	partial+=("uncommitted changes")
if [ ${#partial[@]} -eq 0 ]; then
	scope="complete"
else
	scope="partial ($(IFS=,; echo "${partial[*]}" | sed 's/,/, /g'))"
fi
record=()
mkdir -p "$KDEFRAG_OUT"
last=$KDEFRAG_OUT/last-check
# Until the run ends, the record says it did not, and counts it failed.
printf 'commit %s: make check started %s, not finished (partial): 1 failed\n' \
	"$commit" "$(date -u '+%F %T UTC')" > "$last"

# Where the time went: "stage seconds [details]" per line, printed at the end.
spent=()
took() { spent+=("$(printf '%-24s %5d s' "$1" $((SECONDS - $2)))${3:+  $3}"); }
# What failed, stage by stage, repeated at the very end: CI shows the tail.
failed=()
failures() { # STAGE WHERE < lines
	local l n=0
	failed+=("$1:")
	while IFS= read -r l; do
		n=$((n + 1))
		[ $n -le 16 ] && failed+=("  ${l#kdefrag: }")
	done
	[ $n -gt 0 ] || failed+=("  (no details; see $2)")
	[ $n -le 16 ] || failed+=("  ... $((n - 16)) more lines in $2")
}
t=$SECONDS
"$KDEFRAG_ROOT/scripts/deps.sh" || die "installing packages failed"
took "packages" "$t"; t=$SECONDS
"$KDEFRAG_ROOT/scripts/tree.sh" build || die "patches/series does not apply"
took "series applied" "$t"; t=$SECONDS
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null || die "kernel build failed"
took "kernel build" "$t"
series=$(cd "$KDEFRAG_ROOT/patches" && grep -v -e '^#' -e '^[[:space:]]*$' series |
	xargs cat | sha1sum | cut -c1-12)

# Style of every patch in the series.
if [ -z "$T" ] && [ "$REPEAT" -eq 1 ]; then
	t=$SECONDS
	"$KDEFRAG_ROOT/scripts/checkpatch.sh" | tee "$KDEFRAG_OUT/checkpatch.tap" | grep -v "^[0-9]* [0-9]*$"
	read -r p f s < <(tail -n 1 "$KDEFRAG_OUT/checkpatch.tap" | read_counts)
	[ "$f" -eq 0 ] || failures checkpatch "$KDEFRAG_OUT/checkpatch.tap" < <(grep '^not ok' "$KDEFRAG_OUT/checkpatch.tap")
	add "$p" "$f" "$s"
	record+=("checkpatch: $p passed, $f failed")
	took checkpatch "$t"
fi

# Does plan $1 hold a test that T selects?
selected() {
	local - name g
	set -f	# the globs are for test names, not for files here
	[ -z "$T" ] && return 0
	while read -r name _; do
		for g in ${T//,/ }; do
			# shellcheck disable=SC2053 # the glob is the point
			[[ $name == $g ]] && return 0
		done
	done < <(set -f; grep -v -e '^#' -e '^[[:space:]]*$' "$KDEFRAG_ROOT/guest/plans/$1")
	return 1
}

# boot PLAN TIMEOUT: the plan REPEAT times; each boot's logs are kept in
# runs/PLAN/repeat-K when repeating.
boot() {
	local plan=$1 k green=0 p f s label run=$KDEFRAG_OUT/runs/$1
	selected "$plan" || return 0
	rm -rf "$run"/repeat-*
	for ((k = 1; k <= REPEAT; k++)); do
		rm -f "$run/counts" "$run/failures"
		t=$SECONDS
		"$KDEFRAG_ROOT/scripts/run-guest.sh" -t "$2" ${T:+-T "$T"} "$plan"
		# the three slowest tests of the boot
		label="boot $plan"
		[ "$REPEAT" -eq 1 ] || label+=" #$k"
		took "$label" "$t" "$(tr -d '\r' < "$run/results.ktap" 2>/dev/null |
			sed -n 's/^# kdefrag: end \([^ ]*\) \([0-9]*\) s$/\2 \1/p' | sort -rn | head -n 3 |
			awk '{ printf "%s%s %d s", (NR > 1 ? ", " : ""), $2, $1 }')"
		read -r p f s < <(read_counts 2>/dev/null < "$run/counts" || echo 0 1 0)
		add "$p" "$f" "$s"
		[ "$f" -eq 0 ] || failures "$label" "$run" < <(cat "$run/failures" 2>/dev/null)
		[ "$f" -eq 0 ] && green=$((green + 1))
		if [ "$REPEAT" -gt 1 ]; then
			mkdir -p "$run/repeat-$k"
			cp "$run"/{console.log,results.ktap,counts} "$run/repeat-$k/" 2>/dev/null
			log "repeat $k of $REPEAT, $plan: $p passed, $f failed, $s skipped"
		fi
	done
	if [ "$REPEAT" -gt 1 ]; then
		log "$plan: green in $green of $REPEAT boots (logs in $run/repeat-*)"
		record+=("$plan: green in $green of $REPEAT boots")
	else
		record+=("$plan: $p passed, $f failed, $s skipped")
	fi
}

# The in-guest tests (KUnit results included).
boot check 3000

# Beside memory offline and CMA, in a boot with movable memory blocks and
# a CMA area (guest/plans/isolation).
boot isolation 900

# The kernel's mm selftests under churn, in a fresh boot of their own: the
# stock column (tests/selftests/stock.txt) was recorded that way, and the
# tests above leave memory and settings behind that the selftests notice.
boot selftests 1800

[ ${#record[@]} -gt 0 ] || [ -z "$T" ] || die "T=$T names no test of guest/plans/check or guest/plans/selftests"

# The harness's own failure paths.
if [ -z "$T" ] && [ "$REPEAT" -eq 1 ]; then
	t=$SECONDS
	"$KDEFRAG_ROOT/tests/harness/run.sh" | tee "$KDEFRAG_OUT/harness.tap" | grep -v '^[0-9]* [0-9]*$'
	read -r p f s < <(tail -n 1 "$KDEFRAG_OUT/harness.tap" | read_counts)
	[ "$f" -eq 0 ] || failures "harness self-tests" "$KDEFRAG_OUT/harness.tap" < <(grep '^not ok' "$KDEFRAG_OUT/harness.tap")
	add "$p" "$f" "$s"
	record+=("harness: $p passed, $f failed")
	took "harness self-tests" "$t"
fi

# Edits made while it ran were tested too (guest programs, plans).
if [ ${#partial[@]} -eq 0 ] && [ -n "$(git -C "$KDEFRAG_ROOT" status --porcelain 2>/dev/null)" ]; then
	partial+=("changes made during the run")
	scope="partial (changes made during the run)"
fi
{
	echo "commit $commit, series $series: make check $scope"
	printf '  %s\n' "${record[@]}"
	echo "  total: $pass passed, $fail failed, $skip skipped"
	echo "  finished $(date -u '+%F %T UTC')"
} > "$last"
[ ${#partial[@]} -eq 0 ] || log "this run was $scope: it does not stand for a full make check"
log "where the time went:"
printf '  %s\n' "${spent[@]}" "$(printf '%-24s %5d s' total "$SECONDS")" >&2
if [ ${#failed[@]} -gt 0 ]; then
	log "what failed:"
	printf '  %s\n' "${failed[@]}" >&2
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
