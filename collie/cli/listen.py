"""How the CLI listens to a service: notes and warnings printed on stderr, progress drawn by a dashboard that is
started only once the experiments start (what comes before, e.g. how a target differs, stays above it)."""

from __future__ import annotations

from types import TracebackType

import click

from collie.cli.dashboard import Dashboard
from collie.events import Warned
from collie.services.events import Note, ServiceEvent


def echo(event: ServiceEvent) -> None:
    """Print a note or a warning on stderr (before a command's dashboard exists); ignore progress."""
    if isinstance(event, Note):
        click.echo(event.text, err=True)
    elif isinstance(event, Warned):
        click.echo(f"warning: {event.message}", err=True)


class Deferred:
    """A listener that prints notes on stderr and hands every other event to ``view``, entering it at the first
    one; use it as a context (it leaves ``view`` if it entered it)."""

    def __init__(self, view: Dashboard) -> None:
        self.view = view
        self._entered = False

    def __enter__(self) -> Deferred:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._entered:
            self._entered = False
            self.view.__exit__(kind, exc, tb)

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, Note):
            click.echo(event.text, err=True)
            return
        if not self._entered:
            self.view.__enter__()
            self._entered = True
        self.view(event)
