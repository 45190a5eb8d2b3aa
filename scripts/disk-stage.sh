#!/bin/bash
# Stage what the guest finds on its ext4 disk (/mnt/disk), too big for the
# initramfs (which stays in guest RAM): stress-ng from Debian with its
# shared libraries and loader, and the mm selftests with their list and the
# stock kernel's results. Prints the staging directory (mkfs.ext4 -d).
. "$(dirname "$0")/lib.sh"
stage=$KDEFRAG_OUT/disk-stage
rm -rf "$stage"
mkdir -p "$stage/stress-ng/lib" "$stage/selftests"

# stress-ng is dynamically linked: ship its libraries and run it through
# the loader, so that nothing has to be installed in the guest.
sng=$(command -v stress-ng) || die "stress-ng not installed (scripts/deps.sh)"
cp "$sng" "$stage/stress-ng/stress-ng"
ldd "$sng" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}' | while read -r lib; do
	cp -L "$lib" "$stage/stress-ng/lib/"
done
cat > "$stage/stress-ng/run" <<'RUN'
#!/bin/sh
d=$(dirname "$0")
exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib" "$d/stress-ng" "$@"
RUN
chmod +x "$stage/stress-ng/run"

# The selftests come from the tree make check builds (tools/ is the same
# in the stock tree); without a configured build there are none.
if [ -f "$KDEFRAG_CACHE/build/.config" ]; then
	bin=$("$KDEFRAG_ROOT/scripts/selftests-build.sh" "$KDEFRAG_REPO" "$KDEFRAG_CACHE/build")
	cp -r "$bin" "$stage/selftests/bin"
	cp "$KDEFRAG_ROOT/tests/selftests/list" "$stage/selftests/list"
	[ -f "$KDEFRAG_ROOT/tests/selftests/stock.txt" ] &&
		cp "$KDEFRAG_ROOT/tests/selftests/stock.txt" "$stage/selftests/stock.txt"
fi
echo "$stage"
