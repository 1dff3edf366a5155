"""Counter reads of the local device for the verbs target, through the shared sysfs collector.

The engine reads a :class:`~collie.collectors.snapshot.Snapshot` of the device port at both edges of the
measured interval (``collie.collectors.sysfs.read_port``: ``ports/P/counters``, ``ports/P/hw_counters`` and
the device-level ``hw_counters``); :func:`counter_deltas` differences them honouring the driver's catalog
(wrap at 2^32, gauges averaged, settings such as ``lifespan`` left out, a counter missing or reset stays
missing, never 0). Without a catalog for the driver every counter is treated as monotonic 64-bit.
"""

from __future__ import annotations

from pathlib import Path

from collie.collectors.catalog import available_dialects, load_catalog
from collie.collectors.snapshot import Snapshot, delta
from collie.collectors.sysfs import PortRef, read_port


def read_counters(device: str, port: int, root: str | Path = "/") -> Snapshot:
    """Every counter of ``device`` port ``port`` under ``root`` (``/`` on a live system)."""
    return read_port(root, PortRef(device, port))


def counter_deltas(before: Snapshot, after: Snapshot, seconds: float, dialect: str) -> dict[str, float]:
    """Deltas over an interval of ``seconds`` under the driver's real names (see the module docstring)."""
    catalog = load_catalog(dialect) if dialect in available_dialects() else None
    return delta(before, after, seconds=max(seconds, 1e-9), catalog=catalog).counters()
