"""``collie import perftest|nccl-tests LOG... -o DIR``: measurements another tool made, into an import folder
that ``collie report`` renders (:mod:`collie.storage.imports`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from collie.campaign import CampaignInterrupted
from collie.cli.dashboard import dashboard, live_options
from collie.cli.listen import Deferred
from collie.cli.run_cmd import accept_keys_option, output_path
from collie.errors import InputError
from collie.importers.nccl_tests import NcclTestsLog
from collie.services import RerunPlan, parsed_target, plan_rerun, plan_resumed_rerun, run_rerun
from collie.storage.imports import ImportFolder, ImportTool, import_logs
from collie.targets.registry import DEFAULT_TARGET


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _summary(folder: ImportFolder) -> list[str]:
    """One line per log: what was read from it."""
    lines = []
    for log in folder.logs:
        parsed = log.parsed
        if isinstance(parsed, NcclTestsLog):
            parts = [f"{c.name or 'unnamed collective'} ({_count(len(c.rows), 'size')})" for c in parsed.collectives]
        else:
            parts = [f"{r.title or 'untitled run'} ({_count(len(r.rows), 'row')})" for r in parsed.runs]
        lines.append(f"{log.name}: {', '.join(parts)}")
    return lines


def _import(tool: ImportTool, logs: tuple[Path, ...], out: Path) -> None:
    folder = import_logs(tool, list(logs), out)
    for line in _summary(folder):
        click.echo(line)
    for warning in folder.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"imported {_count(len(folder.logs), tool.value + ' log')} into {out}; collie report {out}", err=True)


_OUT = click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
                    help="A new or empty folder to import into.")
_LOGS = click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))


@click.group("import")
def import_group() -> None:
    """Measurements another tool made (perftest sweeps, nccl-tests logs), for collie report; rerun runs an
    import's perftest rows on a target, for collie report --compare IMPORT_DIR RERUN_DIR.

    The logs are kept byte for byte in the folder (DIR/logs/) with a record of where they came from
    (DIR/import.json); collie report DIR renders them. A log collie cannot read is refused with one sentence
    naming its file and line, and nothing is written; a run cut short is imported with the rows it has and a
    warning.
    """


@import_group.command("perftest")
@_LOGS
@_OUT
def perftest(logs: tuple[Path, ...], out: Path) -> None:
    """Outputs of ib_write_bw, ib_read_lat and the other perftest tools (text, or the JSON of --out_json).

    Each row becomes a workload (the flow shape the run's header states) and its measured result.
    """
    _import(ImportTool.PERFTEST, logs, out)


@import_group.command("nccl-tests")
@_LOGS
@_OUT
def nccl_tests(logs: tuple[Path, ...], out: Path) -> None:
    """Outputs of all_reduce_perf, alltoall_perf and the other nccl-tests programs (one or several collectives
    per log): every size row with its out-of-place and in-place time, algbw, busbw and #wrong, and the ranks."""
    _import(ImportTool.NCCL_TESTS, logs, out)


def _target(ctx: click.Context, param: click.Parameter, value: str) -> Any:
    return parsed_target(value)


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options of ``names`` the user gave (not left at their defaults)."""
    return [f"--{n.replace('_', '-')}" for n in names
            if ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)]


def _skipped_lines(plan: RerunPlan) -> list[str]:
    """One line per log and reason: how many of its rows have no workload."""
    counts = Counter((s.log, s.reason) for s in plan.record.skipped)
    return [f"skipped {_count(n, 'row')} of {log}: {reason}" for (log, reason), n in counts.items()]


@import_group.command("rerun")
@click.argument("import_dir", type=click.Path(path_type=Path))
@click.option("--target", "target_text", default=DEFAULT_TARGET, show_default=True, callback=_target,
              help="Where to run the rows' workloads: sim, sim:PROFILE, sim:PATH.toml, verbs:DEVICE[:PORT[:GID]], "
                   "remote:HOSTS.toml.")
@click.option("-o", "--out", required=True, callback=output_path,
              help="A new or empty folder for the rerun (a campaign folder); with --resume, the rerun's.")
@click.option("--duration", type=click.FloatRange(min=0.1, max=3600.0), default=5.0, show_default=True,
              help="Seconds of traffic per run (calibration runs: at most 5 s each).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs of each workload (the comparison takes their mean and shows their spread).")
@click.option("--no-verdict", is_flag=True, help="Do not calibrate, and judge no run (no verdicts).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Simulator noise seed.")
@click.option("--resume", is_flag=True,
              help="Continue the interrupted rerun in -o (same import; its own target and options): the runs its "
                   "journal holds are read back, not run again.")
@live_options
@accept_keys_option
@click.pass_context
def rerun(ctx: click.Context, import_dir: Path, target_text: Any, out: Path, duration: float, repeat: int,
          no_verdict: bool, seed: int, resume: bool, no_live: bool, quiet: bool, accept_new_host_keys: bool) -> None:
    """Run every imported perftest row's workload on a target, as a campaign folder beside the import.

    Each distinct workload runs --repeat times (rows whose run collie cannot express are skipped and counted),
    after a calibration that gives each run a verdict (unless --no-verdict). Every run is journaled as it ends:
    collie report OUT renders the rerun, collie report --compare IMPORT_DIR OUT sets it beside the import.

    \b
    Exit codes:
      0    done
      2    a usage mistake (not a perftest import folder, an out folder that is not new or empty, a bad target)
      130  interrupted (continue with --resume)
    """
    if resume:
        given = _given(ctx, ("target_text", "duration", "repeat", "no_verdict", "seed"))
        if given:
            raise InputError(f"--resume continues the rerun with its own options; drop {', '.join(given)}")
        plan = plan_resumed_rerun(import_dir, out)
    else:
        plan = plan_rerun(import_dir, target=target_text, out=out, duration=duration, repeat=repeat,
                          verdict=not no_verdict, seed=seed)
    record = plan.record
    click.echo(f"rerunning {_count(len(record.rows), 'row')} of {import_dir} ({_count(len(plan.workloads), 'workload')}"
               f" x {record.repeat}) on {record.target} into {plan.store.root}", err=True)
    for line in _skipped_lines(plan):
        click.echo(line, err=True)
    view = dashboard(title=f"collie import rerun of {import_dir} on {record.target} -> {plan.store.root}",
                     total=plan.trials, every=max(1, plan.trials // 10), no_live=no_live, quiet=quiet, each=("replay",))
    try:
        with Deferred(view) as listen:
            summary = run_rerun(plan, accept_new_host_keys=accept_new_host_keys, listener=listen)
    except CampaignInterrupted:
        click.echo(f"collie: interrupted; the journal is safe. Continue with: collie import rerun {import_dir} "
                   f"--resume -o {plan.store.root}", err=True)
        raise SystemExit(130) from None
    judged = f", {summary.anomalous} anomalous" if record.verdict else " (not judged: --no-verdict)"
    engine = f", {summary.engine_bound} engine-bound runs not judged" if summary.engine_bound else ""
    click.echo(f"== done: {_count(summary.complete, 'run')} of {_count(summary.workloads, 'workload')}{judged}, "
               f"{summary.failed} failed, {summary.pruned} pruned, {summary.calibration} calibration{engine}; "
               f"{_count(summary.skipped, 'row')} skipped. collie report {summary.out}; collie report --compare "
               f"{import_dir} {summary.out}", err=True)
