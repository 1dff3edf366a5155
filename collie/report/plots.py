"""Inline SVG plots of a report, drawn with matplotlib (imported lazily: only the HTML report needs it).

Each function returns one ``<svg>`` element as text, ready to be placed in an HTML page: no XML declaration,
no DOCTYPE, text kept as ``<text>`` (matplotlib escapes it for XML), no external reference. Maths parsing is
off, so a counter or host name with ``$`` in it is drawn as written.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from collie.errors import CollieError
from collie.model.units import format_bytes
from collie.report.facts import AnomalyFacts, MovedCounter

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: Counters per host in an anomaly's plot (the largest deltas).
TOP_COUNTERS: Final = 12
_HEAD: Final = re.compile(r"\A.*?(?=<svg)", re.DOTALL)
_PHASE_COLORS: Final = {"calibrate": "#9aa5b1", "solo": "#9aa5b1", "replay": "#8e6c8a", "explore": "#2b6cb0",
                        "confirm": "#d69e2e", "minimize": "#38a169"}


def _figure(width: float, height: float, layout: Literal["constrained"] | None = "constrained") -> Figure:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        raise CollieError("the HTML report draws its plots with matplotlib, which is not installed; "
                          "install it (pip install matplotlib) or choose another --format") from None
    matplotlib.rcParams.update({"svg.fonttype": "none", "font.size": 9, "text.parse_math": False,
                                "svg.hashsalt": None})
    return Figure(figsize=(width, height), layout=layout)


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _HEAD.sub("", buf.getvalue(), count=1).strip()


def overview_svg(trials: pd.DataFrame, found_at: Mapping[str, int], line_rate_bps: float = 0.0) -> str:
    """Payload throughput (Gb/s, every flow summed; dashed: the line rate of one direction, when known) and the
    lowest receiver's share of the calibrated ceiling per trial number; anomalous trials marked with a red cross,
    the trial that found each anomaly with a labelled line."""
    fig = _figure(9.0, 4.6, layout=None)
    fig.subplots_adjust(left=0.09, right=0.985, top=0.9, bottom=0.1, hspace=0.08)
    top, bottom = fig.subplots(2, 1, sharex=True)
    done = trials[trials["bps"].notna()]
    for phase, rows in done.groupby("phase", sort=False):
        color = _PHASE_COLORS.get(str(phase), "#4a5568")
        top.scatter(rows["trial"], rows["bps"] / 1e9, s=6, color=color, label=str(phase), linewidths=0)
        judged = rows[rows["throughput"].notna()]
        bottom.scatter(judged["trial"], judged["throughput"], s=6, color=color, linewidths=0)
    bad = done[done["anomalous"].fillna(False).astype(bool)]
    top.scatter(bad["trial"], bad["bps"] / 1e9, s=22, marker="x", color="#c53030", label="anomalous",
                linewidths=1.0)
    bottom.scatter(bad["trial"], bad["throughput"], s=22, marker="x", color="#c53030", linewidths=1.0)
    for name, trial in found_at.items():
        for ax in (top, bottom):
            ax.axvline(trial, color="#c53030", alpha=0.35, linewidth=0.8)
        top.annotate(name.split("-")[0], (trial, 1.0), xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                     va="top", ha="right", color="#9b2c2c")
    if line_rate_bps > 0:
        top.axhline(line_rate_bps / 1e9, color="#718096", linestyle="--", linewidth=0.8,
                    label=f"line rate, one direction ({line_rate_bps / 1e9:g} Gb/s)")
    top.set_ylabel("payload Gb/s, all flows\n(two-way runs: both summed)")
    bottom.set_ylabel("lowest receiver,\nshare of ceiling")
    bottom.axhline(0.8, color="#718096", linestyle="--", linewidth=0.8)
    bottom.set_xlabel("trial number (as in the journal and the cards)")
    if len(done):
        fig.legend(loc="upper center", fontsize=7, ncols=6, frameon=False, markerscale=1.5)
    for ax in (top, bottom):
        ax.grid(alpha=0.25)
    return _svg(fig)


def counters_svg(anomaly: AnomalyFacts) -> str:
    """The counters that moved in the anomaly's run, one panel per host (largest deltas, log scale), each bar's
    value and unit written beside it; the counter the symptom rests on in red."""
    hosts = sorted({m.host for m in anomaly.moved}) or sorted(anomaly.hosts) or ["(no host)"]
    tallest = max((min(len(anomaly.moved_on(h)), TOP_COUNTERS) for h in hosts), default=1)
    width, height = 4.6 * len(hosts), 0.9 + 0.2 * max(tallest, 1)
    fig = _figure(width, height, layout=None)
    # a fixed layout (room on the left of each panel for counter names): constrained layout costs more than the
    # drawing itself, and a report draws one of these per anomaly
    fig.subplots_adjust(left=2.0 / width, right=1 - 0.15 / width, top=1 - 0.3 / height, bottom=0.45 / height,
                        wspace=2.2 / 2.4)
    axes: Sequence[Any] = fig.subplots(1, len(hosts), squeeze=False)[0]
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    for ax, host in zip(axes, hosts, strict=True):
        moved = anomaly.top_moved(host, TOP_COUNTERS)[::-1]
        end = moved[0].end if moved else str(anomaly.hosts.get(host, {}).get("end", ""))
        ax.set_title(anomaly.machines.label(host, end), fontsize=9)
        if not moved:
            ax.text(0.5, 0.5, "no counter moved", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            continue
        values = [abs(m.delta) for m in moved]
        ax.barh(range(len(moved)), values, color=[_color(anomaly, m) for m in moved])
        # names as plain text beside the bars: a tick per counter costs more than the rest of the plot
        ax.set_yticks([])
        ax.set_ylim(-0.6, len(moved) - 0.4)
        side = ax.get_yaxis_transform()
        for i, m in enumerate(moved):
            bold = "bold" if anomaly.is_headline(m) else "normal"
            ax.text(-0.02, i, m.name, transform=side, ha="right", va="center", fontsize=7, fontweight=bold)
            ax.text(abs(m.delta), i, f" {_amount(m.delta)} {m.unit}".rstrip(), ha="left", va="center", fontsize=6.5,
                    fontweight=bold, color="#1a202c")
        ax.set_xscale("log")
        lo, hi = math.log10(min(values) / 2), math.log10(max(values))
        ax.set_xlim(10 ** lo, 10 ** (hi + 0.45 * (hi - lo) + 0.5))  # room for the value and unit beside each bar
        ax.xaxis.set_major_locator(LogLocator(numticks=6))
        ax.xaxis.set_major_formatter(FuncFormatter(_power))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("change over the run (log scale)", fontsize=7)
        ax.grid(axis="x", alpha=0.25)
    return _svg(fig)


def _color(anomaly: AnomalyFacts, m: MovedCounter) -> str:
    """Red: the symptom's counter; orange: a counter that went down; blue: the others."""
    return "#c53030" if anomaly.is_headline(m) else "#dd6b20" if m.delta < 0 else "#2b6cb0"


def _amount(delta: float) -> str:
    """A delta in a few characters (``-1.2e+09`` style kept short: ``-1.2e9``)."""
    text = f"{delta:,.0f}" if 1 <= abs(delta) < 1e6 else f"{delta:.3g}"
    return text.replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _power(value: float, _: object) -> str:
    """A log axis's tick as plain text (``1e6``): maths parsing is off, so no ``$10^{6}$``."""
    return f"{value:.0e}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def sweep_svg(title: str, ylabel: str, lines: Sequence[tuple[str, Sequence[tuple[int, float]]]]) -> str:
    """One measured figure over message size (log 2), a line per series ``(label, [(bytes, value), ...])``: an
    imported perftest sweep's Gb/s or latency, an nccl-tests collective's busbw."""
    fig = _figure(9.0, 3.6)
    ax = fig.subplots()
    for label, points in lines:
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2, label=label)
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: format_bytes(int(value)) if value >= 1 else ""))
    ax.set_xlabel("message size")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, linewidth=0.3)
    if len(lines) > 1:
        ax.legend(fontsize=7, loc="best")
    return _svg(fig)
