"""What one worker process is asked to do, and its timing plan (plain, picklable records).

A run spreads every flow's QPs over ``flow.processes`` workers (``plan.split_qps``); worker ``w`` of
flow ``i`` gets a :class:`Share`. A :class:`WorkerJob` groups the shares one process drives. All workers
of a run start their warm-up at the same ``CLOCK_MONOTONIC`` instant (system-wide on Linux, so comparable
across processes).
"""

from __future__ import annotations

from dataclasses import dataclass

from collie.collectors.host import HostCollector
from collie.targets.verbs.spec import VerbsSpec
from collie.workload import Flow


@dataclass(frozen=True)
class Share:
    """The part of flow ``flow_index`` one worker drives: ``qps`` QP pairs and ``mrs`` MRs per side, client
    and server memory on the given NUMA nodes (``None``: leave placement to the kernel)."""

    flow_index: int
    flow: Flow
    qps: int
    mrs: int
    worker: int
    client_node: int | None = None
    server_node: int | None = None


@dataclass(frozen=True)
class Timing:
    """Seconds of each phase: ``warmup`` (traffic, not measured), ``duration`` (measured), ``drain_timeout``
    (outstanding WRs after the deadline must complete within it)."""

    warmup: float
    duration: float
    drain_timeout: float = 10.0


@dataclass(frozen=True)
class WorkerJob:
    """Everything a worker needs: the device, its shares, the timing, whether to verify data, and the
    collector this worker reads the device counters with at the edges of the measured interval (exactly one
    worker has one)."""

    worker: int
    spec: VerbsSpec
    shares: tuple[Share, ...]
    timing: Timing
    verify: bool
    seed: int
    collector: HostCollector | None = None
