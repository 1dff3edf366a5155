"""Events the campaign emits; the CLI subscribes a renderer to them (the library itself never prints)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collie.oracle import Verdict
from collie.storage.case import HitKind
from collie.storage.records import TrialState
from collie.targets.base import RunResult


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1: ``1 experiment``, ``3 experiments``.

    Args:
        n: how many.
        noun: the singular.
        plural: the plural when it is not ``noun + "s"``.
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


@dataclass(frozen=True)
class PhaseStarted:
    phase: str
    detail: str = ""


@dataclass(frozen=True)
class TrialStarted:
    """``chain``: the search chain that runs it (``--parallel``; None with one chain)."""

    trial: int
    phase: str
    point: dict[str, Any]
    chain: int | None = None


@dataclass(frozen=True)
class TrialFinished:
    """``result`` is the target's own object (with ``truth`` on the simulator, for benchmarks only);
    ``experiments`` is the budget spent so far (over every chain), this trial included; ``chain``: the search
    chain that ran it (``--parallel``; None with one chain)."""

    trial: int
    phase: str
    status: TrialState
    experiments: int
    point: dict[str, Any]
    verdict: Verdict | None = None
    result: RunResult | None = field(default=None, repr=False)
    reason: str = ""
    chain: int | None = None


@dataclass(frozen=True)
class SearchStep:
    """The search strategy's state after it was told explore trial ``trial``'s outcome (for live views).

    Attributes:
        trial: the trial just told.
        objectives: the metrics the strategy drives (``throughput``, ``diag:<counter>``; empty: it drives none,
            e.g. random search).
        objective: the one the next step drives (``""``: none).
        temperature: the annealing temperature of that objective's chain (None: the strategy has none).
    """

    trial: int
    objectives: tuple[str, ...] = ()
    objective: str = ""
    temperature: float | None = None


@dataclass(frozen=True)
class AnomalyFound:
    """A new anomaly, saved.

    Attributes:
        anomaly_id: its id (``A001-pause``), the name of its folder.
        signature: the verdict's signature.
        mfs: its minimal feature set, described; ``""`` when it was not minimized.
        experiments: the budget spent when it was saved (its confirmation and minimization included).
        minimize_experiments: of those, the ones that confirmed and minimized it.
        confirmed: it reproduced (after minimizing).
        found_at: the experiment that first showed it (the summary's ``found_at``): explore, confirm and
            minimize runs counted from 1, calibration and corpus replays aside.
        minimized: the preset confirms and minimizes finds (False: ``random`` and ``bayes`` save them as found).
        chain: the search chain that found it (``--parallel``; None with one chain).
        trial: the journal's trial that first showed it (the number the reports give; 0: not known).
    """

    anomaly_id: str
    signature: str
    mfs: str
    experiments: int
    minimize_experiments: int
    confirmed: bool
    found_at: int = 0
    minimized: bool = True
    chain: int | None = None
    trial: int = 0


@dataclass(frozen=True)
class KnownAnomaly:
    """A find of trial ``trial`` that known anomaly ``anomaly_id`` explains, and how (``kind``); ``widened`` is
    the known MFS when its edges were moved to take the find in (``WIDENED``); ``mfs``: the find's own MFS when
    it was minimized to a region that nests with the known one (``NESTED``); ``joined``: the anomaly saved
    earlier that this find was, when finishing edges showed it to be the known one (its folder is gone, its hits
    moved over); ``chain``: the search chain whose find it was (``--parallel``; None with one chain)."""

    trial: int
    anomaly_id: str
    widened: str = ""
    chain: int | None = None
    kind: HitKind = HitKind.INSIDE
    mfs: str = ""
    joined: str = ""


@dataclass(frozen=True)
class MfsFinished:
    """An MFS minimized during the search had its open edges finished after it (``experiments`` probes)."""

    anomaly_id: str
    mfs: str
    experiments: int


@dataclass(frozen=True)
class Warned:
    """Something the user should know that does not stop the work, in one sentence (not named ``Warning``,
    which would shadow the builtin)."""

    message: str


Event = (PhaseStarted | TrialStarted | TrialFinished | SearchStep | AnomalyFound | KnownAnomaly | MfsFinished
         | Warned)
Listener = Callable[[Event], None]
