"""A simulator profile's base constants fitted to a measured sweep (``collie sim fit``).

The sweep arrives as :class:`SweepRow` records (one per row of a perftest run: its workload in collie's terms and
its published figure; :func:`collie.importers.shape.sweep_rows` makes them from a parsed log). Each constant is
fitted by running the simulator itself (a :class:`~collie.targets.sim.SimTarget` on the base profile with
candidate constants) and bisecting that constant until the median of simulated / published over the rows it binds
is 1, in this order, repeated until nothing moves:

1. ``[nic] line_rate_gbps`` from the plateau: bandwidth rows of at least 1 MiB (a run without any: its largest
   size, when that is at least 64 KiB) within 80 % of the best of them (a collapse at the top is not a plateau);
2. ``[nic] qp_wr_ns`` + ``doorbell_ns`` (a QP's own rate, ``qps / (qp_wr_ns + doorbell_ns / batch)``) from
   bandwidth rows of at most 256 B on the fewest QPs of the sweep; one work request per post determines their sum
   only, so the split keeps the base's ratio (:data:`DEFAULT_WR_SHARE` when the base has neither); rows of two
   post-list lengths (perftest ``-l``) determine the split too;
3. ``[nic] msg_rate_mpps`` from bandwidth rows of at most 256 B on at least :data:`MANY_QPS` QPs (and 4x the
   fewest), where the QPs' own rate does not hold them; without such rows it is kept;
4. ``[nic] base_latency_us`` from latency rows of at most 256 B (a run without any: its smallest size), against
   the typical (median) latency.

``[nic] max_rd_atomic`` is set when a header states ``Outstand reads``; everything else (PCIe, caches, host,
quirks, the model's costs) is kept from the base and listed as not determined.

Invariants:
    * nothing here reads a file or prints; every function is pure (the simulator's noise is seeded);
    * every fitted value is rounded to :data:`DIGITS` significant digits before the "after" figures are
      simulated, so a profile written with those values reproduces them exactly;
    * a row the simulator cannot run (no workload, over a device limit, no published figure) is never fitted on
      and says why in :attr:`FitRow.problem`;
    * a constant whose rows the model cannot bring to the published figures (another limit holds them) keeps the
      base's value and says so in :attr:`FitResult.kept`.
"""

from __future__ import annotations

import math
import re
import statistics
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Final

from collie.errors import InputError
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.sim.profile import Profile
from collie.targets.sim.target import SimTarget

#: Largest message of a "small" row (the QP's rate, the packet rate, the base latency).
SMALL: Final = 256
#: Smallest message of a plateau row; a run without one uses its largest size from :data:`PLATEAU_FLOOR` on.
PLATEAU: Final = 1 << 20
PLATEAU_FLOOR: Final = 64 << 10
#: A plateau row is within this fraction of the best plateau row of its run.
PLATEAU_SHARE: Final = 0.8
#: Fewest QPs of a row that can determine the NIC's packet rate.
MANY_QPS: Final = 8
#: The share of ``qp_wr_ns`` in a QP's cost when neither the sweep nor the base profile splits it.
DEFAULT_WR_SHARE: Final = 0.3
#: Significant digits of a fitted value.
DIGITS: Final = 5
#: The seed of the simulator's noise in every run of a fit (bench/fidelity.py's).
SEED: Final = 1
_STEPS: Final = 60
_ROUNDS: Final = 4
_SETTLED: Final = 1e-3


class Unit(Enum):
    """What a row's figure is."""

    GBPS = "Gb/s"
    US = "us"


@dataclass(frozen=True)
class SweepRow:
    """One row of a measured sweep, in collie's terms.

    Attributes:
        source: the log it is from (as messages name it).
        run: the index of its run in the log.
        line: its line in the log (0: not known).
        test: the run's test (``RDMA_Write BW Test``).
        size: bytes per message.
        workload: the flow shape the run's header states (None: see ``problem``).
        unit: Gb/s (a bandwidth row: the average) or us (a latency row: the typical latency).
        published: the figure the log states (None: it states none collie can compare).
        max_rd_atomic: the READs and atomics outstanding per QP the header states (``Outstand reads``), or None.
        problem: why the simulator cannot run the row (one sentence), None when it can.
    """

    source: str
    run: int
    line: int
    test: str
    size: int
    workload: Workload | None
    unit: Unit
    published: float | None
    max_rd_atomic: int | None = None
    problem: str | None = None

    @property
    def label(self) -> str:
        """``file:line (size B)``."""
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where} ({self.size} B)"

    @property
    def qps(self) -> int:
        """The QPs of its first flow (1 without a workload)."""
        return self.workload.flows[0].qps if self.workload is not None else 1

    @property
    def batch(self) -> int:
        """The post list of its first flow (1 without a workload)."""
        return self.workload.flows[0].batch if self.workload is not None else 1


