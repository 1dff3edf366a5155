"""``SimTotals``: the running counter totals of a simulated host, so sampling a sim host (a remote agent's
``sample``) behaves like reading a real NIC's counters.

Invariants: the names are the ones the simulator reports for the profile's dialect, every priority's
per-priority counters among them (a run reports another priority's only when its traffic is on it), all present
from the start (0 before any run); a counter is the sum of every run's deltas since the totals were made, a gauge
the last run's value.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from collie.collectors.snapshot import Snapshot
from collie.model.rocev2 import PRIORITIES
from collie.targets.base import HostResult, RunResult
from collie.targets.sim.counters import dialect_catalog, dialect_counters
from collie.targets.sim.model import HostAcc
from collie.targets.sim.target import SimTarget


@dataclass
class SimTotals:
    """Running totals per simulated host (see the module docstring).

    Attributes:
        device_prefix: the snapshots' device (``sim:PROFILE``), followed by ``/HOST``.
        hosts: the profile's hosts.
        gauges: the names that are gauges (the last value, not a sum).
        totals: host -> counter -> total.
    """

    device_prefix: str
    hosts: tuple[str, ...]
    gauges: frozenset[str]
    totals: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def for_target(cls, target: SimTarget) -> SimTotals:
        """Zero totals of every counter ``target``'s profile reports, on each of its hosts."""
        profile = target.profile
        every = HostAcc(by_priority={p: HostAcc() for p in range(PRIORITIES)})  # each priority's counters too
        names = dialect_counters(profile.dialect)(every, 1.0, 1.0)
        cat = dialect_catalog(profile.dialect)
        gauges = frozenset(n for n in names if (s := cat.lookup(n)) is not None and s.kind == "gauge")
        totals = {h: dict.fromkeys(names, 0.0) for h in profile.hosts}
        return cls(f"sim:{profile.name}", tuple(profile.hosts), gauges, totals)

    def add(self, result: RunResult) -> None:
        """Add one local run's host counters."""
        self.add_hosts(result.hosts)

    def add_hosts(self, hosts: Sequence[HostResult]) -> None:
        """Add the counters of ``hosts`` (a run's or a session's part of one)."""
        for h in hosts:
            mine = self.totals.setdefault(h.host, {})
            for name, value in h.counters.items():
                mine[name] = value if name in self.gauges else mine.get(name, 0.0) + value

    def snapshots(self) -> tuple[Snapshot, ...]:
        """One snapshot per host of the totals now."""
        now = time.time()
        return tuple(Snapshot(now, dict(values), "sim", f"{self.device_prefix}/{host}",
                              sources=dict.fromkeys(values, "sim"))
                     for host, values in self.totals.items())
