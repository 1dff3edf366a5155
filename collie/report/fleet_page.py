"""The HTML page of a fleet check: its verdict, the suspects with their evidence, the rounds, and a host x host
heat map of the bandwidth each measured pair got (self-contained: no script, no external file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from collie import __version__
from collie.fleet import FleetCheck
from collie.model.units import format_bytes
from collie.report.html import template

#: Most hosts the heat map shows whole; a larger fleet's map shows the suspects and the hosts they were measured
#: with, the worst first.
WHOLE_MAP_HOSTS: Final = 64


@dataclass(frozen=True)
class Cell:
    """One heat-map cell: GB/s (None: this pair was not measured), its fraction of the reference, its colour."""

    gbs: float | None
    fraction: float
    colour: str


def colour(fraction: float) -> str:
    """Green at or above the reference, through yellow, to red at half of it or less."""
    hue = 120 * min(1.0, max(0.0, (fraction - 0.5) / 0.5))
    return f"hsl({hue:.0f}, 65%, 45%)"


def heat_map(check: FleetCheck) -> tuple[tuple[str, ...], list[list[Cell]]]:
    """The map's hosts (rows are senders, columns receivers) and cells."""
    result = check.result
    matrix = result.matrix()
    reference = max((r.reference_gbs for r in result.rounds), default=0.0)
    hosts: tuple[str, ...] = result.hosts
    if len(hosts) > WHOLE_MAP_HOSTS:
        suspects = [s.host for s in result.suspects]
        peers = sorted({h for pair in matrix for h in pair if set(pair) & set(suspects)} - set(suspects),
                       key=result.hosts.index)
        hosts = tuple(suspects + peers)[:WHOLE_MAP_HOSTS]
    rows = []
    for src in hosts:
        row = []
        for dst in hosts:
            gbs = matrix.get((src, dst))
            fraction = gbs / reference if gbs is not None and reference > 0 else 1.0
            row.append(Cell(gbs, fraction, colour(fraction) if gbs is not None else ""))
        rows.append(row)
    return hosts, rows


def render_fleet_html(check: FleetCheck) -> str:
    """The page of ``check``."""
    hosts, cells = heat_map(check)
    result = check.result
    n = len(result.hosts)
    simulated = (f"Simulated: {check.target} is collie's simulator ({check.info.nic_model}); no hardware ran."
                 if check.info.kind == "sim" else "")
    return template("fleet.html.j2").render(
        version=__version__, check=check, result=result, size=format_bytes(check.size), map_hosts=hosts,
        cells=zip(hosts, cells, strict=True), whole=len(hosts) == n, all_pairs=result.all_pairs,
        simulated=simulated)
