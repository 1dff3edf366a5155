"""``collie fleet check``: an acceptance run of a fleet without MPI: localise slow hosts in a few rounds.

Exit codes (:class:`~collie.gate.ExitCode`): 0 clean, 1 suspects or slow links between healthy hosts named, 2 a
usage error, 3 the target or the infrastructure failed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from collie.cli.render import emit, format_option, render
from collie.cli.run_cmd import accept_keys_option, output_path, parsed_target, seed_option
from collie.errors import InputError
from collie.fleet import FleetCheck
from collie.gate import ExitCode, InfrastructureError
from collie.model.units import format_bytes, parse_size
from collie.services import fleet_check
from collie.targets.kind import TargetSpec

DEFAULT_FLEET = "sim:fleet8-cx6"


def _size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise InputError(f"--size {value}: {exc}") from None
    if size < 1:
        raise InputError(f"--size {value}: a round moves at least 1 byte per rank")
    return size


def check_dict(check: FleetCheck) -> dict[str, Any]:
    """The check for ``--format json``: target, hosts, rounds with every link, suspects, exit code."""
    result = check.result
    return {
        "target": check.target, "size": check.size, "hosts": list(result.hosts), "margin": result.margin,
        "experiments": result.experiments, "all_pairs": result.all_pairs, "nics_per_host": result.rails,
        "rounds": [{"index": r.index, "kind": r.kind.value, "order": list(r.order),
                    "reference_gbs": r.reference_gbs, "slow": list(r.slow),
                    "links": [{k: v for k, v in asdict(link).items() if k != "connection"} for link in r.links]}
                   for r in result.rounds],
        "suspects": [asdict(s) for s in result.suspects],
        "unexplained": list(result.unexplained),
        "exit_code": int(ExitCode.ANOMALIES if result.flagged else ExitCode.CLEAN),
    }


@click.group()
def fleet() -> None:
    """Acceptance runs over a fleet of hosts (no MPI needed)."""


@fleet.command("check")
@click.option("--target", "target_spec", default=DEFAULT_FLEET, show_default=True, callback=parsed_target,
              help="A target of 3 or more hosts: a simulated fleet (sim:fleet8-cx6, or a profile with "
                   "hosts = N and [[faults]]).")
@click.option("--size", "size", default="64MiB", show_default=True, callback=_size,
              help="Bytes per rank each round moves (nccl-tests' size).")
@click.option("--duration", type=click.FloatRange(min=0.1, max=600.0), default=1.0, show_default=True,
              help="Seconds of measured traffic per round.")
@click.option("--margin", type=float, default=0.2, show_default=True,
              help="A link below (1 - margin) x its round's reference is slow.")
@click.option("--html", "html_file", callback=output_path, default=None,
              help="Write the check as a self-contained HTML page with a host x host heat map.")
@seed_option
@accept_keys_option
@format_option
def check(target_spec: TargetSpec, size: int, duration: float, margin: float, html_file: Path | None, seed: int,
          accept_new_host_keys: bool, fmt: str) -> None:
    """Localise slow hosts of a fleet in a few rounds, each one experiment over every host.

    A ring over every host; if a link is slow, pairs that set each implicated host beside a healthy one (or a
    second ring, then pairs, when faults are many for the fleet's size). A suspect is named with the links that
    show it. Far fewer experiments than measuring all pairs (docs/collectives.md#collie-fleet-check).

    A slow link between two hosts that are both healthy is named too: the path between them is slow. Hosts with
    several NICs are checked rail by rail (NIC k of every host), and a suspect is a NIC (h5/1: NIC 1 of h5).

    \b
    Exit codes:
      0  clean: no suspect
      1  suspects named, or slow links between healthy hosts
      2  a usage error (one sentence says which)
      3  the target or the infrastructure failed: a round could not run
    """
    if html_file is not None and html_file.is_dir():
        raise InputError(f"--html {html_file} is a folder; give a file name, e.g. {html_file / 'fleet.html'}")
    try:
        done = fleet_check(target_spec, size=size, duration=duration, margin=margin, seed=seed,
                           accept_new_host_keys=accept_new_host_keys)
    except InfrastructureError as exc:
        click.echo(f"collie: error: {exc}", err=True)
        sys.exit(int(ExitCode.INFRASTRUCTURE))
    result = done.result
    if fmt == "json":
        emit(json.dumps(check_dict(done), indent=2))
    else:
        emit(render([{"round": r.index, "pattern": r.kind.value, "links": len(r.links), "slow": len(r.slow),
                      "reference [GB/s]": round(r.reference_gbs, 2)} for r in result.rounds], fmt,
                    title=f"fleet check of {result.checked} on {target_spec}: {result.experiments} rounds "
                          f"({format_bytes(size)} per rank; all pairs one by one: {result.all_pairs})"))
        if result.suspects:
            emit(render([{"host": s.host, "worst": f"{s.worst:.0%}", "evidence": "; ".join(s.evidence)}
                         for s in result.suspects], fmt, title="suspects"))
        if result.unexplained:
            emit(render([{"link": name} for name in result.unexplained], fmt,
                        title="slow links between healthy hosts (the path between them: a link between switches)"))
    if html_file is not None:
        from collie.report.fleet_page import render_fleet_html

        try:
            html_file.write_text(render_fleet_html(done), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--html {html_file}: {exc.strerror or exc}") from None
    found = [f"{len(result.suspects)} suspect(s): {', '.join(s.host for s in result.suspects)}"] \
        if result.suspects else []
    if result.unexplained:
        found.append(f"{len(result.unexplained)} slow link(s) between healthy hosts: {', '.join(result.unexplained)}")
    click.echo("; ".join(found) if found else f"clean: no suspect among {result.checked}", err=True)
    sys.exit(int(ExitCode.ANOMALIES if result.flagged else ExitCode.CLEAN))
