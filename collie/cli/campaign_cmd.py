"""``collie campaign``: search a target for anomalies, minimize them and save replayable cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from collie.campaign import CampaignInterrupted, CampaignSummary
from collie.cli.dashboard import dashboard, live_options
from collie.cli.listen import echo
from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import accept_keys_option, output_path, pace_option, seed_option, target_option
from collie.events import counted
from collie.preset import DEFAULT_PRESET
from collie.services import ResumeOptions, open_campaign, plan_campaign, plan_resumed_campaign
from collie.strategies import STRATEGIES
from collie.targets.kind import TargetSpec


def _summary_rows(summary: CampaignSummary) -> list[dict[str, Any]]:
    return [{
        "anomaly": a.anomaly_id, "signature": a.signature, "found_at": a.found_at, "found_trial": a.trial,
        "confirmed": a.confirmed, "mfs": a.mfs.describe() if a.mfs else "",
    } for a in summary.anomalies]


def spent(summary: CampaignSummary) -> str:
    """What the campaign ran, in a phrase: ``150 experiments (12 minimizing, 6 calibration, 0 pruned, 0 failed)``,
    with ``, 3 engine-bound runs not judged`` before the parenthesis closes when some runs were."""
    engine = f", {summary.engine_bound} engine-bound runs not judged" if summary.engine_bound else ""
    return (f"{counted(summary.experiments, 'experiment')} ({summary.minimize_experiments} minimizing, "
            f"{summary.calibration} calibration, {summary.pruned} pruned, {summary.failed} failed{engine})")


def summary_dict(summary: CampaignSummary, out: Path, simulated: bool) -> dict[str, Any]:
    """The campaign's summary as ``--format json`` prints it (``engine_bound`` always: 0 when no run was)."""
    return {"out": str(out), "experiments": summary.experiments,
            "minimize_experiments": summary.minimize_experiments, "pruned": summary.pruned,
            "failed": summary.failed, "engine_bound": summary.engine_bound, "known_hits": summary.known_hits,
            "replayed": summary.replayed, "corpus_reproduced": summary.corpus_reproduced,
            "confirms_and_minimizes": summary.confirms, "simulated": simulated,
            "anomalies": _summary_rows(summary)}


def _given(ctx: click.Context, name: str, value: Any) -> Any:
    """``value`` if the user gave option ``name`` (on the command line or in the environment), else None."""
    source = ctx.get_parameter_source(name)
    return value if source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) else None


_PRESET_HELP = ("Search preset: collie or quick (confirm and minimize every find), random or bayes (baselines: "
                "finds are saved as found, neither confirmed nor minimized), or a .toml file.")


@click.command()
@target_option
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space file (default: the whole space, workloads/default.toml; workloads/paper.toml is "
                   "the Collie paper's).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help=_PRESET_HELP)
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None,
              help="Override the preset's strategy (the preset still decides whether finds are minimized).")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Experiments to spend (explore + confirm + minimize); default from the preset. With --resume: "
                   "extend the campaign to this many.")
@seed_option
@click.option("--out", callback=output_path, default=None,
              help="Campaign folder, new or empty (default: a new reports/campaign-<time>[-N]); with --resume, the "
                   "campaign's.")
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
def campaign(ctx: click.Context, target_spec: TargetSpec, space_file: Path | None, preset: str, strategy: str | None,
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
    if resume:
        given = ResumeOptions(target=_given(ctx, "target_spec", target_spec), seed=_given(ctx, "seed", seed),
                              budget=budget, preset=_given(ctx, "preset", preset), strategy=strategy,
                              space=space_file, corpus=corpus, parallel=parallel)
        plan = plan_resumed_campaign(out, given, echo)
    else:
        plan = plan_campaign(target=target_spec, seed=seed, preset=preset, budget=budget, strategy=strategy,
                             space=space_file, corpus=corpus, parallel=parallel, out=out, listener=echo)
    store, config, chosen = plan.store, plan.config, plan.preset
    k = config.parallel
    chains = f", {k} chains" if k > 1 else ""
    view = dashboard(title=f"collie campaign on {config.target} ({chosen.name}{chains}) -> {store.root}",
                     total=config.budget, every=max(10, config.budget // 10), no_live=no_live, quiet=quiet)
    run = open_campaign(plan, pace=pace, accept_new_host_keys=accept_new_host_keys, listener=view)
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
    info = store.config().target_info
    simulated = (f" on {config.target}, simulated (no hardware ran: {info.nic_model} is a simulator profile)"
                 if info is not None and info.simulated else "")
    click.echo(f"== done{simulated}: {spent(summary)}; "
               f"{counted(len(summary.anomalies), 'anomaly', 'anomalies')} in {out}{unminimized}{corpus_line}",
               err=True)
    if fmt == "json":
        emit(json.dumps(summary_dict(summary, out, info is not None and info.simulated), indent=2))
    else:
        emit(render(_summary_rows(summary), fmt, title=f"anomalies ({out})",
                    columns=["anomaly", "signature", "found_trial", "confirmed", "mfs"]))
