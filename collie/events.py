"""Events the campaign emits; the CLI subscribes a renderer to them (the library itself never prints)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collie.oracle import Verdict
from collie.targets.base import RunResult


@dataclass(frozen=True)
class PhaseStarted:
    phase: str
    detail: str = ""


@dataclass(frozen=True)
class TrialStarted:
    trial: int
    phase: str
    point: dict[str, Any]


@dataclass(frozen=True)
class TrialFinished:
    """``result`` is the target's own object (with ``truth`` on the simulator, for benchmarks only)."""

    trial: int
    phase: str
    status: str
    experiments: int
    point: dict[str, Any]
    verdict: Verdict | None = None
    result: RunResult | None = field(default=None, repr=False)
    reason: str = ""


@dataclass(frozen=True)
class AnomalyFound:
    anomaly_id: str
    signature: str
    mfs: str
    experiments: int
    minimize_experiments: int
    confirmed: bool


@dataclass(frozen=True)
class KnownAnomaly:
    """A find a known anomaly explains; ``widened`` is its MFS when its edges were moved to take it in."""

    trial: int
    anomaly_id: str
    widened: str = ""


@dataclass(frozen=True)
class MfsFinished:
    """An MFS minimized during the search had its open edges finished after it (``experiments`` probes)."""

    anomaly_id: str
    mfs: str
    experiments: int


@dataclass(frozen=True)
class Warning:
    message: str


Event = PhaseStarted | TrialStarted | TrialFinished | AnomalyFound | KnownAnomaly | MfsFinished | Warning
Listener = Callable[[Event], None]
