"""``collie campaign``: search a target for anomalies, minimize them and save replayable cases."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from collie.campaign import Campaign, CampaignInterrupted, CampaignSummary
from collie.campaign.parallel import ParallelCampaign, chain_seed
from collie.cli.dashboard import dashboard, live_options
from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import accept_keys_option, pace_option, seed_option, target_option
from collie.errors import InputError
from collie.events import counted
from collie.model.space import load_space
from collie.preset import DEFAULT_PRESET, campaign_preset, load_preset
from collie.storage.campaign import CONFIG, CampaignStore
from collie.storage.corpus import CorpusCase, load_corpus
from collie.storage.records import CampaignConfig
from collie.strategies import STRATEGIES
from collie.targets import open_target
from collie.targets.base import Target


def _corpus(folder: Path | None) -> tuple[CorpusCase, ...]:
    """The corpus cases, read and checked before the campaign folder is made (a bad case costs nothing)."""
    if folder is None:
        return ()
    if not folder.is_dir():
        raise InputError(f"the corpus folder {folder} does not exist (a resumed campaign needs the same corpus)")
    cases = load_corpus(folder)
    if not cases:
        click.echo(f"warning: the corpus folder {folder} holds no cases (*/case.toml or *.toml)", err=True)
    return cases


def _summary_rows(summary: CampaignSummary) -> list[dict[str, Any]]:
    return [{
        "anomaly": a.anomaly_id, "signature": a.signature, "found_at": a.found_at,
        "confirmed": a.confirmed, "mfs": a.mfs.describe() if a.mfs else "",
    } for a in summary.anomalies]


def _given(ctx: click.Context, name: str, value: Any) -> Any:
    """``value`` if the user gave option ``name`` (on the command line or in the environment), else None."""
    source = ctx.get_parameter_source(name)
    return value if source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) else None


def _store(ctx: click.Context, resume: bool, out: Path | None, target_spec: str, seed: int, preset: str,
           strategy: str | None, budget: int | None, space_file: Path | None, corpus: Path | None,
           parallel: int | None) -> CampaignStore:
    """The campaign folder: a resumed one (its configuration amended by the options given, or refused), or a
    new one planned (written once the target is open)."""
    if resume:
        if out is None:
            raise InputError("--resume needs --out DIR, the folder of the campaign to continue")
        store = CampaignStore.open(out)
        config = store.config()
        store.stage(config.resumed(
            str(out / CONFIG), target=_given(ctx, "target_spec", target_spec), seed=_given(ctx, "seed", seed),
            budget=budget, preset=_given(ctx, "preset", preset), strategy=strategy, space=space_file,
            corpus=corpus, parallel=parallel))
        return store
    chosen = load_preset(preset)
    config = CampaignConfig.new(target=target_spec, seed=seed, budget=budget or chosen.budget, preset=preset,
                                strategy=strategy or chosen.strategy, space=space_file, corpus=corpus,
                                parallel=parallel or 1)
    if out is not None:
        return CampaignStore.prepare(out, config)
    return CampaignStore.prepare(Path("reports") / time.strftime("campaign-%Y%m%d-%H%M%S"), config, unique=True)


def _chain_targets(spec: str, k: int, seed: int, accept_new_host_keys: bool) -> list[Target]:
    """One remote target per chain, over the inventory's ``k`` disjoint host groups (see
    :mod:`collie.remote.groups`); chain ``i`` seeded with :func:`~collie.campaign.parallel.chain_seed`."""
    kind, _, rest = spec.partition(":")
    if kind != "remote" or not rest:
        raise InputError(f"--parallel {k} needs a remote target (--target remote:hosts.toml), whose inventory "
                         f"gives each chain a host group of its own; {spec} is one target, so run it without "
                         "--parallel")
    from collie.remote.groups import open_groups

    return list(open_groups(rest, [chain_seed(seed, i) for i in range(k)],
                            accept_new_host_keys=accept_new_host_keys))


_PRESET_HELP = ("Search preset: collie or quick (confirm and minimize every find), random or bayes (baselines: "
                "finds are saved as found, neither confirmed nor minimized), or a .toml file.")


@click.command()
@target_option
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space file (default: the paper's space).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help=_PRESET_HELP)
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="Override the preset's strategy (the preset still decides whether finds are minimized).")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Experiments to spend (explore + confirm + minimize); default from the preset. With --resume: "
                   "extend the campaign to this many.")
@seed_option
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Campaign folder (default: a new reports/campaign-<time>[-N]).")
@click.option("--corpus", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
              help="Folder of known cases (case.toml + mfs.json) replayed first.")
@click.option("--resume", is_flag=True,
              help="Continue the campaign in --out (same target, seed, preset, strategy, space and corpus; "
                   "--budget extends it).")
@click.option("--parallel", type=click.IntRange(min=1), default=None, metavar="K",
              help="Run K search chains at once on K disjoint host groups of a remote:hosts.toml inventory (its "
                   "hosts split in order into K groups), sharing the anomalies, the budget and the folder.")
@live_options
@pace_option
@accept_keys_option
@format_option
@click.pass_context
def campaign(ctx: click.Context, target_spec: str, space_file: Path | None, preset: str, strategy: str | None,
             budget: int | None, seed: int, out: Path | None, corpus: Path | None, resume: bool,
             parallel: int | None, no_live: bool, quiet: bool, pace: float, accept_new_host_keys: bool, fmt: str
             ) -> None:
    """Search a target for anomalies, minimize each one, and save replayable cases.

    \b
    Exit codes:
      0    done
      2    a usage mistake (options, files, an inventory), nothing run
      3    a remote target's hosts cannot be reached at the start, or a host was taken out and no inventory
           host can stand in (the journal is safe: continue with --resume)
      130  interrupted (continue with --resume)
    """
    store = _store(ctx, resume, out, target_spec, seed, preset, strategy, budget, space_file, corpus, parallel)
    config = store.config()
    chosen = campaign_preset(config.preset, config.strategy, str(store.root / CONFIG))
    space = load_space(Path(config.space) if config.space else None)
    known_cases = _corpus(Path(config.corpus) if config.corpus else None)
    k = config.parallel
    chains = f", {k} chains" if k > 1 else ""
    view = dashboard(title=f"collie campaign on {config.target} ({chosen.name}{chains}) -> {store.root}",
                     total=config.budget, every=max(10, config.budget // 10), no_live=no_live, quiet=quiet)
    run: Campaign | ParallelCampaign
    if k == 1:
        target = open_target(config.target, seed=config.seed, pace=pace, accept_new_host_keys=accept_new_host_keys)
        run = Campaign(target=target, space=space, preset=chosen, store=store, seed=config.seed,
                       budget=config.budget, listener=view, corpus=known_cases, resume=resume,
                       earlier_budgets=config.earlier_budgets)
    else:
        run = ParallelCampaign(targets=_chain_targets(config.target, k, config.seed, accept_new_host_keys),
                               space=space, preset=chosen, store=store, seed=config.seed, budget=config.budget,
                               listener=view, corpus=known_cases, resume=resume,
                               earlier_budgets=config.earlier_budgets)
    try:
        with view:
            summary = run.run()
    except CampaignInterrupted:
        click.echo(f"collie: interrupted; the journal is safe. Continue with: collie campaign --resume --out "
                   f"{store.root}", err=True)
        raise SystemExit(130) from None
    out = store.root
    corpus_line = (f"; {len(summary.corpus_reproduced)} of {counted(summary.replayed, 'known case')} reproduced"
                   if summary.replayed else "")
    unminimized = ("" if summary.confirms else
                   f" (preset {chosen.name} neither confirms nor minimizes: they are saved as found)")
    click.echo(f"== done: {counted(summary.experiments, 'experiment')} ({summary.minimize_experiments} minimizing, "
               f"{summary.calibration} calibration, {summary.pruned} pruned, {summary.failed} failed); "
               f"{counted(len(summary.anomalies), 'anomaly', 'anomalies')} in {out}{unminimized}{corpus_line}",
               err=True)
    if fmt == "json":
        emit(json.dumps({"out": str(out), "experiments": summary.experiments,
                         "minimize_experiments": summary.minimize_experiments, "pruned": summary.pruned,
                         "failed": summary.failed, "known_hits": summary.known_hits,
                         "replayed": summary.replayed, "corpus_reproduced": summary.corpus_reproduced,
                         "confirms_and_minimizes": summary.confirms,
                         "anomalies": _summary_rows(summary)}, indent=2))
    else:
        emit(render(_summary_rows(summary), fmt, title=f"anomalies ({out})",
                    columns=["anomaly", "signature", "found_at", "confirmed", "mfs"]))
