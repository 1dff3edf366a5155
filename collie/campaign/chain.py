"""One search chain of a campaign: explore -> confirm -> minimize -> record, until its budget is spent.

A :class:`Chain` asks its strategy for points, runs them through its
:class:`~collie.campaign.runner.TrialRunner` (which journals them), and confirms, minimizes and saves the
anomalies it finds into the campaign's :class:`~collie.campaign.registry.AnomalyRegistry`, spending the
campaign's :class:`~collie.campaign.budget.Budget`. It is given everything it works with; the
:class:`~collie.campaign.campaign.Campaign` builds its chains, calibrates, replays the corpus and runs them.

The chain is deterministic for a seed: its strategy is seeded, the simulator's noise is a function of the seed,
the workload and the trial's place in the journal, and decisions depend only on measured data. That is what
makes ``--resume`` exact: a resumed campaign re-walks the same path, taking each finished trial's result from the
journal instead of running it again, and goes on live from the first trial the journal lacks (the one in flight
at a crash, if any); its journal is the uninterrupted campaign's but for timestamps and durations.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from collie.campaign.budget import Budget, BudgetSpent
from collie.campaign.registry import AnomalyRecord, AnomalyRegistry
from collie.campaign.runlog import Replay, RunLog
from collie.campaign.runner import TrialOutcome, TrialRunner
from collie.campaign.summary import CampaignSummary
from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    MfsFinished,
    PhaseStarted,
    SearchStep,
    Warned,
    counted,
)
from collie.mfs import MFS
from collie.minimize import Minimizer, MinimizeResult, MinimizeSettings, moved_to, off_edges
from collie.model.features import Features, features
from collie.model.space import SearchSpace
from collie.model.workload import Workload
from collie.oracle import Verdict, leading_symptom
from collie.preset import Preset
from collie.storage.campaign import CampaignStore
from collie.storage.case import CaseEvidence, CaseRecord, Hit, HitKind, OriginalFind, TargetRecord
from collie.storage.records import Phase
from collie.strategies import Outcome, Strategy
from collie.targets.base import TargetInfo

#: Anomalies of another symptom met while minimizing one, followed up afterwards (per minimized anomaly).
MAX_SIDE_FINDINGS: Final = 2


def chain_seed(seed: int, chain: int) -> int:
    """The seed of search chain ``chain`` of a campaign seeded ``seed``: the seed itself for chain 0 (so one
    chain is the campaign without ``--parallel``), else 31 bits of SHA-256 of both."""
    if chain == 0:
        return seed
    digest = hashlib.sha256(f"collie-chain:{seed}:{chain}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class _OpenEdges:
    """A minimized anomaly whose MFS still has open edges, finished when the search ends.

    Attributes:
        anomaly_id: the anomaly.
        minimizer: the minimizer that left the edges open (it finishes them).
        result: what its deferred run gave.
        runs: every run of its confirmation and minimization (the evidence of a case that moves to its edges).
        leading: its leading symptom.
        trial: the trial that found it.
    """

    anomaly_id: str
    minimizer: Minimizer
    result: MinimizeResult
    runs: RunLog
    leading: str
    trial: int

    @property
    def symptom(self) -> str:
        """The kind of its leading symptom (whose share of the budget finishing its edges spends)."""
        return self.leading.split("@")[0]


@dataclass(frozen=True)
class _Waiting:
    """A find whose recording reached the experiments kept back to finish open edges: it is recorded again from
    its find once they are finished (finishing takes less than it may, and the rest is free again), under a new
    id: ids follow the order anomalies are recorded in, so no find lies inside the region of a later id.

    Attributes:
        point: the point found.
        verdict: the verdict of its find.
        found_at: the experiments spent when it was found.
        trial: the trial that found it.
        runs: every run of it so far (its evidence goes on from them).
        cost: the experiments recording it has spent so far.
    """

    point: dict[str, Any]
    verdict: Verdict
    found_at: int
    trial: int
    runs: RunLog
    cost: int


class Chain:
    """One search chain of a campaign (see the module).

    Invariants: it changes the registry, the budget, the store and the journal state it shares with other
    chains only while its runner holds the turn (see :mod:`collie.campaign.turns`); what finishing the open edges
    of its MFSs may take is reserved in the budget under ``index`` from the moment it minimized them until they
    are finished.

    Args:
        index: its place among the campaign's chains (0 for a campaign of one chain): its key in the budget.
        space: the search space.
        preset: oracle thresholds, minimization settings (None: finds are saved as found), strategy name.
        store: the campaign folder its finds are saved in.
        info: the fingerprint of the target it runs on (saved with each find).
        registry: the anomalies the campaign knows, shared by its chains.
        budget: the campaign's budget, shared by its chains.
        runner: runs and journals its trials on its own target (with the others' turns in a campaign of several).
        strategy: asks the points it explores (seeded; kept out of or steered around the registry's regions).
        summary: its own tally (experiments, confirming and minimizing, known hits).
        emit: where its events go.
    """

    def __init__(self, *, index: int, space: SearchSpace, preset: Preset, store: CampaignStore, info: TargetInfo,
                 registry: AnomalyRegistry, budget: Budget, runner: TrialRunner, strategy: Strategy,
                 summary: CampaignSummary, emit: Callable[[Event], None]) -> None:
        self.index = index
        self.space = space
        self.preset = preset
        self.store = store
        self.info = info
        self.registry = registry
        self.known = registry.known
        self.budget = budget
        self.runner = runner
        self.strategy = strategy
        self.summary = summary
        self._emit = emit
        # minimized anomalies whose MFS still has open edges, finished when the search ends
        self._open: list[_OpenEdges] = []
        # finds that reached the reserve for open edges, recorded once the edges are finished
        self._waiting: list[_Waiting] = []

    def _spent(self) -> int:
        """The budget spent: by every chain of the campaign, their trials in flight included."""
        return self.budget.spent

    # -- running one trial -------------------------------------------------------------------------------

    def _experiment(self, phase: Phase, workload: Workload, point: Mapping[str, Any] | None) -> TrialOutcome:
        """Run (or take from the journal) one trial; journal it (with the point as it runs: legal, as the live
        view and the reports show it); return its outcome."""
        return self.runner.run(phase, workload, None if point is None else self.space.legal_point(point, workload))

    def _probe(self, phase: Phase, point: Mapping[str, Any]) -> Verdict | None:
        if not self.space.is_valid(point):
            return None
        self.budget.charge(self.index)
        trial = self._experiment(phase, self.space.build(point), point)
        return trial.verdict

    # -- phases ------------------------------------------------------------------------------------------

    def search(self) -> None:
        """Search to the budget's current total: explore, keeping what finishing the open edges of the MFSs
        found may cost; finish them; go on exploring with what finishing left of the budget, until the budget is
        spent or the search gives up.

        Raises:
            InputError: a resumed journal that does not belong to this campaign's path.
            CampaignInterrupted: Ctrl-C while its target ran a trial.
        """
        total = self.budget.total
        if self.summary.experiments:  # a campaign extended past an earlier budget
            detail = f"extended to {total}, {counted(self.budget.left, 'experiment')} left"
        else:
            detail = f"{self.preset.strategy}, budget {total}"
        if not self.summary.confirms:
            detail += f"; preset {self.preset.name} neither confirms nor minimizes: finds are saved as found"
        self._emit(PhaseStarted("explore", detail))
        while True:
            searching = self._explore()
            if not self._settle() or not searching:
                break
            self._emit(PhaseStarted("explore", f"{counted(self.budget.left, 'experiment')} left"))
        for waiting in self._waiting:
            known = self.registry.match(features(self.space.build(waiting.point)), waiting.verdict.signature)
            if known is not None:
                self._hit(known, HitKind.INSIDE, waiting.verdict.signature, waiting.trial)
                continue
            anomaly_id = self.registry.next_id(waiting.verdict.primary)
            self._emit(Warned(f"the budget ran out before the find of trial {waiting.trial} could be minimized; it "
                              f"is saved as found, not minimized, as {anomaly_id}"))
            self._save_found(waiting, anomaly_id)
        self._waiting.clear()

    def _settle(self) -> bool:
        """Finish the open edges, then record the finds that waited for them, one at a time (the edges each
        leaves open are finished before the next; the walk to where it waited takes the runs it made again, and
        goes on from there). True when all are done with budget left to explore."""
        while True:
            self._finish_edges()
            if self._open:
                return False
            if not self._waiting:
                return self.budget.left > 0
            waiting = self._waiting.pop(0)
            self._record_anomaly(waiting.point, waiting.verdict, partial(self._probe, Phase.MINIMIZE),
                                 waiting.found_at, waiting.trial, waiting)

    def _free(self) -> int:
        """The budget less what finishing this chain's open edges may take."""
        return self.budget.free(self.index)

    def _explore(self) -> bool:
        """Ask, run and tell until only the experiments finishing the open edges may take are left (True) or
        the strategy keeps asking points that cannot run (False)."""
        guard = 0
        while self._spent() < self._free():
            guard += 1
            if guard > self.budget.total * 20:
                self._emit(Warned("too many pruned trials in a row; stopping the search early"))
                return False
            point = self.strategy.ask()
            if not self.space.is_valid(point):
                self.strategy.tell(point, None)
                continue
            trial = self._experiment(Phase.EXPLORE, self.space.build(point), point)
            v = trial.verdict
            if v is None:
                self.strategy.tell(point, None)
                continue
            self.strategy.tell(point, Outcome(v.metrics, v.anomalous))
            self._emit(_search_step(self.runner.trial, self.strategy))
            if v.anomalous:
                self._handle_anomaly(point, v, found_at=self._spent(), trial=self.runner.trial)
                self.strategy.restart()
        return True

    def _handle_anomaly(self, point: dict[str, Any], verdict: Verdict, side_findings: bool = True, *,
                        found_at: int, trial: int) -> None:
        """Confirm, minimize and record one anomaly (first shown by experiment ``found_at``, trial ``trial``)
        unless a known anomaly explains it.

        A minimization probe that shows a *different* leading symptom met another anomaly on the way; up to
        :data:`MAX_SIDE_FINDINGS` such points are handled in turn afterwards, as if the search had asked them
        (their own side findings are not followed).
        """
        side: dict[str, tuple[dict[str, Any], Verdict, int, int]] = {}

        def probe(p: Mapping[str, Any]) -> Verdict | None:
            v = self._probe(Phase.MINIMIZE, p)
            if side_findings and v is not None and v.anomalous and v.leading != verdict.leading:
                side.setdefault(v.leading, (dict(p), v, self._spent(), self.runner.trial))
            return v

        self._record_anomaly(point, verdict, probe, found_at, trial)
        for p, v, at, t in list(side.values())[:MAX_SIDE_FINDINGS]:
            if self._spent() >= self._free():
                break
            self._handle_anomaly(p, v, side_findings=False, found_at=at, trial=t)

    # -- recording a find: confirm, minimize, save (kept together) -------------------------------------------

    def _record_anomaly(self, point: dict[str, Any], verdict: Verdict,
                        probe: Callable[[Mapping[str, Any]], Verdict | None], found_at: int, trial: int,
                        waited: _Waiting | None = None) -> None:
        """Record a find (see :meth:`_record_find`; ``waited``: it waited for the open edges). In a campaign of
        several chains, a find whose leading symptom another chain is confirming or minimizing right now waits
        (its turns pass) until that chain has recorded its own, and is then looked up again: two chains never
        minimize one anomaly twice."""
        chain = self.runner.chain
        if chain is None:
            self._record_find(point, verdict, probe, found_at, trial, waited)
            return
        while self.registry.held_elsewhere(chain, verdict.signature):
            self.runner.idle()
        self.registry.hold(chain, verdict.signature)
        try:
            self._record_find(point, verdict, probe, found_at, trial, waited)
        finally:
            self.registry.release(chain)

    def _record_find(self, point: dict[str, Any], verdict: Verdict,
                     probe: Callable[[Mapping[str, Any]], Verdict | None], found_at: int, trial: int,
                     waited: _Waiting | None) -> None:
        """Record one find (see :meth:`_handle_anomaly`): a further hit of the known anomaly whose region holds
        it (nothing spent), of the one just past whose edge it lies (its MFS widened), or of the one its
        minimized MFS nests with; else a new anomaly, confirmed, minimized and saved. A find that ``waited``
        for the open edges walks its recording again on the runs it had."""
        workload = self.space.build(point)
        feats = features(workload)
        # every run of every point from here on, for the evidence of whichever point becomes the case
        runs = RunLog() if waited is None else waited.runs
        probe, confirm = runs.watch(probe), runs.watch(partial(self._probe, Phase.CONFIRM))
        if waited is None:
            runs.add(point, verdict)
        else:  # the walk up to where it waited takes its runs again, without running them
            replay = Replay(runs, point)
            probe, confirm = replay.through(probe), replay.through(confirm)
        known = self.registry.match(feats, verdict.signature)
        if known is not None:
            self._hit(known, HitKind.INSIDE, verdict.signature, trial)
            return
        anomaly_id = self.registry.next_id(verdict.primary)
        if self.preset.minimize is None:
            record = AnomalyRecord(anomaly_id, verdict.signature, None, dict(point), found_at, False, trial)
            self._save(record, workload, verdict, None, 0, runs=runs)
            return
        before = self.summary.experiments
        try:
            self._minimize_find(point, verdict, probe, confirm, found_at, trial, anomaly_id, workload, feats, runs,
                                waited.cost if waited else 0)
        finally:
            self.budget.spend_on(verdict.primary, self.summary.experiments - before)

    def _minimize_find(self, point: dict[str, Any], verdict: Verdict,
                       probe: Callable[[Mapping[str, Any]], Verdict | None],
                       confirm: Callable[[Mapping[str, Any]], Verdict | None], found_at: int, trial: int,
                       anomaly_id: str, workload: Workload, feats: Features, runs: RunLog, earlier: int) -> None:
        """Confirm (with ``confirm``), minimize (with ``probe``) and save a new find as ``anomaly_id`` (see
        :meth:`_record_find`; both probes record into ``runs``; ``earlier``: what recording it spent before it
        waited for the open edges, counted in its cost).

        A find whose symptom kind has spent its share of the budget (:meth:`Budget.over_share`) is minimized
        without far-side checks: its MFS has the edges met on the way from the find to the simplest values
        and no bound on the far side of the case (a wider region, which the search then keeps out of), for
        about half the experiments.
        """
        settings = self.preset.minimize
        assert settings is not None
        coarse = settings.far_side and self.budget.over_share(verdict.primary)
        if coarse:
            settings = dataclasses.replace(settings, far_side=False)
        before = self.summary.experiments
        near = self.registry.near(feats, verdict.signature)
        self.budget.keep_reserve(self.index)
        try:
            hits, tries = self._confirm(point, verdict, settings, confirm)
            if hits < settings.required:
                self._emit(Warned(f"trial {self.runner.trial}: anomaly did not reproduce ({hits} of "
                                   f"{counted(tries, 'run')}); not recorded"))
                return
            moved = self._moved_case(*near, point, verdict, probe) if near is not None else None
            if near is not None and moved is not None:
                cost = earlier + self._count_minimizing(before)
                self._widen(near[0], near[1], moved, runs.evidence(moved, verdict.leading), verdict.signature,
                            trial, cost)
                return
            if coarse:
                self._emit(Warned(f"trial {trial}: {verdict.primary} finds have spent their share of the budget; "
                                  f"{anomaly_id} is minimized without far-side checks"))
            minimizer = Minimizer(self.space, probe, settings, self._explained(verdict, trial, anomaly_id))
            result = minimizer.run(point, verdict, defer=True)
        except BudgetSpent as spent:
            waiting = _Waiting(point, verdict, found_at, trial, runs, earlier + self._count_minimizing(before))
            if spent.kept and self._open:
                self._emit(Warned(f"trial {trial}: recording its find reached the {spent.kept} experiments kept to "
                                  "finish the edges of earlier MFSs; it is recorded once they are finished"))
                self._waiting.append(waiting)
            else:
                self._emit(Warned(f"the budget ran out while confirming or minimizing {anomaly_id}; it is saved as "
                                  "found, not minimized"))
                self._save_found(waiting, anomaly_id)
            return
        cost = earlier + self._count_minimizing(before)
        same = self.registry.nesting(result.mfs)
        if same is not None and same.mfs is not None and (result.mfs.within(same.mfs) or _corpus(same)):
            self._hit(same, HitKind.NESTED, verdict.signature, trial, result.mfs, cost=cost)
            return
        record = AnomalyRecord(anomaly_id, verdict.signature, result.mfs, result.point, found_at,
                               result.confirmed, trial)
        self._save(record, self.space.build(result.point), verdict, result.mfs, cost,
                   original=point, steps=len(result.steps), runs=runs)
        if minimizer.open_edges:
            self._open.append(_OpenEdges(anomaly_id, minimizer, result, runs, verdict.leading, trial))
            self.budget.reserve(self.index, minimizer)
        self._join_nested(record)  # known anomalies inside its region join it

    def _count_minimizing(self, before: int) -> int:
        """Count the experiments since ``before`` as confirming and minimizing; returns how many."""
        spent = self.summary.experiments - before
        self.summary.minimize_experiments += spent
        return spent

    def _save_found(self, find: _Waiting, anomaly_id: str) -> None:
        """Save ``find`` as ``anomaly_id``, found, neither confirmed nor minimized (the budget ran out)."""
        record = AnomalyRecord(anomaly_id, find.verdict.signature, None, dict(find.point), find.found_at,
                               False, find.trial)
        self._save(record, self.space.build(find.point), find.verdict, None, find.cost, runs=find.runs)

    def _explained(self, verdict: Verdict, trial: int, anomaly_id: str) -> Callable[[Mapping[str, Any]], bool]:
        """Whether another known anomaly explains a point that minimizing the find of ``trial`` (``verdict``, as
        ``anomaly_id``) may probe: the point lies in its region and it leads with the same symptom. The
        minimizer does not run such points and reads them as masked, so it never moves the find into a known
        region; the first one is announced."""
        said = False

        def explained(point: Mapping[str, Any]) -> bool:
            nonlocal said
            known = self.registry.explaining(features(self.space.build(point)), verdict.signature,
                                             besides=anomaly_id)
            if known is not None and not said:
                said = True
                self._emit(Warned(f"trial {self.runner.trial}: minimizing the find of trial {trial} reached the "
                                  f"region of {known.anomaly_id} ({leading_symptom(known.signature)}); such points "
                                  "decide nothing and are not run"))
            return known is not None

        return explained

    def _hit(self, record: AnomalyRecord, kind: HitKind, signature: str, trial: int, mfs: MFS | None = None,
             widened: str = "", cost: int = 0) -> None:
        """Count the find of ``trial`` (signature ``signature``, recognised after ``cost`` experiments) as a
        further hit of known anomaly ``record``, in the campaign and in its folder (a corpus case has none);
        ``mfs``: the find's own MFS (``NESTED``)."""
        self.summary.known_hits += 1
        if not _corpus(record):
            self.store.add_hit(record.anomaly_id, Hit(trial, kind, signature, cost))
        self._emit(KnownAnomaly(trial, record.anomaly_id, widened=widened, kind=kind,
                                mfs=mfs.describe() if mfs is not None else ""))

    @staticmethod
    def _confirm(point: dict[str, Any], verdict: Verdict, settings: MinimizeSettings,
                 probe: Callable[[Mapping[str, Any]], Verdict | None]) -> tuple[int, int]:
        """Re-run ``point`` with ``probe`` until ``required`` runs show the same leading symptom (the first run
        counts)."""
        hits, runs = 1, 1
        while runs < settings.runs and hits < settings.required:
            again = probe(point)
            runs += 1
            hits += bool(again is not None and again.anomalous and again.leading == verdict.leading)
        return hits, runs

    def _save(self, record: AnomalyRecord, case: Workload, verdict: Verdict, mfs: MFS | None, cost: int,
              original: Mapping[str, Any] | None = None, steps: int = 0, *, runs: RunLog) -> None:
        """Keep and save a new anomaly: its case ``case`` (the workload of ``record.point``) with the evidence
        of its own runs in ``runs``, the original find (``original``, default the case's point) and
        ``verdict``, and the target the campaign runs on."""
        self.registry.add(record)
        self.store.save_anomaly(CaseRecord(
            anomaly_id=record.anomaly_id, signature=verdict.signature, confirmed=record.confirmed,
            workload=_described(case, record, mfs), mfs=mfs,
            target=TargetRecord(self.store.config().target or self.info.name, self.info),
            evidence=runs.evidence(record.point, verdict.leading),
            original=OriginalFind(dict(original or record.point), verdict, record.found_at),
            minimize_experiments=cost, minimize_steps=steps))
        self._emit(AnomalyFound(record.anomaly_id, verdict.signature, mfs.describe() if mfs else "",
                                self._spent(), cost, record.confirmed, found_at=record.found_at,
                                minimized=self.summary.confirms, trial=record.trial))

    # -- the edges of MFSs, widened or finished ----------------------------------------------------------

    def _finish_edges(self) -> None:
        """Finish the open edges of every MFS minimized during the search (see :meth:`Minimizer.finish`).

        Each finished MFS replaces the wide one in the campaign and its store. If the budget runs out first, the
        rest keep their wide edges (still true of their anomaly, only less tight), with a warning.
        """
        if not self._open:
            return
        self._emit(PhaseStarted("minimize", f"finish the edges of {counted(len(self._open), 'minimal feature set')}"))
        self.budget.open_reserve(self.index)
        while self._open:
            edges = self._open[0]
            record = self.registry.find(edges.anomaly_id)
            if record is None:  # it joined another anomaly whose finished region turned out to hold it
                self._open.pop(0)
                self.budget.release(self.index, edges.minimizer)
                continue
            before = self.summary.experiments
            try:
                finished = edges.minimizer.finish(dataclasses.replace(
                    edges.result, mfs=record.mfs or edges.result.mfs, point=dict(record.point)))
            except BudgetSpent:
                left = ", ".join(o.anomaly_id for o in self._open)
                self._emit(Warned(f"the budget ran out while finishing the edges of {left}; their MFSs keep "
                                   "wider edges"))
                return
            finally:
                self.summary.minimize_experiments += self.summary.experiments - before
                self.budget.spend_on(edges.symptom, self.summary.experiments - before)
            self._open.pop(0)
            self.budget.release(self.index, edges.minimizer)
            if self.registry.find(record.anomaly_id) is None:  # another chain's find took it in meanwhile
                continue
            cost = self.summary.experiments - before
            moved = finished.point != record.point
            self._replace_mfs(record, finished.mfs, cost, finished.point,
                              edges.runs.evidence(finished.point, edges.leading) if moved else None)
            self._emit(MfsFinished(record.anomaly_id, finished.mfs.describe(), cost))
            self._join_nested(self.registry.get(record.anomaly_id))

    def _join_nested(self, record: AnomalyRecord) -> None:
        """Join each known anomaly whose region nests with that of ``record`` (just saved, or its edges just
        finished) on the same symptom with it: the one inside joins the one around it as a further hit (the
        later one, when the regions are equal; a corpus case never joins a find), its folder removed and its
        hits moved over."""
        while record.mfs is not None and \
                (other := self.registry.nesting(record.mfs, besides=record.anomaly_id)) is not None:
            assert other.mfs is not None
            later = self.registry.known.index(record) > self.registry.known.index(other)
            inside, around = record.mfs.within(other.mfs), other.mfs.within(record.mfs)
            inner, outer = (record, other) if _corpus(other) or (inside and (later or not around)) else (other, record)
            assert inner.mfs is not None
            self.registry.remove(inner)
            for edges in [e for e in self._open if e.anomaly_id == inner.anomaly_id]:
                self._open.remove(edges)
                self.budget.release(self.index, edges.minimizer)
            hit = Hit(inner.trial, HitKind.NESTED, inner.signature)
            if _corpus(outer):
                self.store.remove_anomaly(inner.anomaly_id)
            else:
                self.store.merge_anomaly(inner.anomaly_id, outer.anomaly_id, hit)
            self.summary.known_hits += 1
            self._emit(KnownAnomaly(hit.trial, outer.anomaly_id, kind=HitKind.NESTED, mfs=inner.mfs.describe(),
                                    joined=inner.anomaly_id))
            if inner is record:
                return

    def _moved_case(self, index: int, widened: MFS, point: Mapping[str, Any], verdict: Verdict,
                    probe: Callable[[Mapping[str, Any]], Verdict | None]) -> dict[str, Any] | None:
        """Known anomaly ``index``'s simplest case moved past its edges to ``point``'s values, if it still shows
        ``verdict``'s symptom there (one probe; None without a case or when it does not). Without this, a point
        of another anomaly of the same symptom just past the edge (a READ + SGE pause beside the
        READ-at-small-MTU one) widens it.
        """
        known = self.known[index]
        assert known.mfs is not None
        f = features(self.space.build(point))
        failing = [c.feature for c in known.mfs.broken(f)]
        moved = moved_to(self.space, known.point, point, failing) if known.point else None
        if moved is None or not self.space.is_valid(moved) or not widened.holds(features(self.space.build(moved))):
            return None
        again = probe(moved)
        return moved if again is not None and again.anomalous and again.leading == verdict.leading else None

    def _widen(self, index: int, mfs: MFS, moved: dict[str, Any], evidence: CaseEvidence | None, signature: str,
               trial: int, cost: int) -> None:
        """Replace known anomaly ``index``'s MFS by ``mfs``, widened to take in the find of ``trial`` just past
        its edges; its case moves to ``moved`` (its old case moved to the find's values, which kept the
        anomaly, with ``evidence``) when the old case would be off the widened edges and ``moved`` sits at them
        (:func:`~collie.minimize.off_edges`; a wide condition of an edge still open does not count, the case moves
        there when it is finished: a case that sat at an edge, or at an edge still open, follows it; one at its
        simplest value inside an upper edge stays), else it stays."""
        old = self.known[index]
        still_open = {c for e in self._open if e.anomaly_id == old.anomaly_id for c in e.minimizer.open_conditions()}
        follows = bool(off_edges(self.space, mfs, old.point)) and \
            not [c for c in off_edges(self.space, mfs, moved) if c not in still_open]
        self._replace_mfs(old, mfs, 0, moved if follows else None, evidence if follows else None)
        self._hit(self.registry.get(old.anomaly_id), HitKind.WIDENED, signature, trial, widened=mfs.describe(),
                  cost=cost)

    def _replace_mfs(self, record: AnomalyRecord, mfs: MFS, cost: int = 0, point: Mapping[str, Any] | None = None,
                     evidence: CaseEvidence | None = None) -> None:
        """Give known anomaly ``record`` the MFS ``mfs`` (found at a further ``cost`` in experiments), and the
        case ``point`` with the runs ``evidence`` of it if the case moved, in the campaign and in its store."""
        record = self.registry.replace_mfs(record, mfs, point)
        if not _corpus(record):
            case = _described(self.space.build(record.point), record, mfs)
            self.store.update_mfs(record.anomaly_id, mfs, case, cost, evidence)


def _search_step(trial: int, strategy: Any) -> SearchStep:
    """What a live view shows of the strategy: the metrics it drives and its temperature, when it has them
    (read as optional attributes: strategies are ask/tell and owe the campaign nothing else)."""
    objectives = tuple(str(o) for o in getattr(strategy, "objectives", ()))
    objective = str(getattr(strategy, "objective", ""))
    temperature = getattr(strategy, "temperature", None)
    return SearchStep(trial, objectives, objective, float(temperature) if temperature is not None else None)


def _corpus(record: AnomalyRecord) -> bool:
    """Whether ``record`` is a corpus case that reproduced (it has no folder in the campaign)."""
    return record.anomaly_id.startswith("corpus:")


def _described(case: Workload, record: AnomalyRecord, mfs: MFS | None) -> Workload:
    """``case`` named after ``record``, its description the signature and the MFS (its flows, or its pattern,
    kept)."""
    return dataclasses.replace(case, name=record.anomaly_id,
                               description=f"{record.signature}; MFS: {mfs.describe() if mfs else 'not minimized'}")
