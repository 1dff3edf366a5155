#!/usr/bin/env bash
# The two-host soft-RoCE tier; run it as `.ci/softroce.sh --pair` (which installs what it needs, picks the
# kernel and the accelerator, then runs this script with: KERNEL [VNG OPTIONS...]).
#
# Boots two qemu guests in the background (1 vCPU, 1G each), each with
#   * pair0: a virtio NIC on qemu's socket network (guest 1 listens on 127.0.0.1:PORT, guest 2 connects), a
#     static IP (10.77.0.1 and 10.77.0.2) and rxe0 on it: the two rxe devices talk only across this link;
#   * mgmt0: a virtio NIC on qemu's user network whose hostfwd maps 127.0.0.1:SSHPORT on this machine to the
#     guest's sshd, with a host key and an authorized key generated for this run only;
# waits until both sshds answer through OpenSSH and rxe0 is ACTIVE in both, writes an inventory (hosts.toml,
# known_hosts, the identity) into a temporary folder, runs tests/softroce_pair on this machine with
# COLLIE_PAIR_INVENTORY=that hosts.toml, and powers both guests off (then kills their qemu by PID) on every exit.
#
# Environment: COLLIE_PAIR_BOOT_TIMEOUT (seconds until both guests are ready, default 420),
# COLLIE_PAIR_TEST_TIMEOUT (seconds for the tests, default 900), COLLIE_PAIR_KEEP=1 keeps the folder,
# COLLIE_PAIR_PYTEST_ARGS (extra pytest arguments), PYTHON (the controller's Python, default python3).
# Exit status: the tests' (pytest's); 3 when the guests did not come up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KERNEL=${1:?usage: softroce-pair.sh KERNEL [VNG OPTIONS...] (run .ci/softroce.sh --pair)}
shift
VNG_OPTS=("$@")
BOOT_TIMEOUT=${COLLIE_PAIR_BOOT_TIMEOUT:-420}
TEST_TIMEOUT=${COLLIE_PAIR_TEST_TIMEOUT:-900}
PYTHON=${PYTHON:-python3}
t0=$(date +%s.%N)

