#!/bin/bash
# Build the guest kernel: tinyconfig + config fragments, out of tree, ccache.
#   build.sh [fragment...]   default: config/qemu.config
# Env: KDEFRAG_BUILD (output dir), KDEFRAG_SRC (tree; default: the build
# tree checked out by "tree.sh build"). Prints the bzImage path.
. "$(dirname "$0")/lib.sh"

src=${KDEFRAG_SRC:-$KDEFRAG_REPO}
frags=("$@")
[ ${#frags[@]} -gt 0 ] || frags=("$KDEFRAG_ROOT/config/qemu.config")
for f in "${frags[@]}"; do [ -f "$f" ] || die "no config fragment $f"; done

mkdir -p "$KDEFRAG_BUILD" "$CCACHE_DIR"
gen=$KDEFRAG_BUILD.kconfig
mkdir -p "$gen"

# Generate the config in a side directory and copy it over only when it
# changed, so an unchanged rerun does not touch .config (nothing rebuilds).
kmake "$src" "$gen" -s tinyconfig >/dev/null
# merge_config.sh keeps its temporary files in the current directory:
# there, not in the project (a killed build would leave them behind).
for i in "${!frags[@]}"; do frags[i]=$(realpath "${frags[i]}"); done
(cd "$gen" && "$src/scripts/kconfig/merge_config.sh" -m -O "$gen" "$gen/.config" "${frags[@]}" >/dev/null)
kmake "$src" "$gen" -s olddefconfig >/dev/null

# Tinyconfig silently drops options whose dependencies are missing: every
# option a fragment asks for must be in the final .config exactly as asked,
# by the last fragment that sets it (merge_config.sh lets later ones win:
# the debug profile overrides qemu.config's hung-task timeout).
bad=0
declare -A wants=()
opts=()
while IFS= read -r line; do
	case $line in
	CONFIG_*=*) opt=${line%%=*}; want=$line ;;
	"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}; want="# $opt is not set" ;;
	*) continue ;;
	esac
	[ -n "${wants[$opt]+set}" ] || opts+=("$opt")
	wants[$opt]=$want
done < <(cat "${frags[@]}")
for opt in "${opts[@]}"; do
	want=${wants[$opt]}
	got=$(grep -E "^($opt=|# $opt is not set)" "$gen/.config" || true)
	if [ "$got" != "$want" ] && ! { [ -z "$got" ] && [ "${want#\# }" != "$want" ]; }; then
		echo "kdefrag: config: asked for '$want', got '${got:-<absent>}'" >&2
		bad=1
	fi
done
[ $bad -eq 0 ] || [ "${KDEFRAG_CONFIG_LAX:-0}" = 1 ] || die "config fragment not satisfied (see above)"

cmp -s "$gen/.config" "$KDEFRAG_BUILD/.config" || cp "$gen/.config" "$KDEFRAG_BUILD/.config"
kmake "$src" "$KDEFRAG_BUILD" -s bzImage >&2
echo "$KDEFRAG_BUILD/arch/x86/boot/bzImage"
