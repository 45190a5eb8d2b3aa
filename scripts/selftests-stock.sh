#!/bin/bash
# "make selftests-stock": record the stock column of the mm selftests
# comparison. Builds Linux 6.12 without the series (the pristine "base"
# tree, the same config without kdefrag's options), boots it with the
# selftests plan, and writes tests/selftests/stock.txt with the date.
# make check compares the patched kernel's results with that file, so it
# need not build the stock kernel every time; rerun this (and commit the
# file) when the tree, the config or the list of tests changes.
. "$(dirname "$0")/lib.sh"
"$KDEFRAG_ROOT/scripts/deps.sh"
"$KDEFRAG_ROOT/scripts/tree.sh" build
mkdir -p "$KDEFRAG_OUT"
stock=$KDEFRAG_CACHE/stock
if [ ! -d "$stock" ]; then
	git -C "$KDEFRAG_REPO" worktree add -q --detach "$stock" base
else
	git -C "$stock" checkout -q --detach base
fi
# The build tree make check uses must exist: the selftests come from it.
"$KDEFRAG_ROOT/scripts/build.sh" >/dev/null
frag=$KDEFRAG_CACHE/stock.config
grep -v 'MEM_DEFRAG' "$KDEFRAG_ROOT/config/qemu.config" > "$frag"
KDEFRAG_SRC=$stock KDEFRAG_BUILD=$KDEFRAG_CACHE/build-stock \
	"$KDEFRAG_ROOT/scripts/build.sh" "$frag" >/dev/null
status=0
"$KDEFRAG_ROOT/scripts/run-guest.sh" -k "$KDEFRAG_CACHE/build-stock/arch/x86/boot/bzImage" \
	-a kdefrag_record=1 -t 3600 selftests || status=$?
# A boot that did not finish recorded only part of the column.
[ -f "$KDEFRAG_OUT/runs/selftests/timeout" ] && die "the stock guest timed out"
[ -f "$KDEFRAG_OUT/runs/selftests/silent" ] && die "the stock guest went silent: $(cat "$KDEFRAG_OUT/runs/selftests/silent")"
res=$KDEFRAG_OUT/runs/selftests/results.ktap
version=$(make -s -C "$stock" kernelversion)
out=$KDEFRAG_ROOT/tests/selftests/stock.txt
{
	echo "# mm selftests on stock Linux $version (no kdefrag), QEMU TCG, 2 vCPUs, 1 GiB"
	echo "# recorded $(date -u +%Y-%m-%d) by 'make selftests-stock' (scripts/selftests-stock.sh)"
	echo "# name result exit-status"
	# The guest's serial console ends lines with CR LF.
	tr -d '\r' < "$res" |
		sed -n 's/^ *# selftest \([^ ]*\) \([a-z]*\) \([0-9]*\)$/\1 \2 \3/p'
} > "$out.new"
[ "$(grep -vc '^#' "$out.new")" -gt 0 ] || die "no selftest results in $res"
mv "$out.new" "$out"
cat "$out"
# A stock test failing is a fact to record, not an error of this script.
exit 0
