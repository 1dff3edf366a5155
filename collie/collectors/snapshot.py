"""Snapshots of counters and the delta between two of them, honouring each counter's kind.

Invariants:
    * a :class:`Snapshot` maps counter names to raw values as read (``None``: present but unreadable or
      ``N/A``); a name that is absent was not there at all. Values are never scaled (``octets/4`` stays /4)
      and the parsers keep them as Python ints, so deltas of 64-bit counters are exact;
    * :func:`delta` never invents a value: a counter missing or ``None`` on either side is ``None`` in the
      result; a monotonic counter that went down is a reset, reported in ``Delta.resets`` with value ``None``
      (never a huge negative or a huge wrapped number); a ``wrap32`` counter that went down by less than half
      the 32-bit range wrapped once and is corrected by 2^32; gauges are averaged, never differenced;
      settings (``lifespan``) are reported apart, never as counters;
    * a name the catalog does not know is treated as a monotonic 64-bit counter and listed in
      ``Delta.uncatalogued``;
    * every counter of a snapshot read by a collector knows its source (``Snapshot.sources``: ``port``,
      ``hw``, ``dev``, ``ethtool``, ``rdma-stat``, ``sim``); a source the host could not read is named in
      ``Snapshot.unreadable`` with the reason, and its counters are absent (missing, never 0).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader, Table
from collie.collectors.catalog import Catalog
from collie.errors import InputError
from collie.tomlio import read_text

WRAP32: Final = 1 << 32
SOURCE_ORDER: Final = ("port", "hw", "dev", "ethtool", "rdma-stat", "sim")


@dataclass(frozen=True)
class Snapshot:
    """Every counter one reader saw at one instant.

    Attributes:
        timestamp: seconds since the epoch when the reading started (``time.time()``).
        values: counter name -> raw value; ``None`` = the counter exists but could not be read or parsed.
        source: where it came from (``sysfs``, ``ethtool``, ``rdma-stat``, ``combined``, ``sim``, a file).
        device: what it describes, ``DEV/PORT`` for RDMA ports (``mlx5_0/1``) or a netdev name.
        problems: one sentence per counter that could not be read (permission, ``N/A (no PMA)``, garbage).
        sources: counter name -> the source it was read from (see :data:`SOURCE_ORDER`); empty for a snapshot
            of unknown provenance (a file saved by an older collie).
        unreadable: source -> one sentence saying why that whole source could not be read on this host.
    """

    timestamp: float
    values: Mapping[str, float | None]
    source: str
    device: str
    problems: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (read back by :meth:`from_dict`)."""
        return {"timestamp": self.timestamp, "source": self.source, "device": self.device,
                "values": dict(self.values), "problems": list(self.problems), "sources": dict(self.sources),
                "unreadable": dict(self.unreadable)}

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Snapshot:
        """Read :meth:`to_dict`'s form, every field checked: ``timestamp`` and ``values`` are required, the rest
        may be absent (``source`` is then ``file``). Counter values stay as written (an int stays an int).

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped or unknown).
        """
        d = reader.table(data, [f.name for f in fields(cls)])
        timestamp = d.number("timestamp", what="a number of seconds")
        values = d.table("values")
        problems = d.items("problems", [], "a list of strings")
        return cls(timestamp, {name: _counter(values.at(name), v) for name, v in values.data.items()},
                   d.text("source", "file"), d.text("device", ""),
                   tuple(d.at("problems").at(i).string(p) for i, p in enumerate(problems)),
                   _names(d, "sources"), _names(d, "unreadable"))


def _counter(reader: Reader, value: Any) -> float | None:
    """A counter's value as written: null (unreadable), or a number (an int kept exact)."""
    if value is None:
        return None
    number = reader.number(value, "a number or null")
    return value if isinstance(value, int) else number


def _names(d: Table, key: str) -> dict[str, str]:
    """Field ``key`` of ``d``: a table of names to strings (empty when absent)."""
    table = d.table(key, default={})
    return {name: table.at(name).string(v) for name, v in table.data.items()}


def now() -> float:
    """The timestamp collectors put on snapshots (wall clock, so saved snapshots compare across processes)."""
    return time.time()


def combine(parts: Iterable[tuple[str, Snapshot]], *, device: str | None = None) -> Snapshot:
    """Merge snapshots of one device from several sources into one.

    Args:
        parts: ``(source_tag, snapshot)`` pairs, earliest source first (``port``, ``hw``, ``ethtool``, ...).
        device: the device label of the result (default: the first part's).

    A name already taken by an earlier source is stored as ``<source_tag>:<name>`` (bnxt's ``rx_bytes`` is in
    both hw_counters and ``ethtool -S``); :meth:`Catalog.lookup` understands that form. Each counter's source
    is the part's own (``Snapshot.sources``) or else its tag. The timestamp is the earliest of the parts.
    """
    items = list(parts)
    if not items:
        raise ValueError("combine needs at least one snapshot")
    values: dict[str, float | None] = {}
    sources: dict[str, str] = {}
    problems: list[str] = []
    unreadable: dict[str, str] = {}
    for tag, snap in items:
        for name, v in snap.values.items():
            key = name if name not in values else f"{tag}:{name}"
            if key not in values:
                values[key] = v
                sources[key] = snap.sources.get(name, tag)
        problems.extend(snap.problems)
        unreadable.update(snap.unreadable)
    return Snapshot(min(s.timestamp for _, s in items), values, "combined",
                    device if device is not None else items[0][1].device, tuple(problems), sources,
                    unreadable)