@dataclass(frozen=True)
class Constant:
    """A ``[nic]`` constant the sweep determined.

    Attributes:
        name: the field (``line_rate_gbps``).
        value: the fitted value (rounded to :data:`DIGITS` significant digits).
        base: the base profile's value.
        rows: the rows it was fitted on (empty: stated by a header, see ``note``).
        note: how it was found, when more than a bisection on ``rows`` (the split rule, a header).
    """

    name: str
    value: float
    base: float
    rows: tuple[SweepRow, ...]
    note: str = ""


@dataclass(frozen=True)
class Kept:
    """A constant (or a group of them) the sweep did not determine: the base's value stays.

    Attributes:
        name: the field or group (``msg_rate_mpps``, ``[pcie]``).
        value: the value kept, as written (empty for a group).
        reason: why the sweep cannot determine it (one sentence).
    """

    name: str
    value: str
    reason: str


@dataclass(frozen=True)
class FitRow:
    """One row of the sweep with the base's and the fitted profile's figures.

    Attributes:
        row: the row.
        before: the base profile's figure (None: not run, see ``row.problem``).
        after: the fitted profile's figure.
        fitted: the constants fitted on it.
    """

    row: SweepRow
    before: float | None
    after: float | None
    fitted: tuple[str, ...] = ()

    def ratio(self, after: bool = True) -> float | None:
        """simulated / published (after the fit, or before it), None when either is missing."""
        value = self.after if after else self.before
        published = self.row.published
        return value / published if value is not None and published else None

    def within(self, margin: float, after: bool = True) -> bool:
        """Whether simulated / published is within ``margin`` of 1."""
        r = self.ratio(after)
        return r is not None and abs(r - 1.0) <= margin


@dataclass(frozen=True)
class FitResult:
    """A profile fitted to a sweep.

    Attributes:
        base: the base profile.
        profile: the base with the fitted constants (its name and description the base's).
        fitted: the constants the sweep determined, in the order fitted.
        kept: the constants it did not, each with why.
        rows: every row of the sweep, in order, with its figures before and after.
    """

    base: Profile
    profile: Profile
    fitted: tuple[Constant, ...]
    kept: tuple[Kept, ...]
    rows: tuple[FitRow, ...]

    def within(self, margin: float = 0.10, after: bool = True) -> int:
        """How many rows are within ``margin`` of their published figure (after the fit, or before it)."""
        return sum(r.within(margin, after) for r in self.rows)

    @property
    def runnable(self) -> int:
        """How many rows the simulator can run."""
        return sum(r.row.problem is None for r in self.rows)


# -------------------------------------------------------------------------------------------- simulation


def _with(base: Profile, values: dict[str, float]) -> Profile:
    """``base`` with the ``[nic]`` constants in ``values``."""
    typed: dict[str, Any] = {k: int(v) if k == "max_rd_atomic" else float(v) for k, v in values.items()}
    nic = replace(base.nic, **typed)
    return replace(base, nic=nic)


def simulate(profile: Profile, rows: Sequence[SweepRow]) -> tuple[float | None, ...]:
    """Each row's figure on ``profile`` (None for a row it cannot run): a bandwidth row's Gb/s of payload, a
    latency row's typical (median) latency; one run each, noise seeded with :data:`SEED`, repetition 0."""
    target = SimTarget(profile, seed=SEED, record_truth=False)
    out: list[float | None] = []
    for row in rows:
        if row.workload is None or row.problem is not None:
            out.append(None)
            continue
        try:
            result = target.run(row.workload, 1.0, repetition=0)
        except Unsupported:
            out.append(None)
            continue
        out.append(result.payload_gbps if row.unit is Unit.GBPS else result.lat_p50_us)
    return tuple(out)


def _median_ratio(profile: Profile, rows: Sequence[SweepRow]) -> float:
    """The median of simulated / published over ``rows`` (each has a figure; NaN when none runs)."""
    ratios = [s / r.published for s, r in zip(simulate(profile, rows), rows, strict=True)
              if s is not None and r.published]
    return statistics.median(ratios) if ratios else math.nan


