"""Read RDMA counters from sysfs: ``/sys/class/infiniband/DEV/ports/P/{counters,hw_counters}/*``.

One value per file, named by the normal form of the file's name (``RNR sent`` -> ``RNR_sent``, see
:func:`~collie.collectors.catalog.counter_name`). ``ROOT`` can be any folder laid out like ``/`` (tests point it
at a fixture tree).

Invariants:
    * a missing ``counters/`` or ``hw_counters/`` directory is normal (rxe has no ``ports/1/counters``): its
      counters are simply absent, never 0;
    * a file that cannot be read (permission) or does not hold an integer (iWARP's ``N/A (no PMA)``) gives
      ``None`` and one sentence in ``Snapshot.problems``;
    * port counters come first; a hw_counter with the same name is kept as ``hw:<name>``, a device-level
      hw_counter (``DEV/hw_counters``) as ``dev:<name>`` when taken (see
      :func:`~collie.collectors.snapshot.combine`).

Also parses the ``grep "" .../hw_counters/*`` form (``PATH:VALUE`` per line) people paste into issues.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from collie.collectors.catalog import counter_name
from collie.collectors.snapshot import Snapshot, combine, now
from collie.errors import InputError

CLASS_DIR: Final = Path("sys/class/infiniband")
_NETDEV: Final = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")
_GREP_LINE: Final = re.compile(
    r"^(?:.*?/)?(?:(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/)?(?P<dir>counters|hw_counters)/(?P<name>[^/:\s](?:[^/:]*[^/:\s])?):(?P<val>.*)$"
)


@dataclass(frozen=True)
class PortRef:
    """One RDMA port: ``device`` (``mlx5_0``) and ``port`` (1-based)."""

    device: str
    port: int

    @property
    def label(self) -> str:
        return f"{self.device}/{self.port}"


def class_dir(root: str | Path = "/") -> Path:
    """``ROOT/sys/class/infiniband``."""
    return Path(root) / CLASS_DIR


def list_ports(root: str | Path = "/", device: str | None = None) -> list[PortRef]:
    """Every RDMA port under ``root`` (optionally of one device), sorted.

    Raises:
        InputError: there are no RDMA devices at all, or ``device`` is not one of them (one sentence).
    """
    base = class_dir(root)
    devices = sorted(p.name for p in base.iterdir()) if base.is_dir() else []
    if not devices:
        where = "this machine" if Path(root) == Path("/") else f"{root}"
        raise InputError(f"no RDMA devices found on {where} ({base} is missing or empty); load an RDMA "
                         f"driver (e.g. 'rdma link add rxe0 type rxe netdev eth0') or point --sysfs-root at "
                         f"a copy of sysfs")
    if device is not None:
        if device not in devices:
            raise InputError(f"RDMA device {device!r} not found; devices here: {', '.join(devices)}")
        devices = [device]
    out: list[PortRef] = []
    for dev in devices:
        ports_dir = base / dev / "ports"
        nums = sorted(int(p.name) for p in ports_dir.iterdir() if p.name.isdigit()) \
            if ports_dir.is_dir() else []
        out.extend(PortRef(dev, n) for n in nums)
    if not out:
        raise InputError(f"RDMA device(s) {', '.join(devices)} have no ports under {base}")
    return out


def _read_dir(path: Path, rel: str) -> tuple[dict[str, float | None], list[str]]:
    """Every counter file of ``path``, keyed by the normal form of its name (:func:`counter_name`)."""
    values: dict[str, float | None] = {}
    problems: list[str] = []
    if not path.is_dir():
        return values, problems
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if not entry.is_file():
            continue
        name = counter_name(entry.name)
        try:
            text = _read_file(Path(entry.path))
        except PermissionError:
            values[name] = None
            problems.append(f"{rel}/{entry.name}: permission denied (read counters as root or fix the mode)")
            continue
        except OSError as exc:
            values[name] = None
            problems.append(f"{rel}/{entry.name}: cannot be read ({exc.strerror or exc})")
            continue
        values[name], problem = parse_value(text)
        if problem:
            problems.append(f"{rel}/{entry.name}: {problem}")
    return values, problems


def _read_file(path: Path) -> str:
    return path.read_text(encoding="ascii", errors="replace").strip()


def parse_value(text: str) -> tuple[float | None, str]:
    """One sysfs counter file's content -> (value or ``None``, problem sentence or ``""``)."""
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t), ""
    if t.upper().startswith("N/A"):
        return None, f"not available ({t!r}), read as missing"
    shown = t if len(t) <= 40 else t[:37] + "..."
    return None, f"not a number ({shown!r}), read as missing"


def read_port(root: str | Path, ref: PortRef, *, timestamp: float | None = None) -> Snapshot:
    """Every counter of one port: ``ports/P/counters``, ``ports/P/hw_counters`` and ``DEV/hw_counters``."""
    ts = now() if timestamp is None else timestamp
    dev_dir = class_dir(root) / ref.device
    parts: list[tuple[str, Snapshot]] = []
    for tag, path, rel in (
        ("port", dev_dir / "ports" / str(ref.port) / "counters", f"{ref.label}/counters"),
        ("hw", dev_dir / "ports" / str(ref.port) / "hw_counters", f"{ref.label}/hw_counters"),
        ("dev", dev_dir / "hw_counters", f"{ref.device}/hw_counters"),
    ):
        values, problems = _read_dir(path, rel)
        parts.append((tag, Snapshot(ts, values, "sysfs", ref.label, tuple(problems))))
    snap = combine(parts, device=ref.label)
    return Snapshot(ts, snap.values, "sysfs", ref.label, snap.problems, snap.sources)


