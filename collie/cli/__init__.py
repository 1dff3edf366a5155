"""The ``collie`` command line: thin click commands over the library, one renderer, one error path.

Every :class:`~collie.errors.CollieError` raised below becomes one sentence on stderr and exit code 2, except
:class:`~collie.errors.TargetUnavailable` (hosts that cannot be reached or were all lost): exit code 3.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, TextIO

import click

from collie import __version__
from collie.errors import CollieError, CollieWarning, TargetUnavailable

_show_warning = warnings.showwarning


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: TextIO | None = None, line: str | None = None) -> None:
    """collie's own warnings as one line on stderr (``collie: warning: ...``); others as Python shows them."""
    if issubclass(category, CollieWarning):
        click.echo(f"collie: warning: {message}", err=True)
    else:
        _show_warning(message, category, filename, lineno, file, line)


class CollieGroup(click.Group):
    """A click group that turns user errors into one sentence and exit 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        warnings.showwarning = _one_line
        try:
            return super().invoke(ctx)
        except TargetUnavailable as exc:
            click.echo(f"collie: error: {exc}", err=True)
            sys.exit(3)
        except CollieError as exc:
            click.echo(f"collie: error: {exc}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("collie: interrupted", err=True)
            sys.exit(130)


@click.group(cls=CollieGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="collie")
def main() -> None:
    """collie finds performance anomalies in RDMA subsystems.

    It searches the space of verbs workloads for the ones that make a NIC, its PCIe link or its host
    misbehave (PFC pause storms, throughput far below line rate, retransmissions), proves each case with
    counters from both ends, shrinks it to the minimal conditions and saves a case anyone can replay.
    The default target is the built-in simulator (sim), which needs no hardware.
    """


def _register() -> None:
    """Attach the subcommands (each lives in its own ``collie/cli/*_cmd.py`` module)."""
    from collie.cli.campaign_cmd import campaign
    from collie.cli.case_cmd import minimize, replay
    from collie.cli.ci_cmd import ci
    from collie.cli.counters_cmd import counters
    from collie.cli.fleet_cmd import fleet
    from collie.cli.hosts_cmd import hosts
    from collie.cli.import_cmd import import_group
    from collie.cli.report_cmd import report
    from collie.cli.run_cmd import run
    from collie.cli.sim_cmd import sim
    from collie.cli.space_cmd import space

    main.add_command(space)
    main.add_command(run)
    main.add_command(campaign)
    main.add_command(minimize)
    main.add_command(replay)
    main.add_command(sim)
    main.add_command(counters)
    main.add_command(hosts)
    main.add_command(ci)
    main.add_command(report)
    main.add_command(fleet)
    main.add_command(import_group)


_register()
