"""The driver-independent view of one host's counters over a measured interval: what the oracle and calibration
read, and the only place that maps driver counter names to meanings.

:func:`normalize` takes the deltas of one host (``HostResult.counters``: deltas under real driver names,
gauges as means), the interval length and, where known, each counter's source, and uses the catalog's roles to
give pause ratios, traffic rates, loss and retransmission rates, drops, CNPs, PCIe stalls, storms, errors and
diagnostic rates, each with the counters it rests on (``basis``) and their sources.

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
      and divided by the interval: events per second; loss, retransmission and receiver starvation are also kept
      per counter;
    * a host with no pause counter at all has ``pause_readable`` false and a note saying so: its pause is
      unknown, not zero (mlx5 and bnxt_en count pause only in ``ethtool -S`` of the netdev).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Final

from collie.collectors.catalog import Catalog, CounterSpec, available_dialects, load_catalog, merge_catalogs
from collie.errors import InputError
from collie.model.rocev2 import XOFF_BITS

_PAUSE_ROLES: Final = ("pause_duration_rx", "pause_duration_tx", "pause_frames_rx", "pause_frames_tx")


class Work(Enum):
    """What a diagnostic reading is divided by to become a ratio a search can climb: packets or messages the
    host handled, or nothing (a gauge is already a level)."""

    PACKET = "packet"
    MESSAGE = "message"
    LEVEL = "level"


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
        diagnostic_work: diagnostic counter -> what its rate is per (:class:`Work`).
        loss_rates, retransmission_rates, receiver_starvation_rates: per counter of those roles, events per
            second.
        pause_readable: whether any pause counter (frames or duration, either direction) was present.
        basis: quantity (a key of :meth:`to_dict`) -> the counters it was computed from.
        sources: counter -> where it was read (``ethtool``, ``hw``, ...), for every counter in ``basis``.
        uncatalogued: counter names the catalog does not know (ignored here).
        notes: sentences a person should read (estimates, frames only, pause not readable).
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
    diagnostic_work: Mapping[str, Work] = field(default_factory=dict)
    loss_rates: Mapping[str, float] = field(default_factory=dict)
    retransmission_rates: Mapping[str, float] = field(default_factory=dict)
    receiver_starvation_rates: Mapping[str, float] = field(default_factory=dict)
    pause_readable: bool = False
    basis: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    uncatalogued: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def counters_used(self) -> set[str]:
        """Every counter a quantity of this view rests on."""
        return ({name for names in self.basis.values() for name in names} | set(self.diagnostic_per_s)
                | set(self.pcie_stall_pct) | set(self.loss_rates) | set(self.retransmission_rates)
                | set(self.receiver_starvation_rates))

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready form: per-priority ratios become ``pause_ratio_rx_p3``; mappings stay nested."""
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            if key in ("pause_ratio_rx", "pause_ratio_tx"):
                for p, r in sorted(value.items()):
                    out[f"{key}_p{p}"] = r
            elif key == "diagnostic_work":
                out[key] = {k: w.value for k, w in value.items()}
            elif key == "basis":
                out[key] = {k: list(v) for k, v in value.items()}
            elif isinstance(value, Mapping):
                out[key] = dict(value)
            elif isinstance(value, tuple):
                out[key] = list(value)
            else:
                out[key] = value
        return out


def _resolve(counters: Mapping[str, float | None], catalog: Catalog
             ) -> tuple[dict[str, float], dict[str, str], list[str]]:
    """Current name -> value, current name -> the name it was read under, and the unknown names; exact names
    and aliases win over ``source:`` prefixed duplicates."""
    exact: dict[str, tuple[float, str]] = {}
    prefixed: dict[str, tuple[float, str]] = {}
    unknown: list[str] = []
    for name, value in counters.items():
        spec = catalog.lookup(name)
        if spec is None:
            unknown.append(name)
            continue
        if value is None:
            continue
        target = exact if name == spec.name or name in spec.aliases else prefixed
        target.setdefault(spec.name, (float(value), name))
    for name, item in prefixed.items():
        exact.setdefault(name, item)
    return {k: v for k, (v, _) in exact.items()}, {k: n for k, (_, n) in exact.items()}, unknown


def _sum(values: Mapping[str, float], specs: list[CounterSpec]) -> float | None:
    present = [values[s.name] * s.scale for s in specs if s.name in values]
    return sum(present) if present else None


