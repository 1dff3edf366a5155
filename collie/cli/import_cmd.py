"""``collie import perftest|nccl-tests LOG... -o DIR``: measurements another tool made, into an import folder
that ``collie report`` renders (:mod:`collie.storage.imports`)."""

from __future__ import annotations

from pathlib import Path

import click

from collie.importers.nccl_tests import NcclTestsLog
from collie.storage.imports import ImportFolder, ImportTool, import_logs


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
    """Measurements another tool made (perftest sweeps, nccl-tests logs), for collie report.

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
