#!/usr/bin/env bash
# Runs INSIDE the soft-RoCE guest (started by .ci/softroce.sh): bring up rxe0 on a dummy netdev, then run "$1"
# from the checkout with Debian's /usr/bin/python3 (pyverbs and collie's deps come from Debian packages).
set -euo pipefail
modprobe rdma_rxe
modprobe dummy
ip link add dum0 type dummy
ip addr add 10.9.9.1/24 dev dum0
ip link set dum0 mtu 9000
ip link set dum0 up
ip link set lo up
rdma link add rxe0 type rxe netdev dum0
# GID index 1 (the IPv4 address's RoCEv2 GID, which tests and perftest lines use) is filled in shortly after the
# link is added; its sysfs file exists from the start and reads all zeros until then.
for _ in $(seq 100); do grep -q ffff /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null && break; sleep 0.1; done
echo "softroce-guest: $(uname -r), rxe0 on dum0: $(cat /sys/class/infiniband/rxe0/ports/1/state), GID 1 $(cat /sys/class/infiniband/rxe0/ports/1/gids/1)"
export COLLIE_SOFTROCE=1 COLLIE_SOFTROCE_DEVICE=rxe0 PYTHONPATH="$PWD" PYTHONDONTWRITEBYTECODE=1
export PATH="/usr/sbin:/usr/bin:/sbin:/bin"
exec bash -c "$1"