def _traffic(values: Mapping[str, float], catalog: Catalog, role: str) -> list[CounterSpec]:
    """The counters a traffic quantity is summed from (see the module docstring)."""
    specs = catalog.by_role(role)
    flat = [s for s in specs if s.priority is None]
    for s in flat:
        if s.name in values:
            return [g for g in flat if g.group == s.group and g.name in values]
    return [s for s in specs if s.priority is not None and s.name in values]


def _duration_fraction(value: float, spec: CounterSpec, seconds: float) -> float:
    unit_s = 1e-6 if spec.unit == "us" else 1e-3
    return min(1.0, max(0.0, value * unit_s / seconds))


def _pause(values: Mapping[str, float], catalog: Catalog, direction: str, seconds: float,
           line_rate_bps: float | None, basis: dict[str, tuple[str, ...]]
           ) -> tuple[dict[int, float], float | None, bool, str, float | None]:
    durations = {s.priority: s for s in catalog.by_role(f"pause_duration_{direction}") if s.name in values}
    frames = [s for s in catalog.by_role(f"pause_frames_{direction}") if s.name in values]
    ratios: dict[int | None, float] = {}
    kinds: set[str] = set()

    def key(prio: int | None) -> str:
        return f"pause_ratio_{direction}_p{prio}" if prio is not None else f"global_pause_ratio_{direction}"

    for prio, spec in durations.items():
        ratios[prio] = _duration_fraction(values[spec.name], spec, seconds)
        basis[key(prio)] = (spec.name,)
        kinds.add("duration")
    frames_only = False
    for spec in frames:
        if spec.priority in durations:
            continue
        if line_rate_bps is not None and line_rate_bps > 0:
            paused_s = values[spec.name] * XOFF_BITS / line_rate_bps
            ratios[spec.priority] = min(1.0, ratios.get(spec.priority, 0.0) + paused_s / seconds)
            basis[key(spec.priority)] = (spec.name,)
            kinds.add("xoff-estimate")
        else:
            frames_only = True
    if frames:
        basis[f"pause_frames_{direction}_per_s"] = tuple(s.name for s in frames)
    frame_rate = _sum(values, frames)
    per_prio = {p: r for p, r in ratios.items() if p is not None}
    how = ("mixed" if len(kinds) > 1 else next(iter(kinds))) if kinds else ("frames-only" if frames_only
                                                                             else "none")
    return (per_prio, ratios.get(None), "xoff-estimate" in kinds, how,
            None if frame_rate is None else frame_rate / seconds)


