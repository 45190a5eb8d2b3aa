# shellcheck shell=bash
# Common settings for the kdefrag scripts. Sourced, never run.
set -euo pipefail

KDEFRAG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything big (kernel tree, build output, ccache, guest images) lives
# outside the checkout so that a fresh clone stays small and reruns are
# incremental.
KDEFRAG_CACHE=${KDEFRAG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kdefrag}
KDEFRAG_TARBALL=${KDEFRAG_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
KDEFRAG_REPO=$KDEFRAG_CACHE/linux          # git repo; its work tree is what we build
KDEFRAG_DEV=$KDEFRAG_CACHE/dev             # developer worktree (make tree)
KDEFRAG_APPLY=$KDEFRAG_CACHE/apply         # scratch worktree for git am
KDEFRAG_BUILD=${KDEFRAG_BUILD:-$KDEFRAG_CACHE/build}
KDEFRAG_OUT=${KDEFRAG_OUT:-$KDEFRAG_CACHE/out}
JOBS=${JOBS:-$(($(nproc) + 1))}

export CCACHE_DIR=${CCACHE_DIR:-$KDEFRAG_CACHE/ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Fixed build metadata: identical inputs give identical objects (ccache hits).
export KBUILD_BUILD_USER=kdefrag KBUILD_BUILD_HOST=qemu
export KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2026'
# git am / commit need an identity; these never leave the cache.
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-kdefrag} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-kdefrag@localhost}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-kdefrag} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-kdefrag@localhost}

log() { printf 'kdefrag: %s\n' "$*" >&2; }
die() { printf 'kdefrag: error: %s\n' "$*" >&2; exit 1; }
warn() { printf 'kdefrag: WARNING: %s\n' "$*" >&2; }

kmake() {
	make -C "$1" O="$2" ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" -j"$JOBS" "${@:3}"
}
