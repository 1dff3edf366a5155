"""A campaign: calibrate -> replay the corpus -> K search chains (explore, confirm, minimize, record), journaled.

:class:`Campaign` runs K :class:`~collie.campaign.chain.Chain` s, each on a target of its own, all sharing one
anomaly registry, one :class:`~collie.campaign.budget.Budget`, one journal and one campaign folder
(``collie campaign --parallel K``; K = 1 without ``--parallel``).

How it runs:
    1. every chain's target is entered; chain 0's fingerprint is the campaign's;
    2. the campaign calibrates and replays the corpus on chain 0's target (one oracle, one set of known corpus
       cases for all);
    3. the chains search. One chain searches inline; K > 1 search each in a thread, taking turns to decide
       (:mod:`collie.campaign.turns`): a chain starts a trial, gives the turn on, runs the trial on its own target
       while the others decide and start theirs, and takes the turn back to judge it. An anomaly one chain found
       is known to every chain from its next turn on: a later find it explains is a known hit, never a second
       folder; the strategies of every chain are kept out of (or steered around) its region;
    4. a campaign extended by ``--resume --budget N`` searches once per total of its budget (the earlier ones,
       then ``N``), every chain ending one total before any starts the next: the search to the old total ends
       where it ended before, so the journal of the first total is re-walked as it was run.

Invariants:
    * chain 0 searches with the campaign's seed; chain ``i`` with :func:`~collie.campaign.chain.chain_seed` (a
      function of the seed and ``i`` only), so a campaign of one chain is the campaign without ``--parallel``,
      journal row for journal row;
    * the journal is read once, here, and only for a resume;
    * the budget is the total over the chains (see :class:`~collie.campaign.budget.Budget`): the chains never run
      more than the budget between them; calibration and corpus replay are apart;
    * the journal is a function of the seed and of what the targets answer: trials are numbered in turn order,
      each row of a campaign of several chains names its chain, and ``--resume`` re-walks it chain by chain in
      the same turns (see :func:`~collie.storage.records.check_sequence` for the order of rows with K trials in
      flight);
    * one chain's failure (a resumed journal that does not fit, a target that cannot go on, a full disk) stops
      every chain at its next turn and is raised once all have stopped; Ctrl-C likewise, as
      :class:`~collie.campaign.runner.CampaignInterrupted`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Sequence

from collie import calibrate
from collie.campaign.budget import Budget
from collie.campaign.chain import Chain, chain_seed
from collie.campaign.registry import AnomalyRecord, AnomalyRegistry
from collie.campaign.runner import CampaignInterrupted, SharedJournal, TrialRunner
from collie.campaign.summary import CampaignSummary
from collie.campaign.turns import Turns, TurnsAborted
from collie.errors import InputError
from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    Listener,
    PhaseStarted,
    TrialFinished,
    TrialStarted,
    Warned,
    counted,
)
from collie.model.dimensions import Choice, IntRange
from collie.model.features import point_encoder
from collie.model.space import SearchSpace
from collie.model.workload import Workload
from collie.preset import Preset
from collie.storage.campaign import JOURNAL, CampaignStore
from collie.storage.corpus import CorpusCase
from collie.storage.records import Phase
from collie.strategies import Strategy, make_strategy
from collie.targets.base import RunResult, Target, TargetInfo

#: Seconds between checks for Ctrl-C while the chains run (the main thread joins them in slices).
_JOIN_SLICE_S = 0.2


class Campaign:
    """One campaign of K search chains over K targets, one space and preset, writing to one store (see the
    module).

    Args:
        targets: one target per chain (not entered yet; entered by :meth:`run`); chain ``i`` runs on
            ``targets[i]``.
        space: the search space.
        preset: strategy, oracle thresholds, minimization settings, run duration.
        store: the campaign folder (new or opened); nothing is written to it before every target is open.
        seed: the search's seed (chain 0's; the others' are :func:`~collie.campaign.chain.chain_seed`).
        budget: explore + confirm + minimize experiments in all, the total over the chains.
        listener: where events go; with more than one chain, each trial, anomaly and known-hit event carries its
            chain, and each search phase and warning of a chain says ``chain i:``.
        corpus: known cases replayed before the search.
        resume: take the finished trials of the store's journal instead of running them again (the journal is
            repaired, the trace of a crash cut off its end, and read here; the repair's warnings are emitted).
        earlier_budgets: the budgets the campaign ran to before it was extended to ``budget`` (see the module).

    Raises:
        ValueError: no target.
    """

    def __init__(self, *, targets: Sequence[Target], space: SearchSpace, preset: Preset, store: CampaignStore,
                 seed: int, budget: int, listener: Listener | None = None, corpus: Sequence[CorpusCase] = (),
                 resume: bool = False, earlier_budgets: Sequence[int] = ()) -> None:
        if not targets:
            raise ValueError("a campaign needs at least one target")
        self.targets = tuple(targets)
        self.space = space
        self.preset = preset
        self.store = store
        self.listener = listener
        self.corpus = corpus
        self.resume = resume
        self.budget = Budget((*earlier_budgets, budget), chains=len(self.targets))
        journal = store.repair_journal() if resume else None
        for w in journal.warnings if journal is not None else ():
            self._emit(Warned(w))
        #: the journal state the chains' runners share
        self.shared = SharedJournal(journal)
        #: calibration's and replay's tally, and the anomalies found (the registry's list)
        self.summary = CampaignSummary(confirms=preset.minimize is not None)
        self.registry = AnomalyRegistry(space, self.summary.anomalies)
        #: each chain's strategy, in chain order (seeded, kept out of or steered around the known regions)
        self.strategies = [self._strategy(chain_seed(seed, i)) for i in range(len(self.targets))]

    def _strategy(self, seed: int) -> Strategy:
        preset = self.preset
        strategy = make_strategy(preset.strategy, self.space, seed, preset.strategy_options,
                                 encoder=point_encoder(self.space.build))
        if preset.exclude_known:
            strategy.set_exclusion(self.registry.inside)
        strategy.set_regions(self.registry.regions)
        return strategy

    # -- events ------------------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    def _trial_events(self, chain: int) -> Callable[[Event], None]:
        """Where chain ``chain``'s trial events go: with several chains, each trial, anomaly and known-hit event
        names its chain."""
        if len(self.targets) == 1:
            return self._emit

        def emit(event: Event) -> None:
            if isinstance(event, TrialStarted | TrialFinished | AnomalyFound | KnownAnomaly):
                event = dataclasses.replace(event, chain=chain)
            self._emit(event)
        return emit

    def _chain_events(self, chain: int) -> Callable[[Event], None]:
        """Where chain ``chain``'s search events go: as :meth:`_trial_events`, and with several chains each
        search phase and warning says ``chain i:``."""
        trials = self._trial_events(chain)
        if len(self.targets) == 1:
            return trials

        def emit(event: Event) -> None:
            if isinstance(event, PhaseStarted):
                event = PhaseStarted(event.phase, f"chain {chain}: {event.detail}")
            elif isinstance(event, Warned):
                event = Warned(f"chain {chain}: {event.message}")
            trials(event)
        return emit

    # -- the whole campaign ------------------------------------------------------------------------------

    def run(self) -> CampaignSummary:
        """Run the whole campaign (entering every chain's target); returns the summary over every chain.

        The store is begun (a new folder made) only once every target is open: a target that cannot be opened
        leaves nothing behind. When a resumed campaign ends, the anomaly folders on disk are exactly those of its
        summary: it removes any an earlier run left that its path does not find again, and any half-written one
        (a new campaign removes nothing: what is in its folder before it started is not its own).

        Raises:
            CampaignInterrupted: on Ctrl-C (the journal is consistent; ``--resume`` continues every chain).
            InputError: a resumed journal that does not belong to this campaign's path.
            TargetUnavailable: a chain's target cannot go on.
        """
        with contextlib.ExitStack() as stack:
            for target in self.targets:
                stack.enter_context(target)
            infos = [target.describe() for target in self.targets]
            begin_on(self.store, infos[0], self._emit)
            few = _too_few_hosts(self.space, infos[0])
            if few:
                self._emit(Warned(few))
            try:
                first = TrialRunner(self.targets[0], self.store, self.preset.duration, self.summary,
                                    self._trial_events(0), shared=self.shared, budget=self.budget,
                                    chain=self._chain_number(0))
                self._calibrate(first, infos[0])
                self._replay_corpus(first)
                turns = Turns(range(len(self.targets))) if len(self.targets) > 1 else None
                chains = [self._chain(i, info, turns) for i, info in enumerate(infos)]
                for total in self.budget.totals:
                    self.budget.extend_to(total)
                    self._search(chains, turns)
                if self.resume:
                    self._check_walked()
                    _remove_unfound(self.store, self.summary, self._emit)
                return _total(self.summary, [c.summary for c in chains])
            except KeyboardInterrupt:
                raise CampaignInterrupted() from None
            finally:
                self.store.close()

    def _chain_number(self, index: int) -> int | None:
        """The chain journaled with the trials run on ``targets[index]`` (None: a campaign of one chain)."""
        return index if len(self.targets) > 1 else None

    def _chain(self, index: int, info: TargetInfo, turns: Turns | None) -> Chain:
        """Search chain ``index``, on its target (fingerprint ``info``), taking ``turns`` with the others."""
        summary = CampaignSummary(confirms=self.summary.confirms)
        emit = self._chain_events(index)
        runner = TrialRunner(self.targets[index], self.store, self.preset.duration, summary, emit,
                             shared=self.shared, budget=self.budget, chain=self._chain_number(index), turns=turns)
        return Chain(index=index, space=self.space, preset=self.preset, store=self.store, info=info,
                     registry=self.registry, budget=self.budget, runner=runner, strategy=self.strategies[index],
                     summary=summary, emit=emit)

    # -- before the search: calibration and the corpus -----------------------------------------------------

    def _calibrate(self, runner: TrialRunner, info: TargetInfo) -> None:
        """Calibrate the oracle every chain judges with on ``runner``'s target (fingerprint ``info``); record its
        ceilings and baseline in ``campaign.toml``."""
        self._emit(PhaseStarted("calibrate", "ceilings per direction kind"))

        def run(workload: Workload) -> RunResult:
            trial = runner.run(Phase.CALIBRATE, workload, None)
            self.summary.calibration += 1
            if trial.result is None:
                raise InputError(f"calibration run {workload.name} failed on this target ({trial.reason}); "
                                 "collie cannot judge throughput without ceilings")
            return trial.result

        oracle = calibrate.calibrated_oracle(run, calibrate.catalog_of(info), info, self.preset.thresholds)
        self.shared.oracle = oracle
        config = self.store.config()
        self.store.update_config(dataclasses.replace(config, ceilings=oracle.ceilings, baseline=oracle.baseline))

    def _replay_corpus(self, runner: TrialRunner) -> None:
        """Replay the corpus on ``runner``'s target; each case that reproduces with an MFS becomes a known
        anomaly of every chain."""
        if not self.corpus:
            return
        self._emit(PhaseStarted("replay", counted(len(self.corpus), "known case")))
        for case in self.corpus:
            trial = runner.run(Phase.REPLAY, case.workload, None)
            self.summary.replayed += 1
            mfs = case.mfs
            if mfs is not None and not mfs.conditions:
                # an MFS that holds everywhere would keep the search out of the whole space (older campaigns
                # saved one for a find the budget left unminimized)
                self._emit(Warned(f"the MFS of {case.path} has no conditions; the case is replayed, but does not "
                                   "keep the search out of any region"))
                mfs = None
            if trial.verdict is not None and trial.verdict.anomalous:
                self.summary.corpus_reproduced.append(str(case.path))
                if mfs is not None:
                    self.registry.add(AnomalyRecord(f"corpus:{case.name}", mfs.signature, mfs, {}, 0, True),
                                      found=False)

    # -- the search ----------------------------------------------------------------------------------------

    def _search(self, chains: Sequence[Chain], turns: Turns | None) -> None:
        """Every chain searches to the budget's current total: one inline; several each in its own thread,
        taking ``turns``; returns once all have ended. The first failure of a chain is raised (the others stop at
        their next turn)."""
        if turns is None:
            chains[0].search()
            return
        turns.restart()
        errors: list[BaseException] = []

        def work(chain: Chain) -> None:
            try:
                turns.wait(chain.index)
                chain.search()
            except TurnsAborted:
                pass
            except BaseException as exc:
                errors.append(exc)
                turns.abort()
            finally:
                turns.leave(chain.index)

        threads = [threading.Thread(target=work, args=(c,), name=f"collie-chain-{c.index}", daemon=True)
                   for c in chains]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(_JOIN_SLICE_S)
        except KeyboardInterrupt:
            turns.abort()
            for t in threads:
                t.join()
            raise CampaignInterrupted() from None
        if errors:
            raise errors[0]

    def _check_walked(self) -> None:
        unwalked = self.shared.unwalked()
        if unwalked is not None:
            trial, line = unwalked
            raise InputError(f"{self.store.root / JOURNAL}: line {line}: the campaign ended before trial {trial}, "
                             f"which its journal holds (was its budget in campaign.toml lowered?); it cannot be "
                             "resumed")


def _too_few_hosts(space: SearchSpace, info: TargetInfo) -> str:
    """A warning when the space searches patterns over more hosts, or more NICs per host, than the target has
    (``""`` otherwise): such points are pruned, one experiment's worth of time each."""
    if "pattern" not in space.names:
        return ""
    hosts, nics = _most(space, "hosts"), _most(space, "nics")
    per_host = info.nics_per_host
    if hosts > len(info.hosts):
        return (f"the space {space.name!r} searches patterns over up to {hosts} hosts and {info.name} has "
                f"{len(info.hosts)}; points over more are pruned as unsupported (a fleet target, such as "
                "sim:fleet8-cx6, or a smaller hosts range in the space file)")
    if nics > per_host:
        return (f"the space {space.name!r} spreads a host's ranks over up to {nics} NICs and the hosts of "
                f"{info.name} have {per_host}; points over more are pruned as unsupported (a profile with [host] "
                "nics, such as sim:fleet8-cx6-2port, or nics values up to that in the space file)")
    return ""


def _most(space: SearchSpace, name: str) -> int:
    """The largest value dimension ``name`` of ``space`` takes (0 when the space does not search it)."""
    if name not in space.names:
        return 0
    d = space.dimension(name)
    return d.hi if isinstance(d, IntRange) else max(d.values) if isinstance(d, Choice) else 0


def begin_on(store: CampaignStore, info: TargetInfo, emit: Callable[[Event], None], what: str = "campaign") -> None:
    """Record ``info`` as the target the campaign in ``store`` runs on; a fingerprint other than the one it
    started on is a warning (the ``what``, a campaign or a rerun, goes on with it)."""
    started_on = store.config().target_info
    store.begin(info)
    if started_on is not None and started_on != info:
        emit(Warned(f"the target {info.name} does not match the fingerprint this {what} started on "
                     f"({started_on.nic_model} {started_on.firmware}, now {info.nic_model} {info.firmware}); "
                     f"going on with it"))


def _remove_unfound(store: CampaignStore, summary: CampaignSummary, emit: Callable[[Event], None]) -> None:
    """After a resumed campaign: remove the anomaly folders an earlier run left that this one did not find."""
    for name in store.keep_anomalies({a.anomaly_id for a in summary.anomalies}):
        emit(Warned(f"removed the anomaly folder {name}: an earlier run of this campaign left it, and the "
                     "resumed campaign did not find it again"))


def _total(campaign: CampaignSummary, chains: Sequence[CampaignSummary]) -> CampaignSummary:
    """The campaign's summary: calibration's and replay's tally and every chain's added up; the anomalies are
    the shared registry's."""
    total = CampaignSummary(confirms=campaign.confirms, anomalies=campaign.anomalies)
    for s in (campaign, *chains):
        total.experiments += s.experiments
        total.calibration += s.calibration
        total.replayed += s.replayed
        total.pruned += s.pruned
        total.failed += s.failed
        total.engine_bound += s.engine_bound
        total.minimize_experiments += s.minimize_experiments
        total.known_hits += s.known_hits
        total.corpus_reproduced.extend(s.corpus_reproduced)
    return total