def _ratio_of(base: Profile, rows: Sequence[SweepRow], values: Callable[[float], dict[str, float]]
              ) -> Callable[[float], float]:
    """``x`` -> the median simulated / published over ``rows`` on ``base`` with the constants ``values(x)``."""
    def g(x: float) -> float:
        return _median_ratio(_with(base, values(x)), rows)
    return g


def _bisect(g: Callable[[float], float], lo: float, hi: float, increasing: bool) -> float:
    """The ``x`` in ``[lo, hi]`` (both > 0) where the monotone ``g`` crosses 1, bisected geometrically; the nearer
    end when it does not cross there."""
    def above(x: float) -> bool:
        return (g(x) > 1.0) == increasing

    if above(lo):
        return lo
    if not above(hi):
        return hi
    for _ in range(_STEPS):
        mid = math.sqrt(lo * hi)
        if above(mid):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-6:
            break
    return math.sqrt(lo * hi)


def _round(x: float) -> float:
    """``x`` to :data:`DIGITS` significant digits."""
    return float(f"{x:.{DIGITS}g}")


# -------------------------------------------------------------------------------------------- the rows


def _runs(rows: Sequence[SweepRow]) -> dict[tuple[str, int], list[SweepRow]]:
    out: dict[tuple[str, int], list[SweepRow]] = {}
    for r in rows:
        out.setdefault((r.source, r.run), []).append(r)
    return out


def plateau_rows(rows: Sequence[SweepRow]) -> tuple[SweepRow, ...]:
    """The bandwidth rows of the plateau (see the module docstring), run by run."""
    out: list[SweepRow] = []
    for run in _runs([r for r in rows if r.unit is Unit.GBPS]).values():
        large = [r for r in run if r.size >= PLATEAU]
        if not large:
            top = max(r.size for r in run)
            large = [r for r in run if r.size == top >= PLATEAU_FLOOR]
        if large:
            best = max(r.published or 0.0 for r in large)
            out.extend(r for r in large if (r.published or 0.0) >= PLATEAU_SHARE * best)
    return tuple(out)


def qp_rows(rows: Sequence[SweepRow]) -> tuple[SweepRow, ...]:
    """Small-message bandwidth rows on the fewest QPs of the sweep (a QP's own rate)."""
    small = [r for r in rows if r.unit is Unit.GBPS and r.size <= SMALL]
    fewest = min((r.qps for r in small), default=0)
    return tuple(r for r in small if r.qps == fewest)


def packet_rows(rows: Sequence[SweepRow]) -> tuple[SweepRow, ...]:
    """Small-message bandwidth rows on many QPs (at least :data:`MANY_QPS`, and 4x the fewest)."""
    small = [r for r in rows if r.unit is Unit.GBPS and r.size <= SMALL]
    fewest = min((r.qps for r in small), default=0)
    return tuple(r for r in small if r.qps >= MANY_QPS and r.qps >= 4 * fewest)


def latency_rows(rows: Sequence[SweepRow]) -> tuple[SweepRow, ...]:
    """Small-message latency rows (a run without any: the rows of its smallest size)."""
    out: list[SweepRow] = []
    for run in _runs([r for r in rows if r.unit is Unit.US]).values():
        small = [r for r in run if r.size <= SMALL]
        out.extend(small or [r for r in run if r.size == min(x.size for x in run)])
    return tuple(out)


# -------------------------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class _Step:
    """One constant's fit: its new values (empty: kept), the rows, and why it was kept or how it was found."""

    values: dict[str, float]
    rows: tuple[SweepRow, ...]
    note: str


def _fit_rising(base: Profile, v: dict[str, float], rows: tuple[SweepRow, ...], key: str, lo: float, hi: float,
                unreachable: str) -> _Step:
    """``key`` bisected in ``[lo, hi]``, where simulated / published rises with it; kept (``unreachable``) when no
    value there brings the median ratio to 1."""
    g = _ratio_of(base, rows, lambda x: {**v, key: x})
    if g(hi) < 1.0 - _SETTLED or g(lo) > 1.0 + _SETTLED:
        return _Step({}, rows, unreachable)
    return _Step({key: _bisect(g, lo, hi, increasing=True)}, rows, "")


