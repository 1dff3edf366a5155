"""The campaign's phase loop: calibrate -> replay the corpus -> explore -> confirm -> minimize -> record.

Every experiment is a numbered trial of the :class:`~collie.campaign.runner.TrialRunner`, which journals it;
the :class:`~collie.campaign.registry.AnomalyRegistry` knows the anomalies met so far. The loop is
deterministic for a seed: strategies are seeded, the simulator's noise is a function of the seed, the workload
and the trial's place in the journal, and decisions depend only on measured data. That is what makes
``--resume`` exact: a resumed campaign re-walks the same path, taking each finished trial's result from the
journal instead of running it again, and goes on live from the first trial the journal lacks (the one in flight
at a crash, if any); its journal is the uninterrupted campaign's but for timestamps and durations.

The budget counts exploring, confirming and minimizing experiments; calibration and corpus replay are reported
apart. A campaign extended by ``--resume --budget N`` runs its search once per budget (the earlier ones, then
``N``): the search with the old budget ends where it ended before, and a new one goes on to ``N``, so the
journal of the first budget is re-walked as it was run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from collie import calibrate
from collie.campaign.registry import AnomalyRecord, AnomalyRegistry
from collie.campaign.runlog import RunLog
from collie.campaign.runner import CampaignInterrupted, SharedJournal, TrialOutcome, TrialRunner
from collie.campaign.summary import CampaignSummary
from collie.collectors.catalog import Catalog
from collie.errors import InputError
from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    Listener,
    MfsFinished,
    PhaseStarted,
    SearchStep,
    Warning,
    counted,
)
from collie.mfs import MFS
from collie.minimize import Minimizer, MinimizeResult, MinimizeSettings, moved_to
from collie.model.features import features, point_encoder
from collie.model.space import SearchSpace
from collie.model.workload import Workload
from collie.oracle import Verdict
from collie.preset import Preset
from collie.storage.campaign import JOURNAL, CampaignStore
from collie.storage.case import CaseRecord, OriginalFind, TargetRecord
from collie.storage.corpus import CorpusCase
from collie.storage.records import Phase
from collie.strategies import Outcome, make_strategy
from collie.targets.base import RunResult, Target, TargetInfo

#: Anomalies of another symptom met while minimizing one, followed up afterwards (per minimized anomaly).
MAX_SIDE_FINDINGS: Final = 2


class _BudgetSpent(Exception):
    """The budget ran out in the middle of confirming or minimizing."""


@dataclass(frozen=True)
class _OpenEdges:
    """A minimized anomaly whose MFS still has open edges, finished when the search ends."""

    anomaly_id: str
    minimizer: Minimizer
    result: MinimizeResult


class Campaign:
    """One campaign over one target, space and preset, writing to one store.

    Args:
        target: the target (entered by :meth:`run`).
        space: the search space.
        preset: strategy, oracle thresholds, minimization settings, run duration.
        store: the campaign folder (new or opened); nothing is written to it before the target is open.
        seed: the search stream's seed.
        budget: explore + confirm + minimize experiments in all.
        listener: where events go.
        corpus: known cases replayed before the search.
        resume: take the finished trials of the store's journal instead of running them again.
        earlier_budgets: the budgets the campaign ran to before it was extended to ``budget`` (see the module).
        registry: the anomalies known, shared with other chains (default: this campaign's own).
        shared: the journal state shared with other chains (default: its own; given, ``resume`` reads nothing:
            the shared state holds what was read).
        chain: the chain this campaign is in a :class:`~collie.campaign.parallel.ParallelCampaign`.
    """

    def __init__(self, *, target: Target, space: SearchSpace, preset: Preset, store: CampaignStore, seed: int,
                 budget: int, listener: Listener | None = None, corpus: Sequence[CorpusCase] = (),
                 resume: bool = False, earlier_budgets: Sequence[int] = (), registry: AnomalyRegistry | None = None,
                 shared: SharedJournal | None = None, chain: int | None = None) -> None:
        self.target = target
        self.space = space
        self.preset = preset
        self.store = store
        self.seed = seed
        self.budgets = (*earlier_budgets, budget)
        self.budget = self.budgets[0]
        self.listener = listener
        self.corpus = corpus
        self.summary = CampaignSummary(confirms=preset.minimize is not None)
        self.registry = registry if registry is not None else AnomalyRegistry(space, self.summary.anomalies)
        self.known = self.registry.known
        # minimized anomalies whose MFS still has open edges, finished when the search ends
        self._open: list[_OpenEdges] = []
        # confirming and minimizing a new find stop here: what finishing the open edges may take stays free
        self._limit = self.budget
        self.resume = resume
        journal = store.read_journal() if resume and shared is None else None
        for w in journal.warnings if journal is not None else ():
            self._emit(Warning(w))
        self.runner = TrialRunner(target, store, preset.duration, self.summary, self._emit, journal, shared=shared,
                                  chain=chain)
        self.strategy = make_strategy(preset.strategy, space, seed, preset.strategy_options,
                                      encoder=point_encoder(space.build))
        if preset.exclude_known:
            self.strategy.set_exclusion(self.registry.inside)
        self.strategy.set_regions(self.registry.regions)
        self.info: TargetInfo | None = None
        self.catalog: Catalog | None = None

    def _spent(self) -> int:
        """The budget spent: by every chain of the campaign, their trials in flight included."""
        return self.runner.shared.spent

    def _emit(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    # -- running one trial -------------------------------------------------------------------------------

    def _experiment(self, phase: Phase, workload: Workload, point: Mapping[str, Any] | None) -> TrialOutcome:
        """Run (or take from the journal) one trial; journal it; return its outcome."""
        return self.runner.run(phase, workload, point)

    def _probe(self, phase: Phase, point: Mapping[str, Any]) -> Verdict | None:
        if not self.space.is_valid(point):
            return None
        if self._spent() >= self._limit:
            raise _BudgetSpent()
        trial = self._experiment(phase, self.space.build(point), point)
        return trial.verdict

    # -- phases ------------------------------------------------------------------------------------------

    def _calibrate(self) -> None:
        self._emit(PhaseStarted("calibrate", "ceilings per direction kind"))
        assert self.catalog is not None and self.info is not None

        def run(workload: Workload) -> RunResult:
            trial = self._experiment(Phase.CALIBRATE, workload, None)
            self.summary.calibration += 1
            if trial.result is None:
                raise InputError(f"calibration run {workload.name} failed on this target ({trial.reason}); "
                                 "collie cannot judge throughput without ceilings")
            return trial.result

        oracle = calibrate.calibrated_oracle(run, self.catalog, self.info, self.preset.thresholds)
        self.runner.oracle = oracle
        config = self.store.config()
        self.store.update_config(dataclasses.replace(config, ceilings=oracle.ceilings, baseline=oracle.baseline))

    def _replay_corpus(self) -> None:
        if not self.corpus:
            return
        self._emit(PhaseStarted("replay", counted(len(self.corpus), "known case")))
        for case in self.corpus:
            trial = self._experiment(Phase.REPLAY, case.workload, None)
            self.summary.replayed += 1
            mfs = case.mfs
            if mfs is not None and not mfs.conditions:
                # an MFS that holds everywhere would keep the search out of the whole space (older campaigns
                # saved one for a find the budget left unminimized)
                self._emit(Warning(f"the MFS of {case.path} has no conditions; the case is replayed, but does not "
                                   "keep the search out of any region"))
                mfs = None
            if trial.verdict is not None and trial.verdict.anomalous:
                self.summary.corpus_reproduced.append(str(case.path))
                if mfs is not None:
                    self.registry.add(AnomalyRecord(f"corpus:{case.name}", mfs.signature, mfs, {}, 0, True),
                                      found=False)

    def _search(self) -> None:
        """Explore, keeping what finishing the open edges of the MFSs found may cost; finish them; go on
        exploring with what finishing left of the budget, until the budget is spent or the search gives up."""
        if self.summary.experiments:  # a campaign extended past an earlier budget
            detail = f"extended to {self.budget}, {counted(self.budget - self._spent(), 'experiment')} left"
        else:
            detail = f"{self.preset.strategy}, budget {self.budget}"
        if not self.summary.confirms:
            detail += f"; preset {self.preset.name} neither confirms nor minimizes: finds are saved as found"
        self._emit(PhaseStarted("explore", detail))
        while self._explore() and self._open:
            self._finish_edges()
            if self._open or self._spent() >= self.budget:
                return
            self._emit(PhaseStarted("explore", f"{counted(self.budget - self._spent(), 'experiment')} "
                                               "left"))
        self._finish_edges()

    def _free(self) -> int:
        """The budget less what finishing the open edges may take."""
        return self.budget - sum(o.minimizer.open_cost() for o in self._open)

    def _explore(self) -> bool:
        """Ask, run and tell until only the experiments finishing the open edges may take are left (True) or
        the strategy keeps asking points that cannot run (False)."""
        guard = 0
        while self._spent() < self._free():
            guard += 1
            if guard > self.budget * 20:
                self._emit(Warning("too many pruned trials in a row; stopping the search early"))
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
                self._handle_anomaly(point, v, found_at=self._spent())
                self.strategy.restart()
        return True

    def _handle_anomaly(self, point: dict[str, Any], verdict: Verdict, side_findings: bool = True, *,
                        found_at: int) -> None:
        """Confirm, minimize and record one anomaly (first shown by experiment ``found_at``) unless a known MFS
        explains it.

        A minimization probe that shows a *different* leading symptom met another anomaly on the way; up to
        :data:`MAX_SIDE_FINDINGS` such points are handled in turn afterwards, as if the search had asked them
        (their own side findings are not followed).
        """
        side: dict[str, tuple[dict[str, Any], Verdict, int]] = {}

        def probe(p: Mapping[str, Any]) -> Verdict | None:
            v = self._probe(Phase.MINIMIZE, p)
            if side_findings and v is not None and v.anomalous and v.leading != verdict.leading:
                side.setdefault(v.leading, (dict(p), v, self._spent()))
            return v

        self._record_anomaly(point, verdict, probe, found_at)
        for p, v, at in list(side.values())[:MAX_SIDE_FINDINGS]:
            if self._spent() >= self._free():
                break
            self._handle_anomaly(p, v, side_findings=False, found_at=at)

    # -- recording a find: confirm, minimize, save (kept together) -------------------------------------------

    def _record_anomaly(self, point: dict[str, Any], verdict: Verdict,
                        probe: Callable[[Mapping[str, Any]], Verdict | None], found_at: int) -> None:
        """Record a find (see :meth:`_record_find`). In a campaign of several chains, a find whose leading
        symptom another chain is confirming or minimizing right now waits (its turns pass) until that chain has
        recorded its own, and is then looked up again: two chains never minimize one anomaly twice."""
        chain = self.runner.chain
        if chain is None:
            self._record_find(point, verdict, probe, found_at)
            return
        while self.registry.held_elsewhere(chain, verdict.signature):
            self.runner.idle()
        self.registry.hold(chain, verdict.signature)
        try:
            self._record_find(point, verdict, probe, found_at)
        finally:
            self.registry.release(chain)

    def _record_find(self, point: dict[str, Any], verdict: Verdict,
                     probe: Callable[[Mapping[str, Any]], Verdict | None], found_at: int) -> None:
        workload = self.space.build(point)
        feats = features(workload)
        # every run of every point from here on, for the evidence of whichever point becomes the case
        runs = RunLog()
        runs.add(point, verdict)
        probe = runs.watch(probe)
        known = self.registry.match(feats, verdict.signature)
        if known is not None:
            self.summary.known_hits += 1
            self._emit(KnownAnomaly(self.runner.trial, known.anomaly_id))
            return
        settings = self.preset.minimize
        anomaly_id = self.registry.next_id(verdict.primary)
        if settings is None:
            record = AnomalyRecord(anomaly_id, verdict.signature, None, dict(point), found_at, False)
            self._save(record, workload, verdict, None, 0, runs=runs)
            return
        before = self.summary.experiments
        near = self.registry.near(feats, verdict.signature)
        self._limit = self._free()
        try:
            hits, tries = self._confirm(point, verdict, settings, runs)
            if hits < settings.required:
                self._emit(Warning(f"trial {self.runner.trial}: anomaly did not reproduce ({hits} of "
                                   f"{counted(tries, 'run')}); not recorded"))
                return
            if near is not None and self._edge_holds(*near, point, verdict, probe):
                self._widen(*near)
                self.summary.minimize_experiments += self.summary.experiments - before
                return
            minimizer = Minimizer(self.space, probe, settings)
            result = minimizer.run(point, verdict, defer=True)
        except _BudgetSpent:
            kept = self.budget - self._limit
            why = f" (the last {kept} are kept to finish the edges of earlier MFSs)" if kept else ""
            self._emit(Warning(f"the budget ran out{why} while confirming or minimizing {anomaly_id}; it is "
                               "saved as found, not minimized"))
            self.summary.minimize_experiments += self.summary.experiments - before
            record = AnomalyRecord(anomaly_id, verdict.signature, None, dict(point), found_at, False)
            self._save(record, workload, verdict, None, self.summary.experiments - before, runs=runs)
            return
        cost = self.summary.experiments - before
        self.summary.minimize_experiments += cost
        record = AnomalyRecord(anomaly_id, verdict.signature, result.mfs, result.point, found_at,
                               result.confirmed)
        self._save(record, self.space.build(result.point), verdict, result.mfs, cost,
                   original=point, steps=len(result.steps), runs=runs)
        if minimizer.open_edges:
            self._open.append(_OpenEdges(anomaly_id, minimizer, result))

    def _confirm(self, point: dict[str, Any], verdict: Verdict, settings: MinimizeSettings,
                 log: RunLog) -> tuple[int, int]:
        """Re-run ``point`` until ``required`` runs show the same leading symptom (the first run counts); each
        run goes into ``log``."""
        hits, runs = 1, 1
        while runs < settings.runs and hits < settings.required:
            again = self._probe(Phase.CONFIRM, point)
            log.add(point, again)
            runs += 1
            hits += bool(again is not None and again.anomalous and again.leading == verdict.leading)
        return hits, runs

    def _save(self, record: AnomalyRecord, case: Workload, verdict: Verdict, mfs: MFS | None, cost: int,
              original: Mapping[str, Any] | None = None, steps: int = 0, *, runs: RunLog) -> None:
        """Keep and save a new anomaly: its case ``case`` (the workload of ``record.point``) with the evidence
        of its own runs in ``runs``, the original find (``original``, default the case's point) and
        ``verdict``, and the target the campaign runs on."""
        self.registry.add(record)
        assert self.info is not None
        self.store.save_anomaly(CaseRecord(
            anomaly_id=record.anomaly_id, signature=verdict.signature, confirmed=record.confirmed,
            workload=_described(case, record, mfs), mfs=mfs,
            target=TargetRecord(self.store.config().target or self.info.name, self.info),
            evidence=runs.evidence(record.point, verdict.leading),
            original=OriginalFind(dict(original or record.point), verdict, record.found_at),
            minimize_experiments=cost, minimize_steps=steps))
        self._emit(AnomalyFound(record.anomaly_id, verdict.signature, mfs.describe() if mfs else "",
                                self._spent(), cost, record.confirmed, found_at=record.found_at,
                                minimized=self.summary.confirms))

    # -- the edges of MFSs, widened or finished ----------------------------------------------------------

    def _finish_edges(self) -> None:
        """Finish the open edges of every MFS minimized during the search (see :meth:`Minimizer.finish`).

        Each finished MFS replaces the wide one in the campaign and its store. If the budget runs out first, the
        rest keep their wide edges (still true of their anomaly, only less tight), with a warning.
        """
        if not self._open:
            return
        self._emit(PhaseStarted("minimize", f"finish the edges of {counted(len(self._open), 'minimal feature set')}"))
        self._limit = self.budget
        while self._open:
            edges = self._open[0]
            record = self.registry.get(edges.anomaly_id)
            before = self.summary.experiments
            try:
                finished = edges.minimizer.finish(dataclasses.replace(edges.result, mfs=record.mfs or edges.result.mfs))
            except _BudgetSpent:
                left = ", ".join(o.anomaly_id for o in self._open)
                self._emit(Warning(f"the budget ran out while finishing the edges of {left}; their MFSs keep "
                                   "wider edges"))
                return
            finally:
                self.summary.minimize_experiments += self.summary.experiments - before
            self._open.pop(0)
            self._replace_mfs(record, finished.mfs, self.summary.experiments - before)
            self._emit(MfsFinished(record.anomaly_id, finished.mfs.describe(), self.summary.experiments - before))

    def _edge_holds(self, index: int, widened: MFS, point: Mapping[str, Any], verdict: Verdict,
                    probe: Callable[[Mapping[str, Any]], Verdict | None]) -> bool:
        """Whether known anomaly ``index``'s simplest case, moved past its edge to ``point``'s values, still
        shows ``verdict``'s symptom (one probe; False without a case). Without this, a point of another anomaly
        of the same symptom just past the edge (a READ + SGE pause beside the READ-at-small-MTU one) widens it.
        """
        known = self.known[index]
        assert known.mfs is not None
        f = features(self.space.build(point))
        failing = [c.feature for c in known.mfs.broken(f)]
        moved = moved_to(self.space, known.point, point, failing) if known.point else None
        if moved is None or not self.space.is_valid(moved) or not widened.holds(features(self.space.build(moved))):
            return False
        again = probe(moved)
        return again is not None and again.anomalous and again.leading == verdict.leading

    def _widen(self, index: int, mfs: MFS) -> None:
        """Replace known anomaly ``index``'s MFS by ``mfs`` (a confirmed point just past its edge)."""
        old = self.known[index]
        self._replace_mfs(old, mfs)
        self.summary.known_hits += 1
        self._emit(KnownAnomaly(self.runner.trial, old.anomaly_id, widened=mfs.describe()))

    def _replace_mfs(self, record: AnomalyRecord, mfs: MFS, cost: int = 0) -> None:
        """Give known anomaly ``record`` the MFS ``mfs`` (found at a further ``cost`` in experiments), in the
        campaign and in its store (the MFS, the case's description, the evidence's cost)."""
        record = self.registry.replace_mfs(record, mfs)
        if not record.anomaly_id.startswith("corpus:"):
            case = _described(self.space.build(record.point), record, mfs)
            self.store.update_mfs(record.anomaly_id, mfs, case, cost)

    # -- the whole campaign ------------------------------------------------------------------------------

    def run(self) -> CampaignSummary:
        """Run the whole campaign (entering the target); returns its summary.

        The store is begun (a new folder made) only once the target is open: a target that cannot be opened
        leaves nothing behind. When a resumed campaign ends, the anomaly folders on disk are exactly those of its
        summary: it removes any an earlier run left that its path does not find again, and any half-written one
        (a new campaign removes nothing: what is in its folder before it started is not its own).

        Raises:
            CampaignInterrupted: on Ctrl-C (the journal is consistent; ``--resume`` continues).
            InputError: a resumed journal that does not belong to this campaign's path.
        """
        with self.target:
            self.info = self.target.describe()
            self.catalog = calibrate.catalog_of(self.info)
            begin_on(self.store, self.info, self._emit)
            try:
                self._calibrate()
                self._replay_corpus()
                for budget in self.budgets:
                    self.budget = self._limit = budget
                    self._search()
                if self.resume:
                    self._check_walked()
                    remove_unfound(self.store, self.summary, self._emit)
            except KeyboardInterrupt:
                raise CampaignInterrupted() from None
            finally:
                self.store.close()
        return self.summary

    def _check_walked(self) -> None:
        unwalked = self.runner.unwalked()
        if unwalked is not None:
            trial, line = unwalked
            raise InputError(f"{self.store.root / JOURNAL}: line {line}: the campaign ended before trial {trial}, "
                             f"which its journal holds (was its budget in campaign.toml lowered?); it cannot be "
                             "resumed")


def begin_on(store: CampaignStore, info: TargetInfo, emit: Callable[[Event], None]) -> None:
    """Record ``info`` as the target the campaign in ``store`` runs on; a fingerprint other than the one it
    started on is a warning (the campaign goes on with it)."""
    started_on = store.config().target_info
    store.begin(info)
    if started_on is not None and started_on != info:
        emit(Warning(f"the target {info.name} does not match the fingerprint this campaign started on "
                     f"({started_on.nic_model} {started_on.firmware}, now {info.nic_model} {info.firmware}); "
                     f"going on with it"))


def remove_unfound(store: CampaignStore, summary: CampaignSummary, emit: Callable[[Event], None]) -> None:
    """After a resumed campaign: remove the anomaly folders an earlier run left that this one did not find."""
    for name in store.keep_anomalies({a.anomaly_id for a in summary.anomalies}):
        emit(Warning(f"removed the anomaly folder {name}: an earlier run of this campaign left it, and the "
                     "resumed campaign did not find it again"))


def _search_step(trial: int, strategy: Any) -> SearchStep:
    """What a live view shows of the strategy: the metrics it drives and its temperature, when it has them
    (read as optional attributes: strategies are ask/tell and owe the campaign nothing else)."""
    objectives = tuple(str(o) for o in getattr(strategy, "objectives", ()))
    objective = str(getattr(strategy, "objective", ""))
    temperature = getattr(strategy, "temperature", None)
    return SearchStep(trial, objectives, objective, float(temperature) if temperature is not None else None)


def _described(case: Workload, record: AnomalyRecord, mfs: MFS | None) -> Workload:
    """``case`` named after ``record``, its description the signature and the MFS."""
    return Workload(case.flows, name=record.anomaly_id,
                    description=f"{record.signature}; MFS: {mfs.describe() if mfs else 'not minimized'}")
