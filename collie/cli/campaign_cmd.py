"""``collie campaign``: search a target for anomalies, minimize them and save replayable cases."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from collie.campaign import Campaign, CampaignInterrupted, CampaignSummary
from collie.cases import CorpusCase, load_corpus
from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import pace_option, seed_option, target_option
from collie.errors import InputError
from collie.events import AnomalyFound, Event, KnownAnomaly, MfsFinished, PhaseStarted, TrialFinished, Warning
from collie.preset import DEFAULT_PRESET, load_preset
from collie.space import load_space
from collie.store import CampaignStore
from collie.strategies import STRATEGIES
from collie.targets import open_target


def _progress(every: int) -> Any:
    """A plain line logger for campaign events (stderr, so stdout stays data)."""

    def listen(event: Event) -> None:
        if isinstance(event, PhaseStarted):
            click.echo(f"== {event.phase}: {event.detail}", err=True)
        elif isinstance(event, TrialFinished):
            if event.phase == "explore" and event.experiments % every == 0 and event.status != "PRUNED":
                click.echo(f"   {event.experiments} experiments", err=True)
            if event.status == "FAILED":
                click.echo(f"   trial {event.trial} FAILED: {event.reason}", err=True)
        elif isinstance(event, AnomalyFound):
            if not event.mfs:  # the budget ran out first (a warning said so)
                state, what = "not minimized", "saved as found"
            else:
                state, what = "confirmed" if event.confirmed else "NOT confirmed after minimizing", event.mfs
            click.echo(f"!! {event.anomaly_id} [{event.signature}] after {event.experiments} experiments "
                       f"({event.minimize_experiments} to confirm and minimize, {state}): {what}", err=True)
        elif isinstance(event, KnownAnomaly):
            widened = f"; its MFS widened to {event.widened}" if event.widened else ""
            click.echo(f"   trial {event.trial}: known anomaly {event.anomaly_id}{widened}", err=True)
        elif isinstance(event, MfsFinished):
            click.echo(f"   {event.anomaly_id}: edges finished ({event.experiments} experiments): {event.mfs}",
                       err=True)
        elif isinstance(event, Warning):
            click.echo(f"warning: {event.message}", err=True)

    return listen


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


@click.command()
@target_option
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space file (default: the paper's space).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True,
              help="Search preset: collie, random, bayes, quick, or a .toml file.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=None, help="Override the preset's strategy.")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Experiments to spend (explore + confirm + minimize); default from the preset.")
@seed_option
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Campaign folder (default: reports/campaign-<time>).")
@click.option("--corpus", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
              help="Folder of known cases (case.toml + mfs.json) replayed first.")
@click.option("--resume", is_flag=True, help="Continue the campaign in --out with the same budget and stream.")
@click.option("--no-live", is_flag=True, help="Plain progress lines only (the live dashboard comes later).")
@pace_option
@format_option
def campaign(target_spec: str, space_file: Path | None, preset: str, strategy: str | None, budget: int | None,
             seed: int, out: Path | None, corpus: Path | None, resume: bool, no_live: bool, pace: float,
             fmt: str) -> None:
    """Search a target for anomalies, minimize each one, and save replayable cases."""
    if resume:
        if out is None:
            raise InputError("--resume needs --out DIR, the folder of the campaign to continue")
        store = CampaignStore.open(out)
        cfg = store.config()
        target_spec, seed, budget = cfg["target"], int(cfg["seed"]), int(cfg["budget"])
        preset, space_file = cfg["preset"], Path(cfg["space"]) if cfg.get("space") else None
        strategy = cfg["strategy"]
        corpus = Path(cfg["corpus"]) if cfg.get("corpus") else None
    chosen = load_preset(preset)
    if strategy is not None and strategy != chosen.strategy:
        from dataclasses import replace

        chosen = replace(chosen, strategy=strategy, strategy_options={})
    space = load_space(space_file)
    known_cases = _corpus(corpus)
    target = open_target(target_spec, seed=seed, pace=pace)
    final_budget = budget or chosen.budget
    if not resume:
        out = out or Path("reports") / time.strftime("campaign-%Y%m%d-%H%M%S")
        store = CampaignStore.create(out, {
            "target": target_spec, "seed": seed, "budget": final_budget, "preset": preset,
            "strategy": chosen.strategy, "space": str(space_file) if space_file else "",
            "corpus": str(corpus.resolve()) if corpus else "",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })
    assert out is not None
    run = Campaign(target=target, space=space, preset=chosen, store=store, seed=seed, budget=final_budget,
                   listener=_progress(max(10, final_budget // 10)), corpus=known_cases, resume=resume)
    try:
        summary = run.run()
    except CampaignInterrupted:
        click.echo(f"collie: interrupted; the journal is safe. Continue with: collie campaign --resume --out {out}",
                   err=True)
        raise SystemExit(130) from None
    corpus_line = (f"; {len(summary.corpus_reproduced)} of {summary.replayed} known cases reproduced"
                   if summary.replayed else "")
    click.echo(f"== done: {summary.experiments} experiments ({summary.minimize_experiments} minimizing, "
               f"{summary.calibration} calibration, {summary.pruned} pruned, {summary.failed} failed); "
               f"{len(summary.anomalies)} anomalies in {out}{corpus_line}", err=True)
    if fmt == "json":
        emit(json.dumps({"out": str(out), "experiments": summary.experiments,
                         "minimize_experiments": summary.minimize_experiments, "pruned": summary.pruned,
                         "failed": summary.failed, "known_hits": summary.known_hits,
                         "replayed": summary.replayed, "corpus_reproduced": summary.corpus_reproduced,
                         "anomalies": _summary_rows(summary)}, indent=2))
    else:
        emit(render(_summary_rows(summary), fmt, title=f"anomalies ({out})",
                    columns=["anomaly", "signature", "found_at", "confirmed", "mfs"]))