def normalize(counters: Mapping[str, float | None], seconds: float, catalog: Catalog, *,
              line_rate_bps: float | None = None, sources: Mapping[str, str] | None = None) -> NormalizedCounters:
    """The normalized view of one host's counter deltas over ``seconds``.

    Args:
        counters: deltas under driver names (gauges: means), e.g. ``HostResult.counters`` or
            ``Delta.counters()``; ``None`` values count as missing.
        seconds: the measured interval (> 0).
        catalog: the host's dialect catalog (for the simulator, merged with ``sim``: see :func:`catalog_for`).
        line_rate_bps: the port speed; only needed to estimate pause ratios from XOFF frame counts.
        sources: counter name (as in ``counters``) -> where it was read; a counter without one is given the
            source its catalog declares.

    Raises:
        InputError: ``seconds`` is not positive.
    """
    if not seconds > 0:
        raise InputError(f"the measured interval must be positive, got {seconds:g} s")
    values, read_as, unknown = _resolve(counters, catalog)
    notes: list[str] = []
    basis: dict[str, tuple[str, ...]] = {}

    def present(specs: list[CounterSpec]) -> list[CounterSpec]:
        return [s for s in specs if s.name in values]

    def rate(role: str, direction: str | None = None, key: str = "") -> float | None:
        specs = present([s for s in catalog.by_role(role) if direction is None or s.direction == direction])
        if specs and key:
            basis[key] = tuple(s.name for s in specs)
        total = _sum(values, specs)
        return None if total is None else total / seconds

    def count(role: str, key: str) -> float | None:
        specs = present(catalog.by_role(role))
        if specs:
            basis[key] = tuple(s.name for s in specs)
        return _sum(values, specs)

    def traffic(role: str) -> float | None:
        specs = _traffic(values, catalog, role)
        if specs:
            basis[f"{role}_per_s"] = tuple(s.name for s in specs)
        return _per_s(_sum(values, specs), seconds)

    def per_counter(role: str) -> dict[str, float]:
        return {s.name: values[s.name] / seconds for s in present(catalog.by_role(role))}

    rx = _pause(values, catalog, "rx", seconds, line_rate_bps, basis)
    tx = _pause(values, catalog, "tx", seconds, line_rate_bps, basis)
    pause_readable = any(s.name in values for role in _PAUSE_ROLES for s in catalog.by_role(role))
    if not pause_readable:
        has_pause = any(catalog.by_role(role) for role in _PAUSE_ROLES)
        notes.append("pause counters were not readable: none of this driver's pause counters is among the "
                     "host's counters (mlx5 and bnxt_en count pause in 'ethtool -S' of the port's netdev), so "
                     "no pause verdict is possible" if has_pause else
                     f"the {catalog.driver} driver has no pause counters, so no pause verdict is possible")
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

    drops = count("drop", "drops")
    gauges = {s.name: values[s.name] for s in catalog.by_role("pcie")
              if s.kind == "gauge" and s.name in values}
    diag: dict[str, float] = {}
    work: dict[str, Work] = {}
    for s in catalog.diagnostic():
        if s.name in values:
            diag[s.name] = values[s.name] if s.kind == "gauge" else values[s.name] * s.scale / seconds
            work[s.name] = Work.LEVEL if s.kind == "gauge" else Work(s.per)
    n = NormalizedCounters(
        seconds=seconds,
        pause_ratio_rx=rx[0], pause_ratio_tx=tx[0],
        global_pause_ratio_rx=rx[1], global_pause_ratio_tx=tx[1],
        max_pause_ratio_rx=maxi(rx[0], rx[1]), max_pause_ratio_tx=maxi(tx[0], tx[1]),
        pause_estimated_rx=rx[2], pause_estimated_tx=tx[2],
        pause_basis_rx=rx[3], pause_basis_tx=tx[3],
        pause_frames_rx_per_s=rx[4], pause_frames_tx_per_s=tx[4],
        bytes_rx_per_s=traffic("bytes_rx"),
        bytes_tx_per_s=traffic("bytes_tx"),
        packets_rx_per_s=traffic("packets_rx"),
        packets_tx_per_s=traffic("packets_tx"),
        loss_per_s=rate("loss", key="loss_per_s"),
        retransmission_per_s=rate("retransmission", key="retransmission_per_s"),
        receiver_starvation_per_s=rate("receiver_starvation", key="receiver_starvation_per_s"),
        drops=drops, drops_per_s=_per_s(drops, seconds),
        cnp_rx_per_s=rate("congestion_notification", "rx", "cnp_rx_per_s"),
        cnp_tx_per_s=rate("congestion_notification", "tx", "cnp_tx_per_s"),
        ecn_marked_per_s=rate("congestion_notification", "", "ecn_marked_per_s"),
        pcie_stall_pct=gauges,
        max_pcie_stall_pct=max(gauges.values()) if gauges else None,
        pcie_events=_pcie_events(values, catalog, basis),
        storm_events=count("storm", "storm_events"),
        fatal_events=count("fatal", "fatal_events"),
        error_events=count("error", "error_events"),
        diagnostic_per_s=diag,
        diagnostic_work=work,
        loss_rates=per_counter("loss"),
        retransmission_rates=per_counter("retransmission"),
        receiver_starvation_rates=per_counter("receiver_starvation"),
        pause_readable=pause_readable,
        basis=basis,
        uncatalogued=tuple(unknown),
        notes=tuple(notes),
    )
    given = sources or {}
    return replace(n, sources={name: given.get(read_as[name]) or _declared(catalog, name)
                               for name in sorted(n.counters_used())})


def _per_s(value: float | None, seconds: float) -> float | None:
    return None if value is None else value / seconds


def _pcie_events(values: Mapping[str, float], catalog: Catalog, basis: dict[str, tuple[str, ...]]) -> float | None:
    specs = [s for s in catalog.by_role("pcie") if s.kind != "gauge" and s.name in values]
    if specs:
        basis["pcie_events"] = tuple(s.name for s in specs)
    return _sum(values, specs)


def _declared(catalog: Catalog, name: str) -> str:
    spec = catalog.lookup(name)
    return spec.source if spec is not None else ""


def catalog_for(dialect: str, *, simulated: bool = False) -> Catalog:
    """The catalog a host's counters follow: its dialect, merged with ``sim`` for the simulator's own
    diagnostic counters (``sim_*``) when ``simulated`` and a ``counters/sim.toml`` is installed."""
    base = load_catalog(dialect)
    if simulated and dialect != "sim" and "sim" in available_dialects():
        return merge_catalogs([base, load_catalog("sim")])
    return base
