"""The driver-independent view of one host's counters over a measured interval: what the oracle reads.

:func:`normalize` takes the deltas of one host (``HostResult.counters``: deltas under real driver names,
gauges as means) and the interval length, and uses the catalog's roles to give pause ratios, traffic rates,
loss and retransmission rates, drops, CNPs, PCIe stalls, storms, errors and diagnostic rates.

Invariants of a :class:`NormalizedCounters`:
    * a quantity none of whose counters is present is ``None`` (or absent from a mapping), never 0;
    * pause ratios are fractions of the interval in 0..1 (clipped at 1). From pause durations (µs or ms)
      they are measured; where a priority has only XOFF frame counts (ice), the ratio is an upper bound
      ``frames x 65535 quanta x 512 bit times / line rate`` and ``pause_estimated_rx/tx`` is true; without a
      line rate such a priority has frames only and no ratio (``pause_basis_* == "frames-only"``);
    * ``rx`` pause = pause frames received (the peer throttles our TX); ``tx`` pause = pause we sent (our
      RX could not keep up, we throttle the peer);
    * traffic: for each of bytes/packets rx/tx, the first present non-priority counter in catalog order is
      used (with the counters of its ``group`` summed), else the sum of the per-priority counters;
      ``octets/4`` counters are multiplied by 4;
    * event roles (loss, retransmission, receiver starvation, CNPs) are summed over every present counter
      and divided by the interval: events per second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from collie.collectors.catalog import Catalog, CounterSpec, available_dialects, load_catalog, merge_catalogs
from collie.errors import InputError

PAUSE_QUANTA_MAX: Final = 65535
BITS_PER_QUANTUM: Final = 512


@dataclass(frozen=True)
class NormalizedCounters:
    """One host over one interval, in driver-independent terms (see the module docstring).

    Attributes:
        seconds: the interval.
        pause_ratio_rx, pause_ratio_tx: priority -> fraction of the interval paused (0..1).
        global_pause_ratio_rx, global_pause_ratio_tx: link-level (802.3x) pause fraction, or ``None``.
        max_pause_ratio_rx, max_pause_ratio_tx: the largest of the above, or ``None``.
        pause_estimated_rx, pause_estimated_tx: true when any of those ratios is an XOFF upper-bound estimate.
        pause_basis_rx, pause_basis_tx: ``duration``, ``xoff-estimate``, ``mixed``, ``frames-only`` or
            ``none``.
        pause_frames_rx_per_s, pause_frames_tx_per_s: pause frames per second (all priorities and global).
        bytes_rx_per_s, bytes_tx_per_s, packets_rx_per_s, packets_tx_per_s: traffic per direction.
        loss_per_s, retransmission_per_s, receiver_starvation_per_s: events per second.
        drops: packets dropped in the interval; ``drops_per_s`` the same per second.
        cnp_rx_per_s: CNPs received (reaction point); cnp_tx_per_s: CNPs sent (notification point);
        ecn_marked_per_s: ECN CE-marked packets received.
        pcie_stall_pct: PCIe stall gauge -> mean percent; max_pcie_stall_pct: the largest, or ``None``.
        pcie_events: PCIe error/stall events counted in the interval.
        storm_events: pause-storm watchdog events in the interval (top severity).
        fatal_events: QP-killing events (retry limits exceeded); error_events: other error counters.
        diagnostic_per_s: diagnostic counter -> per-second rate (gauges: mean level).
        uncatalogued: counter names the catalog does not know (ignored here).
        notes: sentences a person should read (estimates, frames only).
    """

    seconds: float
    pause_ratio_rx: Mapping[int, float] = field(default_factory=dict)
    pause_ratio_tx: Mapping[int, float] = field(default_factory=dict)
    global_pause_ratio_rx: float | None = None
    global_pause_ratio_tx: float | None = None
    max_pause_ratio_rx: float | None = None
    max_pause_ratio_tx: float | None = None
    pause_estimated_rx: bool = False
    pause_estimated_tx: bool = False
    pause_basis_rx: str = "none"
    pause_basis_tx: str = "none"
    pause_frames_rx_per_s: float | None = None
    pause_frames_tx_per_s: float | None = None
    bytes_rx_per_s: float | None = None
    bytes_tx_per_s: float | None = None
    packets_rx_per_s: float | None = None
    packets_tx_per_s: float | None = None
    loss_per_s: float | None = None
    retransmission_per_s: float | None = None
    receiver_starvation_per_s: float | None = None
    drops: float | None = None
    drops_per_s: float | None = None
    cnp_rx_per_s: float | None = None
    cnp_tx_per_s: float | None = None
    ecn_marked_per_s: float | None = None
    pcie_stall_pct: Mapping[str, float] = field(default_factory=dict)
    max_pcie_stall_pct: float | None = None
    pcie_events: float | None = None
    storm_events: float | None = None
    fatal_events: float | None = None
    error_events: float | None = None
    diagnostic_per_s: Mapping[str, float] = field(default_factory=dict)
    uncatalogued: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready form: per-priority ratios become ``pause_ratio_rx_p3``; mappings stay nested."""
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            if key in ("pause_ratio_rx", "pause_ratio_tx"):
                for p, r in sorted(value.items()):
                    out[f"{key}_p{p}"] = r
            elif isinstance(value, Mapping):
                out[key] = dict(value)
            elif isinstance(value, tuple):
                out[key] = list(value)
            else:
                out[key] = value
        return out


