#!/bin/bash
# Install the Debian packages the harness needs (idempotent, quiet when done).
. "$(dirname "$0")/lib.sh"

pkgs=(linux-source-6.12 qemu-system-x86 busybox-static ccache gcc make bc flex
      bison libelf-dev libssl-dev cpio xz-utils git perl e2fsprogs python3 libc6-dev
      stress-ng libnuma-dev libcap-dev liburing-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
