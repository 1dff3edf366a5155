"""``collie ci``: the CI gate. Replays every known case of a corpus, searches briefly, exits with the decision.

Exit codes (:class:`~collie.gate.ExitCode`): 0 clean, 1 anomalies found (a known case that still reproduces
unwaived, or a new anomaly), 2 a usage error, 3 the target or the infrastructure failed (the target cannot be
opened, its calibration failed, every run failed).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import click

from collie.campaign import CampaignInterrupted
from collie.cli.dashboard import dashboard, live_options
from collie.cli.listen import echo
from collie.cli.render import emit, render
from collie.cli.run_cmd import accept_keys_option, output_path, seed_option, target_option
from collie.errors import InputError
from collie.gate import ExitCode, GateResult, InfrastructureError, Waivers, load_waivers
from collie.services import open_gate, plan_gate
from collie.storage.files import check_writable
from collie.targets.kind import TargetSpec

DEFAULT_BUDGET = 60
DEFAULT_PRESET = "quick"


def _known_rows(result: GateResult) -> list[dict[str, Any]]:
    rows = []
    for k in result.known:
        note = "; ".join(n for n in (f"waived until {k.waiver.expires.isoformat()}: {k.waiver.reason}"
                                     if k.waiver else k.reason, k.target_note) if n)
        if k.expired is not None:
            note = f"{note}; " if note else ""
            note += f"expired on {k.expired.expires.isoformat()}: no longer waives"
        rows.append({"case": k.name, "recorded": k.recorded, "status": str(k.status), "now": k.signature,
                     "score": round(k.score, 3), "note": note})
    return rows


def _new_rows(result: GateResult) -> list[dict[str, Any]]:
    rows = []
    for n in result.new:
        status = "waived" if n.waiver else "NEW"
        if n.expired is not None and n.waiver is None:
            status += f" (waiver expired on {n.expired.expires.isoformat()})"
        rows.append({"anomaly": n.anomaly_id, "signature": n.signature, "mfs": n.mfs or "not minimized",
                     "confirmed": n.confirmed, "status": status})
    return rows


def _junit_target(path: Path | None) -> None:
    """Refuse a --junit file that cannot be written, before any experiment runs."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"--junit {path} is a folder; give a file name, e.g. {path / 'collie.xml'}")
    if not path.parent.is_dir():
        raise InputError(f"--junit {path}: the folder {path.parent} does not exist")
    check_writable(path.parent)


@click.command()
@target_option
@click.option("--corpus", type=click.Path(path_type=Path, exists=True, file_okay=False), required=True,
              help="Folder of known cases (case folders or workload files), e.g. workloads/corpus.")
@click.option("--budget", type=click.IntRange(min=1), default=DEFAULT_BUDGET, show_default=True,
              help="Experiments of the short search after the replays.")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path, dir_okay=True), default=None,
              help="Write the result as JUnit XML here (one test case per known case and per new anomaly).")
@click.option("--waive", "waive_file", type=click.Path(path_type=Path), default=None,
              help="TOML file of waivers: [[waiver]] signature, reason, expires (a date), optional case.")
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Search space of the short search (default: the whole space, workloads/default.toml; on "
                   "soft-RoCE in a small VM: workloads/softroce.toml).")
@seed_option
@click.option("--preset", default=DEFAULT_PRESET, show_default=True, help="Search preset for the short search.")
@click.option("--out", callback=output_path, default=None,
              help="The gate's campaign folder, new or empty (default: a new reports/ci-<time>[-N]); `collie "
                   "report` reads it.")
@live_options
@accept_keys_option
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True,
              help="Output format.")
def ci(target_spec: TargetSpec, corpus: Path, budget: int, junit_file: Path | None, waive_file: Path | None,
       space_file: Path | None, seed: int,
       preset: str, out: Path | None, no_live: bool, quiet: bool, accept_new_host_keys: bool, fmt: str) -> None:
    """Gate CI on a target: replay every known case of --corpus, then search --budget experiments for new ones.

    A known case that still reproduces fails the gate unless a waiver in force covers it; one that no longer
    reproduces is reported fixed; one recorded on another target is reported so, with how the targets differ,
    and decides nothing. Every new anomaly fails the gate unless waived. An expired waiver waives nothing and
    says so.

    \b
    Exit codes:
      0  clean: nothing reproduces or was found, or all of it is waived
      1  anomalies: a known case still reproduces unwaived, or the search found a new anomaly
      2  a usage error: a bad option, corpus or waiver file (one sentence says which)
      3  the target or the infrastructure failed: the target cannot be opened, or every run failed
    """
    waivers = load_waivers(waive_file) if waive_file is not None else Waivers()
    _junit_target(junit_file)
    plan = plan_gate(target_spec, corpus, budget=budget, seed=seed, preset=preset, space=space_file, out=out,
                     listener=echo)
    store = plan.store
    view = dashboard(title=f"collie ci on {target_spec}: {len(plan.corpus)} known cases, then {budget} experiments",
                     total=budget, every=max(10, budget // 10), no_live=no_live, quiet=quiet)
    gate = open_gate(plan, waivers, dt.date.today(), accept_new_host_keys=accept_new_host_keys, listener=view)
    try:
        with view:
            result = gate.run()
    except InfrastructureError as exc:
        click.echo(f"collie: error: {exc}", err=True)
        sys.exit(int(ExitCode.INFRASTRUCTURE))
    except CampaignInterrupted:
        click.echo(f"collie: interrupted; the gate's campaign so far is in {store.root}", err=True)
        sys.exit(130)
    for k in result.known:
        if k.expired is not None and k.waiver is None:
            click.echo(f"warning: the waiver for {k.name} ({k.expired.signature}) expired on "
                       f"{k.expired.expires.isoformat()}; it no longer waives", err=True)
    for n in result.new:
        if n.expired is not None and n.waiver is None:
            click.echo(f"warning: the waiver for {n.expired.signature} expired on {n.expired.expires.isoformat()}; "
                       f"it no longer waives {n.anomaly_id}", err=True)
    if fmt == "json":
        emit(json.dumps(result.to_dict(), indent=2))
    else:
        emit(render(_known_rows(result), "table", title=f"known cases of {corpus} on {target_spec}"))
        if result.new:
            emit(render(_new_rows(result), "table", title=f"new anomalies ({result.experiments} experiments)"))
        else:
            emit(f"new anomalies: none in {result.experiments} experiments")
    if junit_file is not None:  # after the output: a failed write loses nothing the gate found
        from collie.gate.junit import write_junit

        try:
            write_junit(result, junit_file)
        except OSError as exc:
            raise InputError(f"the result above could not be written to {junit_file}: {exc.strerror or exc}") from None
    click.echo(f"{result.verdict()} (campaign folder: {result.out})", err=True)
    sys.exit(int(result.exit_code))