def _resolve(counters: Mapping[str, float | None], catalog: Catalog) -> tuple[dict[str, float], list[str]]:
    """Current name -> value; exact names and aliases win over ``source:`` prefixed duplicates."""
    exact: dict[str, float] = {}
    prefixed: dict[str, float] = {}
    unknown: list[str] = []
    for name, value in counters.items():
        spec = catalog.lookup(name)
        if spec is None:
            unknown.append(name)
            continue
        if value is None:
            continue
        target = exact if name == spec.name or name in spec.aliases else prefixed
        target.setdefault(spec.name, float(value))
    for name, value in prefixed.items():
        exact.setdefault(name, value)
    return exact, unknown


def _sum(values: Mapping[str, float], specs: list[CounterSpec]) -> float | None:
    present = [values[s.name] * s.scale for s in specs if s.name in values]
    return sum(present) if present else None


def _traffic(values: Mapping[str, float], catalog: Catalog, role: str) -> float | None:
    specs = catalog.by_role(role)
    flat = [s for s in specs if s.priority is None]
    for s in flat:
        if s.name in values:
            return _sum(values, [g for g in flat if g.group == s.group])
    return _sum(values, [s for s in specs if s.priority is not None])


def _duration_fraction(value: float, spec: CounterSpec, seconds: float) -> float:
    unit_s = 1e-6 if spec.unit == "us" else 1e-3
    return min(1.0, max(0.0, value * unit_s / seconds))


def _pause(values: Mapping[str, float], catalog: Catalog, direction: str, seconds: float,
           line_rate_bps: float | None) -> tuple[dict[int, float], float | None, bool, str, float | None]:
    durations = {s.priority: s for s in catalog.by_role(f"pause_duration_{direction}") if s.name in values}
    frames = [s for s in catalog.by_role(f"pause_frames_{direction}") if s.name in values]
    ratios: dict[int | None, float] = {}
    kinds: set[str] = set()
    for prio, spec in durations.items():
        ratios[prio] = _duration_fraction(values[spec.name], spec, seconds)
        kinds.add("duration")
    frames_only = False
    for spec in frames:
        if spec.priority in durations:
            continue
        if line_rate_bps is not None and line_rate_bps > 0:
            paused_s = values[spec.name] * PAUSE_QUANTA_MAX * BITS_PER_QUANTUM / line_rate_bps
            ratios[spec.priority] = min(1.0, ratios.get(spec.priority, 0.0) + paused_s / seconds)
            kinds.add("xoff-estimate")
        else:
            frames_only = True
    frame_rate = _sum(values, frames)
    per_prio = {p: r for p, r in ratios.items() if p is not None}
    basis = ("mixed" if len(kinds) > 1 else next(iter(kinds))) if kinds else ("frames-only" if frames_only
                                                                               else "none")
    return (per_prio, ratios.get(None), "xoff-estimate" in kinds, basis,
            None if frame_rate is None else frame_rate / seconds)


