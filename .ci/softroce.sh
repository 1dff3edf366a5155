#!/usr/bin/env bash
# collie's soft-RoCE test tier: a real rdma_rxe device in a qemu guest, the verbs target end to end.
#
#   .ci/softroce.sh                 install (if needed), boot a guest, run tests/softroce inside it, once with each
#                                   traffic loop (COLLIE_VERBS_LOOP=native, then python)
#   .ci/softroce.sh --install-only  only install what the tier needs
#   .ci/softroce.sh --bench         run bench/engine_vs_perftest.py in the guest instead of the tests
#   .ci/softroce.sh --exec 'CMD'    run CMD in the guest (rxe0 up, checkout as cwd)
#   .ci/softroce.sh --pair          two guests linked by qemu's socket network, rxe0 and sshd in each; run
#                                   tests/softroce_pair on this machine against them (.ci/softroce-pair.sh);
#                                   the guests' agents run the loop COLLIE_VERBS_LOOP names (default auto)
#
# Needs root on a Debian 12 (bookworm) machine. See docs/targets.md ("soft-RoCE tier") and SOFTROCE facts:
#   * ONE apt-get install call (a second one re-runs update-initramfs): qemu, Debian's 6.1 kernel (it has
#     rdma_rxe; the host kernel need not), rdma-core + pyverbs + perftest, and the Debian python3-* packages of
#     collie's runtime deps, so the guest's /usr/bin/python3 can import collie straight from the checkout, and
#     OpenSSH (the --pair guests run sshd);
#   * virtme-ng from PyPI in a venv; the guest sees the host's root filesystem read-only over 9p (writes go to a
#     throw-away overlay), so the checkout is visible there with no image to build;
#   * TCG (--disable-kvm) when the host's KVM is the paravirtual kvm_pvm, which qemu cannot use.
# The exit status is the guest command's (pytest's), 124 on timeout, 255 when the guest could not report one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TIMEOUT=${COLLIE_SOFTROCE_TIMEOUT:-1500}       # seconds for the guest run, boot included (the tier runs twice)
VENV=${COLLIE_VNG_VENV:-/opt/collie-vng}
VNG_VERSION=1.42
PKGS=(qemu-system-x86 linux-image-amd64 busybox-static kmod iproute2 ethtool rdma-core ibverbs-providers
      ibverbs-utils perftest python3-pyverbs python3-click python3-numpy python3-rich python3-tomli-w python3-pytest
      openssh-server openssh-client)

mode=test
guest_cmd=""
while [ $# -gt 0 ]; do
    case "$1" in
        --install-only) mode=install ;;
        --bench) mode=bench ;;
        --exec) mode=exec; shift; guest_cmd=${1:?--exec needs a command} ;;
        --pair) mode=pair ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "softroce.sh: unknown argument $1 (use --install-only, --bench, --exec CMD, --pair)" >&2; exit 2 ;;
    esac
    shift
done

log() { echo "softroce: $(date -u +%H:%M:%S) $*" >&2; }

install_packages() {
    local missing=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -q
        apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${PKGS[@]}"
    fi
    if [ ! -x "$VENV/bin/vng" ]; then
        log "installing virtme-ng $VNG_VERSION into $VENV"
        /usr/bin/python3 -m venv "$VENV"
        "$VENV/bin/pip" install -q --disable-pip-version-check "virtme-ng==$VNG_VERSION"
    fi
}

pick_kernel() {
    local k v
    for k in /boot/vmlinuz-*; do
        v=${k#/boot/vmlinuz-}
        if compgen -G "/lib/modules/$v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; then
            echo "$k"; return 0
        fi
    done
    echo "softroce.sh: no kernel in /boot has rdma_rxe.ko (is linux-image-amd64 installed?)" >&2
    return 1
}

install_packages
[ "$mode" = install ] && { log "installed"; exit 0; }

kernel=$(pick_kernel)
case "$mode" in
    # the tier runs twice in one boot: with the native traffic loop, then with the Python loop it falls back to
    test)  guest_cmd='for loop in native python; do echo "== tests/softroce, COLLIE_VERBS_LOOP=$loop"; '\
'COLLIE_VERBS_LOOP=$loop python3 -m pytest -q -p no:cacheprovider --durations=8 tests/softroce || exit $?; done' ;;
    bench) guest_cmd="python3 bench/engine_vs_perftest.py" ;;
esac

kvm_opt=()
clock_opt=()
# Under TCG the guest kernel would pick HPET as its clocksource, and every clock_gettime() becomes an emulated
# device read (~2.6 us measured): ruinous for a Python engine that timestamps its posts. The TSC is cheap.
[ -d /sys/module/kvm_pvm ] && { kvm_opt=(--disable-kvm); clock_opt=(--append "clocksource=tsc tsc=reliable"); }
cpus=$(nproc); [ "$cpus" -gt 2 ] && cpus=2
if [ "$mode" = pair ]; then
    # the tests run on this machine with its Python (found before virtme-ng's venv comes first on PATH)
    PYTHON=$(command -v "${PYTHON:-python3}")  # absolute: a bare name would find the venv's python
    export PYTHON PATH="$VENV/bin:$PATH"
    exec bash "$ROOT/.ci/softroce-pair.sh" "$kernel" "${kvm_opt[@]}" "${clock_opt[@]}"
fi

log "booting $kernel (${kvm_opt[*]:-kvm}), ${cpus} vCPUs, timeout ${TIMEOUT}s: $guest_cmd"
export PATH="$VENV/bin:$PATH"
# The guest runs .ci/softroce-guest.sh (rxe0 on a dummy netdev, then the command). Its output is piped, never
# redirected: qemu reopens stdout and stderr separately and they would overwrite each other in one file.
# setsid puts vng and qemu in their own process group, so a timeout or Ctrl-C ends exactly them.
rc_file=$(mktemp)
trap 'rm -f "$rc_file"' EXIT
set +e
(
    cd "$ROOT"
    setsid timeout --kill-after=20 "$TIMEOUT" \
        vng "${kvm_opt[@]}" -r "$kernel" --memory 2G --cpus "$cpus" --cwd "$ROOT" "${clock_opt[@]}" \
        --exec "bash .ci/softroce-guest.sh $(printf '%q' "$guest_cmd")" </dev/null 2>&1
    echo $? >"$rc_file"
) | cat
set -e
rc=$(cat "$rc_file" 2>/dev/null || echo 255)
[ -n "$rc" ] || rc=255
log "guest finished with exit status $rc"
exit "$rc"
