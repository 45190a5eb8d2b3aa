#!/bin/bash
# Judge one guest run directory: results.ktap (from the guest) and
# console.log (the kernel's). Counts the test cases one level below each
# plan entry: "ok" passes, "ok ... # SKIP" is skipped (not passed), "not ok"
# fails. A plan entry that failed without a failing case (e.g. a crashed
# program), or that reported no plan ("1..N") or another number of cases
# than it planned, counts as one failure. Adds a failure for each kernel
# splat, a missing end of plan, a timeout, or a guest gone silent. Writes "P F S" to
# RUN/counts, prints the reasons, exits 1 on any failure.
set -uo pipefail
run=${1:?run dir}
res=$run/results.ktap
con=$run/console.log
touch "$res" "$con"
# The failure lines are kept in RUN/failures too, for make check's summary.
fails=$run/failures
: > "$fails"

read -r pass fail skip < <(tr -d '\r' < "$res" | awk -v fails="$fails" '
	/^    1\.\.[0-9]+$/ { if (planned == "") planned = substr($1, 4) + 0; next }
	/^    (not )?ok / {
		cases++
		if ($1 == "not") { f++; cf++ } else if ($0 ~ /# [Ss][Kk][Ii][Pp]/) s++; else p++
		next }
	/^(not )?ok [0-9]+/ {
		why = ""
		if (planned == "") why = "reported no plan (1..N)"
		else if (cases != planned) why = "planned " planned " cases, reported " cases
		if ($1 == "not" || why != "") {
			if (cf == 0) f++
			print "kdefrag: FAIL " $0 (why == "" ? "" : ": " why) > "/dev/stderr"
			print "kdefrag: FAIL " $0 (why == "" ? "" : ": " why) >> fails
		}
		planned = ""; cases = 0; cf = 0; next }
	END { close(fails); print p + 0, f + 0, s + 0 }')
# Each failing case, with up to 3 diagnostic lines printed before it.
tr -d '\r' < "$res" | awk '
	/^    # / { d[n++ % 3] = $0; next }
	/^    not ok / {
		for (i = (n > 3 ? n - 3 : 0); i < n; i++) print "kdefrag:     " substr(d[i % 3], 5)
		print "kdefrag:   case: " substr($0, 5) }
	/^    (not )?ok / || /^(not )?ok / { n = 0 }' | tee -a "$fails" >&2

reasons=()
# Kernel splats: any of these in the console fails the run.
splat='BUG: |WARNING: |Kernel panic|Oops: |general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked for more than|soft lockup|hard LOCKUP|rcu: INFO: |KASAN: |UBSAN: |kernel BUG at|Unable to handle kernel'
if grep -aqE "$splat" "$con"; then
	reasons+=("kernel splat in console log:")
	while IFS= read -r l; do reasons+=("  $l"); done < <(grep -aE "$splat" "$con" | head -8)
fi
if [ -f "$run/silent" ]; then
	read -r test secs < "$run/silent"
	reasons+=("guest went silent in test $test: nothing on the results port for ${secs}s; the console's last 30 lines:")
	while IFS= read -r l; do reasons+=("  | $l"); done < <(tail -n 30 "$con" | tr -d '\r')
elif [ -f "$run/timeout" ]; then
	reasons+=("guest timed out after $(cat "$run/timeout")s (hung guest?)")
elif ! grep -aq '^# kdefrag: plan done' "$res"; then
	reasons+=("guest did not finish its plan (crash or early exit; see $con)")
fi
planned=$(tr -d '\r' < "$res" | sed -n 's/^1\.\.\([0-9]*\)$/\1/p' | head -1)
ran=$(tr -d '\r' < "$res" | grep -cE '^(not )?ok [0-9]+' || true)
if [ -n "$planned" ] && [ "$ran" -ne "$planned" ] && [ ! -f "$run/timeout" ] && [ ! -f "$run/silent" ]; then
	reasons+=("plan listed $planned tests, $ran reported")
fi
[ -n "$planned" ] || [ ${#reasons[@]} -gt 0 ] || reasons+=("no KTAP plan from the guest")
# The run itself counts as one more failed test when anything went wrong.
[ ${#reasons[@]} -eq 0 ] || fail=$((fail + 1))
for r in "${reasons[@]}"; do echo "kdefrag: FAIL $(basename "$run"): $r"; done >&2
# For make check's summary: the reasons, of a console excerpt its end only.
for r in "${reasons[@]}"; do echo "kdefrag: FAIL $(basename "$run"): $r"; done |
	awk '/: +\| / { tail[n++ % 8] = $0; next }
	     { print }
	     END { for (i = (n > 8 ? n - 8 : 0); i < n; i++) print tail[i % 8] }' >> "$fails"
# Where the boot's time went, test by test (guest/init's end lines).
times=$(tr -d '\r' < "$res" | sed -n 's/^# kdefrag: end \([^ ]*\) \([0-9]*\) s$/\1 \2 s/p' | paste -sd, - | sed 's/,/, /g')
[ -z "$times" ] || echo "kdefrag: $(basename "$run") test times: $times" >&2
echo "$pass $fail $skip" > "$run/counts"
echo "kdefrag: $(basename "$run"): $pass passed, $fail failed, $skip skipped" >&2
[ "$fail" -eq 0 ]
