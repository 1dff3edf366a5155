"""``collie replay`` and ``collie minimize``: re-check a saved case, and shrink one, on the target it was found on.

A case folder records the target it was found on (a folder from before that: its campaign's ``campaign.toml``
does); both commands run there unless ``--target`` says otherwise, and then say what differs. A recorded target
that cannot be opened is an error, never a pass. A bare workload file records no target: it runs on the default
target (``sim``) with a warning, as ``collie run`` would; a case folder that records none needs ``--target``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from collie.campaign.runlog import RunLog
from collie.cli.dashboard import dashboard, live_options
from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import accept_keys_option, canonical_target, seed_option
from collie.errors import CollieError, InputError, TargetError, TargetUnavailable
from collie.events import PhaseStarted, TrialFinished, TrialStarted, counted
from collie.model.space import load_space
from collie.preset import DEFAULT_PRESET, load_preset
from collie.storage.case import EVIDENCE_FILE, CaseRecord, OriginalFind, TargetRecord
from collie.storage.corpus import Case, RecordedTarget, load_case, oracle_for, recorded_target
from collie.storage.records import TrialState
from collie.targets import DEFAULT_TARGET, open_target
from collie.targets.base import Target, TargetInfo

case_argument = click.argument("case", type=click.Path(path_type=Path, exists=True))
case_target_option = click.option(
    "--target", "target_spec", default=None, callback=canonical_target,
    help="Target to run the case on: sim, sim:PROFILE, sim:PATH.toml, verbs:DEVICE[:PORT[:GID]], remote:HOSTS.toml "
         "(default: the "
         "target the case was found on; a bare workload file: sim, with a warning).")


def choose_target(case: Case, given: str | None) -> tuple[str, RecordedTarget | None]:
    """The target spec to run ``case`` on, and where the case was found (None: unknown).

    Raises:
        InputError: a case folder that records no target, and no ``--target``.
    """
    recorded = recorded_target(case)
    if given is not None:
        return given, recorded
    if recorded is not None:
        return recorded.target.spec, recorded
    if case.path.is_dir():
        raise InputError(f"{case.path} does not record the target it was found on (a case folder from an older "
                         f"collie, outside its campaign); give --target, e.g. --target {DEFAULT_TARGET}")
    click.echo(f"warning: {case.path} is a workload file, which records no target; running it on the default "
               f"target {DEFAULT_TARGET} (give --target to choose)", err=True)
    return DEFAULT_TARGET, None


@contextmanager
def opened(case: Case, spec: str, recorded: RecordedTarget | None, given: bool, seed: int,
           accept_new_host_keys: bool = False) -> Iterator[tuple[Target, TargetInfo]]:
    """Open and enter the target ``spec`` for ``case``; say on stderr how it differs from where the case was
    found. A target taken from the record that cannot be opened is one sentence saying so (exit 2).

    Raises:
        TargetError: the target cannot be opened.
    """
    try:
        target = open_target(spec, seed=seed, accept_new_host_keys=accept_new_host_keys)
        target.__enter__()
    except TargetUnavailable:  # remote hosts that cannot be reached: their own sentence, exit 3
        raise
    except Exception as exc:  # any failure to open is one sentence, never a traceback
        why = str(exc) if isinstance(exc, CollieError) else f"{type(exc).__name__}: {exc}"
        if recorded is not None and not given:
            raise TargetError(f"{case.path} was found on {spec} (as {recorded.source} records), which cannot be "
                              f"opened here: {why}; give --target to run it on another target") from None
        if isinstance(exc, CollieError):
            raise
        raise TargetError(f"the target {spec} cannot be opened: {why}") from None
    try:
        info = target.describe()
        if recorded is not None:
            _say_differences(case, spec, recorded, info, given)
        yield target, info
    finally:
        target.__exit__(None, None, None)


def _say_differences(case: Case, spec: str, recorded: RecordedTarget, info: TargetInfo, given: bool) -> None:
    diffs = recorded.target.differences(spec, info)
    found = f"{case.path} was found on {recorded.target.spec}"
    if not diffs:
        click.echo(f"{found}; running it there", err=True)
    elif given and spec != recorded.target.spec:
        click.echo(f"note: {found}; running it on {spec} instead, which differs: {', '.join(diffs)}", err=True)
    else:
        click.echo(f"warning: {found}, and the target differs from the one it was found on: {', '.join(diffs)}",
                   err=True)


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
def replay(case: Path, target_spec: str | None, runs: int, duration: float, seed: int, accept_new_host_keys: bool,
           no_live: bool, quiet: bool,
           fmt: str) -> None:
    """Re-run a saved case (a case folder or a workload file) on the target it was found on.

    \b
    Exit codes:
      0  it does not reproduce (anomalous in at most half the runs)
      1  it reproduces (anomalous in more than half the runs)
      2  an error: a damaged case file, a case folder that records no target and no --target, a target that
         cannot be opened or cannot run the case; never a pass
      3  a remote target whose hosts cannot be reached; never a pass
    """
    from collie.targets.base import Unsupported

    c = load_case(case)
    spec, recorded = choose_target(c, target_spec)
    rows: list[dict[str, Any]] = []
    hits = 0
    view = dashboard(title=f"collie replay of {case} on {spec}", total=runs, every=1, no_live=no_live, quiet=quiet,
                     each=("replay",))
    with opened(c, spec, recorded, target_spec is not None, seed, accept_new_host_keys) as (target, _), view:
        view(PhaseStarted("calibrate", "the target's ceilings (its campaign's, when the case ran there)"))
        oracle, _ = oracle_for(c, target, spec, load_preset(DEFAULT_PRESET).thresholds)
        view(PhaseStarted("replay", f"{counted(runs, 'run')} of {duration:g} s"))
        for i in range(runs):
            view(TrialStarted(i + 1, "replay", {}))
            try:
                result = target.run(c.workload, duration)
            except Unsupported as exc:
                raise TargetError(f"{spec} cannot run this case: {exc}") from None
            v = oracle.judge(result, c.workload)
            view(TrialFinished(i + 1, "replay", TrialState.COMPLETE, i + 1, {}, v, result))
            hits += v.anomalous
            rows.append({"run": i + 1, "anomalous": v.anomalous, "signature": v.signature,
                         "throughput": round(v.metrics.get("throughput", 0.0), 3), "score": round(v.score, 2)})
    emit(render(rows, fmt, title=f"replay of {case} on {spec}: {hits} of {runs} anomalous"))
    reproduced = hits * 2 > runs
    own = c.record.evidence
    recorded_sig = f"; the case recorded {own.signature}" if own is not None else ""
    click.echo(f"{'reproduces' if reproduced else 'does not reproduce'} ({hits} of {runs} runs anomalous"
               f"{recorded_sig})", err=True)
    raise SystemExit(1 if reproduced else 0)


def _start_point(c: Case, space: Any) -> dict[str, Any]:
    """Where minimizing starts: the original find's point if the case records one, else the case's own.

    Raises:
        InputError: a recorded point that is not a legal point of ``space`` (naming the file and the field).
    """
    original = c.record.original
    if original is None:
        return dict(space.point_of(c.workload))
    point = dict(original.point)
    problems = space.problems(point)
    if problems:
        field = "original.point" if c.record.format >= 2 else "original_point"
        raise InputError(f"{c.path / EVIDENCE_FILE}: {field}: {problems[0][1]}")
    return point


@click.command()
@case_argument
@case_target_option
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space the case is a point of (default: the paper's space).")
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help="Preset for thresholds and runs.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Save the result as a case folder here (case.toml, mfs.json, evidence.json), e.g. for --corpus.")
@seed_option
@accept_keys_option
@live_options
@format_option
def minimize(case: Path, target_spec: str | None, space_file: Path | None, preset: str, out_dir: Path | None,
             seed: int, accept_new_host_keys: bool, no_live: bool, quiet: bool, fmt: str) -> None:
    """Find the minimal feature set and the simplest case of a saved anomaly, on the target it was found on.

    \b
    Exit codes:
      0  minimized (the result is printed, and saved with --out)
      2  an error: a damaged case file, a case folder that records no target and no --target, a target that
         cannot be opened, a case that is not anomalous there
    """
    from collie.minimize import Minimizer, MinimizeSettings
    from collie.model.workload import Workload
    from collie.storage.campaign import check_writable
    from collie.targets.base import Unsupported

    if out_dir is not None:  # before any experiment: a result must have somewhere to go
        if out_dir.exists():
            raise InputError(f"{out_dir} already exists; give --out a new folder for the minimized case")
        try:
            out_dir.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the folder {out_dir.parent}: {exc.strerror}") from None
        check_writable(out_dir.parent)
    c = load_case(case)
    chosen = load_preset(preset)
    space = load_space(space_file)
    point = _start_point(c, space)
    spec, recorded = choose_target(c, target_spec)
    log = RunLog()
    view = dashboard(title=f"collie minimize {case} on {spec}", total=None, every=1, no_live=no_live, quiet=quiet,
                     each=("minimize",))
    with opened(c, spec, recorded, target_spec is not None, seed, accept_new_host_keys) as (target, info), view:
        view(PhaseStarted("calibrate", "the target's ceilings (its campaign's, when the case ran there)"))
        oracle, calibration = oracle_for(c, target, spec, chosen.thresholds)
        view(PhaseStarted("minimize", f"preset {chosen.name}, {chosen.duration:g} s per experiment"))
        spent = 0

        def run(p: Mapping[str, Any]) -> Any:
            nonlocal spent
            w = space.build(p)
            spent += 1
            view(TrialStarted(spent, "minimize", dict(p)))
            try:
                result = target.run(w, chosen.duration)
            except Unsupported as exc:
                view(TrialFinished(spent, "minimize", TrialState.PRUNED, spent, dict(p), reason=str(exc)))
                return None
            verdict = oracle.judge(result, w)
            view(TrialFinished(spent, "minimize", TrialState.COMPLETE, spent, dict(p), verdict, result))
            return verdict

        probe = log.watch(run)
        verdict = probe(point)
        if verdict is None or not verdict.anomalous:
            raise InputError(f"{case} is not anomalous on {spec}: nothing to minimize")
        result = Minimizer(space, probe, chosen.minimize or MinimizeSettings()).run(point, verdict)
    simplest = space.build(result.point)
    out = {"signature": verdict.signature, "mfs": result.mfs.describe(), "confirmed": result.confirmed,
           "experiments": result.experiments, "calibration": calibration, "target": spec,
           "case": simplest.to_dict()}
    if fmt == "json":
        emit(json.dumps(out, indent=2))
    else:
        emit(render({k: v for k, v in out.items() if k != "case"}, fmt, title=f"minimized {case}"))
        if fmt == "table":
            emit(simplest.to_toml())
    if out_dir is not None:  # after the output: a failed save loses nothing the experiments found
        from collie.storage.case import write_case_folder

        named = Workload(simplest.flows, name=out_dir.name,
                         description=f"{verdict.signature}; MFS: {result.mfs.describe()}")
        record = CaseRecord(
            anomaly_id=out_dir.name, signature=verdict.signature, confirmed=result.confirmed, workload=named,
            mfs=result.mfs, target=TargetRecord(spec, info), evidence=log.evidence(result.point, verdict.leading),
            original=OriginalFind(dict(point), verdict), minimize_experiments=result.experiments,
            minimize_steps=len(result.steps), minimized_from=str(case))
        try:
            write_case_folder(out_dir, record)
        except OSError as exc:
            raise InputError(f"the result above could not be saved to {out_dir}: {exc.strerror or exc}") from None