def _fit_line(base: Profile, v: dict[str, float], rows: tuple[SweepRow, ...]) -> _Step:
    if not rows:
        return _Step({}, rows, "no bandwidth rows of large messages (>= 64 KiB): the sweep has no plateau")
    best = max(r.published or 0.0 for r in rows)
    return _fit_rising(base, v, rows, "line_rate_gbps", best / 4, best * 8,
                       "another limit of the base (PCIe, the packet rate, the READ window) holds the plateau below "
                       "the published figures, whatever the line rate")


def _split(base: Profile) -> tuple[float, str]:
    """The share of ``qp_wr_ns`` in a QP's cost the base profile has, and how it was chosen."""
    wr, db = base.nic.qp_wr_ns, base.nic.doorbell_ns
    if wr + db > 0:
        return wr / (wr + db), f"split as the base's ({wr:g} : {db:g})"
    return DEFAULT_WR_SHARE, (f"split {DEFAULT_WR_SHARE:.0%} per work request, {1 - DEFAULT_WR_SHARE:.0%} per "
                              "doorbell (the base sets neither)")


def _fit_qp(base: Profile, v: dict[str, float], rows: tuple[SweepRow, ...]) -> _Step:
    if not rows:
        return _Step({}, rows, "no bandwidth rows of small messages (<= 256 B)")
    share, how = _split(base)
    batches = sorted({r.batch for r in rows})
    one, many = [r for r in rows if r.batch == batches[0]], [r for r in rows if r.batch == batches[-1]]

    def at(total: float, wr_share: float) -> dict[str, float]:
        return {**v, "qp_wr_ns": total * wr_share, "doorbell_ns": total * (1 - wr_share)}

    # a flow of q QPs posting b WRs a doorbell is held at q / (wr + db / b): the published rate's cost, x 64 at most
    cost = max(r.qps * r.size * 8 / (r.published or math.inf) for r in rows)  # ns per request and QP
    lo, hi = cost / 1e4, cost * 64
    total = 0.0
    for _ in range(_ROUNDS if len(batches) > 1 else 1):
        g = _ratio_of(base, one, lambda x: at(x, share))  # noqa: B023
        if g(lo) < 1.0 - _SETTLED:
            return _Step({}, rows, "another limit (the packet rate, the READ window) holds the small rows below the "
                                   "published figures, whatever a QP's own rate")
        total = _bisect(g, lo, hi, increasing=False)
        if len(batches) == 1:
            break
        h = _ratio_of(base, many, lambda x: at(total, x))  # noqa: B023
        share = _bisect(h, 1e-3, 1.0, increasing=False)
        how = (f"split by the rows of post lists of {batches[-1]} against those of {batches[0]}: "
               f"{share:.0%} per work request")
    if len(batches) == 1:
        how = f"one post list length ({batches[0]}) determines only the sum; {how}"
    return _Step({"qp_wr_ns": total * share, "doorbell_ns": total * (1 - share)}, rows, how)


def _fit_packets(base: Profile, v: dict[str, float], rows: tuple[SweepRow, ...]) -> _Step:
    if not rows:
        return _Step({}, rows, f"no bandwidth rows of small messages on many QPs (>= {MANY_QPS}): the sweep cannot "
                               "determine the NIC's packet rate")
    best = max((r.published or 0.0) * 1e3 / (8 * r.size) for r in rows)  # Mpps
    return _fit_rising(base, v, rows, "msg_rate_mpps", best / 1e3, best * 64,
                       "the QPs' own rate holds the rows of many QPs below the published figures, so they do not "
                       "determine the packet rate")


def _fit_latency(base: Profile, v: dict[str, float], rows: tuple[SweepRow, ...]) -> _Step:
    if not rows:
        return _Step({}, rows, "no latency rows")
    best = max(r.published or 0.0 for r in rows)
    return _fit_rising(base, v, rows, "base_latency_us", best / 1e4, best * 4,
                       "the simulated latency of these rows is above the published one at any base latency "
                       "(queueing behind the QPs' own rate, or serialisation)")


_FITS: Final = ((("line_rate_gbps",), _fit_line, plateau_rows), (("qp_wr_ns", "doorbell_ns"), _fit_qp, qp_rows),
                (("msg_rate_mpps",), _fit_packets, packet_rows), (("base_latency_us",), _fit_latency, latency_rows))
