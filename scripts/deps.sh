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
# The kernel source the series was made on (patches/base-version): installed
# with the other packages, or instead of another version while apt still
# lists it (no network needed to know); scripts/tree.sh warns otherwise.
want=$(cat "$KDEFRAG_ROOT/patches/base-version" 2>/dev/null || true)
have=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
pin=
if [ -n "$want" ] && [ "$have" != "$want" ]; then
	if [[ " ${missing[*]} " == *" linux-source-6.12 "* ]]; then
		pin=linux-source-6.12=$want
	elif apt-cache madison linux-source-6.12 2>/dev/null | grep -qF "| $want |"; then
		if [ "$(id -u)" -eq 0 ]; then
			pin=linux-source-6.12=$want
			missing+=(linux-source-6.12)
		else
			warn "linux-source-6.12 $want (patches/base-version) is available; as root, scripts/deps.sh installs it"
		fi
	fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
log "installing ${missing[*]}${pin:+ ($pin)}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$pin" ]; then
	missing=("${missing[@]/#linux-source-6.12/$pin}")
	apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}" >/dev/null &&
		exit 0
	warn "could not install $pin (no longer served?): installing Debian's current linux-source-6.12"
	missing=("${missing[@]/#linux-source-6.12=*/linux-source-6.12}")
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
