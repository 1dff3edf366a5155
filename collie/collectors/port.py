"""The state of one RDMA port as sysfs shows it: link state, the GID at an index and its type, the active MTU.

What a person checks before traffic can run on a port, read from ``ROOT/sys/class/infiniband/DEV/ports/P``
(``state``, ``phys_state``, ``link_layer``, ``gids/N``, ``gid_attrs/types/N``, ``gid_attrs/ndevs/N``) and
``ROOT/sys/class/net/NETDEV/mtu``. ``ROOT`` can be any folder laid out like ``/`` (tests point it at a copy).

Invariants:
    * :func:`read_port_status` never raises for what it reads: an absent device, port or file is a sentence in
      :attr:`PortStatus.problems` (the port cannot carry traffic) or an empty field;
    * ``problems`` is empty exactly when the port exists, is ACTIVE and its GID index holds a non-zero GID;
      a GID that is not RoCE v2 on an Ethernet port is a note, not a problem;
    * the active MTU of a RoCE port is the largest InfiniBand MTU (256 ... 4096 bytes) that fits in the netdev's
      MTU less the RoCE headers, as the kernel derives it (``iboe_get_mtu``); it is None on InfiniBand ports and
      when the netdev's MTU cannot be read.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader, decode
from collie.collectors.sysfs import PortRef, class_dir, port_netdev

IB_MTUS: Final = (4096, 2048, 1024, 512, 256)
#: What the kernel takes off a netdev's MTU for RoCE (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4).
ROCE_OVERHEAD: Final = 96
ROCE_V2: Final = "RoCE v2"
_STATE: Final = re.compile(r"\s*\d+\s*:\s*(\S+)")


def roce_mtu(netdev_mtu: int) -> int | None:
    """The active InfiniBand MTU of a RoCE port on a netdev of ``netdev_mtu`` bytes (None below 256)."""
    room = netdev_mtu - ROCE_OVERHEAD
    return next((m for m in IB_MTUS if room >= m), None)


@dataclass(frozen=True)
class PortStatus:
    """One RDMA port's state (fields that could not be read are ``""`` or None).

    Attributes:
        device, port: the port.
        state: ``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED`` (from ``state``, ``"4: ACTIVE"``).
        phys_state: ``LinkUp``, ``Disabled``, ``Polling``, ... (from ``phys_state``).
        link_layer: ``Ethernet`` (RoCE) or ``InfiniBand``.
        gid_index: the GID index the host's target uses.
        gid: the GID at that index (``""`` when the index is beyond the table).
        gid_type: ``RoCE v2`` or ``IB/RoCE v1`` (``""`` when unknown).
        netdev: the netdev behind the port (the GID's, the inventory's, or found in sysfs), or None.
        netdev_mtu: that netdev's MTU in bytes, or None.
        active_mtu: the port's active InfiniBand MTU in bytes, or None (see the module invariants).
        problems: why the port cannot carry traffic, one sentence each (empty when it can).
        notes: what is worth knowing but does not stop traffic.
    """

    device: str
    port: int
    state: str = ""
    phys_state: str = ""
    link_layer: str = ""
    gid_index: int = 0
    gid: str = ""
    gid_type: str = ""
    netdev: str | None = None
    netdev_mtu: int | None = None
    active_mtu: int | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return not self.problems

    @property
    def rocev2(self) -> bool:
        return self.gid_type == ROCE_V2

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(problems=list(self.problems), notes=list(self.notes))
        return d

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> PortStatus:
        """Read :meth:`to_dict`'s form (``device`` and ``port`` required, the rest may be absent), every field
        checked.

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped or unknown).
        """
        return decode(cls, data, reader)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:  # absent, or EINVAL: the kernel refuses to show the type of an unused GID entry
        return None


def _state(text: str | None) -> str:
    if text is None:
        return ""
    m = _STATE.match(text)
    return m.group(1) if m else text


def read_port_status(root: str | Path, device: str, port: int, gid_index: int,
                     netdev: str | None = None) -> PortStatus:
    """The state of ``device`` port ``port`` and its GID ``gid_index`` (see the module docstring).

    Args:
        root: the folder laid out like ``/`` (``/`` on a host).
        device, port, gid_index: the host's ``verbs:DEV:PORT:GID`` target.
        netdev: the netdev the inventory names for the port (else the GID's, else found in sysfs).
    """
    base = class_dir(root)
    dev_dir = base / device
    where = f"{device} port {port}"
    if not dev_dir.is_dir():
        present = sorted(p.name for p in base.iterdir()) if base.is_dir() else []
        listed = f"devices there: {', '.join(present)}" if present else "it has no RDMA device at all"
        return PortStatus(device, port, gid_index=gid_index,
                          problems=(f"RDMA device {device!r} not found on the host; {listed}",))
    port_dir = dev_dir / "ports" / str(port)
    if not port_dir.is_dir():
        ports = sorted(int(p.name) for p in (dev_dir / "ports").iterdir() if p.name.isdigit()) \
            if (dev_dir / "ports").is_dir() else []
        return PortStatus(device, port, gid_index=gid_index,
                          problems=(f"RDMA device {device} has no port {port}; its ports: "
                                    f"{', '.join(map(str, ports)) or 'none'}",))
    state = _state(_read(port_dir / "state"))
    phys = _state(_read(port_dir / "phys_state"))
    link = _read(port_dir / "link_layer") or ""
    gid = _read(port_dir / "gids" / str(gid_index))
    gid_type = _read(port_dir / "gid_attrs" / "types" / str(gid_index)) or ""
    gid_ndev = _read(port_dir / "gid_attrs" / "ndevs" / str(gid_index)) or None
    nd = netdev or gid_ndev or port_netdev(root, PortRef(device, port))
    mtu_text = _read(Path(root) / "sys" / "class" / "net" / nd / "mtu") if nd else None
    netdev_mtu = int(mtu_text) if mtu_text is not None and mtu_text.isdigit() else None
    active_mtu = roce_mtu(netdev_mtu) if netdev_mtu is not None and link != "InfiniBand" else None

    problems: list[str] = []
    notes: list[str] = []
    if state != "ACTIVE":
        shown = state or "of unknown state (ports/P/state unreadable)"
        phys_text = f" (physical state {phys})" if phys else ""
        up = f"ip link set {nd} up, " if nd else ""
        problems.append(f"{where} is {shown}{phys_text}, not ACTIVE; bring its link up ({up}check the cable and "
                        f"the switch port)")
    choose = f"or choose another index (verbs:{device}:{port}:GID)"
    if gid is None:
        problems.append(f"GID index {gid_index} of {where} is beyond its GID table; choose an index that holds a "
                        f"GID (verbs:{device}:{port}:GID)")
        gid = ""
    elif set(gid.replace(":", "")) <= {"0"}:
        problems.append(f"GID index {gid_index} of {where} holds no GID; give "
                        f"{nd or 'its netdev'} an IP address {choose}")
    elif link == "Ethernet" and gid_type and gid_type != ROCE_V2:
        notes.append(f"GID index {gid_index} of {where} is {gid_type}, not {ROCE_V2}; RoCE v2 (routable, "
                     f"UDP) is what RoCE NICs and switches are set up for: choose its RoCE v2 index")
    return PortStatus(device, port, state, phys, link, gid_index, gid, gid_type, nd, netdev_mtu, active_mtu,
                      tuple(problems), tuple(notes))
