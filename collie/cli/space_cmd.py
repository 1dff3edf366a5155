"""``collie space show``: the dimensions, ranges and constraints of a search space."""

from __future__ import annotations

from pathlib import Path

import click

from collie.cli.render import emit, format_option, render
from collie.model.space import constraint_rows, load_space


@click.group()
def space() -> None:
    """Inspect search spaces (workloads/default.toml is the whole space, workloads/paper.toml the Collie paper's)."""


@space.command("show")
@click.option("--space", "space_file", type=click.Path(path_type=Path), default=None,
              help="Space file (default: the built-in paper space).")
@format_option
def show(space_file: Path | None, fmt: str) -> None:
    """Show every parameter (searched or fixed), its domain and the legality constraints."""
    s = load_space(space_file)
    if fmt == "json":
        emit(render({"name": s.name, "description": s.description, "parameters": s.rows(),
                     "constraints": constraint_rows()}, "json"))
        return
    emit(render(s.rows(), fmt, title=f"search space {s.name}"))
    if fmt == "table":
        emit(render(constraint_rows(), fmt, title="constraints"))
