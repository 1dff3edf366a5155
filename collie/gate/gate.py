"""The CI gate: replay every known case of a corpus on a target, then search it briefly for new anomalies.

One campaign does both (its calibration, its corpus replay, then a search of ``budget`` experiments that keeps
out of the known cases' regions), so the gate's folder is an ordinary campaign folder (``collie report`` reads
it). What the gate adds is the decision:

    * a known case that still reproduces (its replay is anomalous) fails the gate unless a waiver in force
      covers it; one that no longer does is reported fixed; one the target cannot run, or whose run the oracle
      did not judge (an engine-bound run, a run with errors), is reported not run: it was never shown fixed;
    * a known case recorded on another target (another target spec, or the same spec on another NIC) is
      reported as such, with how the targets differ, whatever its replay showed: neither fixed nor failing, it
      never decides the gate;
    * every new anomaly the search records fails the gate unless a waiver in force covers it;
    * an expired waiver waives nothing, and the result says so.

Invariants: the decision reads only measured verdicts (never the simulator's ground truth); a target that cannot
be opened, whose calibration fails, or on which every run fails is an :class:`InfrastructureError`, never a
pass and never "anomalies found".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Protocol

from collie.campaign import CampaignSummary
from collie.errors import CollieError, InputError, StoreError
from collie.events import Event, TrialFinished, TrialStarted, Warned
from collie.gate.waivers import Waiver, Waivers
from collie.oracle import Verdict
from collie.storage.campaign import CampaignStore
from collie.storage.case import TargetRecord
from collie.storage.corpus import CorpusCase
from collie.storage.records import Phase, TrialState
from collie.targets.base import TargetInfo


class ExitCode(IntEnum):
    """What ``collie ci`` exits with."""

    CLEAN = 0
    ANOMALIES = 1
    USAGE = 2
    INFRASTRUCTURE = 3


class InfrastructureError(Exception):
    """The target could not be opened or could not run anything: the gate cannot say whether it is clean."""


class KnownStatus(StrEnum):
    """What became of one known case."""

    REPRODUCES = "reproduces"  # anomalous again, and no waiver in force covers it: fails the gate
    WAIVED = "waived"  # anomalous again, covered by a waiver in force
    FIXED = "fixed"  # no longer anomalous
    NOT_RUN = "not run"  # the target could not run it (pruned), the run failed, or it was not judged (engine-bound)
    OTHER_TARGET = "other target"  # recorded on another target: its replay decides nothing


@dataclass(frozen=True)
class KnownResult:
    """One known case of the corpus, replayed.

    Attributes:
        name: the case's name (its folder's, or its file's stem).
        path: where it is.
        recorded: the signature the case records (``""``: none, e.g. a bare workload file).
        status: see :class:`KnownStatus`.
        signature: the replay's signature (``""``: clean or not run).
        score: the replay's score (0: clean).
        waiver: the waiver in force that waived it (None: none).
        expired: an expired waiver about it (None: none).
        reason: why it was not run.
        differences: how the gate's target differs from the one the case records, one phrase each, as
            ``collie replay`` names them (``NIC P2100G -> ConnectX-6``; empty: the same, or nothing recorded).
        target_note: that in one phrase (``recorded on sim:p2100g-100g (P2100G), run on sim:cx6-200g
            (ConnectX-6)`` for a case recorded on another target; ``""``: the same target).
    """

    name: str
    path: str
    recorded: str
    status: KnownStatus
    signature: str = ""
    score: float = 0.0
    waiver: Waiver | None = None
    expired: Waiver | None = None
    reason: str = ""
    differences: tuple[str, ...] = ()
    target_note: str = ""

    @property
    def fails(self) -> bool:
        return self.status is KnownStatus.REPRODUCES


@dataclass(frozen=True)
class NewAnomaly:
    """An anomaly the search found that no known case explains."""

    anomaly_id: str
    signature: str
    mfs: str
    confirmed: bool
    found_at: int
    waiver: Waiver | None = None
    expired: Waiver | None = None

    @property
    def fails(self) -> bool:
        return self.waiver is None


@dataclass(frozen=True)
class GateResult:
    """The gate's findings and what they cost (``engine_bound``: runs of any phase the traffic engine, not the
    NIC, limited, which the oracle did not judge)."""

    target: str
    out: str
    known: tuple[KnownResult, ...]
    new: tuple[NewAnomaly, ...]
    budget: int
    experiments: int
    calibration: int
    failed: int
    pruned: int
    warnings: tuple[str, ...] = field(default=())
    engine_bound: int = 0

    @property
    def exit_code(self) -> ExitCode:
        failing = any(k.fails for k in self.known) or any(n.fails for n in self.new)
        return ExitCode.ANOMALIES if failing else ExitCode.CLEAN

    def verdict(self) -> str:
        """One sentence: passed or failed, and why."""
        reproducing = sum(k.fails for k in self.known)
        new = sum(n.fails for n in self.new)
        waived = sum(k.status is KnownStatus.WAIVED for k in self.known) + sum(not n.fails for n in self.new)
        fixed = sum(k.status is KnownStatus.FIXED for k in self.known)
        elsewhere = sum(k.status is KnownStatus.OTHER_TARGET for k in self.known)
        parts = []
        if reproducing:
            parts.append(f"{reproducing} known case{'s' if reproducing != 1 else ''} still reproduce"
                         f"{'' if reproducing != 1 else 's'}")
        if new:
            parts.append(f"{new} new anomal{'ies' if new != 1 else 'y'}")
        other = f", {elsewhere} recorded on another target" if elsewhere else ""
        tail = f"; {waived} waived, {fixed} fixed{other}, of {len(self.known)} known"
        n = self.engine_bound
        engine = f"; {n} engine-bound run{'s' if n != 1 else ''} not judged" if n else ""
        if parts:
            return f"gate FAILED: {' and '.join(parts)}{tail}{engine}"
        return f"gate passed: no unwaived anomaly{tail}, {self.experiments} search experiments{engine}"

    def to_dict(self) -> dict[str, Any]:
        def waiver(w: Waiver | None) -> dict[str, Any] | None:
            return None if w is None else {"signature": w.signature, "reason": w.reason,
                                           "expires": w.expires.isoformat(), "case": w.case}

        return {
            "exit_code": int(self.exit_code), "verdict": self.verdict(), "target": self.target, "out": self.out,
            "budget": self.budget, "experiments": self.experiments, "calibration": self.calibration,
            "failed": self.failed, "pruned": self.pruned, "engine_bound": self.engine_bound,
            "warnings": list(self.warnings),
            "known": [{"name": k.name, "path": k.path, "recorded": k.recorded, "status": str(k.status),
                       "signature": k.signature, "score": k.score, "fails": k.fails, "waiver": waiver(k.waiver),
                       "expired_waiver": waiver(k.expired), "reason": k.reason,
                       "target_differences": list(k.differences), "target_note": k.target_note}
                      for k in self.known],
            "new": [{"anomaly_id": n.anomaly_id, "signature": n.signature, "mfs": n.mfs, "confirmed": n.confirmed,
                     "found_at": n.found_at, "fails": n.fails, "waiver": waiver(n.waiver),
                     "expired_waiver": waiver(n.expired)} for n in self.new],
        }


class CampaignRun(Protocol):
    """A campaign ready to run (see :func:`collie.services.open_gate`)."""

    def run(self) -> CampaignSummary: ...


class GateWatch:
    """Listens to the gate's campaign for what the gate needs (each replay's outcome, whether anything ran, the
    warnings), forwarding every event to ``forward``; the campaign's listener."""

    def __init__(self, forward: Callable[[Event], None] | None) -> None:
        self.forward = forward
        self.started = 0
        self.finished: list[TrialFinished] = []
        self.replays: list[TrialFinished] = []
        self.warnings: list[str] = []

    def __call__(self, event: Event) -> None:
        if isinstance(event, TrialStarted):
            self.started += 1
        elif isinstance(event, TrialFinished):
            self.finished.append(event)
            if event.phase == Phase.REPLAY:
                self.replays.append(event)
        elif isinstance(event, Warned):
            self.warnings.append(event.message)
        if self.forward is not None:
            self.forward(event)

    def first_failure(self) -> str:
        return next((e.reason for e in self.finished if e.status is TrialState.FAILED), "")


