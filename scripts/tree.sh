#!/bin/bash
# The kernel tree: a git repo in the cache with a pristine base commit
# (tag "base") made from Debian's linux-source-6.12 tarball.
#
#   tree.sh base     make sure the repo and its base commit exist
#   tree.sh build    check out base + patches/series in the build tree
#                    (only files that differ are rewritten: incremental)
#   tree.sh dev      give the developer $KDEFRAG_DEV, branch kdefrag =
#                    base + series, one commit per patch
#   tree.sh export   write the dev branch back to patches/ and series
. "$(dirname "$0")/lib.sh"

PATCHES=$KDEFRAG_ROOT/patches

series_files() {
	[ -f "$PATCHES/series" ] || return 0
	grep -v -e '^#' -e '^[[:space:]]*$' "$PATCHES/series" | sed "s|^|$PATCHES/|"
}

# The kernel repo and the developer tree of another base move aside, whole
# (commits, stashes, branches, untracked files: Debian's .gitignore hides
# them all from git status), never deleted; the scratch worktrees and build
# directories of that base are removed, they hold nothing that is not
# regenerated.
keep_previous() {
	local old=$1 dest
	dest=$KDEFRAG_CACHE/previous-$old
	[ -e "$dest" ] && dest=$dest-$(date +%s)
	mkdir -p "$dest"
	mv "$KDEFRAG_REPO" "$dest/linux"
	if [ -e "$KDEFRAG_DEV" ]; then
		mv "$KDEFRAG_DEV" "$dest/dev"
		git -C "$dest/linux" worktree repair "$dest/dev" >/dev/null 2>&1 || true
	fi
	rm -rf "$KDEFRAG_APPLY" "$KDEFRAG_CACHE/bisect" "$KDEFRAG_CACHE/stock" \
		"$KDEFRAG_BUILD" "$KDEFRAG_CACHE/build-stock" "$KDEFRAG_CACHE/bisect-build" \
		"$KDEFRAG_CACHE/build-debug"
	git -C "$dest/linux" worktree prune
	warn "the kernel tree of $old and its developer tree are kept in $dest: bring any work there into patches/ (its branch kdefrag), then remove it"
}

ensure_base() {
	local ver old want
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown)
	want=$(cat "$PATCHES/base-version" 2>/dev/null || echo unknown)
	[ "$ver" = "$want" ] ||
		warn "linux-source-6.12 is $ver, but the series and tests/selftests/stock.txt were made on $want (patches/base-version): patches may not apply, the stock column may not hold"
	old=$(cat "$KDEFRAG_REPO/.kdefrag-base" 2>/dev/null || echo unknown)
	[ -f "$KDEFRAG_REPO/.kdefrag-base" ] && [ "$old" = "$ver" ] && return 0
	[ -f "$KDEFRAG_TARBALL" ] || die "$KDEFRAG_TARBALL missing (run scripts/deps.sh)"
	[ -e "$KDEFRAG_REPO" ] && keep_previous "$old"
	log "extracting $KDEFRAG_TARBALL ($ver) into $KDEFRAG_REPO"
	rm -rf "$KDEFRAG_REPO" "$KDEFRAG_APPLY" "$KDEFRAG_BUILD"
	mkdir -p "$KDEFRAG_REPO"
	tar -xJf "$KDEFRAG_TARBALL" -C "$KDEFRAG_REPO" --strip-components=1
	cd "$KDEFRAG_REPO"
	git init -q -b pristine
	git config core.autocrlf false
	git config gc.auto 0
	git config user.name "kdefrag developers"
	git config user.email "kdefrag@localhost"
	# Debian's top-level .gitignore ignores everything ("/*"): force-add.
	git add -f .
	git commit -q -m "Linux $ver (Debian linux-source-6.12)"
	git tag -f base >/dev/null
	# Kept out of the tree's own status by the tag file living in .git's
	# sibling; the marker itself is ignored through info/exclude.
	echo .kdefrag-base >> .git/info/exclude
	echo "$ver" > .kdefrag-base
}

# Apply the series on base in a scratch worktree; print the resulting commit.
# Cached by the series' content hash, so an unchanged series costs nothing.
series_commit() {
	local id ref files
	files=$(series_files)
	id=$( (cat "$PATCHES/series" 2>/dev/null; for f in $files; do cat "$f"; done) | sha256sum | cut -c1-16)
	ref=refs/kdefrag/series-$id
	if commit=$(git -C "$KDEFRAG_REPO" rev-parse -q --verify "$ref^{commit}"); then
		echo "$commit"
		return 0
	fi
	if [ ! -e "$KDEFRAG_APPLY/.git" ]; then
		rm -rf "$KDEFRAG_APPLY"
		git -C "$KDEFRAG_REPO" worktree prune
		git -C "$KDEFRAG_REPO" worktree add -q --detach "$KDEFRAG_APPLY" base
	fi
	cd "$KDEFRAG_APPLY"
	git am --abort >/dev/null 2>&1 || true
	git checkout -q -f --detach base
	if [ -n "$files" ]; then
		# shellcheck disable=SC2086
		git am -q --keep-cr $files >&2 || { git am --abort >/dev/null 2>&1 || true;
			die "patches/series does not apply to the pristine tree"; }
	fi
	git update-ref "$ref" HEAD
	git rev-parse HEAD
}

cmd=${1:-build}
ensure_base
case $cmd in
base) ;;
build)
	c=$(series_commit)
	cd "$KDEFRAG_REPO"
	if [ "$(git rev-parse HEAD)" != "$c" ]; then
		log "build tree -> $(git log -1 --format='%h %s' "$c")"
		git checkout -q -f --detach "$c"
	fi
	;;
dev)
	c=$(series_commit)
	if [ -e "$KDEFRAG_DEV/.git" ]; then
		cd "$KDEFRAG_DEV"
		[ -z "$(git status --porcelain)" ] || die "$KDEFRAG_DEV has uncommitted changes"
		if [ "$(git rev-parse HEAD)" != "$c" ] &&
		   [ "$(git diff base "$c" | sha1sum)" != "$(git diff base HEAD | sha1sum)" ] &&
		   [ "${FORCE:-0}" != 1 ]; then
			die "dev branch differs from patches/: run 'make export' first, or FORCE=1 to reset it"
		fi
		git checkout -q -B kdefrag "$c"
	else
		git -C "$KDEFRAG_REPO" worktree prune
		git -C "$KDEFRAG_REPO" worktree add -q -B kdefrag "$KDEFRAG_DEV" "$c"
	fi
	log "developer tree: $KDEFRAG_DEV (branch kdefrag, $(git -C "$KDEFRAG_DEV" rev-list --count base..kdefrag) patches on base)"
	;;
export)
	[ -e "$KDEFRAG_DEV/.git" ] || die "no developer tree; run 'make tree' first"
	cd "$KDEFRAG_DEV"
	[ -z "$(git status --porcelain)" ] || die "$KDEFRAG_DEV has uncommitted changes: commit them first"
	rm -f "$PATCHES"/*.patch
	mkdir -p "$PATCHES"
	git format-patch -q --zero-commit --no-signature --no-numbered -o "$PATCHES" base..HEAD
	(cd "$PATCHES" && ls ./*.patch 2>/dev/null | sed 's|^\./||') > "$PATCHES/series"
	log "exported $(wc -l < "$PATCHES/series") patches to patches/"
	;;
*) die "usage: tree.sh base|build|dev|export" ;;
esac
