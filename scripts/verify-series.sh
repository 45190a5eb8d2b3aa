#!/bin/bash
# The series applies to a pristine tree, every patch builds on its own
# (bisectable) and passes checkpatch --strict. Builds each prefix of the
# series incrementally in its own build directory (ccache keeps it cheap).
. "$(dirname "$0")/lib.sh"

"$KDEFRAG_ROOT/scripts/tree.sh" build
top=$(git -C "$KDEFRAG_REPO" rev-parse HEAD)
wt=$KDEFRAG_CACHE/bisect
if [ ! -e "$wt/.git" ]; then
	git -C "$KDEFRAG_REPO" worktree prune
	git -C "$KDEFRAG_REPO" worktree add -q --detach "$wt" base
fi
fail=0
for c in $(git -C "$KDEFRAG_REPO" rev-list --reverse base.."$top"); do
	subj=$(git -C "$KDEFRAG_REPO" log -1 --format=%s "$c")
	git -C "$wt" checkout -q -f --detach "$c"
	# Options that later patches introduce may not exist yet: lax config.
	if KDEFRAG_SRC=$wt KDEFRAG_BUILD=$KDEFRAG_CACHE/bisect-build KDEFRAG_CONFIG_LAX=1 \
	   "$KDEFRAG_ROOT/scripts/build.sh" >/dev/null 2>"$KDEFRAG_CACHE/bisect.log"; then
		echo "ok builds: $subj"
	else
		echo "not ok builds: $subj"; tail -20 "$KDEFRAG_CACHE/bisect.log"; fail=1
	fi
done
"$KDEFRAG_ROOT/scripts/checkpatch.sh" | tee "$KDEFRAG_CACHE/checkpatch.tap" | grep -v '^[0-9]* [0-9]*$'
read -r _ f < <(tail -n 1 "$KDEFRAG_CACHE/checkpatch.tap")
[ "$f" -eq 0 ] || fail=1
[ $fail -eq 0 ] && echo "series verified" || die "series verification failed"
