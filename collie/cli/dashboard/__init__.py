"""The live dashboard of long commands (``campaign``, ``ci``, ``minimize``, ``replay``), subscribed to events.

A :class:`Dashboard` is an event listener the CLI hands to the library (which never prints). In a terminal it
draws a rich ``Live`` view: a progress bar with experiments, rate and ETA; the phase, current point and
temperature; the driven counters as sparklines; the anomalies so far; the last verdicts; the hosts. When stdout
or stderr is not a terminal, or with ``--no-live``, it writes the plain log lines of
:mod:`collie.cli.dashboard.plain` instead; ``--quiet`` keeps only warnings. It draws on stderr: stdout stays
data.
"""

from __future__ import annotations

import sys
import threading
from enum import StrEnum
from types import TracebackType
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from collie.cli.dashboard.plain import plain_line
from collie.cli.dashboard.state import DashboardState
from collie.cli.dashboard.view import layout
from collie.events import AnomalyFound, Event, MfsFinished, TrialFinished, Warned
from collie.storage.records import TrialState

__all__ = ["Dashboard", "DashboardState", "Mode", "choose_mode", "dashboard", "live_options", "plain_line"]


class Mode(StrEnum):
    """How a dashboard shows progress."""

    LIVE = "live"  # a rich Live view on a terminal
    PLAIN = "plain"  # log lines
    QUIET = "quiet"  # warnings only


def choose_mode(console: Console, *, no_live: bool = False, quiet: bool = False) -> Mode:
    """Live only on a terminal (both the console's stream and stdout), unless ``--no-live`` or ``--quiet``."""
    if quiet:
        return Mode.QUIET
    if no_live or not console.is_terminal or not sys.stdout.isatty():
        return Mode.PLAIN
    return Mode.LIVE


class _Rate(ProgressColumn):
    """Experiments per second (per minute when slower than one per second, as on hardware)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("- exp/s")
        return Text(f"{speed:.2f} exp/s" if speed >= 1 else f"{speed * 60:.2f} exp/min")


class Dashboard:
    """An event listener that shows a command's progress (see the module docstring); use it as a context.

    Args:
        console: where to draw (the CLI's is on stderr).
        mode: see :class:`Mode`.
        title: what runs where, for the panel's title.
        total: experiments the budget allows (None: unknown, the bar pulses).
        every: plain mode logs explore progress every this many experiments.
        each: phases whose every finished trial gets a plain line (a replay's runs, a minimization's probes).
    """

    def __init__(self, console: Console, mode: Mode, *, title: str = "", total: int | None = None,
                 every: int = 10, each: tuple[str, ...] = ()) -> None:
        self.console = console
        self.mode = mode
        self.every = max(1, every)
        self.each = frozenset(each)
        self.state = DashboardState(title=title, total=total)
        self._lock = threading.RLock()
        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("experiments"), _Rate(), TimeElapsedColumn(), TextColumn("ETA"),
                                  TimeRemainingColumn(), console=console, auto_refresh=False)
        self._task: TaskID = self._progress.add_task("starting", total=total)
        self._live: Live | None = None

    def __enter__(self) -> Dashboard:
        if self.mode is Mode.LIVE:
            self._live = Live(console=self.console, get_renderable=self.render, refresh_per_second=4,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._live is not None:
            with self._lock:
                self._live.stop()  # draws the last picture once more, and leaves it on screen
            self._live = None

    def render(self) -> RenderableType:
        """The live picture as it is now."""
        with self._lock:
            return layout(self.state, self._progress)

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.state.apply(event)
            if isinstance(event, TrialFinished):
                self._progress.update(self._task, completed=self.state.experiments,
                                      description=self.state.phase or "running")
            elif self.state.phase:
                self._progress.update(self._task, description=self.state.phase)
            line = self._line(event)
        if line is not None:
            self.console.print(Text(line), soft_wrap=True)

    def _line(self, event: Event) -> str | None:
        """The log line to print for ``event`` in this mode (live: only what must stay in the scrollback)."""
        if self.mode is Mode.QUIET:
            return plain_line(event, self.every, self.each) if isinstance(event, Warned) else None
        if self.mode is Mode.LIVE:
            lasting = isinstance(event, AnomalyFound | MfsFinished | Warned) or (
                isinstance(event, TrialFinished) and event.status is TrialState.FAILED)
            return plain_line(event, self.every, self.each) if lasting else None
        return plain_line(event, self.every, self.each)


def dashboard(*, title: str, total: int | None, every: int, no_live: bool = False, quiet: bool = False,
              each: tuple[str, ...] = ()) -> Dashboard:
    """The progress view of a long command on stderr: live on a terminal, else plain lines (see
    :mod:`collie.cli.dashboard`); ``each``: phases whose every trial gets a plain line."""
    console = Console(stderr=True)
    return Dashboard(console, choose_mode(console, no_live=no_live, quiet=quiet), title=title, total=total,
                     every=every, each=each)


def live_options(f: Any) -> Any:
    """``--no-live`` and ``--quiet``, as every long command takes them."""
    f = click.option("--quiet", "-q", is_flag=True,
                     help="No progress at all (warnings still show); only the result.")(f)
    return click.option("--no-live", is_flag=True,
                        help="Plain progress lines, no live dashboard (the default when stdout or stderr is not a "
                             "terminal).")(f)