def read_sysfs(root: str | Path = "/", device: str | None = None, port: int | None = None) -> list[Snapshot]:
    """Snapshots of every port under ``root`` (optionally one device and/or port).

    Raises:
        InputError: no RDMA devices, unknown device or port.
    """
    refs = list_ports(root, device)
    if port is not None:
        refs = [r for r in refs if r.port == port]
        if not refs:
            raise InputError(f"port {port} not found on {device or 'any RDMA device'}")
    return [read_port(root, r) for r in refs]


def device_netdevs(root: str | Path, device: str) -> list[str]:
    """The netdev names of an RDMA device (``DEV/device/net/*``), sorted; empty if unknown."""
    net = class_dir(root) / device / "device" / "net"
    return sorted(p.name for p in net.iterdir()) if net.is_dir() else []


def port_netdev(root: str | Path, ref: PortRef) -> str | None:
    """The netdev that backs an RDMA port, or ``None`` (InfiniBand ports have none).

    Looked up, in order: the port's GID table (``ports/P/gid_attrs/ndevs/N``, the netdev of the RoCE GIDs), the
    device's ``parent`` (soft-RoCE: the netdev rxe was created on), and ``device/net/*`` when the device has
    exactly one netdev, or as many as ports (port P -> the P-th, sorted).
    """
    dev_dir = class_dir(root) / ref.device
    ndevs = dev_dir / "ports" / str(ref.port) / "gid_attrs" / "ndevs"
    if ndevs.is_dir():
        for entry in sorted(ndevs.iterdir(), key=lambda e: int(e.name) if e.name.isdigit() else 1 << 30):
            try:
                name = entry.read_text(encoding="ascii", errors="replace").strip()
            except OSError:
                continue
            if name and _NETDEV.fullmatch(name):
                return name
    try:
        parent = (dev_dir / "parent").read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        parent = ""
    if parent and _NETDEV.fullmatch(parent):
        return parent
    netdevs = device_netdevs(root, ref.device)
    if len(netdevs) == 1:
        return netdevs[0]
    ports = list_ports(root, ref.device)
    if netdevs and len(netdevs) == len(ports):
        return netdevs[[p.port for p in ports].index(ref.port)]
    return None


def device_driver(root: str | Path, device: str) -> str | None:
    """The kernel driver of an RDMA device from ``DEV/device/driver`` (a symlink), or ``None``."""
    link = class_dir(root) / device / "device" / "driver"
    try:
        return Path(os.readlink(link)).name
    except OSError:
        return None


def parse_grep_dump(text: str, source: str = "<sysfs dump>") -> list[Snapshot]:
    """Parse ``grep "" /sys/class/infiniband/DEV/ports/P/{counters,hw_counters}/*`` output.

    Lines look like ``/sys/class/infiniband/mlx5_0/ports/1/hw_counters/duplicate_request:0`` (or
    ``hw_counters/NAME:VALUE`` when grep ran inside the port folder). One snapshot per ``DEV/PORT``.

    Raises:
        InputError: a line of another shape, or no counters at all.
    """
    ts = now()
    per: dict[str, dict[str, dict[str, float | None]]] = {}
    problems: dict[str, list[str]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        m = _GREP_LINE.match(line.strip())
        if m is None:
            shown = line.strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise InputError(f"{source}: line {lineno} is not a sysfs counter line (expected "
                             f"'.../ports/P/hw_counters/NAME:VALUE', got {shown!r})")
        label = f"{m.group('dev')}/{m.group('port')}" if m.group("dev") else "unknown/1"
        tag = "port" if m.group("dir") == "counters" else "hw"
        value, problem = parse_value(m.group("val"))
        per.setdefault(label, {}).setdefault(tag, {})[counter_name(m.group("name"))] = value
        if problem:
            problems.setdefault(label, []).append(f"{m.group('dir')}/{m.group('name')}: {problem}")
    if not per:
        raise InputError(f"{source}: no counters found; expected 'PATH:VALUE' lines from "
                         f"grep \"\" .../hw_counters/*")
    out = []
    for label, tags in per.items():
        parts = [(tag, Snapshot(ts, tags[tag], "sysfs", label)) for tag in ("port", "hw") if tag in tags]
        snap = combine(parts, device=label)
        out.append(Snapshot(ts, snap.values, source, label, tuple(problems.get(label, ())), snap.sources))
    return out


def read_counter_dir(path: str | Path) -> Snapshot:
    """A snapshot of one bare folder of counter files (a copied ``hw_counters`` or ``counters`` folder)."""
    p = Path(path)
    values, problems = _read_dir(p, p.name)
    if not values:
        raise InputError(f"{p}: no counter files in this folder")
    tag = "port" if p.name == "counters" else "hw"
    return Snapshot(now(), values, "sysfs", p.name, tuple(problems), dict.fromkeys(values, tag))


def read_sysfs_path(path: str | Path) -> list[Snapshot]:
    """Whatever a user points ``--kind sysfs`` at: a ``grep ""`` dump file, a sysfs root (a folder holding
    ``sys/class/infiniband``), the ``infiniband`` class folder itself, or one bare counters folder.

    Raises:
        InputError: the path does not exist or holds none of these.
    """
    p = Path(path)
    if p.is_file():
        try:
            text = p.read_text(encoding="utf-8")
        except PermissionError:
            raise InputError(f"{p}: permission denied") from None
        except UnicodeDecodeError:
            raise InputError(f"{p}: not a text file; expected a sysfs counter dump") from None
        return parse_grep_dump(text, str(p))
    if not p.is_dir():
        raise InputError(f"{p}: no such file or folder")
    if (p / CLASS_DIR).is_dir():
        return read_sysfs(p)
    if p.name == "infiniband" and p.parent.name == "class" and p.parent.parent.name == "sys":
        return read_sysfs(p.parent.parent.parent)
    return [read_counter_dir(p)]
