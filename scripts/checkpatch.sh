#!/bin/bash
# checkpatch.pl --strict on every patch of the series: one TAP line per
# patch; last line "P F".
#
# Two kinds of report are dropped, each only where checkpatch cannot know
# better:
# - FILE_PATH_CHANGES ("does MAINTAINERS need updating?") for a patch whose
#   new files all lie under an F: pattern that an earlier patch of the
#   series added to MAINTAINERS (--no-tree cannot read MAINTAINERS);
# - the reports on the definitions of the EM()/EMe() name-list idiom of
#   include/trace/events/mmflags.h (#define EM/EMe, and a list macro whose
#   lines are EM()/EMe() entries), which checkpatch makes on the kernel's
#   own trace headers too.
. "$(dirname "$0")/lib.sh"
cd "$KDEFRAG_REPO" || die "no kernel tree"

# Does the patch create files, delete or rename none, and is every file it
# creates under one of the F: patterns in @covered?
new_files_covered() {
	local f pat ok
	grep -qE '^(deleted file mode|rename (from|to) )' "$1" && return 1
	grep -q '^new file mode' "$1" || return 1
	while read -r f; do
		ok=0
		for pat in "${covered[@]}"; do
			case $pat in
			*/) [[ $f == "$pat"* ]] && ok=1 ;;
			*) [[ $f == "$pat" ]] && ok=1 ;;
			esac
		done
		[ $ok -eq 1 ] || return 1
	done < <(awk '/^diff --git /{f=$4; sub(/^b\//, "", f)} /^new file mode/{print f}' "$1")
	return 0
}

# Is patch line @2 of @1 part of an EM()/EMe() list's definition?
em_idiom_line() {
	local line
	line=$(sed -n "${2}p" "$1")
	[[ $line =~ ^\+#define[[:space:]]+(EM|EMe)\( ]] && return 0
	[[ $line =~ ^\+#define[[:space:]]+[A-Z_]+[[:space:]]*\\$ ]] &&
		sed -n "$(($2 + 1))p" "$1" | grep -qE '^\+[[:space:]]+EMe?\('
}

covered=()
pass=0 fail=0 n=0
while read -r p; do
	n=$((n + 1))
	patch="$KDEFRAG_ROOT/patches/$p"
	out=$(perl scripts/checkpatch.pl --strict --terse --no-tree --show-types \
		"$patch" 2>&1 || true)
	kept=()
	while IFS= read -r r; do
		[[ $r =~ (ERROR|WARNING|CHECK): ]] || continue
		if [[ $r == *:FILE_PATH_CHANGES:* ]] && new_files_covered "$patch"; then
			continue
		fi
		if [[ $r =~ :([0-9]+):\ (ERROR|WARNING|CHECK):(COMPLEX_MACRO|MACRO_ARG_UNUSED|TRAILING_SEMICOLON|BRACKET_SPACE|CAMELCASE): ]] &&
		   em_idiom_line "$patch" "${BASH_REMATCH[1]}"; then
			continue
		fi
		kept+=("$r")
	done <<<"$out"
	if [ ${#kept[@]} -gt 0 ]; then
		echo "not ok $n checkpatch --strict $p"
		printf '#   %s\n' "${kept[@]}"
		fail=$((fail + 1))
	else
		echo "ok $n checkpatch --strict $p"
		pass=$((pass + 1))
	fi
	while read -r pat; do
		covered+=("$pat")
	done < <(awk '/^diff --git a\/MAINTAINERS /{m=1; next} /^diff --git /{m=0} m && /^\+F:/{print $2}' "$patch")
done < <(grep -v -e '^#' -e '^[[:space:]]*$' "$KDEFRAG_ROOT/patches/series" 2>/dev/null)
echo "$pass $fail"
