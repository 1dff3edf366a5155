"""The live layout: a picture of :class:`~collie.cli.dashboard.state.DashboardState` as rich renderables.

Every string that comes from a workload, a counter or a target is shown as text, never as rich markup.
"""

from __future__ import annotations

from typing import Any, Final

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from collie.cli.dashboard.state import DashboardState

BLOCKS: Final = "▁▂▃▄▅▆▇█"
SPARK_WIDTH: Final = 40
POINT_KEYS: Final = 10


def sparkline(values: list[float], width: int = SPARK_WIDTH) -> str:
    """The last ``width`` values as a line of block characters, scaled between their minimum and maximum."""
    tail = values[-width:]
    if not tail:
        return ""
    lo, hi = min(tail), max(tail)
    span = hi - lo
    if span <= 0:
        return BLOCKS[len(BLOCKS) // 2] * len(tail)
    return "".join(BLOCKS[min(len(BLOCKS) - 1, int((v - lo) / span * (len(BLOCKS) - 1) + 0.5))] for v in tail)


def describe_point(point: dict[str, Any], limit: int = POINT_KEYS) -> str:
    """A point in one line: ``op=RC_READ qps=8 mtu=1024 ...``."""
    items = [f"{k}={v}" for k, v in point.items()]
    more = f" (+{len(items) - limit})" if len(items) > limit else ""
    return " ".join(items[:limit]) + more


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def status_table(state: DashboardState) -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("phase", Text(f"{state.phase}: {state.detail}" if state.detail else state.phase))
    by = f" (chain {state.chain})" if state.chain is not None else ""
    t.add_row("trial", Text(f"{state.trial}{by}" + (f"  {describe_point(state.point)}" if state.point else "")))
    if state.per_chain:
        t.add_row("chains", Text(", ".join(f"chain {c}: {n} trials" for c, n in sorted(state.per_chain.items()))))
    search = []
    if state.objective:
        search.append(f"driving {state.objective}")
    if state.temperature is not None:
        search.append(f"temperature {state.temperature:.3g}")
    if search:
        t.add_row("search", Text(", ".join(search)))
    tally = f"{len(state.anomalies)} anomalies, {state.known_hits} known hits, {state.failed} failed"
    t.add_row("so far", Text(tally))
    return t


def driven_table(state: DashboardState) -> Table:
    t = Table(title="driven counters", title_justify="left", box=None, show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("over the explore trials", no_wrap=True)
    t.add_column("last", justify="right")
    for name, values in state.driven_series():
        t.add_row(Text(name), Text(sparkline(values), style="cyan"), _number(values[-1] if values else None))
    return t


def anomalies_table(state: DashboardState) -> Table:
    t = Table(title="anomalies", title_justify="left", box=None, header_style="bold")
    for c in ("id", "symptom", "magnitude", "MFS"):
        t.add_column(c, overflow="ellipsis", no_wrap=c != "MFS")
    for a in state.anomalies:
        mfs = a.mfs or "not minimized"
        t.add_row(Text(a.anomaly_id, style="bold red"), Text(a.signature), f"{a.score:.3g}x", Text(mfs))
    return t


def verdicts_table(state: DashboardState) -> Table:
    t = Table(title="last verdicts", title_justify="left", box=None, header_style="bold")
    for c in ("trial", "phase", "status", "verdict", "score", "throughput"):
        t.add_column(c)
    for v in state.verdicts:
        if v.phase == "calibrate":
            verdict = "calibration run"
        else:
            verdict = v.signature or ("clean" if v.status == "complete" else v.reason or v.status)
        t.add_row(str(v.trial), v.phase, v.status, Text(verdict, style="red" if v.signature else ""),
                  f"{v.score:.3g}", _number(v.throughput))
    return t


def hosts_table(state: DashboardState) -> Table:
    t = Table(title="hosts", title_justify="left", box=None, header_style="bold")
    for c in ("host", "tx Gb/s", "rx Gb/s", "counters", "status"):
        t.add_column(c)
    for h in state.hosts:
        status = f"unreadable: {', '.join(h.unreadable)}" if h.unreadable else "ok"
        t.add_row(Text(h.host), f"{h.tx_gbps:.3g}", f"{h.rx_gbps:.3g}", str(h.counters),
                  Text(status, style="yellow" if h.unreadable else "green"))
    return t


def layout(state: DashboardState, progress: RenderableType) -> RenderableType:
    """The whole live view: a panel with the progress bar, the status, and a table per section that has rows."""
    parts: list[RenderableType] = [progress, status_table(state)]
    if state.driven:
        parts.append(driven_table(state))
    if state.anomalies:
        parts.append(anomalies_table(state))
    if state.verdicts:
        parts.append(verdicts_table(state))
    if state.hosts:
        parts.append(hosts_table(state))
    if state.warnings:
        parts.append(Text(f"warning: {state.warnings[-1]}", style="yellow"))
    return Panel(Group(*parts), title=Text(state.title or "collie"), title_align="left")
