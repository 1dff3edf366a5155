"""The campaign loop: calibrate -> replay the corpus -> explore -> confirm -> minimize -> record.

Every experiment is a numbered *trial* journaled by :class:`~collie.store.CampaignStore` (RUNNING before it
starts, then COMPLETE, PRUNED or FAILED). The loop is deterministic for a seed: strategies are seeded, the
simulator's noise depends only on the seed and the workload, and decisions depend only on measured data. That
is what makes ``--resume`` exact: a resumed campaign re-walks the same path, taking each finished trial's result
from the journal instead of running it again, and goes on live from the first trial the journal lacks (the one
in flight at a crash, if any). The budget counts exploring, confirming and minimizing experiments; calibration
and corpus replay are reported apart.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from collie import calibrate
from collie.case_record import CaseRecord, OriginalFind, RunLog, TargetRecord
from collie.cases import CorpusCase
from collie.collectors.catalog import Catalog
from collie.errors import InputError
from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    Listener,
    MfsFinished,
    PhaseStarted,
    TrialFinished,
    TrialStarted,
    Warning,
)
from collie.features import Features, features, point_encoder
from collie.mfs import MFS
from collie.minimize import Minimizer, MinimizeResult, MinimizeSettings, moved_to
from collie.oracle import Oracle, Verdict, leading_symptom
from collie.preset import Preset
from collie.space import SearchSpace
from collie.store import CampaignStore
from collie.strategies import Outcome, make_strategy
from collie.strategies.base import Region
from collie.targets.base import RunResult, Target, TargetInfo, Unsupported
from collie.workload import Workload

#: Anomalies of another symptom met while minimizing one, followed up afterwards (per minimized anomaly).
MAX_SIDE_FINDINGS: Final = 2


class _BudgetSpent(Exception):
    """The budget ran out in the middle of confirming or minimizing."""


class CampaignInterrupted(Exception):
    """Ctrl-C: the trial in flight was abandoned; the journal holds everything before it."""


@dataclass
class AnomalyRecord:
    anomaly_id: str
    signature: str
    mfs: MFS | None
    point: dict[str, Any]
    found_at: int
    confirmed: bool


@dataclass
class CampaignSummary:
    experiments: int = 0
    calibration: int = 0
    replayed: int = 0
    pruned: int = 0
    failed: int = 0
    minimize_experiments: int = 0
    anomalies: list[AnomalyRecord] = field(default_factory=list)
    known_hits: int = 0
    corpus_reproduced: list[str] = field(default_factory=list)


@dataclass
class _Trial:
    status: str
    result: RunResult | None = None
    verdict: Verdict | None = None
    reason: str = ""


class Campaign:
    """One campaign over one target, space and preset, writing to one store."""

    def __init__(self, *, target: Target, space: SearchSpace, preset: Preset, store: CampaignStore, seed: int,
                 budget: int, listener: Listener | None = None, corpus: Sequence[CorpusCase] = (),
                 resume: bool = False) -> None:
        self.target = target
        self.space = space
        self.preset = preset
        self.store = store
        self.seed = seed
        self.budget = budget
        self.listener = listener
        self.corpus = corpus
        self.summary = CampaignSummary()
        self.known: list[AnomalyRecord] = []
        # minimized anomalies whose MFS still has open edges, finished when the search ends
        self._open: list[tuple[AnomalyRecord, Minimizer, MinimizeResult]] = []
        # confirming and minimizing a new find stop here: what finishing the open edges may take stays free
        self._limit = budget
        self._trial = 0
        self._cache: dict[int, dict[str, Any]] = {}
        if resume:
            read = store.read_journal()
            for w in read.warnings:
                self._emit(Warning(w))
            for rec in read.records:
                if rec.get("status") in ("COMPLETE", "PRUNED", "FAILED"):
                    self._cache[int(rec["trial"])] = rec
        self.strategy = make_strategy(preset.strategy, space, seed, preset.strategy_options,
                                      encoder=point_encoder(space.build))
        if preset.exclude_known:
            self.strategy.set_exclusion(self._inside_known)
        self.strategy.set_regions(self._regions)
        self.oracle: Oracle | None = None
        self.info: TargetInfo | None = None
        self.catalog: Catalog | None = None

    def _emit(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    def _regions(self) -> list[Region]:
        """The known anomalies with a minimized case and a minimal feature set, as regions of the space."""
        return [Region(a.point, partial(self._misses, a.mfs)) for a in self.known
                if a.mfs is not None and a.mfs.conditions and a.point]

    def _misses(self, mfs: MFS, point: Mapping[str, Any]) -> int:
        """How many conditions of ``mfs`` the workload of ``point`` breaks."""
        return len(mfs.broken(features(self.space.build(point))))

    def _inside_known(self, point: Mapping[str, Any]) -> int:
        """How many known MFSs hold ``point`` (a search's exclusion: 0 is worth asking)."""
        f = features(self.space.build(point))
        return sum(a.mfs is not None and a.mfs.holds(f) for a in self.known)

    def _known_match(self, f: Features, signature: str) -> AnomalyRecord | None:
        """The known anomaly that explains a run of ``f`` showing ``signature``: one whose MFS holds for ``f``
        and leads with the same symptom, or an unminimized one of that very signature.

        A run inside one anomaly's region that leads with another symptom has met a second anomaly overlapping
        it (an RC SEND pause inside the region of a low-throughput anomaly that any RC verb shows).
        """
        for a in self.known:
            if a.mfs is not None and a.mfs.holds(f) and leading_symptom(a.signature) == leading_symptom(signature):
                return a
            if a.mfs is None and a.signature == signature:
                return a
        return None

    # -- running one trial -------------------------------------------------------------------------------

    def _experiment(self, phase: str, workload: Workload, point: Mapping[str, Any] | None) -> _Trial:
        """Run (or take from the journal) one trial; journal it; return its outcome."""
        self._trial += 1
        n = self._trial
        key = workload.key()
        cached = self._cache.pop(n, None)
        if cached is not None and cached.get("key") != key:
            self._emit(Warning(f"the journal diverges from this run at trial {n}; continuing live from here"))
            self._cache.clear()
            cached = None
        pt = dict(point) if point is not None else {}
        self._emit(TrialStarted(n, phase, pt))
        if cached is not None:
            trial = _Trial(cached["status"], reason=cached.get("reason", ""))
            if cached.get("result") is not None:
                trial.result = RunResult.from_dict(cached["result"])
                trial.verdict = self._judge(phase, trial.result, workload)
        else:
            base = {"trial": n, "phase": phase, "key": key, "point": pt}
            self.store.append({**base, "status": "RUNNING", "time": time.time()})
            trial = self._run_live(workload)
            record: dict[str, Any] = {**base, "status": trial.status, "time": time.time()}
            if trial.reason:
                record["reason"] = trial.reason
            if trial.result is not None:
                record["result"] = trial.result.to_dict()
                trial.verdict = self._judge(phase, trial.result, workload)
            if trial.verdict is not None:
                v = trial.verdict
                record["verdict"] = {"anomalous": v.anomalous, "signature": v.signature, "score": v.score,
                                     "metrics": dict(v.metrics)}
            self.store.append(record)
        if phase in ("explore", "confirm", "minimize"):
            self.summary.experiments += trial.status != "PRUNED"
        self.summary.pruned += trial.status == "PRUNED"
        self.summary.failed += trial.status == "FAILED"
        self._emit(TrialFinished(n, phase, trial.status, self.summary.experiments, pt, trial.verdict,
                                 trial.result, trial.reason))
        return trial

    def _judge(self, phase: str, result: RunResult, workload: Workload) -> Verdict | None:
        if phase == "calibrate" or self.oracle is None:
            return None
        return self.oracle.judge(result, workload)

    def _run_live(self, workload: Workload) -> _Trial:
        try:
            result = self.target.run(workload, self.preset.duration)
        except Unsupported as exc:
            return _Trial("PRUNED", reason=f"unsupported: {exc}")
        except KeyboardInterrupt:
            raise CampaignInterrupted() from None
        except Exception as exc:  # a target failure must not end the campaign
            return _Trial("FAILED", reason=f"{type(exc).__name__}: {exc}")
        return _Trial("COMPLETE", result)

    def _probe(self, phase: str, point: Mapping[str, Any]) -> Verdict | None:
        if not self.space.is_valid(point):
            return None
        if self.summary.experiments >= self._limit:
            raise _BudgetSpent()
        trial = self._experiment(phase, self.space.build(point), point)
        return trial.verdict

    # -- phases ------------------------------------------------------------------------------------------

    def _calibrate(self) -> None:
        self._emit(PhaseStarted("calibrate", "ceilings per direction kind"))
        assert self.catalog is not None and self.info is not None

        def run(workload: Workload) -> RunResult:
            trial = self._experiment("calibrate", workload, None)
            self.summary.calibration += 1
            if trial.result is None:
                raise InputError(f"calibration run {workload.name} failed on this target ({trial.reason}); "
                                 "collie cannot judge throughput without ceilings")
            return trial.result

        self.oracle = calibrate.calibrated_oracle(run, self.catalog, self.info, self.preset.thresholds)
        config = self.store.config()
        config["ceilings"] = self.oracle.ceilings.to_dict()
        config["baseline"] = self.oracle.baseline
        self.store.update_config(config)

    def _replay_corpus(self) -> None:
        if not self.corpus:
            return
        self._emit(PhaseStarted("replay", f"{len(self.corpus)} known cases"))
        for case in self.corpus:
            trial = self._experiment("replay", case.workload, None)
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
                    self.known.append(AnomalyRecord(f"corpus:{case.name}", mfs.signature, mfs, {}, 0, True))

    def _search(self) -> None:
        """Explore, keeping what finishing the open edges of the MFSs found may cost; finish them; go on
        exploring with what finishing left of the budget, until the budget is spent or the search gives up."""
        self._emit(PhaseStarted("explore", f"{self.preset.strategy}, budget {self.budget}"))
        while self._explore() and self._open:
            self._finish_edges()
            if self._open or self.summary.experiments >= self.budget:
                return
            self._emit(PhaseStarted("explore", f"{self.budget - self.summary.experiments} experiments left"))
        self._finish_edges()

    def _free(self) -> int:
        """The budget less what finishing the open edges may take."""
        return self.budget - sum(m.open_cost() for _, m, _ in self._open)

    def _explore(self) -> bool:
        """Ask, run and tell until only the experiments finishing the open edges may take are left (True) or
        the strategy keeps asking points that cannot run (False)."""
        guard = 0
        while self.summary.experiments < self._free():
            guard += 1
            if guard > self.budget * 20:
                self._emit(Warning("too many pruned trials in a row; stopping the search early"))
                return False
            point = self.strategy.ask()
            if not self.space.is_valid(point):
                self.strategy.tell(point, None)
                continue
            trial = self._experiment("explore", self.space.build(point), point)
            v = trial.verdict
            if v is None:
                self.strategy.tell(point, None)
                continue
            self.strategy.tell(point, Outcome(v.metrics, v.anomalous))
            if v.anomalous:
                self._handle_anomaly(point, v)
                self.strategy.restart()
        return True

    def _handle_anomaly(self, point: dict[str, Any], verdict: Verdict, side_findings: bool = True) -> None:
        """Confirm, minimize and record one anomaly unless a known MFS explains it.

        A minimization probe that shows a *different* leading symptom met another anomaly on the way; up to
        :data:`MAX_SIDE_FINDINGS` such points are handled in turn afterwards, as if the search had asked them
        (their own side findings are not followed).
        """
        side: dict[str, tuple[dict[str, Any], Verdict]] = {}

        def probe(p: Mapping[str, Any]) -> Verdict | None:
            v = self._probe("minimize", p)
            if side_findings and v is not None and v.anomalous and v.leading != verdict.leading:
                side.setdefault(v.leading, (dict(p), v))
            return v

        self._record_anomaly(point, verdict, probe)
        for p, v in list(side.values())[:MAX_SIDE_FINDINGS]:
            if self.summary.experiments >= self._free():
                break
            self._handle_anomaly(p, v, side_findings=False)

    def _record_anomaly(self, point: dict[str, Any], verdict: Verdict,
                        probe: Callable[[Mapping[str, Any]], Verdict | None]) -> None:
        workload = self.space.build(point)
        feats = features(workload)
        # every run of every point from here on, for the evidence of whichever point becomes the case
        runs = RunLog()
        runs.add(point, verdict)
        probe = runs.watch(probe)
        known = self._known_match(feats, verdict.signature)
        if known is not None:
            self.summary.known_hits += 1
            self._emit(KnownAnomaly(self._trial, known.anomaly_id))
            return
        settings = self.preset.minimize
        found_at = self.summary.experiments
        anomaly_id = f"A{len(self.summary.anomalies) + 1:03d}-{verdict.primary.replace('_', '-')}"
        if settings is None:
            record = AnomalyRecord(anomaly_id, verdict.signature, None, dict(point), found_at, False)
            self._save(record, workload, verdict, None, 0, runs=runs)
            return
        before = self.summary.experiments
        near = self._near_known(feats, verdict.signature)
        self._limit = self._free()
        try:
            hits, tries = self._confirm(point, verdict, settings, runs)
            if hits < settings.required:
                self._emit(Warning(f"trial {self._trial}: anomaly did not reproduce ({hits} of {tries} runs); "
                                   "not recorded"))
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
            self._open.append((record, minimizer, result))

    def _finish_edges(self) -> None:
        """Finish the open edges of every MFS minimized during the search (see :meth:`Minimizer.finish`).

        Each finished MFS replaces the wide one in the campaign and its store. If the budget runs out first, the
        rest keep their wide edges (still true of their anomaly, only less tight), with a warning.
        """
        if not self._open:
            return
        self._emit(PhaseStarted("minimize", f"finish the edges of {len(self._open)} minimal feature sets"))
        self._limit = self.budget
        while self._open:
            record, minimizer, result = self._open[0]
            before = self.summary.experiments
            try:
                finished = minimizer.finish(dataclasses.replace(result, mfs=record.mfs or result.mfs))
            except _BudgetSpent:
                left = ", ".join(r.anomaly_id for r, _, _ in self._open)
                self._emit(Warning(f"the budget ran out while finishing the edges of {left}; their MFSs keep "
                                   "wider edges"))
                return
            finally:
                self.summary.minimize_experiments += self.summary.experiments - before
            self._open.pop(0)
            self._replace_mfs(record, finished.mfs, self.summary.experiments - before)
            self._emit(MfsFinished(record.anomaly_id, finished.mfs.describe(), self.summary.experiments - before))

    def _confirm(self, point: dict[str, Any], verdict: Verdict, settings: MinimizeSettings,
                 log: RunLog) -> tuple[int, int]:
        """Re-run ``point`` until ``required`` runs show the same leading symptom (the first run counts); each
        run goes into ``log``."""
        hits, runs = 1, 1
        while runs < settings.runs and hits < settings.required:
            again = self._probe("confirm", point)
            log.add(point, again)
            runs += 1
            hits += bool(again is not None and again.anomalous and again.leading == verdict.leading)
        return hits, runs

    def _near_known(self, f: Features, signature: str) -> tuple[int, MFS] | None:
        """A known anomaly of the same signature whose MFS, widened a little, explains ``f``: (index, MFS)."""
        for i, a in enumerate(self.known):
            if a.mfs is not None and a.signature == signature:
                widened = a.mfs.widened_to(f)
                if widened is not None:
                    return i, widened
        return None

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
        self._emit(KnownAnomaly(self._trial, old.anomaly_id, widened=mfs.describe()))

    def _replace_mfs(self, record: AnomalyRecord, mfs: MFS, cost: int = 0) -> None:
        """Give known anomaly ``record`` the MFS ``mfs`` (found at a further ``cost`` in experiments), in the
        campaign and in its store (the MFS, the case's description, the evidence's cost)."""
        record.mfs = mfs
        if not record.anomaly_id.startswith("corpus:"):
            case = _described(self.space.build(record.point), record, mfs)
            self.store.update_mfs(record.anomaly_id, mfs.to_dict(), case.to_toml(), cost)

    def _save(self, record: AnomalyRecord, case: Workload, verdict: Verdict, mfs: MFS | None, cost: int,
              original: Mapping[str, Any] | None = None, steps: int = 0, *, runs: RunLog) -> None:
        """Keep and save a new anomaly: its case ``case`` (the workload of ``record.point``) with the evidence
        of its own runs in ``runs``, the original find (``original``, default the case's point) and
        ``verdict``, and the target the campaign runs on."""
        self.known.append(record)
        self.summary.anomalies.append(record)
        assert self.info is not None
        spec = self.store.config().get("target") or self.info.name
        self.store.save_anomaly(CaseRecord(
            anomaly_id=record.anomaly_id, signature=verdict.signature, confirmed=record.confirmed,
            workload=_described(case, record, mfs), mfs=mfs, target=TargetRecord(str(spec), self.info),
            evidence=runs.evidence(record.point, verdict.leading),
            original=OriginalFind(dict(original or record.point), verdict, record.found_at),
            minimize_experiments=cost, minimize_steps=steps))
        self._emit(AnomalyFound(record.anomaly_id, verdict.signature, mfs.describe() if mfs else "",
                                self.summary.experiments, cost, record.confirmed))

    def run(self) -> CampaignSummary:
        """Run the whole campaign (entering the target); returns its summary.

        Raises:
            CampaignInterrupted: on Ctrl-C (the journal is consistent; ``--resume`` continues).
        """
        with self.target:
            self.info = self.target.describe()
            self.catalog = calibrate.catalog_of(self.info)
            config = self.store.config()
            if "target_info" not in config:
                config["target_info"] = self.info.to_dict()
                self.store.update_config(config)
            try:
                self._calibrate()
                self._replay_corpus()
                self._search()
            except KeyboardInterrupt:
                raise CampaignInterrupted() from None
            finally:
                self.store.close()
        return self.summary


def _described(case: Workload, record: AnomalyRecord, mfs: MFS | None) -> Workload:
    """``case`` named after ``record``, its description the signature and the MFS."""
    return Workload(case.flows, name=record.anomaly_id,
                    description=f"{record.signature}; MFS: {mfs.describe() if mfs else 'not minimized'}")
