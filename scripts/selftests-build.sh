#!/bin/bash
# Build the mm selftests named in tests/selftests/list, static, from the
# kernel tree being tested (its tools/ is the same with and without the
# series), against that tree's UAPI headers. Prints the output directory.
#   selftests-build.sh SRC_TREE BUILD_DIR
. "$(dirname "$0")/lib.sh"
src=${1:?kernel tree} build=${2:?configured build dir}
out=$KDEFRAG_OUT/selftests
mm=$src/tools/testing/selftests/mm
mkdir -p "$out/bin" "$out/include"
kmake "$src" "$build" -s headers >&2
# What check_config.sh would write into the tree: liburing is installed.
# khugepaged.c in 6.12.y uses KSFT_SKIP without including kselftest.h.
echo '#define LOCAL_CONFIG_HAVE_LIBURING 1' > "$out/include/local_config.h"
grep -v '^#' "$KDEFRAG_ROOT/tests/selftests/list" | while read -r name _ _; do
	[ -n "$name" ] || continue
	[ "$out/bin/$name" -nt "$mm/$name.c" ] && [ "$out/bin/$name" -nt "$0" ] && continue
	gcc -static -O2 -Wall -U_FORTIFY_SOURCE -D_GNU_SOURCE \
		-I "$out/include" -I "$mm" -I "$src/tools/testing/selftests" -I "$src" \
		-isystem "$build/usr/include" -isystem "$src/tools/include/uapi" \
		-include "$src/tools/testing/selftests/kselftest.h" \
		-o "$out/bin/$name" "$mm/$name.c" "$mm/vm_util.c" "$mm/thp_settings.c" \
		-lnuma -lcap -luring -lrt -lpthread -lm 2>"$out/$name.log" ||
		die "building selftest $name failed: $out/$name.log"
done
echo "$out/bin"
