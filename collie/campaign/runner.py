"""The journaled trial runner: every experiment of a campaign is a numbered trial, run once and journaled.

Invariants:
    * trial ``n`` is journaled RUNNING before the target runs it, and COMPLETE, PRUNED or FAILED after;
    * a trial the journal holds finished (a resumed campaign re-walking its path) is not run again: its result is
      taken from the journal and judged again. It must be the same phase and workload the campaign asks at that
      place, else the journal belongs to another path (other options, files or collie version) and the campaign
      stops with one sentence rather than mixing two paths;
    * with several chains (``--parallel``), trials are numbered in the order the chains' turns start them, and
      journaled as finished in that same order (see :mod:`collie.campaign.turns`), so numbers are unique and the
      journal is a function of the seed, as with one chain;
    * the repetition a target is told for a run (see :meth:`~collie.targets.base.Target.run`) is how many
      earlier COMPLETE trials of the campaign ran the same workload: a function of the journal only, so the
      simulator's noise, and with it every result and decision, is the same in a resumed campaign as in an
      uninterrupted one;
    * an isolation experiment's victims are run alone first, once per distinct victim (the key of
      ``Workload.solo``) per campaign: a SOLO trial of its own, just before the first trial that needs it, whose
      result the oracle keeps (:attr:`~collie.oracle.Oracle.solos`). A resumed campaign re-walks it like any
      trial, so the oracle holds the same solos at the same trials.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from collie.campaign.budget import Budget
from collie.campaign.summary import CampaignSummary
from collie.campaign.turns import Turns
from collie.errors import InputError
from collie.events import Event, TrialFinished, TrialStarted
from collie.experiment import run_and_judge
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.storage.campaign import JOURNAL, CampaignStore, JournalRead
from collie.storage.records import Phase, TrialRecord, TrialState, TrialVerdict
from collie.targets.base import RunResult, Target


class CampaignInterrupted(Exception):
    """Ctrl-C: the trial in flight was abandoned; the journal holds everything before it."""


@dataclass(frozen=True)
class TrialOutcome:
    """How one trial ended: its state, what the target measured (COMPLETE) and the oracle's verdict on it
    (None for calibration), or why it was pruned or failed."""

    state: TrialState
    result: RunResult | None = None
    verdict: Verdict | None = None
    reason: str = ""


class SharedJournal:
    """What the runners of a campaign's chains share: the trial numbers, the journal read back for a resume,
    the repetitions of each workload and the oracle.

    Invariants: read and changed only by the chain whose turn it is (see :class:`Turns`), or by the one runner
    of a campaign of one chain.

    Args:
        journal: the journal read back for a resume (None for a new campaign).
    """

    def __init__(self, journal: JournalRead | None = None) -> None:
        #: trials numbered so far (the last trial's number)
        self.trials = 0
        #: the finished trials of a resumed journal not re-walked yet: trial -> (record, line)
        self.recorded: dict[int, tuple[TrialRecord, int]] = {}
        if journal is not None:
            self.recorded = {r.trial: (r, line) for r, line in zip(journal.records, journal.lines, strict=True)
                             if r.state.finished}
        #: COMPLETE trials of each workload key so far
        self.repetitions: Counter[str] = Counter()
        self.oracle: Oracle | None = None
        #: the solo workloads a SOLO trial was started for (whatever its outcome: it is not run again)
        self.solos: set[str] = set()

    def unwalked(self) -> tuple[int, int] | None:
        """The first finished trial of the journal the campaign did not reach, as ``(trial, line)``; None when it
        re-walked them all (its budget in ``campaign.toml`` was lowered, or the journal is another campaign's)."""
        if not self.recorded:
            return None
        first = min(self.recorded)
        return first, self.recorded[first][1]


class TrialRunner:
    """Runs a campaign's trials one after another (see the module's invariants); with ``turns``, one chain's
    trials among those of other chains (see :mod:`collie.campaign.campaign`).

    Args:
        target: the entered target.
        store: the campaign folder the journal is appended to.
        duration: seconds of measured traffic per run.
        summary: the tally (experiments, pruned, failed, engine-bound) of what this runner runs, counted here.
        emit: where the ``TrialStarted`` and ``TrialFinished`` events go.
        shared: the journal state shared with the runners of the other chains (one per campaign).
        budget: the campaign's budget, which every budgeted trial spends.
        chain: the chain it runs, journaled with each trial (None: a campaign of one chain).
        turns: the chains' turns: each trial passes the turn on once it is journaled RUNNING, runs, and waits
            for the turn to come back before it is judged and journaled as finished.
    """

    def __init__(self, target: Target, store: CampaignStore, duration: float, summary: CampaignSummary,
                 emit: Callable[[Event], None], *, shared: SharedJournal, budget: Budget, chain: int | None = None,
                 turns: Turns | None = None) -> None:
        self.target = target
        self.store = store
        self.duration = duration
        self.summary = summary
        self.emit = emit
        #: the number of the last trial this runner ran (0: none yet)
        self.trial = 0
        #: what the runners of every chain share (one per campaign)
        self.shared = shared
        #: the campaign's budget (one per campaign)
        self.budget = budget
        #: the chain this runner runs (journaled with each trial); None: a campaign of one chain
        self.chain = chain
        #: the turns its chain takes with the others (None: one chain, nothing to wait for)
        self.turns = turns
        #: turns it let go round without a trial (:meth:`idle`)
        self.idles = 0

    def run(self, phase: Phase, workload: Workload, point: Mapping[str, Any] | None) -> TrialOutcome:
        """Run (or take from the journal) the next trial; journal it; return its outcome.

        Raises:
            BudgetSpent: a budgeted trial asked with the budget's total spent (nothing is numbered or journaled).
            InputError: the journal holds another phase or workload at this trial.
            CampaignInterrupted: Ctrl-C while the target ran it.
        """
        if phase.budgeted:
            self.budget.start()
        if workload.isolation:
            self._solo(workload.solo())
        shared = self.shared
        shared.trials += 1
        n = self.trial = shared.trials
        key = workload.key()
        pt = dict(point) if point is not None else {}
        recorded = shared.recorded.pop(n, None)
        if recorded is not None and (recorded[0].phase, recorded[0].key) != (phase, key):
            record, line = recorded
            raise InputError(f"{self.store.root / JOURNAL}: line {line}: trial {n} ran {record.phase} of workload "
                             f"{record.key}, but the campaign now asks {phase} of {key} there: its options, its "
                             "files or collie changed since, so it cannot be resumed exactly; start a new campaign "
                             "with another --out")
        if recorded is not None and recorded[0].result is not None:
            problem = _foreign(recorded[0].result, workload)
            if problem:
                raise InputError(f"{self.store.root / JOURNAL}: line {recorded[1]}: result: {problem} of its "
                                 f"workload {key}; the journal is damaged")
        self.emit(TrialStarted(n, phase, pt))
        repetition = shared.repetitions[key]
        if recorded is None:
            self.store.append(TrialRecord(n, phase, key, pt, TrialState.RUNNING, time.time(), chain=self.chain))
        if self.turns is not None:  # the next chain decides while this one runs
            self.turns.pass_on(self.chain or 0)
        if recorded is None:
            outcome = self._run_live(workload, repetition)
        if self.turns is not None:  # decisions are taken in turn: what the chains before it did is known
            self.turns.wait(self.chain or 0)
        if recorded is not None:
            record = recorded[0]
            verdict = self._judge(phase, record.result, workload)
            outcome = TrialOutcome(record.state, record.result, verdict, record.reason)
        else:
            outcome = TrialOutcome(outcome.state, outcome.result, self._judge(phase, outcome.result, workload),
                                   outcome.reason)
            summary = None if outcome.verdict is None else TrialVerdict.of(outcome.verdict)
            self.store.append(TrialRecord(n, phase, key, pt, outcome.state, time.time(), outcome.reason,
                                          outcome.result, summary, chain=self.chain))
        if outcome.state is TrialState.COMPLETE:
            shared.repetitions[key] += 1
        counts = phase.budgeted and outcome.state is not TrialState.PRUNED
        self.summary.experiments += counts
        if phase.budgeted:
            self.budget.finish(counts)
        self.summary.pruned += outcome.state is TrialState.PRUNED
        self.summary.failed += outcome.state is TrialState.FAILED
        self.summary.engine_bound += outcome.result is not None and outcome.result.engine_bound
        self.emit(TrialFinished(n, phase, outcome.state, self.budget.experiments, pt, outcome.verdict,
                                outcome.result, outcome.reason))
        return outcome

    def _solo(self, solo: Workload) -> None:
        """Run ``solo`` as a SOLO trial and give its result to the oracle, unless the campaign already did (or has
        no oracle yet: calibration runs no victim)."""
        oracle, key = self.shared.oracle, solo.key()
        if oracle is None or key in self.shared.solos:
            return
        self.shared.solos.add(key)
        outcome = self.run(Phase.SOLO, solo, None)
        if outcome.result is not None:
            oracle.solos[key] = outcome.result

    def idle(self) -> None:
        """Let one turn go round without a trial (a chain waiting for another chain's find to be recorded)."""
        if self.turns is not None:
            self.idles += 1
            self.turns.pass_on(self.chain or 0)
            self.turns.wait(self.chain or 0)

    def _judge(self, phase: Phase, result: RunResult | None, workload: Workload) -> Verdict | None:
        oracle = self.shared.oracle  # made by calibration; judges every result but calibration's and the solos'
        if result is None or phase in (Phase.CALIBRATE, Phase.SOLO) or oracle is None:
            return None
        return oracle.judge(result, workload)

    def _run_live(self, workload: Workload, repetition: int) -> TrialOutcome:
        """Run one trial on the target (judged later, in turn, like a trial taken from the journal)."""
        try:
            e = run_and_judge(self.target, workload, self.duration, None, repetition)
        except KeyboardInterrupt:
            raise CampaignInterrupted() from None
        return TrialOutcome(e.state, e.result, reason=e.reason)


def _foreign(result: RunResult, workload: Workload) -> str:
    """Why a journaled ``result`` cannot be a run of ``workload`` (``""``: it can): another workload key, flows
    that are not the workload's, or hosts it does not touch."""
    if result.workload_key != workload.key():
        return f"its workload_key {result.workload_key} is not the key"
    flows = [(i, f.client.host, f.server.host) for i, f in enumerate(workload.flows)]
    if sorted((f.flow, f.client, f.server) for f in result.flows) != flows:
        return "its flows are not the flows"
    hosts = [h.host for h in result.hosts]
    if len(set(hosts)) != len(hosts) or not set(hosts) <= set(workload.hosts):
        return f"its hosts {', '.join(hosts)} are not the hosts"
    return ""
