#!/bin/bash
# Boot a kernel in QEMU, run one guest test plan, judge the run.
#   run-guest.sh [-k bzImage] [-m MEM] [-t TIMEOUT_S] [-a "extra cmdline"] [-T GLOBS] PLAN
# -T runs only the plan's tests whose names match one of the comma-separated
# globs (make check T=...).
# A plan's "#: cmdline ARGS" lines add ARGS to the kernel command line
# (a boot that needs movable memory or a CMA area says so in its plan).
# Writes $KDEFRAG_OUT/runs/PLAN/{console.log,results.ktap} and prints the
# verdict (scripts/verdict.sh); exits non-zero on any failure.
. "$(dirname "$0")/lib.sh"

kernel=$KDEFRAG_BUILD/arch/x86/boot/bzImage
mem=${KDEFRAG_MEM:-1G}
timeout=${KDEFRAG_TIMEOUT:-900}
silence=${KDEFRAG_SILENCE:-180}
append=""
only=""
while getopts k:m:t:a:T: o; do
	case $o in
	k) kernel=$OPTARG ;; m) mem=$OPTARG ;; t) timeout=$OPTARG ;; a) append=$OPTARG ;;
	T) only=$OPTARG ;;
	*) die "usage: run-guest.sh [-k bzImage] [-m MEM] [-t SECONDS] [-a CMDLINE] [-T GLOBS] PLAN" ;;
	esac
done
shift $((OPTIND - 1))
plan=${1:?plan name}
[ -f "$KDEFRAG_ROOT/guest/plans/$plan" ] || die "no plan guest/plans/$plan"
[ -f "$kernel" ] || die "no kernel $kernel (run scripts/build.sh)"
[[ "$silence" =~ ^[1-9][0-9]*$ ]] || die "KDEFRAG_SILENCE: a number of seconds, not '$silence'"
[[ "$only" =~ ^[][A-Za-z0-9_.*?,-]*$ ]] || die "-T: test names and globs only, comma-separated: '$only'"

run=$KDEFRAG_OUT/runs/$plan
mkdir -p "$run"
# Nothing a verdict reads may survive from an earlier run.
rm -f "$run"/console.log "$run"/results.ktap "$run"/counts "$run"/timeout "$run"/silent "$run"/qemu.log "$run"/failures
initrd=$("$KDEFRAG_ROOT/scripts/initramfs.sh") || die "initramfs: building the guest programs or the image failed"
# A fresh ext4 disk per boot (/dev/vda, sparse, big enough to fill the
# guest's memory with page cache; holds stress-ng and the mm selftests), and
# a disk whose writes QEMU throttles (/dev/vdb), so that pages stay under
# writeback for seconds: ext4 on its first 32 MiB (the writeback test's
# file, movable page cache as users' files are), raw past it (faults
# fails writes there).
stage=$("$KDEFRAG_ROOT/scripts/disk-stage.sh") || die "disk staging failed"
truncate -s 0 "$run/disk.img" && truncate -s 1536M "$run/disk.img"
mkfs.ext4 -q -F -d "$stage" "$run/disk.img" || die "mkfs.ext4 of the guest disk failed"
truncate -s 0 "$run/slow.img" && truncate -s 64M "$run/slow.img"
mkfs.ext4 -q -F "$run/slow.img" 32M || die "mkfs.ext4 of the throttled disk failed"

# KVM hangs on these machines; TCG unless explicitly asked for and working.
accel=tcg,thread=multi
if [ "${KDEFRAG_ACCEL:-tcg}" = kvm ]; then
	if [ -w /dev/kvm ] && timeout 20 qemu-system-x86_64 -accel kvm -m 64M -nodefaults \
	     -display none -no-reboot -kernel "$kernel" -append "console=ttyS0 panic=-1 rdinit=/nonexistent" \
	     -serial stdio 2>/dev/null | grep -q 'Linux version'; then
		accel=kvm
	else
		log "KVM requested but not working here; falling back to TCG"
	fi
fi

# watch_silence PID: stop the boot (the timeout process PID) when nothing
# new has reached the results port for KDEFRAG_SILENCE seconds, or for the
# running test's silence= budget (guest/init prints it in its start line);
# run/silent says which test and for how long.
watch_silence() {
	local pid=$1 size last=-1 since=$SECONDS budget name
	while kill -0 "$pid" 2>/dev/null; do
		sleep 2
		size=$(stat -c %s "$run/results.ktap" 2>/dev/null || echo 0)
		# The kernel's boot is the timeout's business; silence counts from
		# init's first line.
		if [ "$size" = 0 ] || [ "$size" != "$last" ]; then last=$size since=$SECONDS; continue; fi
		read -r name budget < <(tr -d '\r' < "$run/results.ktap" |
			sed -n 's/^# kdefrag: start \([^ ]*\)\( silence=\([0-9]*\)\)\{0,1\}$/\1 \3/p' | tail -n 1)
		budget=${budget:-$silence}
		if [ $((SECONDS - since)) -ge "$budget" ]; then
			echo "${name:-boot} $budget" > "$run/silent"
			kill -TERM "$pid" 2>/dev/null
			return
		fi
	done
}

# A hung task, a soft lockup, an RCU stall or an oops panics (config/qemu.config).
detectors="hung_task_panic=1 softlockup_panic=1 sysctl.kernel.panic_on_rcu_stall=1 oops=panic"
plan_args=$(sed -n 's/^#: cmdline //p' "$KDEFRAG_ROOT/guest/plans/$plan" | tr '\n' ' ')
cmdline="console=ttyS0 panic=-1 $detectors loglevel=6 numa=fake=2 kdefrag_plan=$plan${only:+ kdefrag_only=$only} $plan_args$append"
log "booting $plan${only:+ (only $only)} ($accel, $mem, timeout ${timeout}s)"
set +e
timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
	-accel "$accel" -cpu max -smp 2 -m "$mem" \
	-nodefaults -display none -no-reboot \
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline" \
	-drive file="$run/disk.img",if=none,id=disk,format=raw \
	-device virtio-blk-pci,drive=disk,addr=0x4 \
	-drive file="$run/slow.img",if=none,id=slow,format=raw,throttling.bps-write=262144 \
	-device virtio-blk-pci,drive=slow,addr=0x5 \
	-serial file:"$run/console.log" -serial file:"$run/results.ktap" \
	</dev/null >"$run/qemu.log" 2>&1 &
qemu=$!
watch_silence "$qemu"
wait "$qemu"
rc=$?
set -e
if [ -f "$run/silent" ]; then
	:	# stopped by watch_silence, not a timeout
elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "$timeout" > "$run/timeout"
fi
# QEMU that did not start (or died) leaves no console: say so.
[ $rc -eq 0 ] || [ -f "$run/timeout" ] || [ -f "$run/silent" ] || [ -s "$run/console.log" ] ||
	die "QEMU failed (exit $rc): $(tail -n 3 "$run/qemu.log" 2>/dev/null | tr '\n' ' ')"
exec "$KDEFRAG_ROOT/scripts/verdict.sh" "$run"