@dataclass(frozen=True)
class Reset:
    """A counter that went backwards between two snapshots (driver reload, device reset, or a 32-bit counter
    that moved too far to be a single wrap)."""

    name: str
    before: float
    after: float

    def sentence(self) -> str:
        return (f"counter {self.name} went from {self.before:.0f} to {self.after:.0f}: it was reset, so its "
                f"delta over this interval is unknown")


@dataclass(frozen=True)
class Delta:
    """What changed between two snapshots of one device.

    Attributes:
        seconds: length of the interval (> 0).
        values: name -> delta in raw units for counters, mean for gauges; ``None`` when unknown (missing on a
            side, unreadable, or reset). Settings are not here.
        settings: name -> current value of every ``setting`` (``lifespan``).
        resets: counters detected as reset (their value is ``None``).
        wraps: 32-bit counters that wrapped once and were corrected.
        uncatalogued: names the catalog does not know (treated as monotonic 64-bit).
        device: the device of the later snapshot.
        sources: counter name -> source, from the snapshots.
        unreadable: source -> why it could not be read, from either snapshot.
    """

    seconds: float
    values: Mapping[str, float | None]
    settings: Mapping[str, float | None] = field(default_factory=dict)
    resets: tuple[Reset, ...] = ()
    wraps: tuple[str, ...] = ()
    uncatalogued: tuple[str, ...] = ()
    device: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)

    def counters(self) -> dict[str, float]:
        """Known values only (what ``HostResult.counters`` holds: absent = not available, never 0)."""
        return {k: v for k, v in self.values.items() if v is not None}

    def rates(self, catalog: Catalog) -> dict[str, float | None]:
        """Per-second rates of counters in raw units; gauges are passed through as their mean."""
        out: dict[str, float | None] = {}
        for name, v in self.values.items():
            spec = catalog.lookup(name)
            if v is None:
                out[name] = None
            elif spec is not None and spec.kind == "gauge":
                out[name] = v
            else:
                out[name] = v / self.seconds
        return out


def delta(a: Snapshot, b: Snapshot, seconds: float | None = None, catalog: Catalog | None = None) -> Delta:
    """The change from ``a`` to ``b``.

    Args:
        a, b: earlier and later snapshot of the same device.
        seconds: interval length; default ``b.timestamp - a.timestamp``.
        catalog: gives each counter's kind; without one every counter is monotonic 64-bit.

    Raises:
        InputError: the interval is not positive.
    """
    secs = (b.timestamp - a.timestamp) if seconds is None else seconds
    if not secs > 0:
        raise InputError(f"the interval between the two snapshots must be positive, got {secs:g} s (is the "
                         f"second snapshot really the later one?)")
    values: dict[str, float | None] = {}
    settings: dict[str, float | None] = {}
    resets: list[Reset] = []
    wraps: list[str] = []
    unknown: list[str] = []
    names = list(dict.fromkeys([*a.values, *b.values]))
    for name in names:
        spec = catalog.lookup(name) if catalog is not None else None
        kind = spec.kind if spec is not None else "monotonic"
        if spec is None and catalog is not None:
            unknown.append(name)
        va, vb = a.values.get(name), b.values.get(name)
        if kind == "setting":
            settings[name] = vb if vb is not None else va
            continue
        if va is None or vb is None:
            values[name] = None
            continue
        if kind == "gauge":
            values[name] = (va + vb) / 2.0
            continue
        d = vb - va
        if d >= 0:
            values[name] = d
            continue
        if kind == "wrap32" and 0 <= va < WRAP32 and 0 <= vb < WRAP32 and d + WRAP32 <= WRAP32 // 2:
            values[name] = d + WRAP32
            wraps.append(name)
            continue
        values[name] = None
        resets.append(Reset(name, va, vb))
    return Delta(secs, values, settings, tuple(resets), tuple(wraps), tuple(unknown), b.device or a.device,
                 {**a.sources, **b.sources}, {**a.unreadable, **b.unreadable})


def read_snapshot_file(path: str | Path) -> list[Snapshot]:
    """Read snapshots saved by ``collie counters show --save`` (or its ``--format json`` rows).

    Accepts one snapshot object, a list of them, or the list of rows ``show --format json`` prints (each with
    ``device``, ``name``, ``value`` and ``timestamp``).

    Raises:
        InputError: unreadable file, not JSON, or JSON of another shape (one sentence).
    """
    p = Path(path)
    reader = Reader(str(p))
    saved = "counter snapshots saved by 'collie counters show --save'"
    try:
        doc = json.loads(read_text(p, "a JSON file of counter snapshots"))
    except json.JSONDecodeError as exc:
        reader.fail(f"not JSON ({exc.msg} at line {exc.lineno}); expected {saved}")
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc or not all(isinstance(x, dict) for x in doc):
        reader.wrong(doc, f"a JSON object or list of {saved}")
    if all("values" in x for x in doc):
        return [Snapshot.from_dict(x, Reader(f"{p}: snapshot {i}")) for i, x in enumerate(doc)]
    if all({"device", "name", "value", "timestamp"} <= set(x) for x in doc):
        return _from_rows(doc, reader)
    reader.fail("expected counter snapshots (objects with 'timestamp' and 'values') as saved by "
                "'collie counters show --save'")


def _from_rows(rows: list[dict[str, Any]], reader: Reader) -> list[Snapshot]:
    grouped: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(rows):
        g = grouped.setdefault(str(r["device"]), {"timestamp": r["timestamp"], "values": {},
                                                  "device": str(r["device"]), "source": "rows"})
        g["values"][str(r["name"])] = r["value"]
        if r["timestamp"] != g["timestamp"]:
            reader.at(f"row {i}").at("timestamp").number(r["timestamp"])
    return [Snapshot.from_dict(g, Reader(f"{reader.where}: device {dev}")) for dev, g in grouped.items()]
