"""One host's counters for one RDMA port, from every source the host has: the one collector the CLI, the verbs
target and remote agents use.

Sources, merged in this order (a name already taken by an earlier source is kept as ``<source>:<name>``, see
:func:`~collie.collectors.snapshot.combine`):

1. sysfs: ``ports/P/counters`` (``port``), ``ports/P/hw_counters`` (``hw``), ``DEV/hw_counters`` (``dev``);
2. ``ethtool -S`` of the netdev that backs the port (``ethtool``): PFC pause, PHY and PCIe counters of mlx5
   and bnxt_en live only there; the netdev is found from sysfs (:func:`~collie.collectors.sysfs.port_netdev`)
   unless given;
3. ``rdma -j statistic show link DEV/P`` over netlink (``rdma-stat``): the hw counters again (kept as
   ``rdma-stat:<name>``, a second reading of the same counter) and the optional counters sysfs lacks.

Invariants:
    * every counter of a snapshot knows its source (``Snapshot.sources``);
    * a source the host lacks (no netdev, no ``ethtool``, no ``rdma`` tool, a failing command) is named in
      ``Snapshot.unreadable`` with one sentence, and its counters are absent: missing, never 0. Only a source
      the caller required (:attr:`SourceUse.REQUIRED`) raises instead;
    * :meth:`HostCollector.delta` honours each counter's kind from the catalog of the port's dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final

from collie.collectors.catalog import Catalog, guess_dialect, load_catalog
from collie.collectors.ethtool import read_ethtool
from collie.collectors.rdma_stat import read_rdma_stat
from collie.collectors.snapshot import Delta, Snapshot, combine, delta
from collie.collectors.sysfs import PortRef, device_driver, port_netdev, read_port
from collie.errors import InputError

ETHTOOL: Final = "ethtool"
NETLINK: Final = "rdma-stat"


class SourceUse(Enum):
    """Whether a collector reads an optional source: never, when the host has it, or always (failing loudly)."""

    OFF = "off"
    AUTO = "auto"
    REQUIRED = "required"


def dialect_of(root: str, device: str, names: Iterable[str] = ()) -> str | None:
    """The counter dialect of an RDMA device: from its name (``mlx5_0``), else its kernel driver (sysfs),
    else the counter names it shows; ``None`` when no catalog explains it."""
    by_name = guess_dialect((), device)
    if by_name is not None:
        return by_name
    return guess_dialect(names, device_driver(root, device) or "")


@dataclass(frozen=True)
class ToolReadings:
    """What ``ethtool -S`` and ``rdma statistic`` gave: ``(source, snapshot)`` parts, and the sources that could
    not be read with the reason."""

    parts: tuple[tuple[str, Snapshot], ...]
    unreadable: Mapping[str, str]


@dataclass(frozen=True)
class HostCollector:
    """Reads one RDMA port of this host from every source (see the module docstring). Plain and picklable, so
    a worker process or a remote agent can be handed one.

    Attributes:
        device, port: the RDMA port (``mlx5_0``, 1).
        root: a folder laid out like ``/`` (``/`` on a live host; tests point it at a fixture tree).
        netdev: the netdev for ``ethtool -S``; ``None``: the one that backs the port, found from sysfs.
        ethtool, netlink: whether to read ``ethtool -S`` and ``rdma statistic``.
        ethtool_reader, netlink_reader: the readers (injectable for tests; the defaults run the real tools).
    """

    device: str
    port: int = 1
    root: str = "/"
    netdev: str | None = None
    ethtool: SourceUse = SourceUse.AUTO
    netlink: SourceUse = SourceUse.AUTO
    ethtool_reader: Callable[[str], Snapshot] = read_ethtool
    netlink_reader: Callable[[str], list[Snapshot]] = read_rdma_stat

    @property
    def ref(self) -> PortRef:
        return PortRef(self.device, self.port)

    @property
    def label(self) -> str:
        return self.ref.label

    def snapshot(self) -> Snapshot:
        """Every counter of the port now, each with its source.

        Raises:
            InputError: the port is not in sysfs, or a required source could not be read.
        """
        return self.merge(self.read_sysfs(), self.read_tools())

    def read_sysfs(self) -> Snapshot:
        """The port's sysfs counters alone: file reads, fast enough to take at the very edge of an interval."""
        return read_port(self.root, self.ref)

    def read_tools(self) -> ToolReadings:
        """``ethtool -S`` and ``rdma statistic``: processes, which take milliseconds (far more under emulation).

        Raises:
            InputError: a required source could not be read.
        """
        parts: list[tuple[str, Snapshot]] = []
        unreadable: dict[str, str] = {}
        for source, use, read in ((ETHTOOL, self.ethtool, self._read_ethtool),
                                  (NETLINK, self.netlink, self._read_netlink)):
            if use is SourceUse.OFF:
                continue
            part = read()
            if isinstance(part, str):
                unreadable[source] = part
            else:
                parts.append((source, part))
        return ToolReadings(tuple(parts), unreadable)

    def merge(self, sysfs: Snapshot, tools: ToolReadings) -> Snapshot:
        """One snapshot of a sysfs reading and the tools' readings (see the module docstring for the order)."""
        snap = combine([("sysfs", sysfs), *tools.parts], device=self.label)
        return Snapshot(sysfs.timestamp, snap.values, "host", self.label, snap.problems, snap.sources,
                        dict(tools.unreadable))

    def _read_ethtool(self) -> Snapshot | str:
        netdev = self.netdev if self.netdev is not None else port_netdev(self.root, self.ref)
        if netdev is None:
            reason = f"no netdev backs {self.label} (InfiniBand port, or none found in sysfs)"
            if self.ethtool is SourceUse.REQUIRED:
                raise InputError(f"{reason}; give the netdev explicitly")
            return reason
        try:
            return self.ethtool_reader(netdev)
        except InputError as exc:
            if self.ethtool is SourceUse.REQUIRED:
                raise
            return str(exc)

    def _read_netlink(self) -> Snapshot | str:
        try:
            snaps = self.netlink_reader(self.label)
        except InputError as exc:
            if self.netlink is SourceUse.REQUIRED:
                raise
            return str(exc)
        mine = [s for s in snaps if s.device == self.label]
        if not mine:
            reason = f"rdma statistic shows no counters for {self.label}"
            if self.netlink is SourceUse.REQUIRED:
                raise InputError(reason)
            return reason
        return mine[0]

    def dialect(self, snap: Snapshot | None = None) -> str | None:
        """The port's counter dialect (see :func:`dialect_of`)."""
        return dialect_of(self.root, self.device, snap.values if snap is not None else ())

    def catalog(self, snap: Snapshot | None = None) -> Catalog | None:
        """The catalog of the port's dialect, or ``None`` when no catalog explains it."""
        dialect = self.dialect(snap)
        return load_catalog(dialect) if dialect is not None else None

    def delta(self, before: Snapshot, after: Snapshot, seconds: float | None = None,
              catalog: Catalog | None = None) -> Delta:
        """The change between two snapshots, honouring the kinds of ``catalog`` (default: the port's)."""
        cat = catalog if catalog is not None else self.catalog(after)
        return delta(before, after, seconds, cat)
