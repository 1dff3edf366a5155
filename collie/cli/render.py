"""The one output renderer of the CLI: rows of data as a rich table, JSON, JSON lines or CSV.

Every command that prints data builds a list of flat ``dict`` rows (or one ``dict``) and hands it here, so all
formats carry the same fields. Tables go to stdout through rich; errors never come here.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

FORMATS: Final = ("table", "json", "jsonl", "csv")

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # NaN and infinities are not JSON
        return None
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def render(
    rows: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    fmt: str,
    *,
    title: str | None = None,
    columns: Sequence[str] | None = None,
) -> str:
    """Render ``rows`` in ``fmt``; returns the text (the caller echoes it).

    Args:
        rows: a list of flat rows, or one mapping (rendered as a two-column key/value table).
        fmt: one of :data:`FORMATS`.
        title: table title (table format only).
        columns: column order; defaults to the union of keys in first-seen order.
    """
    if isinstance(rows, Mapping):
        if fmt == "json":
            return json.dumps(_jsonable(rows), indent=2)
        rows = [{"field": k, "value": v} for k, v in rows.items()]
    rows = list(rows)
    if columns is None:
        seen: dict[str, None] = {}
        for r in rows:
            for k in r:
                seen.setdefault(k, None)
        columns = list(seen)
    if fmt == "json":
        return json.dumps([_jsonable(dict(r)) for r in rows], indent=2)
    if fmt == "jsonl":
        return "\n".join(json.dumps(_jsonable(dict(r))) for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _csv_cell(r.get(k)) for k in columns})
        return buf.getvalue().rstrip("\n")
    return _table(rows, columns, title)


def _csv_cell(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str | None) -> str:
    from rich.markup import escape
    from rich.table import Table

    # data is never markup: "[Gb/s]" or "[0]: rx_bytes" must print as written
    table = Table(title=escape(title) if title else None, show_lines=False, header_style="bold")
    for c in columns:
        table.add_column(escape(c), overflow="fold")
    for r in rows:
        table.add_row(*(escape(_cell(r.get(c))) for c in columns))
    return _text(table)


def render_notes(notes: Sequence[tuple[str, str, str]]) -> str:
    """Long facts that do not fit a table cell, one per line as ``WHO  WHAT  TEXT``, aligned; a text longer than
    the terminal's width wraps under itself. Empty when there are none."""
    from rich.markup import escape
    from rich.table import Table

    if not notes:
        return ""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for who, what, text in notes:
        grid.add_row(escape(who), escape(what), escape(text))
    return _text(grid)


def _text(renderable: Any) -> str:
    """``renderable`` as plain text at the terminal's width (80 to 200 columns)."""
    from rich.console import Console

    console = Console(file=io.StringIO(), width=max(80, min(200, _terminal_width())), record=True,
                      force_terminal=False, color_system=None)
    console.print(renderable)
    return console.export_text().rstrip("\n")


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((120, 24)).columns


def emit(text: str) -> None:
    """Write rendered text to stdout."""
    click.echo(text)
