#!/bin/bash
# Pack the guest initramfs: busybox-static, guest/init, the plans, and every
# guest C program (guest/tools, tests/guest, bench) built static. Prints its path.
. "$(dirname "$0")/lib.sh"

stage=$KDEFRAG_OUT/initramfs
bin=$KDEFRAG_OUT/guest-bin
mkdir -p "$bin"
make -s -C "$KDEFRAG_ROOT/guest" OUT="$bin" >&2
rm -rf "$stage"
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,etc,plans}
cp /bin/busybox "$stage/bin/busybox"
cp "$KDEFRAG_ROOT/guest/init" "$stage/init"
cp "$KDEFRAG_ROOT"/guest/plans/* "$stage/plans/"
cp "$bin"/* "$stage/bin/"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$KDEFRAG_OUT/initramfs.cpio"
echo "$KDEFRAG_OUT/initramfs.cpio"
