"""Campaigns and the CI gate assembled: what ``collie campaign`` and ``collie ci`` call before a campaign runs.

Assembling a campaign is two steps, so that a caller can show what it is about to run before anything is opened:
:func:`plan_campaign` (a new one), :func:`plan_resumed_campaign` or :func:`plan_gate` read and check the options,
the preset, the space, the corpus and the campaign folder (nothing is written: a new folder is made once the
target is open); :func:`open_campaign` then opens the target(s) and builds the campaign object, whose
``run()`` the caller calls. :func:`open_gate` does the same for the gate.

Invariants:
    * the campaign object (:class:`~collie.campaign.Campaign`, 1..K chains) is constructed in one place,
      :func:`_campaign`, only once every target is created; a resumed campaign repairs its journal there.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from collie.campaign import Campaign, chain_seed
from collie.errors import InputError
from collie.events import Listener, Warned
from collie.gate import GateResult, GateWatch, Waivers, run_gate
from collie.model.space import SearchSpace, load_space
from collie.preset import Preset, campaign_preset, load_preset
from collie.remote.kind import RemoteSpec
from collie.services.events import ServiceListener
from collie.services.resumed import resumed_note
from collie.storage.campaign import CONFIG, CampaignStore
from collie.storage.corpus import CorpusCase, load_corpus
from collie.storage.records import CampaignConfig
from collie.targets.base import Target
from collie.targets.kind import TargetSpec
from collie.targets.registry import open_target, parse_target


@dataclass(frozen=True)
class ResumeOptions:
    """The options a user gave to resume a campaign (None: not given, the campaign's own stays); a larger
    budget extends the campaign, any other option must be its own.

    Attributes:
        target: the target spec.
        seed: the search stream's (and simulator's) seed.
        budget: extend the campaign to this many experiments.
        preset: the preset's name or file.
        strategy: the strategy.
        space: the search space file.
        corpus: the folder of known cases.
        parallel: search chains.
    """

    target: TargetSpec | None = None
    seed: int | None = None
    budget: int | None = None
    preset: str | None = None
    strategy: str | None = None
    space: Path | None = None
    corpus: Path | None = None
    parallel: int | None = None


@dataclass(frozen=True)
class CampaignPlan:
    """A campaign read and checked, not yet opened.

    Attributes:
        store: its folder (a new one is made once the target is open).
        config: its configuration, as it will be written.
        preset: the preset it searches with (its strategy the configuration's).
        space: the search space.
        corpus: the known cases replayed first.
        resume: it continues the journal in ``store``.
    """

    store: CampaignStore
    config: CampaignConfig
    preset: Preset
    space: SearchSpace
    corpus: tuple[CorpusCase, ...]
    resume: bool


def plan_campaign(*, target: TargetSpec, seed: int, preset: str, budget: int | None = None, strategy: str | None = None,
                  space: Path | None = None, corpus: Path | None = None, parallel: int | None = None,
                  out: Path | None = None, listener: Listener) -> CampaignPlan:
    """A new campaign in ``out`` (None: a new ``reports/campaign-<time>[-N]``): ``budget`` experiments (None: the
    preset's), the preset's strategy unless ``strategy``, the whole default space unless ``space``, ``corpus``'s known
    cases replayed first, ``parallel`` search chains (None: one).

    Raises:
        InputError: ``out`` holds a campaign, or a bad option, preset, space or corpus.
    """
    chosen = load_preset(preset)
    config = CampaignConfig.new(target=str(target), seed=seed, budget=budget or chosen.budget, preset=preset,
                                strategy=strategy or chosen.strategy, space=space, corpus=corpus,
                                parallel=parallel or 1)
    if out is not None:
        store = CampaignStore.prepare(out, config)
    else:
        store = CampaignStore.prepare(Path("reports") / time.strftime("campaign-%Y%m%d-%H%M%S"), config,
                                      unique=True)
    return _plan(store, False, listener)


def plan_resumed_campaign(out: Path | None, given: ResumeOptions, listener: ServiceListener) -> CampaignPlan:
    """The campaign in ``out`` continued, its configuration amended by the options ``given``.

    Raises:
        InputError: no ``out``, no campaign there, a damaged ``campaign.toml``, or an option it refuses.
    """
    if out is None:
        raise InputError("--resume needs --out DIR, the folder of the campaign to continue")
    store = CampaignStore.open(out)
    store.stage(store.config().resumed(
        str(out / CONFIG), target=None if given.target is None else str(given.target), seed=given.seed,
        budget=given.budget, preset=given.preset, strategy=given.strategy, space=given.space, corpus=given.corpus,
        parallel=given.parallel))
    plan = _plan(store, True, listener)
    listener(resumed_note(store))
    return plan


def _plan(store: CampaignStore, resume: bool, listener: Listener) -> CampaignPlan:
    config = store.config()
    chosen = campaign_preset(config.preset, config.strategy, str(store.root / CONFIG))
    space = load_space(Path(config.space) if config.space else None)
    corpus = _corpus(Path(config.corpus) if config.corpus else None, listener)
    return CampaignPlan(store, config, chosen, space, corpus, resume)


def _corpus(folder: Path | None, listener: Listener) -> tuple[CorpusCase, ...]:
    """The corpus cases, read and checked before the campaign folder is made (a bad case costs nothing)."""
    if folder is None:
        return ()
    if not folder.is_dir():
        raise InputError(f"the corpus folder {folder} does not exist (a resumed campaign needs the same corpus)")
    return _cases(folder, listener)


def _cases(folder: Path, listener: Listener) -> tuple[CorpusCase, ...]:
    cases = load_corpus(folder)
    if not cases:
        listener(Warned(f"the corpus folder {folder} holds no cases (*/case.toml or *.toml)"))
    return cases


def open_campaign(plan: CampaignPlan, *, targets: Sequence[Target] | None = None, pace: float = 0.0,
                  accept_new_host_keys: bool = False, listener: Listener | None = None) -> Campaign:
    """Create the planned campaign's target(s) (not entered: its ``run()`` enters them and makes the folder), and
    returns the campaign, ready to ``run()``.

    Args:
        plan: the campaign.
        targets: one target per chain, not entered (None: opened from the configuration's spec, one per chain,
            with ``pace`` and ``accept_new_host_keys``).
        pace: simulator only: sleep this fraction of each experiment's duration.
        accept_new_host_keys: remote only: record the key of a host that has none recorded yet.
        listener: where the campaign's events go.

    Raises:
        InputError: ``--parallel`` without a remote target, an inventory mistake, or a resumed journal that is
            damaged beyond a crash's trace.
        TargetError: a spec the target kind cannot parse.
    """
    config = plan.config
    if targets is None:
        recorded = parse_target(config.target)
        k = config.parallel
        if k == 1:
            targets = [open_target(recorded, seed=config.seed, pace=pace,
                                   accept_new_host_keys=accept_new_host_keys)]
        else:
            targets = _chain_targets(recorded, k, config.seed, accept_new_host_keys)
    return _campaign(plan, targets, listener)


def _campaign(plan: CampaignPlan, targets: Sequence[Target], listener: Listener | None) -> Campaign:
    """The one place a campaign object is constructed."""
    return Campaign(targets=targets, space=plan.space, preset=plan.preset, store=plan.store,
                            seed=plan.config.seed, budget=plan.config.budget, listener=listener, corpus=plan.corpus,
                            resume=plan.resume, earlier_budgets=plan.config.earlier_budgets)


def _chain_targets(spec: TargetSpec, k: int, seed: int, accept_new_host_keys: bool) -> list[Target]:
    """One remote target per chain, over the inventory's ``k`` disjoint host groups (see
    :mod:`collie.remote.groups`); chain ``i`` seeded with :func:`~collie.campaign.chain.chain_seed`."""
    if not isinstance(spec, RemoteSpec):
        raise InputError(f"--parallel {k} needs a remote target (--target remote:hosts.toml), whose inventory "
                         f"gives each chain a host group of its own; {spec} is one target, so run it without "
                         "--parallel")
    from collie.remote.groups import open_groups  # paramiko: only for a remote campaign of several chains

    return list(open_groups(spec.inventory, [chain_seed(seed, i) for i in range(k)],
                            accept_new_host_keys=accept_new_host_keys))


# -- the CI gate -------------------------------------------------------------------------------------------------


def plan_gate(target: TargetSpec, corpus: Path, *, budget: int, seed: int, preset: str, space: Path | None,
              out: Path | None, listener: Listener) -> CampaignPlan:
    """The gate's campaign: the known cases of ``corpus`` replayed, then a search of ``budget`` experiments, in
    ``out`` (None: a new ``reports/ci-<time>[-N]``).

    Raises:
        InputError: a bad corpus, preset or space, or ``out`` holds a campaign.
    """
    cases = _cases(corpus, listener)
    chosen = load_preset(preset)
    searched = load_space(space)
    config = CampaignConfig.new(target=str(target), seed=seed, budget=budget, preset=preset, strategy=chosen.strategy,
                                corpus=corpus, space=space)
    if out is not None:
        store = CampaignStore.prepare(out, config)
    else:
        store = CampaignStore.prepare(Path("reports") / time.strftime("ci-%Y%m%d-%H%M%S"), config, unique=True)
    return CampaignPlan(store, config, chosen, searched, cases, False)


@dataclass(frozen=True)
class OpenedGate:
    """The gate's campaign, opened, and what the gate judges its outcome with.

    Attributes:
        plan: the gate's campaign.
        campaign: the campaign object (its events go through ``watch``).
        watch: what the gate hears of the campaign (then forwarded to the caller's listener).
        waivers: the waivers the gate applies.
        today: the day waivers expire against.
    """

    plan: CampaignPlan
    campaign: Campaign
    watch: GateWatch
    waivers: Waivers
    today: dt.date

    def run(self) -> GateResult:
        """Run the gate's campaign and decide (see :func:`~collie.gate.run_gate`)."""
        return run_gate(campaign=self.campaign, watch=self.watch, target_spec=self.plan.config.target,
                        store=self.plan.store, budget=self.plan.config.budget, corpus=self.plan.corpus,
                        waivers=self.waivers, today=self.today)


def open_gate(plan: CampaignPlan, waivers: Waivers, today: dt.date, *, targets: Sequence[Target] | None = None,
              accept_new_host_keys: bool = False, listener: Listener | None = None) -> OpenedGate:
    """Open the gate's campaign (see :func:`open_campaign`, whose ``targets`` this takes); its ``run()`` runs it
    and returns the decision.

    Raises:
        TargetError: a spec the target kind cannot parse.
        InputError: a waiver about a case the corpus does not hold, or an inventory mistake.
    """
    waivers.check_cases([c.name for c in plan.corpus], plan.config.corpus)
    watch = GateWatch(listener)
    campaign = open_campaign(plan, targets=targets, accept_new_host_keys=accept_new_host_keys, listener=watch)
    return OpenedGate(plan, campaign, watch, waivers, today)