def run_gate(*, campaign: CampaignRun, watch: GateWatch, target_spec: str, store: CampaignStore, budget: int,
             corpus: Sequence[CorpusCase], waivers: Waivers, today: dt.date) -> GateResult:
    """Run the gate's ``campaign`` (its target not yet entered, its listener ``watch``; it replays ``corpus``
    then searches ``budget`` experiments in ``store``) and decide (see the module docstring).

    Raises:
        InfrastructureError: the target cannot be opened, its calibration fails, the campaign folder cannot be
            written, or every run failed.
        CampaignInterrupted: Ctrl-C.
        InputError: a user mistake the campaign found (passed through; before any trial ran, whatever the
            target: e.g. the campaign folder cannot be made).
    """
    try:
        summary = campaign.run()
    except StoreError as exc:
        raise InfrastructureError(f"the gate's campaign folder {store.root} could not be written: {exc}") from None
    except Exception as exc:
        if watch.started == 0:
            if isinstance(exc, InputError):  # a user mistake, e.g. a folder that cannot be made: not the target's
                raise
            why = str(exc) if isinstance(exc, CollieError) else f"{type(exc).__name__}: {exc}"
            raise InfrastructureError(f"the target {target_spec} cannot be opened: {why}") from None
        failure = watch.first_failure()
        if failure or not isinstance(exc, CollieError):
            why = failure or f"{type(exc).__name__}: {exc}"
            raise InfrastructureError(f"the target {target_spec} failed while the gate ran: {why}") from None
        raise
    # calibration (or a victim run alone) working is not enough: a gate whose replays and search all failed judged
    # nothing
    judged = [e for e in watch.finished if e.status is not TrialState.PRUNED
              and e.phase not in (Phase.CALIBRATE, Phase.SOLO)]
    if judged and all(e.status is TrialState.FAILED for e in judged):
        raise InfrastructureError(f"every run failed on {target_spec} (the first: {watch.first_failure()})")
    info = store.config().target_info
    known = tuple(_known(case, event, waivers, today, target_spec, info)
                  for case, event in zip(corpus, watch.replays, strict=True))
    new = []
    for a in summary.anomalies:
        if a.anomaly_id.startswith("corpus:"):
            continue
        m = waivers.match(a.signature, None, today)
        new.append(NewAnomaly(a.anomaly_id, a.signature, a.mfs.describe() if a.mfs else "", a.confirmed,
                              a.found_at, m.active, m.expired))
    return GateResult(target_spec, str(store.root), known, tuple(new), budget, summary.experiments,
                      summary.calibration, summary.failed, summary.pruned, tuple(watch.warnings),
                      summary.engine_bound)


