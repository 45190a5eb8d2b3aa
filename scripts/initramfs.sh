#!/bin/bash
# Pack the guest initramfs: busybox-static, guest/init, the plans, and every
# guest C program (guest/tools, tests/guest, bench) built static. Prints its path.
. "$(dirname "$0")/lib.sh"

stage=$KDEFRAG_OUT/initramfs
bin=$KDEFRAG_OUT/guest-bin
# Several checkouts (CI's, a developer's) share the cache: make's timestamps
# cannot tell which checkout built a binary, the sources' hash can.
sum=$(cd "$KDEFRAG_ROOT" && find guest tests/guest bench -type f | LC_ALL=C sort |
	xargs sha1sum | sha1sum | cut -d' ' -f1)
[ "$(cat "$bin/.sources" 2>/dev/null)" = "$sum" ] || rm -rf "$bin"
mkdir -p "$bin"
echo "$sum" > "$bin/.sources"
make -s -C "$KDEFRAG_ROOT/guest" OUT="$bin" >&2
rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,etc,plans}
cp /bin/busybox "$stage/bin/busybox"
cp "$KDEFRAG_ROOT/guest/init" "$stage/init"
cp "$KDEFRAG_ROOT"/guest/plans/* "$stage/plans/"
cp "$bin"/* "$stage/bin/"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$KDEFRAG_OUT/initramfs.cpio"
echo "$KDEFRAG_OUT/initramfs.cpio"
