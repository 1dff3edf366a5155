#!/bin/sh
# Stands in for /usr/bin/udevadm in the soft-RoCE pair guests (bind-mounted over it, in a private mount namespace
# of the host, by .ci/softroce-pair.sh): a guest then skips udev's coldplug, ~10 s of a TCG boot. The guest
# scripts modprobe what they need; the one thing virtme's init needs from udev is the /dev/virtio-ports/NAME links
# of its script I/O ports, made here for `udevadm trigger` and `udevadm settle`.
case "${1:-}" in
    trigger|settle)
        mkdir -p /dev/virtio-ports
        for d in /sys/class/virtio-ports/*; do
            [ -r "$d/name" ] && ln -sf "/dev/${d##*/}" "/dev/virtio-ports/$(cat "$d/name")"
        done
        ;;
esac
exit 0