def _known(case: CorpusCase, event: TrialFinished, waivers: Waivers, today: dt.date, spec: str,
           info: TargetInfo | None) -> KnownResult:
    recorded = case.mfs.signature if case.mfs is not None else ""
    found_on = case.target
    differences = tuple(found_on.differences(spec, info)) if found_on is not None and info is not None else ()
    elsewhere = found_on is not None and _elsewhere(found_on, spec, info)
    note = (_elsewhere_note(found_on, spec, info) if found_on is not None and elsewhere
            else f"the target differs from the recorded one: {', '.join(differences)}" if differences else "")
    verdict: Verdict | None = event.verdict
    if event.status is not TrialState.COMPLETE or verdict is None:
        return KnownResult(case.name, str(case.path), recorded, KnownStatus.NOT_RUN, reason=event.reason,
                           differences=differences, target_note=note)
    if "not_judged" in verdict.evidence:  # an engine-bound run, or one with errors: it says nothing of the case
        return KnownResult(case.name, str(case.path), recorded, KnownStatus.NOT_RUN,
                           reason=f"the oracle did not judge its run ({verdict.evidence['not_judged']})",
                           differences=differences, target_note=note)
    if elsewhere:
        return KnownResult(case.name, str(case.path), recorded, KnownStatus.OTHER_TARGET, verdict.signature,
                           verdict.score, differences=differences, target_note=note)
    if not verdict.anomalous:
        m = waivers.match(recorded, case.name, today)
        return KnownResult(case.name, str(case.path), recorded, KnownStatus.FIXED, expired=m.expired,
                           differences=differences, target_note=note)
    m = waivers.match(verdict.signature, case.name, today)
    status = KnownStatus.WAIVED if m.active is not None else KnownStatus.REPRODUCES
    return KnownResult(case.name, str(case.path), recorded, status, verdict.signature, verdict.score, m.active,
                       m.expired, differences=differences, target_note=note)


def _elsewhere(found_on: TargetRecord, spec: str, info: TargetInfo | None) -> bool:
    """Whether a case found on ``found_on`` was found on another target than ``spec`` (``info``): another spec,
    or the same spec on another NIC (another firmware, driver or kernel is the same target, changed)."""
    if found_on.spec != spec:
        return True
    was = found_on.fingerprint
    return was is not None and info is not None and was.nic_model != info.nic_model


def _elsewhere_note(found_on: TargetRecord, spec: str, info: TargetInfo | None) -> str:
    """``recorded on A (NIC a), run on B (NIC b)``, the NICs named when they differ."""
    was, now = (found_on.fingerprint.nic_model if found_on.fingerprint else "", info.nic_model if info else "")
    if was and now and was != now:
        return f"recorded on {found_on.spec} ({was}), run on {spec} ({now})"
    return f"recorded on {found_on.spec}, run on {spec}"
