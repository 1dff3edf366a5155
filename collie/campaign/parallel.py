"""A campaign of K search chains at once (``collie campaign --parallel K``), each on a target of its own, all
sharing one anomaly registry, one budget, one journal and one campaign folder.

How it runs:
    1. every chain's target is entered; chain 0's fingerprint is the campaign's;
    2. chain 0 calibrates and replays the corpus alone (one oracle, one set of known corpus cases for all);
    3. the K chains search, each in a thread, taking turns to decide (:mod:`collie.campaign.turns`): a chain
       starts a trial, gives the turn on, runs the trial on its own target while the others decide and start
       theirs, and takes the turn back to judge it. An anomaly one chain found is known to every chain from its
       next turn on: a later find it explains is a known hit, never a second folder; the strategies of every
       chain are kept out of (or steered around) its region;
    4. a campaign extended by ``--resume --budget`` searches budget by budget as :class:`Campaign` does, every
       chain ending one budget before any starts the next.

Invariants:
    * chain 0 searches with the campaign's seed; chain ``i`` with :func:`chain_seed` (a function of the seed and
      ``i`` only);
    * the budget is the total over the chains: a chain counts the others' budgeted trials in flight as spent,
      so the chains never run more than the budget between them;
    * the journal is a function of the seed and of what the targets answer, as with one chain: trials are
      numbered in turn order, each row names its chain, and ``--resume`` re-walks it chain by chain in the same
      turns (see :func:`~collie.storage.records.check_sequence` for the order of rows with K trials in flight);
    * one chain's failure (a resumed journal that does not fit, a target that cannot go on, a full disk) stops
      every chain at its next turn and is raised once all have stopped; Ctrl-C likewise, as
      :class:`CampaignInterrupted`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
from collections.abc import Sequence

from collie import calibrate
from collie.campaign.loop import Campaign, begin_on, remove_unfound
from collie.campaign.registry import AnomalyRegistry
from collie.campaign.runner import CampaignInterrupted, SharedJournal
from collie.campaign.summary import CampaignSummary
from collie.campaign.turns import Turns, TurnsAborted
from collie.events import (
    AnomalyFound,
    Event,
    KnownAnomaly,
    Listener,
    PhaseStarted,
    TrialFinished,
    TrialStarted,
    Warning,
)
from collie.model.space import SearchSpace
from collie.preset import Preset
from collie.storage.campaign import CampaignStore
from collie.storage.corpus import CorpusCase
from collie.targets.base import Target

#: Seconds between checks for Ctrl-C while the chains run (the main thread joins them in slices).
_JOIN_SLICE_S = 0.2


def chain_seed(seed: int, chain: int) -> int:
    """The seed of search chain ``chain`` of a campaign seeded ``seed``: the seed itself for chain 0 (so one
    chain is the campaign without ``--parallel``), else 31 bits of SHA-256 of both."""
    if chain == 0:
        return seed
    digest = hashlib.sha256(f"collie-chain:{seed}:{chain}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class ParallelCampaign:
    """K search chains over K targets (see the module).

    Args:
        targets: one target per chain (not entered yet); chain ``i`` runs on ``targets[i]``.
        space, preset, store, seed, budget, corpus, resume, earlier_budgets: as for :class:`Campaign`; ``budget``
            is the total over the chains.
        listener: where events go; with more than one chain, each trial, anomaly and known-hit event carries its
            chain, and each search phase and warning of a chain says ``chain i:``.
    """

    def __init__(self, *, targets: Sequence[Target], space: SearchSpace, preset: Preset, store: CampaignStore,
                 seed: int, budget: int, listener: Listener | None = None, corpus: Sequence[CorpusCase] = (),
                 resume: bool = False, earlier_budgets: Sequence[int] = ()) -> None:
        if not targets:
            raise ValueError("a parallel campaign needs at least one target")
        self.store = store
        self.listener = listener
        self.resume = resume
        self.budgets = (*earlier_budgets, budget)
        journal = store.read_journal() if resume else None
        for w in journal.warnings if journal is not None else ():
            self._emit(Warning(w))
        self.shared = SharedJournal(journal)
        self.summary = CampaignSummary(confirms=preset.minimize is not None)
        self.registry = AnomalyRegistry(space, self.summary.anomalies)
        self._tag = False  # chains' search events say which chain (not calibration's and replay's)
        several = len(targets) > 1
        self.chains = [
            Campaign(target=t, space=space, preset=preset, store=store, seed=chain_seed(seed, i), budget=budget,
                     listener=self._listener_of(i) if several else self._emit, corpus=corpus, resume=resume,
                     earlier_budgets=earlier_budgets, registry=self.registry, shared=self.shared,
                     chain=i if several else None)
            for i, t in enumerate(targets)]

    def _emit(self, event: Event) -> None:
        if self.listener is not None:
            self.listener(event)

    def _listener_of(self, chain: int) -> Listener:
        def listen(event: Event) -> None:
            if isinstance(event, TrialStarted | TrialFinished | AnomalyFound | KnownAnomaly):
                event = dataclasses.replace(event, chain=chain)
            elif self._tag and isinstance(event, PhaseStarted):
                event = PhaseStarted(event.phase, f"chain {chain}: {event.detail}")
            elif self._tag and isinstance(event, Warning):
                event = Warning(f"chain {chain}: {event.message}")
            self._emit(event)
        return listen

    def run(self) -> CampaignSummary:
        """Run the whole campaign (entering every chain's target); returns the summary over every chain.

        As :meth:`Campaign.run`: nothing is written before every target is open, and a resumed campaign that
        ends keeps exactly the anomaly folders of its summary.

        Raises:
            CampaignInterrupted: on Ctrl-C (the journal is consistent; ``--resume`` continues every chain).
            InputError: a resumed journal that does not belong to this campaign's path.
            TargetUnavailable: a chain's target cannot go on.
        """
        first = self.chains[0]
        with contextlib.ExitStack() as stack:
            for chain in self.chains:
                stack.enter_context(chain.target)
            for chain in self.chains:
                chain.info = chain.target.describe()
                chain.catalog = calibrate.catalog_of(chain.info)
            assert first.info is not None
            begin_on(self.store, first.info, self._emit)
            try:
                first._calibrate()
                first._replay_corpus()
                self._tag = True
                for budget in self.budgets:
                    self._search(budget)
                if self.resume:
                    first._check_walked()
                    remove_unfound(self.store, self.summary, self._emit)
            except KeyboardInterrupt:
                raise CampaignInterrupted() from None
            finally:
                self.store.close()
        return self._total()

    def _search(self, budget: int) -> None:
        """Every chain searches to ``budget`` (the total), in its own thread, taking turns; returns once all
        have ended. The first failure of a chain is raised (the others stop at their next turn)."""
        turns = Turns(range(len(self.chains)))
        errors: list[BaseException] = []

        def work(index: int, chain: Campaign) -> None:
            try:
                turns.wait(index)
                chain.budget = chain._limit = budget
                chain._search()
            except TurnsAborted:
                pass
            except BaseException as exc:
                errors.append(exc)
                turns.abort()
            finally:
                turns.leave(index)

        for chain in self.chains:
            chain.runner.turns = turns
        threads = [threading.Thread(target=work, args=(i, c), name=f"collie-chain-{i}", daemon=True)
                   for i, c in enumerate(self.chains)]
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
        finally:
            for chain in self.chains:
                chain.runner.turns = None
        if errors:
            raise errors[0]

    def _total(self) -> CampaignSummary:
        """The campaign's summary: every chain's tally added up; the anomalies are the shared registry's."""
        total = CampaignSummary(confirms=self.summary.confirms, anomalies=self.summary.anomalies)
        for chain in self.chains:
            s = chain.summary
            total.experiments += s.experiments
            total.calibration += s.calibration
            total.replayed += s.replayed
            total.pruned += s.pruned
            total.failed += s.failed
            total.minimize_experiments += s.minimize_experiments
            total.known_hits += s.known_hits
            total.corpus_reproduced.extend(s.corpus_reproduced)
        return total
