#!/bin/bash
# Sets up, in DIR, what scripts/tree.sh finds when Debian's linux-source-6.12
# changed under a developer: a copy of scripts/, a cache whose kernel repo
# was made from another version, a developer tree with one commit, patches/
# exported from it, and a small stand-in for the new source tarball.
#   tree-base-cases.sh DIR STATE
# STATE: exported (the dev tree equals patches/), unexported (one more
# commit, and a new file git does not see: the repo ignores everything, as
# Debian's tree does), dirty (an uncommitted change), nomarker (the repo's
# version marker lost, as "git clean -fdx" would). Then run, with
# KDEFRAG_CACHE=DIR/cache KDEFRAG_TARBALL=DIR/linux.tar.xz:
#   DIR/root/scripts/tree.sh base
set -e
dir=$1 state=$2
mkdir -p "$dir/root/scripts" "$dir/root/patches" "$dir/cache" "$dir/src/linux"
cp "$(dirname "$0")"/../../scripts/*.sh "$dir/root/scripts/"
echo "a version Debian never shipped" > "$dir/root/patches/base-version"
echo "new source" > "$dir/src/linux/README"
tar -C "$dir/src" -cJf "$dir/linux.tar.xz" linux
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@localhost GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@localhost
repo=$dir/cache/linux dev=$dir/cache/dev
git init -q -b pristine "$repo"
echo "old source" > "$repo/README"
echo "/*" > "$repo/.gitignore"
git -C "$repo" add -f README .gitignore
git -C "$repo" commit -q -m base
git -C "$repo" tag base
echo .kdefrag-base >> "$repo/.git/info/exclude"
echo "an older version" > "$repo/.kdefrag-base"
git -C "$repo" worktree add -q -b kdefrag "$dev" base
echo "kdefrag's change" > "$dev/mm.c"
git -C "$dev" add -f mm.c
git -C "$dev" commit -q -m "mm: the exported change"
git -C "$dev" format-patch -q --zero-commit --no-signature --no-numbered -o "$dir/root/patches" base..HEAD
(cd "$dir/root/patches" && ls ./*.patch | sed 's|^\./||') > "$dir/root/patches/series"
case $state in
exported) ;;
unexported)
	echo "more work" >> "$dev/mm.c"
	git -C "$dev" commit -q -am "mm: work not exported yet"
	echo "a file not added yet" > "$dev/new.c"
	;;
dirty) echo "work in progress" >> "$dev/mm.c" ;;
nomarker) rm "$repo/.kdefrag-base" ;;
*) echo "unknown state $state" >&2; exit 1 ;;
esac
