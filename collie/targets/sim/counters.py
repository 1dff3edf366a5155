"""Counter deltas of one simulated host under the real driver names of the profile's dialect.

Which counters a simulated host reports is data: every counter of its dialect's catalog (``counters/*.toml``,
merged with ``counters/sim.toml`` for the simulator's own ``sim_*`` diagnostic counters) that has a ``sim``
field, which names one of the simulated quantities below (``sim = "tx_wire"``), optionally scaled
(``sim_scale = 0.1``). This module holds the quantities: how each is computed from one host's accumulator and
the measured interval, in which catalog units it can be reported, and how it is rounded.

Invariants:
    * values are deltas over the measured interval (gauges, e.g. ``outbound_pci_stalled_rd``: the mean);
    * a counter's value is ``rounding(amount x sim_scale x unit factor)``, in that order (``octets/4``: a
      quarter of the bytes; ``us``/``ms``: seconds x 1e6 / 1e3);
    * pause durations are ``pause ratio x duration``; per-priority templates are reported at :data:`PRIO` (the
      priority of the hosts' own traffic class, the lossless one as in Collie) and at every other priority a
      run's traffic is on, each from what its host counted on that priority;
    * byte and packet counters equal rate x duration, so they agree with
      :class:`~collie.targets.base.HostResult`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Final

from collie.collectors.catalog import Catalog, CounterSpec, catalog_path, load_catalogs
from collie.errors import InputError
from collie.model.rocev2 import PRIORITIES, XOFF_BITS
from collie.targets.sim.model import HOST_PRIORITY, HostAcc

#: The priority of the simulated hosts' own traffic class: ``{p}`` templates are always reported at it, and at any
#: other priority a run's traffic or pause is on.
PRIO: Final = HOST_PRIORITY
#: Bit times one simulated pause frame covers: frames are refreshed at half the quanta an XOFF can request.
_QUANTA_BITS: Final = XOFF_BITS / 2
#: One XOFF->XON transition per this many µs of pause (at least one when paused at all).
_US_PER_TRANSITION: Final = 200.0

CounterFunction = Callable[[HostAcc, float, float], dict[str, float]]


@dataclass(frozen=True)
class Quantity:
    """A simulated quantity a catalog counter can report (``sim = "<name>"``).

    Attributes:
        amount: ``(acc, duration, line_rate_bps)`` -> the quantity over the interval, in its own unit (bytes,
            packets, seconds, ...), before scaling and rounding.
        units: catalog units it can be reported in -> factor from its own unit; empty: any unit.
        rounding: turns the scaled amount into the counter's value.
        rate: for a per-second rate of the accumulator, its field (``amount`` is then the field x the
            duration, and a counter function reads every such field at once); ``""`` otherwise.
        source: for another quantity that is 0 whenever a field of the accumulator is 0, that field (a counter
            function reads it with the rates and skips ``amount`` then); ``""`` otherwise.
    """

    amount: Callable[[HostAcc, float, float], float]
    units: Mapping[str, float]
    rounding: Callable[[float], float]
    rate: str = ""
    source: str = ""


def _int(x: float) -> float:
    """The nearest whole count (halves up) of an amount >= 0: ``float(int(x + 0.5))`` without the int."""
    return (x + 0.5) // 1.0


def _whole(x: float) -> float:
    return float(round(x))


def _at_least_one(x: float) -> float:
    return float(max(1, round(x))) if x > 0 else 0.0


def _gauge(x: float) -> float:
    return round(x, 3)


def _exact(x: float) -> float:
    return x


def _frames(ratio: float, d: float, line: float) -> float:
    if ratio <= 0:
        return 0.0
    return ratio * d / (_QUANTA_BITS / line)


def _transitions(ratio: float, d: float) -> float:
    if ratio <= 0:
        return 0.0
    # a pause too short to show in floating point is still one transition (_at_least_one rounds it up)
    return ratio * d * 1e6 / _US_PER_TRANSITION or math.ulp(0.0)


_BYTES: Final = {"bytes": 1.0, "octets/4": 0.25}
_PACKETS: Final = {"packets": 1.0}
_COUNT: Final = {"packets": 1.0, "events": 1.0}
_EVENTS: Final = {"events": 1.0}
_SECONDS: Final = {"us": 1e6, "ms": 1e3}


def _count(field: str, units: Mapping[str, float]) -> Quantity:
    """A per-second rate of the accumulator over the interval, rounded to a whole count."""
    get = attrgetter(field)
    return Quantity(lambda acc, d, line: float(get(acc)) * d, units, _int, field)


def _diagnostic(field: str) -> Quantity:
    """A diagnostic rate over the interval, left unrounded: the model applies its noise, then rounds."""
    get = attrgetter(field)
    return Quantity(lambda acc, d, line: float(get(acc)) * d, _EVENTS, _exact, field)


#: Every simulated quantity a catalog's ``sim`` field may name.
QUANTITIES: Final[Mapping[str, Quantity]] = {
    "tx_wire": _count("tx_wire", _BYTES),
    "rx_wire": _count("rx_wire", _BYTES),
    "tx_pkts": _count("tx_pkts", _PACKETS),
    "rx_pkts": _count("rx_pkts", _PACKETS),
    "lost_rx": _count("lost_rx", _COUNT),
    "lost_tx": _count("lost_tx", _COUNT),
    "link_down": _count("link_down", _EVENTS),
    "rx_write": _count("rx_write", _COUNT),
    "rx_read": _count("rx_read", _COUNT),
    "rx_atomic": _count("rx_atomic", _COUNT),
    "tx_send": _count("tx_send", _COUNT),
    "rnr_naks_sent": _count("rnr_naks_sent", _COUNT),
    "rnr_naks_received": _count("rnr_naks_received", _COUNT),
    "rx_no_wqe": _count("rx_no_wqe", _COUNT),
    "rx_send": _count("rx_send", _COUNT),
    "pause_tx_time": _count("pause_tx", _SECONDS),  # the pause ratio: seconds paused per second
    "pause_rx_time": _count("pause_rx", _SECONDS),
    "pause_tx_frames": Quantity(lambda acc, d, line: _frames(acc.pause_tx, d, line), {"frames": 1.0}, _whole,
                                source="pause_tx"),
    "pause_rx_frames": Quantity(lambda acc, d, line: _frames(acc.pause_rx, d, line), {"frames": 1.0}, _whole,
                                source="pause_rx"),
    "pause_tx_transitions": Quantity(lambda acc, d, line: _transitions(acc.pause_tx, d), _EVENTS, _at_least_one,
                                     source="pause_tx"),
    "pause_rx_transitions": Quantity(lambda acc, d, line: _transitions(acc.pause_rx, d), _EVENTS, _at_least_one,
                                     source="pause_rx"),
    "pcie_stall": Quantity(lambda acc, d, line: acc.pcie_stall, {"percent": 1.0}, _gauge, source="pcie_stall"),
    "zero": Quantity(lambda acc, d, line: 0.0, {}, _exact),
    "diag_rx_wqe": _diagnostic("diag_rx_wqe"),
    "diag_qpc": _diagnostic("diag_qpc"),
    "diag_mtt": _diagnostic("diag_mtt"),
    "diag_pcie": _diagnostic("diag_pcie"),
    "diag_pkt": _diagnostic("diag_pkt"),
}


def reported(catalog: Catalog) -> list[CounterSpec]:
    """The specs of ``catalog`` the simulator reports whatever a run does: a ``sim`` field, and no priority but
    :data:`PRIO` (a run reports the per-priority counters of any other priority its hosts' traffic is on too)."""
    return [s for s in catalog if s.sim and s.priority in (None, PRIO)]


#: Fills in the counters of one list of specs: ``(out, acc, duration, line_rate_bps)``.
_Fill = Callable[[dict[str, float], HostAcc, float, float], None]


def counter_function(catalog: Catalog) -> CounterFunction:
    """A function ``(acc, duration, line_rate_bps) -> {counter: delta}`` reporting every counter of
    :func:`reported`, in catalog order, then the per-priority counters of each other priority in
    ``acc.by_priority`` (each priority's from that priority's accumulator).

    Raises:
        InputError: a ``sim`` field names an unknown quantity, or one that cannot be reported in the counter's
            unit (one sentence naming the catalog file and the counter).
    """
    specs = reported(catalog)
    zeros = dict.fromkeys((s.name for s in specs), 0.0)  # every counter at 0 (the model leaves most there)
    fill_plain = _filler([s for s in specs if s.priority is None])
    fill_prio = _filler([s for s in specs if s.priority == PRIO])
    others = {p: ([s for s in catalog if s.sim and s.priority == p]) for p in range(PRIORITIES) if p != PRIO}
    fill_other = {p: (dict.fromkeys((s.name for s in ps), 0.0), _filler(ps)) for p, ps in others.items()}

    def counters(acc: HostAcc, d: float, line: float) -> dict[str, float]:
        out = zeros.copy()
        fill_plain(out, acc, d, line)
        by_priority = acc.by_priority
        if not by_priority:  # an accumulator of no run (Compiled's probe): the priority's counters from it
            fill_prio(out, acc, d, line)
            return out
        for p, at in by_priority.items():
            if p == PRIO:
                fill_prio(out, at, d, line)
            else:
                names, fill = fill_other[p]
                out.update(names)
                fill(out, at, d, line)
        return out

    return counters


def _filler(specs: list[CounterSpec]) -> _Fill:
    """What fills in the counters of ``specs`` (see :func:`counter_function`)."""
    # per quantity (in catalog order of first use): the counters that report it
    plan: dict[int, tuple[Quantity, list[tuple[str, float, Callable[[float], float]]]]] = {}  # by id
    for spec in specs:
        q = _quantity(spec)
        if q is not QUANTITIES["zero"]:
            plan.setdefault(id(q), (q, []))[1].append(
                (spec.name, spec.sim_scale * q.units.get(spec.unit, 1.0), q.rounding))
    rates = [(q.rate, outs) for q, outs in plan.values() if q.rate]
    fields = tuple(field for field, _ in rates)
    # the sources of the other quantities, read with the rates
    fields += tuple({q.source: None for q, _ in plan.values() if q.source and q.source not in fields})
    # one attrgetter reads every rate field as a tuple (a tuple of one or none read one by one)
    read: Callable[[HostAcc], tuple[float, ...]] = (attrgetter(*fields) if len(fields) > 1
                                                    else lambda acc: tuple(getattr(acc, f) for f in fields))
    # every counter of a rate field, as the field's place in ``fields``, its name and scale, by its rounding:
    # _int and _exact written out below (the same arithmetic without a call per counter), anything else called
    whole = tuple((i, name, scale) for i, (_, outs) in enumerate(rates) for name, scale, rounding in outs
                  if rounding is _int)
    exact = tuple((i, name, scale) for i, (_, outs) in enumerate(rates) for name, scale, rounding in outs
                  if rounding is _exact)
    rest = tuple((i, name, scale, rounding) for i, (_, outs) in enumerate(rates) for name, scale, rounding in outs
                 if rounding is not _int and rounding is not _exact)
    # (the place of the quantity's source in ``fields``, or None), its amount, its counters
    others = tuple((fields.index(q.source) if q.source else None, q.amount, tuple(outs))
                   for q, outs in plan.values() if not q.rate)

    def fill(out: dict[str, float], acc: HostAcc, d: float, line: float) -> None:
        v = read(acc)
        for i, name, scale in whole:
            if v[i]:  # every rounding keeps 0 at 0
                out[name] = (v[i] * d * scale + 0.5) // 1.0
        for i, name, scale in exact:
            if v[i]:
                out[name] = v[i] * d * scale
        for i, name, scale, rounding in rest:
            if v[i]:
                out[name] = rounding(v[i] * d * scale)
        for source, amount, outs in others:
            if source is not None and not v[source]:
                continue  # the amount is 0, and every rounding keeps 0 at 0
            a = amount(acc, d, line)
            if a:
                for name, scale, rounding in outs:
                    out[name] = rounding(a * scale)

    return fill


def dialect_catalog(dialect: str) -> Catalog:
    """``dialect``'s counter catalog merged with the simulator's own (``sim``): every name the simulator
    reports for a profile of that dialect."""
    return load_catalogs(dialect, "sim") if dialect != "sim" else load_catalogs("sim")


def dialect_counters(dialect: str) -> CounterFunction:
    """:func:`counter_function` of :func:`dialect_catalog`."""
    return counter_function(dialect_catalog(dialect))


def _quantity(spec: CounterSpec) -> Quantity:
    where = f"{catalog_path(spec.dialect)}: counter ({spec.template or spec.name}).sim"
    q = QUANTITIES.get(spec.sim)
    if q is None:
        raise InputError(f"{where}: {spec.sim!r} is not a simulated quantity; use one of "
                         f"{', '.join(sorted(QUANTITIES))}")
    if q.units and spec.unit not in q.units:
        raise InputError(f"{where}: {spec.sim!r} cannot be reported in unit {spec.unit!r}; the counter's unit must "
                         f"be {' or '.join(q.units)}")
    return q
