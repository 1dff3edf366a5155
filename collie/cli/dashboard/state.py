"""What the live dashboard knows: a tally fed by the library's events, and nothing else.

The state only records (it never runs or prints anything); :mod:`collie.cli.dashboard.view` draws it and
:mod:`collie.cli.dashboard.plain` turns the same events into log lines.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final

from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    MfsFinished,
    PhaseStarted,
    SearchStep,
    TrialFinished,
    TrialStarted,
    Warned,
)
from collie.metrics import THROUGHPUT
from collie.storage.records import TrialState

#: Values of each driven metric kept for its sparkline, and verdicts kept for the "last verdicts" table.
HISTORY: Final = 60
LAST_VERDICTS: Final = 6


@dataclass(frozen=True)
class AnomalyRow:
    """One anomaly as the dashboard lists it."""

    anomaly_id: str
    signature: str
    score: float
    mfs: str
    confirmed: bool
    found_at: int


@dataclass(frozen=True)
class VerdictRow:
    """One finished trial, in brief."""

    trial: int
    phase: str
    status: str
    signature: str
    score: float
    throughput: float | None
    reason: str = ""


@dataclass(frozen=True)
class HostRow:
    """What the last run said of one host."""

    host: str
    tx_gbps: float
    rx_gbps: float
    counters: int
    unreadable: tuple[str, ...]


@dataclass
class DashboardState:
    """The running picture of a campaign, minimize or replay (mutable: events are applied as they come).

    Attributes:
        title: what runs where (``campaign on sim:cx6-200g``).
        total: experiments the budget allows (None: unknown, e.g. minimizing).
        experiments: budgeted experiments spent so far (or runs made, for a replay).
        phase, detail: the current phase and what it is about.
        trial: the trial running or last finished; point: its point.
        objective, temperature: what the search drives next, and its temperature (None: no such thing).
        driven: per driven metric, its values over the explore trials (oldest first).
        anomalies: found so far; known_hits: finds a known anomaly explained.
        verdicts: the last finished trials; hosts: the last run's hosts; warnings: every warning, in order.
        chain: the chain of the trial running or last finished (``--parallel``; None with one chain);
        per_chain: per chain, its trials finished so far (empty with one chain).
    """

    title: str = ""
    total: int | None = None
    experiments: int = 0
    phase: str = ""
    detail: str = ""
    trial: int = 0
    point: dict[str, Any] = field(default_factory=dict)
    objective: str = ""
    temperature: float | None = None
    objectives: tuple[str, ...] = ()
    driven: dict[str, deque[float]] = field(default_factory=dict)
    anomalies: list[AnomalyRow] = field(default_factory=list)
    known_hits: int = 0
    failed: int = 0
    verdicts: deque[VerdictRow] = field(default_factory=lambda: deque(maxlen=LAST_VERDICTS))
    hosts: tuple[HostRow, ...] = ()
    warnings: list[str] = field(default_factory=list)
    chain: int | None = None
    per_chain: dict[int, int] = field(default_factory=dict)
    _scores: dict[int, float] = field(default_factory=dict)

    def apply(self, event: Event) -> None:
        """Take one event into the picture."""
        if isinstance(event, PhaseStarted):
            self.phase, self.detail = event.phase, event.detail
        elif isinstance(event, TrialStarted):
            self.trial, self.point, self.chain = event.trial, dict(event.point), event.chain
            self.phase = str(event.phase)
        elif isinstance(event, TrialFinished):
            self._finished(event)
        elif isinstance(event, SearchStep):
            self.objectives, self.objective, self.temperature = event.objectives, event.objective, event.temperature
        elif isinstance(event, AnomalyFound):
            self.anomalies.append(AnomalyRow(event.anomaly_id, event.signature,
                                             self._scores.get(event.found_at, 0.0), event.mfs, event.confirmed,
                                             event.found_at))
        elif isinstance(event, MfsFinished):
            self.anomalies = [AnomalyRow(a.anomaly_id, a.signature, a.score, event.mfs, a.confirmed, a.found_at)
                              if a.anomaly_id == event.anomaly_id else a for a in self.anomalies]
        elif isinstance(event, KnownAnomaly):
            self.known_hits += 1
            self.anomalies = [a for a in self.anomalies if a.anomaly_id != event.joined]
        elif isinstance(event, Warned):
            self.warnings.append(event.message)

    def _finished(self, event: TrialFinished) -> None:
        self.experiments = max(self.experiments, event.experiments)
        self.failed += event.status is TrialState.FAILED
        if event.chain is not None:
            self.per_chain[event.chain] = self.per_chain.get(event.chain, 0) + 1
        v = event.verdict
        if v is not None and v.anomalous:
            self._scores.setdefault(event.experiments, v.score)
        if v is not None and str(event.phase) == "explore":
            for name in {THROUGHPUT, *self.objectives}:
                if name in v.metrics:
                    self.driven.setdefault(name, deque(maxlen=HISTORY)).append(float(v.metrics[name]))
        if event.status is not TrialState.PRUNED:
            phase = str(event.phase) if event.chain is None else f"{event.phase} (chain {event.chain})"
            self.verdicts.append(VerdictRow(
                event.trial, phase, event.status.name.lower(), v.signature if v is not None else "",
                v.score if v is not None else 0.0, v.metrics.get(THROUGHPUT) if v is not None else None,
                event.reason))
        if event.result is not None and event.result.hosts:
            self.hosts = tuple(HostRow(h.host, h.tx_bps / 1e9, h.rx_bps / 1e9, len(h.counters),
                                       tuple(sorted(h.unreadable))) for h in event.result.hosts)

    def driven_series(self) -> list[tuple[str, list[float]]]:
        """The metrics the search drives (throughput first), each with its values so far."""
        names = [THROUGHPUT, *(o for o in self.objectives if o != THROUGHPUT)]
        return [(n, list(self.driven[n])) for n in names if n in self.driven]
