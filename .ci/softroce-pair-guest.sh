#!/usr/bin/env bash
# Runs INSIDE guest N (1 or 2) of the two-host soft-RoCE tier (started by .ci/softroce-pair.sh).
#
# The host hands this guest a folder of its own, mounted at /mnt (read-write 9p): sshd_config, the guest's host
# key, the authorized key of the test, and the file `link` ("MAC_LINK MAC_MGMT IP/PREFIX PEER_IP PEER_MAC"). The
# guest:
#   * names its NICs by MAC: pair0 (qemu socket network to the other guest, static IP) and mgmt0 (qemu user
#     network; the host reaches sshd through its hostfwd to 10.0.2.15:22);
#   * puts rxe0 on pair0;
#   * runs /usr/sbin/sshd with /mnt/sshd_config until the host asks it to stop (it creates /mnt/stop) or sshd
#     dies; then the script ends and virtme powers the guest off.
set -euo pipefail
n=${1:?guest number}
read -r mac_link mac_mgmt ip_link peer_ip peer_mac <"/mnt/link"
say() { echo "softroce-pair-guest$n: $*"; }

modprobe virtio_net
modprobe rdma_rxe
ifname_of() {  # the netdev with MAC $1 (waits up to 10 s for it to appear)
    local n_ d
    for _ in $(seq 100); do
        for d in /sys/class/net/*; do
            [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && { n_=${d##*/}; echo "$n_"; return 0; }
        done
        sleep 0.1
    done
    say "no NIC has MAC $1: $(ls /sys/class/net)" >&2
    return 1
}
link=$(ifname_of "$mac_link")
mgmt=$(ifname_of "$mac_mgmt")
ip link set "$link" name pair0
ip link set "$mgmt" name mgmt0
ip link set lo up
ip addr add "$ip_link" dev pair0
ip link set pair0 mtu 9000  # jumbo frames, as on a RoCE fabric: rxe's active MTU is then 4096 (1500 gives 1024)
ip link set pair0 up
# The peer's MAC, known in advance: a RoCE QP's RTR resolves the peer's address (ARP) and gives up after about a
# second, which two emulated guests sharing two cores can exceed (a campaign's calibration failed that way once). A
# permanent neighbour entry takes ARP out of the tier; the engine retries an RTR that timed out anyway.
ip neigh replace "$peer_ip" lladdr "$peer_mac" dev pair0 nud permanent
ip addr add 10.0.2.15/24 dev mgmt0
ip link set mgmt0 up
rdma link add rxe0 type rxe netdev pair0
# GID index 1 (the IPv4 address's RoCEv2 GID, which tests and perftest lines use) is filled in shortly after the
# link is added; its sysfs file exists from the start and reads all zeros until then.
for _ in $(seq 100); do grep -q ffff /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null && break; sleep 0.1; done

install -d -m 0755 /run/sshd
# root's home is the host's /root: its shell start-up files (bash reads ~/.bashrc for ssh commands) could put
# another python3 first on PATH (a pyenv shim, say) and undo sshd_config's SetEnv. An empty home, in the guest
# only, keeps sessions to that PATH: Debian's /usr/bin/python3, which has pyverbs.
mount -t tmpfs -o mode=0700 roothome /root
# Without PAM, sshd refuses a locked account ("!" in shadow), as Debian's root usually is; keys are the only way
# in anyway. A copy bind-mounted over /etc/shadow, in the guest only: the host's file is untouched.
if grep -q '^root:!' /etc/shadow; then
    sed 's/^root:![^:]*:/root:*:/' /etc/shadow >/run/collie-pair-shadow
    chmod 0640 /run/collie-pair-shadow
    mount --bind /run/collie-pair-shadow /etc/shadow
fi
/usr/sbin/sshd -D -e -f /mnt/sshd_config &
sshd=$!
say "$(uname -r), rxe0 on pair0 ($ip_link): $(cat /sys/class/infiniband/rxe0/ports/1/state), sshd pid $sshd"
while [ ! -e /mnt/stop ] && kill -0 "$sshd" 2>/dev/null; do sleep 0.5; done
say "stopping"
kill "$sshd" 2>/dev/null || true
wait "$sshd" 2>/dev/null || true