_OTHERS: Final = (
    ("[nic] loopback_gbps, atomic_mops", "the rows run between two hosts and post no atomics"),
    ("[nic] max_qp, max_mr, max_sge, max_qp_wr, max_inline", "device limits: a sweep shows none of them"),
    ("[pcie], [host]", "the link and hosts are the base's: a sweep's figures do not separate them from the NIC"),
    ("[cache]", "a sweep of one flow shape does not fill the NIC's caches"),
    ("quirks", "the anomalies planted in the base subsystem, which a sweep does not show: write quirks = [] for the "
               "base model alone"),
    ("[model]", "noise, efficiency and setup costs are the model's, not the NIC's"),
)


def _header_rd_atomic(rows: Sequence[SweepRow]) -> tuple[int | None, tuple[SweepRow, ...]]:
    """The largest ``Outstand reads`` the headers state, and the rows whose header states it."""
    stated = [r for r in rows if r.max_rd_atomic is not None and r.problem is None]
    if not stated:
        return None, ()
    value = max(r.max_rd_atomic or 0 for r in stated)
    return value, tuple(r for r in stated if r.max_rd_atomic == value)


def fit_profile(rows: Sequence[SweepRow], base: Profile) -> FitResult:
    """Fit ``base``'s ``[nic]`` constants to ``rows`` (see the module docstring).

    Args:
        rows: the sweep, every row of every log (rows with a ``problem`` are reported, never fitted on).
        base: the profile whose other constants the fitted one keeps.

    Raises:
        InputError: no row the simulator can run (one sentence naming the logs and why).
    """
    rows = _checked(base, rows)
    before = simulate(base, rows)
    usable = [r for r, b in zip(rows, before, strict=True) if b is not None and r.published]
    if not usable:
        reasons = sorted({f"{r.source}: {r.problem}" for r in rows if r.problem} or
                         {f"{r.source}: no row the simulator can run" for r in rows})
        raise InputError(f"no bandwidth or latency row the model can express; {'; '.join(reasons)}")
    values: dict[str, float] = {}
    rd, rd_rows = _header_rd_atomic(usable)
    if rd is not None:
        values["max_rd_atomic"] = rd
    steps: dict[str, _Step] = {}
    for _ in range(_ROUNDS):
        previous = dict(values)
        for names, fit, select in _FITS:
            for name in names:
                values.pop(name, None)  # fitted anew, or the base's when its rows cannot determine it now
            step = fit(base, values, select(usable))
            steps[names[0]] = step
            values.update(step.values)
        if values.keys() == previous.keys() and \
                all(abs(values[k] - previous[k]) <= _SETTLED * abs(values[k]) for k in values):
            break
    values = {k: _round(x) for k, x in values.items()}
    profile = _with(base, values)
    after = simulate(profile, rows)
    fitted, kept = _constants(base, values, steps, rd_rows)
    used: dict[int, list[str]] = {}
    for c in fitted:
        for r in c.rows:
            used.setdefault(id(r), []).append(c.name)
    out_rows = tuple(FitRow(r, b, a, tuple(used.get(id(r), ())))
                     for r, b, a in zip(rows, before, after, strict=True))
    return FitResult(base, profile, fitted, kept, out_rows)


def _checked(base: Profile, rows: Sequence[SweepRow]) -> list[SweepRow]:
    """``rows``, each the base profile cannot run with why in its ``problem``."""
    target = SimTarget(base, seed=SEED, record_truth=False)
    out = []
    for r in rows:
        if r.problem is None and r.workload is not None:
            try:
                target.checked(r.workload)
            except Unsupported as exc:
                r = replace(r, problem=f"the base profile cannot run it: {exc}")
        out.append(r)
    return out


def _constants(base: Profile, values: dict[str, float], steps: dict[str, _Step], rd_rows: tuple[SweepRow, ...]
               ) -> tuple[tuple[Constant, ...], tuple[Kept, ...]]:
    nic = base.nic
    fitted: list[Constant] = []
    kept: list[Kept] = []
    for names, _, _ in _FITS:
        step = steps[names[0]]
        for n in names:
            if n in step.values:
                fitted.append(Constant(n, values[n], float(getattr(nic, n)), step.rows, step.note))
            else:
                kept.append(Kept(n, f"{getattr(nic, n):g}", step.note))
    if "max_rd_atomic" in values:
        sources = ", ".join(dict.fromkeys(r.source for r in rd_rows))
        fitted.append(Constant("max_rd_atomic", values["max_rd_atomic"], float(nic.max_rd_atomic), (),
                               f"stated by the header of {sources} (Outstand reads)"))
    else:
        kept.append(Kept("max_rd_atomic", str(nic.max_rd_atomic), "no header states Outstand reads"))
    kept.extend(Kept(name, "", reason) for name, reason in _OTHERS)
    return tuple(fitted), tuple(kept)


