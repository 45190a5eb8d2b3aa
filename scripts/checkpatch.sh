#!/bin/bash
# checkpatch.pl --strict on every patch of the series: one TAP line per
# patch; last line "P F".
. "$(dirname "$0")/lib.sh"
cd "$KDEFRAG_REPO" || die "no kernel tree"
pass=0 fail=0 n=0
while read -r p; do
	n=$((n + 1))
	out=$(perl scripts/checkpatch.pl --strict --terse --no-tree --show-types \
		"$KDEFRAG_ROOT/patches/$p" 2>&1 || true)
	if grep -qE '(ERROR|WARNING|CHECK):' <<<"$out"; then
		echo "not ok $n checkpatch --strict $p"
		grep -E '(ERROR|WARNING|CHECK):' <<<"$out" | sed 's/^/#   /'
		fail=$((fail + 1))
	else
		echo "ok $n checkpatch --strict $p"
		pass=$((pass + 1))
	fi
done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$KDEFRAG_ROOT/patches/series" 2>/dev/null)
echo "$pass $fail"
