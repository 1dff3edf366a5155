"""``collie replay`` and ``collie minimize``: re-check a saved case, and shrink one, on the target it was found on.

A case folder records the target it was found on (a folder from before that: its campaign's ``campaign.toml``
does); both commands run there unless ``--target`` says otherwise, and then say what differs. A recorded target
that cannot be opened is an error, never a pass. A bare workload file records no target: it runs on the default
target (``sim``) with a warning, as ``collie run`` would; a case folder that records none needs ``--target``.
The work is :mod:`collie.services.cases`'s; this module parses the options and renders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from collie.cli.dashboard import dashboard, live_options
from collie.cli.listen import Deferred, echo
from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import accept_keys_option, output_path, parsed_target, seed_option
from collie.preset import DEFAULT_PRESET
from collie.services import check_new_folder, locate_case, minimize_case, plan_minimize, replay_case, save_minimized
from collie.targets.kind import TargetSpec

case_argument = click.argument("case", type=click.Path(path_type=Path, exists=True))
case_target_option = click.option(
    "--target", "target_spec", default=None, callback=parsed_target,
    help="Target to run the case on: sim, sim:PROFILE, sim:PATH.toml, verbs:DEVICE[:PORT[:GID]], remote:HOSTS.toml "
         "(default: the "
         "target the case was found on; a bare workload file: sim, with a warning).")


@click.command()
@case_argument
@case_target_option
@click.option("--runs", type=click.IntRange(min=1, max=100), default=3, show_default=True,
              help="Times to run the case.")
@click.option("--duration", type=click.FloatRange(min=0.1, max=3600.0), default=5.0, show_default=True)
@seed_option
@accept_keys_option
@live_options
@format_option
def replay(case: Path, target_spec: TargetSpec | None, runs: int, duration: float, seed: int,
           accept_new_host_keys: bool, no_live: bool, quiet: bool, fmt: str) -> None:
    """Re-run a saved case (a case folder or a workload file) on the target it was found on.

    \b
    Exit codes:
      0  it does not reproduce (anomalous in at most half the runs)
      1  it reproduces (anomalous in more than half the runs)
      2  an error: a damaged case file, a case folder that records no target and no --target, a target that
         cannot be opened or cannot run the case; never a pass
      3  a remote target whose hosts cannot be reached; never a pass
    """
    located = locate_case(case, target_spec, echo)
    view = dashboard(title=f"collie replay of {case} on {located.spec}", total=runs, every=1, no_live=no_live,
                     quiet=quiet, each=("replay",))
    with Deferred(view) as listen:
        replayed = replay_case(located, runs=runs, duration=duration, seed=seed,
                               accept_new_host_keys=accept_new_host_keys, listener=listen)
    rows: list[dict[str, Any]] = [
        {"run": i + 1, "anomalous": v.anomalous, "signature": v.signature,
         "throughput": round(v.metrics.get("throughput", 0.0), 3), "score": round(v.score, 2)}
        for i, v in enumerate(replayed.verdicts)]
    hits = replayed.hits
    emit(render(rows, fmt, title=f"replay of {case} on {located.spec}: {hits} of {runs} anomalous"))
    own = located.case.record.evidence
    recorded_sig = f"; the case recorded {own.signature}" if own is not None else ""
    click.echo(f"{'reproduces' if replayed.reproduced else 'does not reproduce'} ({hits} of {runs} runs anomalous"
               f"{recorded_sig})", err=True)
    raise SystemExit(1 if replayed.reproduced else 0)


@click.command()
@case_argument
@case_target_option
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space the case is a point of (default: the one its folder records, else the one its "
                   "campaign searched, else the whole space, workloads/default.toml).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help="Preset for thresholds and runs.")
@click.option("--out", "out_dir", callback=output_path, default=None,
              help="Save the result as a case folder here, new or empty (case.toml, mfs.json, evidence.json), e.g. "
                   "for --corpus.")
@seed_option
@accept_keys_option
@live_options
@format_option
def minimize(case: Path, target_spec: TargetSpec | None, space_file: Path | None, preset: str, out_dir: Path | None,
             seed: int, accept_new_host_keys: bool, no_live: bool, quiet: bool, fmt: str) -> None:
    """Find the minimal feature set and the simplest case of a saved anomaly, on the target it was found on.

    \b
    Exit codes:
      0  minimized (the result is printed, and saved with --out)
      2  an error: a damaged case file, a case folder that records no target and no --target, a target that
         cannot be opened, a case that is not anomalous there
    """
    if out_dir is not None:  # before any experiment: a result must have somewhere to go
        check_new_folder(out_dir)
    plan = plan_minimize(case, target_spec, space_file, preset, echo)
    spec = plan.located.spec
    view = dashboard(title=f"collie minimize {case} on {spec}", total=None, every=1, no_live=no_live, quiet=quiet,
                     each=("minimize",))
    with Deferred(view) as listen:
        minimized = minimize_case(plan, seed=seed, accept_new_host_keys=accept_new_host_keys, listener=listen)
    result, simplest = minimized.result, minimized.simplest
    out = {"signature": minimized.signature, "mfs": result.mfs.describe(), "confirmed": result.confirmed,
           "experiments": result.experiments, "calibration": minimized.calibration, "target": spec,
           "case": simplest.to_dict()}
    if fmt == "json":
        emit(json.dumps(out, indent=2))
    else:
        emit(render({k: v for k, v in out.items() if k != "case"}, fmt, title=f"minimized {case}"))
        if fmt == "table":
            emit(simplest.to_toml())
    if out_dir is not None:  # after the output: a failed save loses nothing the experiments found
        save_minimized(minimized, out_dir)
