"""Counter reads of the local device for the verbs target, through the host collector.

The worker that reads counters takes a :class:`~collie.collectors.host.HostCollector` snapshot of the device
port at both edges of the measured interval: sysfs (``ports/P/counters``, ``ports/P/hw_counters``, the
device-level ``hw_counters``), ``ethtool -S`` of the netdev that backs the port (where mlx5 and bnxt_en count
PFC pause) and ``rdma statistic`` over netlink. :func:`counter_delta` differences them honouring the driver's
catalog (wrap at 2^32, gauges averaged, settings such as ``lifespan`` left out, a counter missing or reset stays
missing, never 0). Without a catalog for the driver every counter is treated as monotonic 64-bit.
"""

from __future__ import annotations

from collie.collectors.catalog import available_dialects, load_catalog
from collie.collectors.host import HostCollector
from collie.collectors.snapshot import Delta, Snapshot, delta


def port_collector(device: str, port: int, root: str = "/") -> HostCollector:
    """The collector of one local RDMA port, reading every source the host has."""
    return HostCollector(device, port, root=root)


def counter_delta(before: Snapshot, after: Snapshot, seconds: float, dialect: str) -> Delta:
    """The change over an interval of ``seconds`` under the driver's real names, each counter with its source
    (see the module docstring)."""
    catalog = load_catalog(dialect) if dialect in available_dialects() else None
    return delta(before, after, seconds=max(seconds, 1e-9), catalog=catalog)