log() { echo "softroce-pair: $(date -u +%H:%M:%S) $*" >&2; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# Everything of this run lives in one folder of its own: nothing global (ports are picked free, names are the
# folder's), so several runs, and the single-guest tier, can share the machine.
dir=$(mktemp -d "${TMPDIR:-/tmp}/collie-pair.XXXXXX")
chmod 0755 "$dir"
ssh_ports=("" "" "")
declare -a bg_pids=()
test_pid=""
ready=(0 0 0)
status=0

ssh_guest() {  # ssh_guest N CMD...: run CMD in guest N through OpenSSH, with this run's key and known_hosts
    # (under TCG a first login takes seconds: sshd re-executes itself, its libraries read over 9p)
    local n=$1; shift
    timeout 90 ssh -q -F /dev/null -i "$dir/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
        -o UserKnownHostsFile="$dir/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=60 \
        -p "${ssh_ports[$n]}" root@127.0.0.1 "$@" </dev/null
}

qemu_pid() { cat "$dir/g$1/qemu.pid" 2>/dev/null || true; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

stop_guests() {
    local n pid asked=(0 0 0) deadline
    for n in 1 2; do  # the clean way: the guest's script sees /mnt/stop, ends, and virtme powers the guest off
        # (a guest that never got ready is killed at once: it may never reach that loop)
        if [ "${ready[$n]}" = 1 ] && alive "$(qemu_pid "$n")" && : >"$dir/g$n/stop"; then asked[$n]=1; fi
    done
    deadline=$((SECONDS + 30))
    for n in 1 2; do
        pid=$(qemu_pid "$n")
        while [ "${asked[$n]}" = 1 ] && alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
        if alive "$pid"; then
            if [ "${asked[$n]}" = 1 ]; then log "guest $n did not power off: killing its qemu (pid $pid)"
            else log "killing guest $n's qemu (pid $pid)"; fi
            kill -TERM "$pid" 2>/dev/null || true
            sleep 2
            if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
        fi
        # vng (and a qemu that never wrote its pidfile) run in a session of their own, led by vng's PID
        pid=$(cat "$dir/g$n/vng.pid" 2>/dev/null || true)
        if alive "$pid"; then sleep 1; fi
        if alive "$pid"; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    done
    for pid in "${bg_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ "$status" = 0 ] && status=$rc
    if alive "$test_pid"; then  # interrupted during the tests: timeout passes the signal on to pytest
        kill -TERM "$test_pid" 2>/dev/null || true
        wait "$test_pid" 2>/dev/null || true
    fi
    stop_guests
    if [ "$status" != 0 ]; then
        for n in 1 2; do
            log "console of guest $n (last 60 lines of $dir/g$n/console.log):"
            tail -n 60 "$dir/g$n/console.log" >&2 2>/dev/null || true
        done
    fi
    log "tier total $(since "$t0") s, exit status $status"
    if [ "${COLLIE_PAIR_KEEP:-0}" = 1 ]; then log "kept $dir"; else rm -rf "$dir"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'status=130; exit 130' INT
trap 'status=143; exit 143' TERM

# Free ports of 127.0.0.1 (bound together, so distinct): the link, and each guest's ssh forward.
read -r link_port ssh_port1 ssh_port2 < <("$PYTHON" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)
ssh_ports=("" "$ssh_port1" "$ssh_port2")

# Keys: the test's client key, and one host key per guest (so known_hosts is written before they boot).
ssh-keygen -q -t ed25519 -N "" -C collie-pair-client -f "$dir/id_ed25519" </dev/null
: >"$dir/known_hosts"
for n in 1 2; do
    g="$dir/g$n"
    mkdir -m 0755 "$g"
    ssh-keygen -q -t ed25519 -N "" -C "collie-pair-guest$n" -f "$g/host_ed25519" </dev/null
    cp "$dir/id_ed25519.pub" "$g/authorized_keys"
    peer=$((3 - n))
    echo "52:54:00:00:05:0$n 52:54:00:00:06:0$n 10.77.0.$n/24 10.77.0.$peer 52:54:00:00:05:0$peer" >"$g/link"
    read -r kt kb _ <"$g/host_ed25519.pub"
    echo "[127.0.0.1]:${ssh_ports[$n]} $kt $kb" >>"$dir/known_hosts"
    # Sessions run Debian's /usr/bin/python3 (pyverbs and collie's deps are Debian packages) with this checkout
    # first on its path: `python3 -m collie.agent --stdio` is the collie under test.
    cat >"$g/sshd_config" <<EOF
Port 22
ListenAddress 10.0.2.15
HostKey /mnt/host_ed25519
PidFile none
AuthorizedKeysFile /mnt/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
LogLevel INFO
SetEnv PYTHONPATH=$ROOT PYTHONDONTWRITEBYTECODE=1 PATH=/usr/sbin:/usr/bin:/sbin:/bin COLLIE_VERBS_LOOP=${COLLIE_VERBS_LOOP:-auto}
EOF
done

boot() {  # boot N NETDEV_OPTS: guest N in the background, its console piped (never redirected) to console.log
    local n=$1 sock=$2 g="$dir/g$1"
    local qopts="-pidfile $g/qemu.pid -netdev socket,id=l$n,$sock"
    qopts+=" -device virtio-net-pci,netdev=l$n,mac=52:54:00:00:05:0$n"
    qopts+=" -netdev user,id=u$n,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:${ssh_ports[$n]}-10.0.2.15:22"
    qopts+=" -device virtio-net-pci,netdev=u$n,mac=52:54:00:00:06:0$n"
    (
        cd "$ROOT"
        # shellcheck disable=SC2016  # $$ is the new session's shell, then vng itself (exec)
        setsid bash -c 'echo $$ >"$0"; exec "$@"' "$g/vng.pid" "${NO_UDEV[@]}" vng "${VNG_OPTS[@]}" -r "$KERNEL" --memory 1G --cpus 1 --cwd "$ROOT" --rwdir="/mnt=$g" \
            --qemu-opts="$qopts" --exec "bash .ci/softroce-pair-guest.sh $n" </dev/null 2>&1 | cat >"$g/console.log"
    ) &
    bg_pids+=($!)
}

# Without udev's coldplug a TCG boot is ~10 s shorter: vng runs in a private mount namespace where a stub (which
# only makes the links virtme's init needs) is bind-mounted over /usr/bin/udevadm; the guest sees it over 9p.
# COLLIE_PAIR_UDEV=1 keeps udev.
NO_UDEV=()
if [ "${COLLIE_PAIR_UDEV:-0}" != 1 ] && [ "$(id -u)" = 0 ] && [ -x /usr/bin/udevadm ] && command -v unshare >/dev/null; then
    # shellcheck disable=SC2016  # expanded by that sh
    NO_UDEV=(unshare --mount --propagation private sh -c 'mount --bind "$0" /usr/bin/udevadm && exec "$@"'
             "$ROOT/.ci/softroce-udevadm-stub.sh")
fi

listening() {  # whether 127.0.0.1:$1 is a listening TCP socket on this machine (without connecting to it)
    local hex
    hex=$(printf '0100007F:%04X' "$1")
    grep -q " $hex 00000000:0000 0A " /proc/net/tcp
}

log "booting guest 1 (link listens on 127.0.0.1:$link_port, ssh on 127.0.0.1:$ssh_port1), folder $dir"
boot 1 "listen=127.0.0.1:$link_port"
deadline=$((SECONDS + BOOT_TIMEOUT))
until listening "$link_port"; do
    alive "${bg_pids[0]}" || { log "guest 1 exited before its link listened"; status=3; exit 3; }
    [ $SECONDS -lt $deadline ] || { log "guest 1's qemu did not listen on 127.0.0.1:$link_port"; status=3; exit 3; }
    sleep 0.2
done
log "booting guest 2 (link connects to 127.0.0.1:$link_port, ssh on 127.0.0.1:$ssh_port2)"
boot 2 "connect=127.0.0.1:$link_port"

# Ready = OpenSSH logs in with this run's key, checks the host key, and rxe0's port is ACTIVE.
declare -A ready_s=() up_s=()
while [ "${ready[1]}" = 0 ] || [ "${ready[2]}" = 0 ]; do
    for n in 1 2; do
        [ "${ready[$n]}" = 1 ] && continue
        if ! alive "${bg_pids[$((n - 1))]}"; then
            log "guest $n exited before it was ready"; status=3; exit 3
        fi
        # the guest's script says when rxe0 and sshd are up; only then try OpenSSH
        grep -q "^softroce-pair-guest$n: .*sshd pid" "$dir/g$n/console.log" 2>/dev/null || continue
        [ -n "${up_s[$n]:-}" ] || { up_s[$n]=$(since "$t0"); log "guest $n up after ${up_s[$n]} s (rxe0, sshd started)"; }
        if state=$(ssh_guest "$n" cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null) \
                && [[ $state == *ACTIVE* ]]; then
            ready[$n]=1
            ready_s[$n]=$(since "$t0")
            log "guest $n ready after ${ready_s[$n]} s (sshd answers, rxe0 $state)"
        fi
    done
    if [ "${ready[1]}" = 0 ] || [ "${ready[2]}" = 0 ]; then
        [ $SECONDS -lt $deadline ] || { log "the guests were not ready within ${BOOT_TIMEOUT} s"; status=3; exit 3; }
        sleep 1
    fi
done
log "both guests ready after $(since "$t0") s"

cat >"$dir/hosts.toml" <<EOF
# The two soft-RoCE guests of .ci/softroce-pair.sh (this run only).
known_hosts = "known_hosts"
connect_timeout = 60
request_timeout = 300

[defaults]
user = "root"
identity = "id_ed25519"
target = "verbs:rxe0:1:1"
netdev = "pair0"
tags = ["softroce-pair"]

[[host]]
name = "guest1"
address = "127.0.0.1"
port = $ssh_port1

[[host]]
name = "guest2"
address = "127.0.0.1"
port = $ssh_port2
EOF

log "running tests/softroce_pair against $dir/hosts.toml"
# In the background, then `wait`: a signal to this script runs its trap at once, not after the tests end.
(
    cd "$ROOT"
    # shellcheck disable=SC2086  # extra pytest arguments are words
    COLLIE_PAIR_INVENTORY="$dir/hosts.toml" PYTHONPATH="$ROOT" exec timeout --kill-after=20 "$TEST_TIMEOUT" \
        "$PYTHON" -m pytest -q -p no:cacheprovider --durations=8 tests/softroce_pair ${COLLIE_PAIR_PYTEST_ARGS:-} \
        </dev/null
) &
test_pid=$!
set +e
wait "$test_pid"
status=$?
set -e
test_pid=""
log "tests finished with exit status $status; guests ready after ${ready_s[1]} s and ${ready_s[2]} s, tier so far $(since "$t0") s"
exit "$status"