def normalize(counters: Mapping[str, float | None], seconds: float, catalog: Catalog, *,
              line_rate_bps: float | None = None) -> NormalizedCounters:
    """The normalized view of one host's counter deltas over ``seconds``.

    Args:
        counters: deltas under driver names (gauges: means), e.g. ``HostResult.counters`` or
            ``Delta.counters()``; ``None`` values count as missing.
        seconds: the measured interval (> 0).
        catalog: the host's dialect catalog (for the simulator, merged with ``sim``: see :func:`catalog_for`).
        line_rate_bps: the port speed; only needed to estimate pause ratios from XOFF frame counts.

    Raises:
        InputError: ``seconds`` is not positive.
    """
    if not seconds > 0:
        raise InputError(f"the measured interval must be positive, got {seconds:g} s")
    values, unknown = _resolve(counters, catalog)
    notes: list[str] = []

    def rate(role: str, direction: str | None = None) -> float | None:
        specs = [s for s in catalog.by_role(role) if direction is None or s.direction == direction]
        total = _sum(values, specs)
        return None if total is None else total / seconds

    def count(role: str, kind: str | None = None) -> float | None:
        return _sum(values, [s for s in catalog.by_role(role) if kind is None or s.kind == kind])

    rx = _pause(values, catalog, "rx", seconds, line_rate_bps)
    tx = _pause(values, catalog, "tx", seconds, line_rate_bps)
    for direction, res in (("rx", rx), ("tx", tx)):
        if res[3] in ("xoff-estimate", "mixed"):
            notes.append(f"pause ratio {direction} is partly or wholly an upper-bound estimate from XOFF "
                         f"frame counts (the driver has no pause duration counters)")
        elif res[3] == "frames-only":
            notes.append(f"pause {direction}: the driver counts pause frames only; give the line rate for an "
                         f"upper-bound estimate of the pause ratio")

    def maxi(per: Mapping[int, float], glob: float | None) -> float | None:
        vals = [*per.values(), *([] if glob is None else [glob])]
        return max(vals) if vals else None

    drops = count("drop")
    gauges = {s.name: values[s.name] for s in catalog.by_role("pcie")
              if s.kind == "gauge" and s.name in values}
    diag: dict[str, float] = {}
    for s in catalog.diagnostic():
        if s.name in values:
            diag[s.name] = values[s.name] if s.kind == "gauge" else values[s.name] * s.scale / seconds

    return NormalizedCounters(
        seconds=seconds,
        pause_ratio_rx=rx[0], pause_ratio_tx=tx[0],
        global_pause_ratio_rx=rx[1], global_pause_ratio_tx=tx[1],
        max_pause_ratio_rx=maxi(rx[0], rx[1]), max_pause_ratio_tx=maxi(tx[0], tx[1]),
        pause_estimated_rx=rx[2], pause_estimated_tx=tx[2],
        pause_basis_rx=rx[3], pause_basis_tx=tx[3],
        pause_frames_rx_per_s=rx[4], pause_frames_tx_per_s=tx[4],
        bytes_rx_per_s=_per_s(_traffic(values, catalog, "bytes_rx"), seconds),
        bytes_tx_per_s=_per_s(_traffic(values, catalog, "bytes_tx"), seconds),
        packets_rx_per_s=_per_s(_traffic(values, catalog, "packets_rx"), seconds),
        packets_tx_per_s=_per_s(_traffic(values, catalog, "packets_tx"), seconds),
        loss_per_s=rate("loss"),
        retransmission_per_s=rate("retransmission"),
        receiver_starvation_per_s=rate("receiver_starvation"),
        drops=drops, drops_per_s=_per_s(drops, seconds),
        cnp_rx_per_s=rate("congestion_notification", "rx"),
        cnp_tx_per_s=rate("congestion_notification", "tx"),
        ecn_marked_per_s=rate("congestion_notification", ""),
        pcie_stall_pct=gauges,
        max_pcie_stall_pct=max(gauges.values()) if gauges else None,
        pcie_events=_sum(values, [s for s in catalog.by_role("pcie") if s.kind != "gauge"]),
        storm_events=count("storm"),
        fatal_events=count("fatal"),
        error_events=count("error"),
        diagnostic_per_s=diag,
        uncatalogued=tuple(unknown),
        notes=tuple(notes),
    )


def _per_s(value: float | None, seconds: float) -> float | None:
    return None if value is None else value / seconds


def catalog_for(dialect: str, *, simulated: bool = False) -> Catalog:
    """The catalog a host's counters follow: its dialect, merged with ``sim`` for the simulator's own
    diagnostic counters (``sim_*``) when ``simulated`` and a ``counters/sim.toml`` is installed."""
    base = load_catalog(dialect)
    if simulated and dialect != "sim" and "sim" in available_dialects():
        return merge_catalogs([base, load_catalog("sim")])
    return base
