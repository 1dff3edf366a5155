"""What one worker process is asked to do, and its timing plan (plain, picklable records).

A run spreads every flow's QPs over ``flow.processes`` workers (``plan.split_qps``); worker ``w`` of
flow ``i`` gets a :class:`Share`. A :class:`WorkerJob` groups the shares one process drives. All workers
of a run start their warm-up at the same ``CLOCK_MONOTONIC`` instant (system-wide on Linux, so comparable
across processes).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from collie.collectors.host import HostCollector
from collie.model.flow import Flow
from collie.targets.verbs.spec import VerbsSpec


class Side(Enum):
    """Which ends of a flow a share holds."""

    BOTH = "both"
    CLIENT = "client"
    SERVER = "server"

    @property
    def client(self) -> bool:
        return self is not Side.SERVER

    @property
    def server(self) -> bool:
        return self is not Side.CLIENT

    @property
    def peer(self) -> Side:
        """The side facing this one on the other host (``BOTH`` faces nothing remote: itself)."""
        return {Side.CLIENT: Side.SERVER, Side.SERVER: Side.CLIENT}.get(self, Side.BOTH)


def side_of(flow: Flow, roles: tuple[str, ...] | None) -> Side | None:
    """The ends of ``flow`` a host playing ``roles`` holds (``None`` roles: every role; ``None``: no end)."""
    if roles is None:
        return Side.BOTH
    client, server = flow.client.host in roles, flow.server.host in roles
    if client and server:
        return Side.BOTH
    if client:
        return Side.CLIENT
    return Side.SERVER if server else None


@dataclass(frozen=True)
class Share:
    """The part of flow ``flow_index`` one worker drives: ``qps`` QPs and ``mrs`` MRs on each of its sides
    (``side``), client and server memory on the given NUMA nodes (``None``: leave placement to the kernel).
    Invariant: the two hosts of a cross-host flow plan the same ``worker``, ``qps`` and ``mrs`` for it."""

    flow_index: int
    flow: Flow
    qps: int
    mrs: int
    worker: int
    client_node: int | None = None
    server_node: int | None = None
    side: Side = Side.BOTH


@dataclass(frozen=True)
class Timing:
    """Seconds of each phase: ``warmup`` (traffic, not measured), ``duration`` (measured), ``drain_timeout``
    (outstanding WRs after the deadline must complete within it), ``linger`` (a worker holding server ends of
    cross-host flows keeps them alive, receives posted, after the deadline until its coordinator says stop,
    at most this long, so the clients on the other host can drain; 0 on local runs)."""

    warmup: float
    duration: float
    drain_timeout: float = 10.0
    linger: float = 0.0


@dataclass(frozen=True)
class WorkerJob:
    """Everything a worker needs: the device, its shares, the timing, whether to verify data, the collector this
    worker reads the device counters with at the edges of the measured interval (exactly one worker has one), and
    which traffic loop it runs."""

    worker: int
    spec: VerbsSpec
    shares: tuple[Share, ...]
    timing: Timing
    verify: bool
    seed: int
    collector: HostCollector | None = None
    #: run the measured interval in the native loop (``native``; the target chose it), else the Python loop.
    native: bool = False
