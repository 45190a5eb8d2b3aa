#!/bin/bash
# Self-tests of the harness: each failure path must make a run fail, with a
# message that says what happened; the passing plan must pass. Prints TAP
# and "P F" on its last line for scripts/check.sh.
. "$(dirname "$0")/../../scripts/lib.sh"
set +e

pass=0 fail=0 n=0
# plan  expected-exit(0|1)  message-regex  [run-guest options]
cases=(
	"selftest-pass|0|selftest-pass: 1 passed, 0 failed|"
	"selftest-fail|1|case: not ok 1 - deliberate failure|"
	"selftest-fail|1|not ok 1 no-test-matches|-T nothing-by-this-name"
	"selftest-fail|0|selftest-fail: 1 passed, 0 failed|-T pass"
	"selftest-panic|1|Kernel panic - not syncing: sysrq triggered crash|"
	"selftest-warn|1|WARNING: CPU: 0 PID: 1 at kdefrag harness self-test|"
	"selftest-hang|1|guest timed out after 30s|-t 30"
)
echo "KTAP version 1"
echo "1..${#cases[@]}"
for c in "${cases[@]}"; do
	IFS='|' read -r plan want re opts <<<"$c"
	n=$((n + 1))
	# shellcheck disable=SC2086
	msg=$("$KDEFRAG_ROOT/scripts/run-guest.sh" $opts "$plan" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && got=0 || got=1
	if [ "$got" = "$want" ] && grep -qE -- "$re" <<<"$msg"; then
		echo "ok $n harness: $plan exits $want and says '$re'"
		pass=$((pass + 1))
	else
		echo "not ok $n harness: $plan: exit $rc (want $want), output:"
		sed 's/^/#   /' <<<"$msg"
		fail=$((fail + 1))
	fi
done
echo "$pass $fail"
