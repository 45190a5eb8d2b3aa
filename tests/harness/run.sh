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
	"selftest-warn|1|WARNING: CPU: [0-9]+ PID: [0-9]+ at drivers/misc/lkdtm/bugs.c|"
	"selftest-dstate|1|Kernel panic - not syncing: hung_task: blocked tasks|-t 300"
	"selftest-hang|1|guest timed out after 30s|-t 30"
	"selftest-short|1|planned 2 cases, reported 1|"
	"selftest-skip|0|selftest-skip: 1 passed, 0 failed, 1 skipped|"
	"selftest-nostock|1|case: not ok 1 no stock column|"
	"selftest-kunit|1|not ok - defrag-policy: the suite did not run|-T kunit-missing"
	"selftest-kunit|1|not ok - defrag-policy: planned 3 cases, reported 2|-T kunit-short"
	"selftest-kunit|1|not ok - defrag-core: the suite did not run|-T kunit-core-missing"
	"selftest-kunit|0|selftest-kunit: 5 passed, 0 failed|-T kunit-complete"
)
echo "KTAP version 1"
echo "1..$((${#cases[@]} + 8))"
# judge NAME WANT REGEX COMMAND...: the command must exit WANT (0|1) and say REGEX.
judge() {
	local name=$1 want=$2 re=$3 msg rc got
	shift 3
	n=$((n + 1))
	msg=$("$@" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && got=0 || got=1
	if [ "$got" = "$want" ] && grep -qE -- "$re" <<<"$msg"; then
		echo "ok $n harness: $name exits $want and says '$re'"
		pass=$((pass + 1))
	else
		echo "not ok $n harness: $name: exit $rc (want $want), output:"
		sed 's/^/#   /' <<<"$msg"
		fail=$((fail + 1))
	fi
}
for c in "${cases[@]}"; do
	IFS='|' read -r plan want re opts <<<"$c"
	# shellcheck disable=SC2086
	judge "$plan" "$want" "$re" "$KDEFRAG_ROOT/scripts/run-guest.sh" $opts "$plan"
done
# A guest that stops writing is stopped within KDEFRAG_SILENCE (+ a poll).
judge "selftest-hang, KDEFRAG_SILENCE=20" 1 "went silent in test hang: nothing on the results port for 20s" \
	env KDEFRAG_SILENCE=20 "$KDEFRAG_ROOT/scripts/run-guest.sh" selftest-hang
# A guest program that does not compile fails the run before any boot, and
# says at which stage: a copy of this checkout with one broken program, and
# an output directory of its own.
broken=$(mktemp -d)
tar -C "$KDEFRAG_ROOT" --exclude=./.git -cf - . | tar -C "$broken" -xf -
echo 'int main(void) { return not_declared_anywhere; }' > "$broken/tests/guest/broken_build.c"
judge "a guest test that does not compile" 1 "error: initramfs: building the guest programs" \
	env KDEFRAG_OUT="$broken/out" "$broken/scripts/run-guest.sh" selftest-pass
rm -rf "$broken"
# checkpatch.sh's two exceptions (FILE_PATH_CHANGES under a path an earlier
# patch gave MAINTAINERS, the EM()/EMe() idiom) drop only what they should.
cpt=$(mktemp -d)
"$KDEFRAG_ROOT/tests/harness/checkpatch-cases.sh" "$cpt"
judge "checkpatch.sh's exceptions" 0 \
	"^ok 1 .* ok 2 .* not ok 3 [^#]*03.patch #.*FILE_PATH_CHANGES.* ok 4 .* not ok 5 [^#]*05.patch #.*COMPLEX_MACRO.* 3 2 $" \
	bash -c '"$1/scripts/checkpatch.sh" | tr "\n" " "' _ "$cpt"
# ... and checkpatch.pl itself still flags what they drop.
judge "checkpatch.pl flags what the exceptions drop" 0 \
	"/02.patch:[0-9]+: WARNING:FILE_PATH_CHANGES.*/04.patch:[0-9]+: ERROR:COMPLEX_MACRO" \
	bash -c 'cd "$2" && { perl scripts/checkpatch.pl --strict --terse --no-tree --show-types \
		"$1/patches/02.patch" "$1/patches/04.patch" | tr "\n" " "; true; }' _ "$cpt" "$KDEFRAG_REPO"
rm -rf "$cpt"
# A new linux-source-6.12 never deletes the developer's work: the previous
# kernel repo and developer tree move aside whole (commits, untracked files,
# uncommitted changes), the link between them repaired, and the new base is
# extracted; tree.sh says loudly where they are and that the series was made
# on another version.
tree_case() { # STATE: run tree.sh base on a cache set up in STATE
	local d rc prev
	d=$(mktemp -d)
	"$KDEFRAG_ROOT/tests/harness/tree-base-cases.sh" "$d" "$1" || { rm -rf "$d"; return 2; }
	env -u FORCE KDEFRAG_CACHE="$d/cache" KDEFRAG_BUILD="$d/cache/build" \
		KDEFRAG_TARBALL="$d/linux.tar.xz" "$d/root/scripts/tree.sh" base
	rc=$?
	prev=$(ls -d "$d"/cache/previous-* 2>/dev/null | head -n 1)
	echo "new base: $(cat "$d/cache/linux/README" 2>/dev/null)"
	[ -n "$prev" ] && git -C "$prev/dev" log -1 --format='kept: %s' &&
		echo "kept: $(git -C "$prev/dev" status --porcelain --ignored | tr '\n' ' ')"
	rm -rf "$d"
	return $rc
}
for st in unexported dirty nomarker exported; do
	case $st in
	unexported) re="kept in .*previous-an older version.*new base: new source kept: mm: work not exported yet kept: !! new.c" ;;
	dirty) re="kept in .*new base: new source kept: mm: the exported change kept:  M mm.c" ;;
	nomarker) re="kept in .*previous-unknown.*new base: new source kept: mm: the exported change" ;;
	exported) re="WARNING: linux-source-6.12 is .* made on a version Debian never shipped.*kept in .*new base: new source" ;;
	esac
	judge "tree.sh, a new base ($st)" 0 "$re" \
		bash -c "$(declare -f tree_case); KDEFRAG_ROOT='$KDEFRAG_ROOT' tree_case $st 2>&1 | tr '\n' ' '; exit \${PIPESTATUS[0]}"
done
echo "$pass $fail"
