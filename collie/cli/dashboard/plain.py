"""The dashboard's events as plain log lines: what a campaign prints when stderr is a log, not a terminal."""

from __future__ import annotations

from collections.abc import Collection

from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    MfsFinished,
    PhaseStarted,
    TrialFinished,
    Warned,
    counted,
)
from collie.storage.case import HitKind
from collie.storage.records import TrialState


def plain_line(event: Event, every: int, each: Collection[str] = ()) -> str | None:
    """The log line for ``event`` (None: it gets none); explore progress is logged every ``every`` experiments,
    and every trial of the phases in ``each``."""
    if isinstance(event, PhaseStarted):
        return f"== {event.phase}: {event.detail}"
    if isinstance(event, TrialFinished):
        by = _by(event.chain)
        if event.status == TrialState.FAILED:
            return f"   trial {event.trial}{by} FAILED: {event.reason}"
        if event.phase in each:
            return f"   trial {event.trial}{by} ({event.phase}): {_judged(event)}"
        if event.phase == "explore" and event.experiments % every == 0 and event.status != TrialState.PRUNED:
            return f"   {counted(event.experiments, 'experiment')}{by}"
        return None
    if isinstance(event, AnomalyFound):
        if not event.minimized:
            state, what = "not confirmed or minimized by this preset", "saved as found"
        elif not event.mfs:  # the budget ran out first (a warning said so)
            state, what = "not minimized", "saved as found"
        else:
            state, what = "confirmed" if event.confirmed else "NOT confirmed after minimizing", event.mfs
        found = f"trial {event.trial} (experiment {event.found_at})" if event.trial else \
            f"experiment {event.found_at}"
        return (f"!! {event.anomaly_id} [{event.signature}] found at {found}{_by(event.chain)} "
                f"({counted(event.minimize_experiments, 'more experiment')} to confirm and minimize, {state}): "
                f"{what}")
    if isinstance(event, KnownAnomaly):
        if event.joined:
            return (f"   {event.joined} is {event.anomaly_id}: its region ({event.mfs}) nests with "
                    f"{event.anomaly_id}'s; it joins it as a further hit")
        how = {HitKind.INSIDE: "", HitKind.WIDENED: f"; its MFS widened to {event.widened}",
               HitKind.NESTED: f"; minimized to {event.mfs}, the same region"}[event.kind]
        return f"   trial {event.trial}{_by(event.chain)}: known anomaly {event.anomaly_id}{how}"
    if isinstance(event, MfsFinished):
        return f"   {event.anomaly_id}: edges finished ({counted(event.experiments, 'experiment')}): {event.mfs}"
    if isinstance(event, Warned):
        return f"warning: {event.message}"
    return None


def _by(chain: int | None) -> str:
    """`` (chain 1)`` after what a chain of a ``--parallel`` campaign did; nothing with one chain."""
    return "" if chain is None else f" (chain {chain})"


def _judged(event: TrialFinished) -> str:
    v = event.verdict
    if event.status is TrialState.PRUNED:
        return f"cannot run: {event.reason}"
    if v is None:
        return "no verdict"
    throughput = v.metrics.get("throughput")
    at = f", throughput {throughput:.3g} of the ceiling" if throughput is not None else ""
    return (f"anomalous {v.signature} (score {v.score:.3g}{at})" if v.anomalous else f"clean{at}")