def rows_in_words(rows: Sequence[SweepRow]) -> str:
    """``rows`` in a few words, log by log: ``a.txt 2-256 B (8 rows); b.txt 2 B (1 row)``."""
    by_source: dict[str, list[int]] = {}
    for r in rows:
        by_source.setdefault(re.split(r"[\\/]", r.source)[-1], []).append(r.size)
    parts = []
    for source, sizes in by_source.items():
        span = f"{min(sizes)} B" if min(sizes) == max(sizes) else f"{min(sizes)}-{max(sizes)} B"
        parts.append(f"{source} {span} ({len(sizes)} row{'s' if len(sizes) != 1 else ''})")
    return "; ".join(parts)


# -------------------------------------------------------------------------------------------- the profile's text

_TABLE: Final = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]*?)\s*\]")
_KEY: Final = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_-]+)\s*=")


def _toml_value(name: str, value: float) -> str:
    return str(int(value)) if name == "max_rd_atomic" else repr(float(value))


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _comment(result: FitResult, logs: Sequence[str]) -> list[str]:
    lines = [f"# Fitted by `collie sim fit` from {', '.join(logs)} on base profile {result.base.name}.",
             "# Fitted ([nic], each by bisection on the simulator until the median simulated/published of its rows "
             "is 1):"]
    for c in result.fitted:
        where = rows_in_words(c.rows) if c.rows else ""
        note = "; ".join(x for x in (where, c.note) if x)
        lines.append(f"#   {c.name} = {_toml_value(c.name, c.value)} (base {c.base:g}): {note}")
    lines.append("# Not determined by the sweep (kept from the base):")
    for k in result.kept:
        value = f" = {k.value}" if k.value else ""
        lines.append(f"#   {k.name}{value}: {k.reason}")
    return lines


def profile_text(base_text: str, result: FitResult, *, name: str, description: str, logs: Sequence[str]) -> str:
    """The base profile's text with the fitted ``[nic]`` values replaced (or added), ``name`` and
    ``description`` set, and a comment block at the top saying what was fitted from which rows and what the sweep
    could not determine.

    Raises:
        InputError: the base's text has no ``[nic]`` table written one ``key = value`` a line.
    """
    lines = base_text.splitlines()
    values = {c.name: c.value for c in result.fitted}
    if values.keys() & {"line_rate_gbps"}:
        values.setdefault("loopback_gbps", result.base.nic.loopback_gbps)  # kept, whatever the line rate now is
    top: dict[str, str] = {"name": _toml_string(name), "description": _toml_string(description)}
    out: list[str] = []
    section: str | None = None
    nic_end: int | None = None
    for line in lines:
        table = _TABLE.match(line)
        if table:
            if section == "nic":
                nic_end = len(out)
            section = table.group("name")
            out.append(line)
            continue
        m = _KEY.match(line)
        key = m.group("key") if m else None
        if section is None and key in top:
            out.append(f"{key} = {top.pop(key)}")
        elif section == "nic" and key in values and m is not None:
            while out and out[-1].lstrip().startswith("#"):
                out.pop()  # the base's note on the value it had
            out.append(f"{m.group('indent')}{key} = {_toml_value(key, values.pop(key))}")
        else:
            out.append(line)
    if section == "nic":
        nic_end = len(out)
    if nic_end is None:
        raise InputError(f"{result.base.source}: the base profile has no [nic] table to write the fitted values in")
    while nic_end > 0 and not out[nic_end - 1].strip():
        nic_end -= 1
    out[nic_end:nic_end] = [f"{k} = {_toml_value(k, v)}" for k, v in values.items()]
    first_table = next((i for i, ln in enumerate(out) if _TABLE.match(ln)), len(out))
    out[first_table:first_table] = [f"{k} = {v}" for k, v in top.items()]
    start = 0
    while start < len(out) and out[start].lstrip().startswith("#"):
        start += 1  # the base's own heading comment no longer describes this profile
    heading = [w for line in _comment(result, logs) for w in
               textwrap.wrap(line, 118, subsequent_indent="#     ", break_on_hyphens=False)]
    return "\n".join([*heading, *out[start:]]) + "\n"
