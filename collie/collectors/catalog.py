"""Counter catalogs: what each counter of a driver dialect is, declared in ``counters/<dialect>.toml``.

A catalog lists, for every counter collie knows in one dialect (``mlx5``, ``bnxt_re``, ``irdma``, ``rxe``,
``sim``), where it is read (``source``), how it evolves (``kind``), its ``unit``, its anomaly ``role`` and its
older/newer names (``aliases``). The schema is documented in ``docs/counters.md``.

Invariants of a loaded :class:`Catalog`:
    * every template ``name`` containing ``{p}`` is expanded to priorities 0..7; each expanded spec knows its
      ``priority``, every other spec has ``priority is None``;
    * names and aliases are unique across the catalog (after expansion), so :meth:`Catalog.lookup` is exact;
    * a lookup never guesses: an unknown name gives ``None``.

Names read from more than one source with the same text (e.g. bnxt_re's ``rx_bytes`` in hw_counters and in
``ethtool -S``) are kept apart by the collectors as ``<source>:<name>`` for the later source;
:meth:`Catalog.lookup` accepts that form too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from collie.codec import check_fields, expect_type
from collie.data import data_dir
from collie.errors import InputError
from collie.tomlio import read_toml

SOURCES: Final = ("port", "hw", "ethtool", "rdma-stat", "sim")
KINDS: Final = ("monotonic", "wrap32", "gauge", "setting")
UNITS: Final = ("bytes", "octets/4", "packets", "frames", "us", "ms", "percent", "events")
ROLES: Final = (
    "pause_duration_rx", "pause_duration_tx", "pause_frames_rx", "pause_frames_tx",
    "bytes_rx", "bytes_tx", "packets_rx", "packets_tx",
    "loss", "retransmission", "receiver_starvation", "congestion_notification", "drop",
    "pcie", "storm", "fatal", "error", "diagnostic", "traffic_mix", "other",
)
DIRECTIONS: Final = ("rx", "tx")
PRIORITIES: Final = tuple(range(8))
PRIORITY_PLACEHOLDER: Final = "{p}"

_TOP_FIELDS: Final = ("driver", "description", "device_prefixes", "counter")
_TOP_REQUIRED: Final = ("driver", "description", "counter")
_COUNTER_FIELDS: Final = (
    "name", "source", "kind", "unit", "role", "meaning", "aliases", "diagnostic", "direction", "group", "per",
    "sim", "sim_scale",
)
#: What a diagnostic event counter is divided by to become a ratio the search can climb.
PER: Final = ("packet", "message")
_COUNTER_REQUIRED: Final = ("name", "source", "kind", "unit", "role", "meaning")
_DURATION_UNITS: Final = ("us", "ms")
_SIM_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class CounterSpec:
    """One counter of a dialect, after template expansion.

    Attributes:
        name: the counter's current name as the driver prints it (expanded: ``tx_prio3_pause_duration``).
        source: ``port`` (``ports/P/counters``), ``hw`` (``hw_counters``), ``ethtool``, ``rdma-stat`` or
            ``sim``.
        kind: ``monotonic`` (64-bit, never wraps in practice), ``wrap32`` (wraps at 2^32), ``gauge`` (a level:
            averaged, never differenced) or ``setting`` (a configuration value such as ``lifespan``).
        unit: ``bytes``, ``octets/4`` (multiply by 4 for bytes), ``packets``, ``frames``, ``us``, ``ms``,
            ``percent`` or ``events``.
        role: what the counter means for the anomaly oracle (see :data:`ROLES`).
        meaning: one sentence for people.
        aliases: other names of the same counter (older or newer kernels), expanded like ``name``.
        diagnostic: a NIC-internal counter a search may drive up (cache misses, PCIe back-pressure).
        direction: ``rx``, ``tx`` or ``""``; only used to split congestion notifications into CNPs received
            (``rx``), CNPs sent (``tx``) and ECN marks (``""``).
        group: counters of one traffic role sharing a group are summed (irdma's IPv4 and IPv6 octets);
            defaults to the expanded name, i.e. a group of its own.
        priority: the priority 0..7 of an expanded ``{p}`` template, else ``None``.
        per: for a diagnostic event counter, its natural unit of work: ``packet`` (default) or ``message``
            (one event per work request at most, such as a receive-WQE or QP-context fetch); the oracle
            reports the counter per unit, a miss *ratio*.
        template: the name as written in the catalog (with ``{p}``).
        dialect: the catalog this spec belongs to.
        sim: the simulated quantity the simulator reports under this counter (``tx_wire``, ``pause_tx_time``;
            the names are defined in ``collie.targets.sim.counters``), or ``""``: the simulator does not
            report it. A ``{p}`` template is reported at the simulator's lossless priority only.
        sim_scale: the factor the simulator applies to that quantity before rounding (``0.1`` of the lost
            packets are duplicate requests).
    """

    name: str
    source: str
    kind: str
    unit: str
    role: str
    meaning: str
    aliases: tuple[str, ...] = ()
    diagnostic: bool = False
    direction: str = ""
    group: str = ""
    priority: int | None = None
    template: str = ""
    dialect: str = ""
    per: str = "packet"
    sim: str = ""
    sim_scale: float = 1.0

    @property
    def scale(self) -> float:
        """Factor from the raw value to the base unit (4 for ``octets/4``, else 1)."""
        return 4.0 if self.unit == "octets/4" else 1.0

    def to_dict(self) -> dict[str, Any]:
        """Plain form for rendering (aliases as a list)."""
        return {
            "name": self.name, "source": self.source, "kind": self.kind, "unit": self.unit,
            "role": self.role, "priority": self.priority, "diagnostic": self.diagnostic,
            "direction": self.direction, "group": self.group, "aliases": list(self.aliases),
            "meaning": self.meaning, "per": self.per, "sim": self.sim, "sim_scale": self.sim_scale,
            "dialect": self.dialect,
        }


@dataclass(frozen=True)
class Catalog:
    """The counters of one dialect (or of several merged, see :func:`merge_catalogs`).

    Attributes:
        driver: the dialect name (``mlx5``; merged catalogs join names with ``+``).
        description: one line about the driver family.
        counters: every expanded spec, in catalog order (order matters: for the traffic roles the first
            present counter wins, see ``docs/counters.md``).
        device_prefixes: beginnings of RDMA device or kernel driver names that belong to this dialect
            (``mlx5_0`` and ``mlx4_0`` start with ``mlx5`` and ``mlx4``); :func:`guess_dialect` decides by them
            first. Merged catalogs hold those of every part.
    """

    driver: str
    description: str
    counters: tuple[CounterSpec, ...]
    device_prefixes: tuple[str, ...] = ()
    _index: Mapping[str, CounterSpec] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._index:
            object.__setattr__(self, "_index", _build_index(self.counters, self.driver))

    def __iter__(self) -> Iterator[CounterSpec]:
        return iter(self.counters)

    def __len__(self) -> int:
        return len(self.counters)

    def lookup(self, name: str) -> CounterSpec | None:
        """The spec of ``name`` (current name, alias or ``<source>:<name>``), or ``None`` if unknown."""
        spec = self._index.get(name)
        if spec is None and ":" in name:
            prefix, _, rest = name.partition(":")
            if prefix in SOURCES or prefix == "dev":
                spec = self._index.get(rest)
        return spec

    def canonical(self, name: str) -> str:
        """The current name of ``name`` if it is a known alias, else ``name`` unchanged."""
        spec = self.lookup(name)
        if spec is None:
            return name
        if name in self._index:
            return spec.name
        return name.partition(":")[0] + ":" + spec.name

    def diagnostic(self) -> list[CounterSpec]:
        """Every spec marked ``diagnostic = true``, in catalog order."""
        return [c for c in self.counters if c.diagnostic]

    def by_role(self, role: str) -> list[CounterSpec]:
        """Every spec with this role, in catalog order."""
        return [c for c in self.counters if c.role == role]

    def names(self) -> list[str]:
        """Every current (expanded) name, in catalog order."""
        return [c.name for c in self.counters]


def _build_index(counters: Iterable[CounterSpec], where: str) -> dict[str, CounterSpec]:
    index: dict[str, CounterSpec] = {}
    for spec in counters:
        for n in (spec.name, *spec.aliases):
            other = index.get(n)
            if other is not None and other is not spec:
                raise InputError(
                    f"{where}: counter name {n!r} is declared twice (as {other.template or other.name!r} and "
                    f"{spec.template or spec.name!r}); names and aliases must be unique"
                )
            index[n] = spec
    return index


def catalog_path(dialect: str) -> Path:
    """Where the catalog of ``dialect`` lives (``counters/<dialect>.toml``)."""
    return data_dir("counters") / f"{dialect}.toml"


def available_dialects() -> list[str]:
    """The dialects that have a catalog file, sorted."""
    return sorted(p.stem for p in data_dir("counters").glob("*.toml"))


_CACHE: dict[str, Catalog] = {}


def load_catalog(dialect: str) -> Catalog:
    """Load and validate ``counters/<dialect>.toml`` (cached per process).

    Raises:
        InputError: unknown dialect, or a catalog that breaks the schema (one sentence naming the field).
    """
    if dialect in _CACHE:
        return _CACHE[dialect]
    known = available_dialects()
    if dialect not in known:
        raise InputError(f"unknown counter dialect {dialect!r}; known dialects are {', '.join(known)}")
    catalog = load_catalog_file(catalog_path(dialect))
    _CACHE[dialect] = catalog
    return catalog


def load_catalogs(*dialects: str) -> Catalog:
    """Load several dialects and merge them (e.g. ``load_catalogs("mlx5", "sim")`` for the simulator)."""
    if not dialects:
        raise InputError("load_catalogs needs at least one dialect")
    return merge_catalogs([load_catalog(d) for d in dialects])


def merge_catalogs(catalogs: Iterable[Catalog]) -> Catalog:
    """One catalog holding every spec and device prefix of ``catalogs`` in order.

    Raises:
        InputError: a counter name, or a device prefix, declared in two of them.
    """
    cats = list(catalogs)
    if len(cats) == 1:
        return cats[0]
    driver = "+".join(c.driver for c in cats)
    _prefix_owners(cats)
    return Catalog(
        driver=driver,
        description="; ".join(c.description for c in cats),
        counters=tuple(s for c in cats for s in c.counters),
        device_prefixes=tuple(p for c in cats for p in c.device_prefixes),
    )


def load_catalog_file(path: str | Path) -> Catalog:
    """Load and validate one catalog file; the ``driver`` field must equal the file's stem."""
    p = Path(path)
    return parse_catalog(read_toml(p), str(p), stem=p.stem)


def parse_catalog(doc: Mapping[str, Any], where: str, *, stem: str | None = None) -> Catalog:
    """Validate a parsed catalog document and expand its templates.

    Args:
        doc: the parsed TOML.
        where: the file name for messages.
        stem: if given, ``driver`` must equal it.
    """
    check_fields(doc, where, _TOP_FIELDS, required=_TOP_REQUIRED)
    driver = expect_type(doc["driver"], str, f"{where}: driver", "a dialect name string")
    if stem is not None and driver != stem:
        raise InputError(f"{where}: driver {driver!r} must equal the file name {stem!r}")
    description = expect_type(doc["description"], str, f"{where}: description", "a string")
    prefixes = _parse_prefixes(doc.get("device_prefixes", []), f"{where}: device_prefixes")
    entries = expect_type(doc["counter"], list, f"{where}: counter", "an array of [[counter]] tables")
    if not entries:
        raise InputError(f"{where}: counter: the catalog declares no counters")
    specs: list[CounterSpec] = []
    for i, entry in enumerate(entries):
        specs.extend(_parse_counter(entry, f"{where}: counter[{i}]", driver))
    return Catalog(driver=driver, description=description, counters=tuple(specs), device_prefixes=prefixes)


def _parse_prefixes(value: Any, where: str) -> tuple[str, ...]:
    expect_type(value, list, where, "an array of device-name prefixes")
    out: list[str] = []
    for j, prefix in enumerate(value):
        expect_type(prefix, str, f"{where}[{j}]", "a device-name prefix string")
        if not prefix or any(ch.isspace() for ch in prefix):
            raise InputError(f"{where}[{j}]: {prefix!r} is not a device-name prefix (non-empty, no blanks)")
        if prefix in out:
            raise InputError(f"{where}[{j}]: {prefix!r} is listed twice")
        out.append(prefix)
    return tuple(out)


def _choice(value: Any, allowed: tuple[str, ...], where: str) -> str:
    expect_type(value, str, where, f"one of {', '.join(allowed)}")
    if value not in allowed:
        raise InputError(f"{where}: {value!r} is not allowed; use one of {', '.join(allowed)}")
    return str(value)


def _parse_counter(entry: Any, where: str, dialect: str) -> list[CounterSpec]:
    expect_type(entry, dict, where, "a table")
    name = expect_type(entry.get("name"), str, f"{where}.name", "a counter name string") if "name" in entry \
        else None
    label = f"{where} ({name})" if name else where
    check_fields(entry, label, _COUNTER_FIELDS, required=_COUNTER_REQUIRED)
    assert name is not None
    _check_name(name, f"{label}.name")
    source = _choice(entry["source"], SOURCES, f"{label}.source")
    kind = _choice(entry["kind"], KINDS, f"{label}.kind")
    unit = _choice(entry["unit"], UNITS, f"{label}.unit")
    role = _choice(entry["role"], ROLES, f"{label}.role")
    meaning = expect_type(entry["meaning"], str, f"{label}.meaning", "a sentence")
    if not meaning.strip():
        raise InputError(f"{label}.meaning: must not be empty")
    aliases_raw = expect_type(entry.get("aliases", []), list, f"{label}.aliases", "an array of names")
    aliases: list[str] = []
    for j, a in enumerate(aliases_raw):
        expect_type(a, str, f"{label}.aliases[{j}]", "a counter name string")
        _check_name(a, f"{label}.aliases[{j}]")
        if (PRIORITY_PLACEHOLDER in a) != (PRIORITY_PLACEHOLDER in name):
            raise InputError(f"{label}.aliases[{j}]: {a!r} must use {{p}} exactly when the name does")
        if a == name:
            raise InputError(f"{label}.aliases[{j}]: an alias must differ from the name")
        aliases.append(a)
    diagnostic = expect_type(entry.get("diagnostic", False), bool, f"{label}.diagnostic", "true or false")
    direction = entry.get("direction", "")
    if direction != "":
        direction = _choice(direction, DIRECTIONS, f"{label}.direction")
    group = entry.get("group", "")
    if group != "":
        expect_type(group, str, f"{label}.group", "a group name string")
        if PRIORITY_PLACEHOLDER in name:
            raise InputError(f"{label}.group: a {{p}} template cannot be grouped")
    per = _choice(entry.get("per", "packet"), PER, f"{label}.per")
    if "per" in entry and not diagnostic:
        raise InputError(f"{label}.per: only a diagnostic counter has a unit of work; remove per or set "
                         "diagnostic = true")
    _check_consistency(label, kind, unit, role, diagnostic)
    sim, sim_scale = _parse_sim(entry, label)
    if PRIORITY_PLACEHOLDER not in name:
        return [CounterSpec(name, source, kind, unit, role, meaning, tuple(aliases), diagnostic, direction,
                            group or name, None, name, dialect, per, sim, sim_scale)]
    specs = []
    for p in PRIORITIES:
        expanded = name.replace(PRIORITY_PLACEHOLDER, str(p))
        specs.append(CounterSpec(
            expanded, source, kind, unit, role, meaning,
            tuple(a.replace(PRIORITY_PLACEHOLDER, str(p)) for a in aliases), diagnostic, direction,
            expanded, p, name, dialect, per, sim, sim_scale,
        ))
    return specs


def _parse_sim(entry: Mapping[str, Any], label: str) -> tuple[str, float]:
    sim = expect_type(entry.get("sim", ""), str, f"{label}.sim", "the name of a simulated quantity")
    if "sim" in entry and not _SIM_NAME.fullmatch(sim):
        raise InputError(f"{label}.sim: {sim!r} is not a simulated quantity name (lowercase letters, digits "
                         "and _)")
    if "sim_scale" not in entry:
        return sim, 1.0
    if not sim:
        raise InputError(f"{label}.sim_scale: only a counter the simulator reports has a scale; remove "
                         "sim_scale or add sim")
    scale = expect_type(entry["sim_scale"], (int, float), f"{label}.sim_scale", "a number > 0")
    if not (math.isfinite(scale) and scale > 0):
        raise InputError(f"{label}.sim_scale: {scale!r} is not allowed; use a finite number > 0")
    return sim, float(scale)


def counter_name(raw: str) -> str:
    """The normal form of a counter name as a driver spells it: its words joined by ``_`` (irdma's gen3
    hw_counters are files like ``RNR sent``, read as ``RNR_sent``); a name without blanks is itself. Every
    collector keys its counters by this form, and catalogs name counters in it."""
    return "_".join(raw.split())


def _check_name(name: str, where: str) -> None:
    if not name or counter_name(name) != name:
        raise InputError(f"{where}: {name!r} is not a counter name (no blanks allowed: a driver's name with "
                         f"blanks is written with _, e.g. {counter_name(name) or 'RNR_sent'!r})")
    if name.count(PRIORITY_PLACEHOLDER) > 1 or ("{" in name.replace(PRIORITY_PLACEHOLDER, "")) \
            or ("}" in name.replace(PRIORITY_PLACEHOLDER, "")):
        raise InputError(f"{where}: {name!r}: the only placeholder allowed is one {{p}}")


def _check_consistency(where: str, kind: str, unit: str, role: str, diagnostic: bool) -> None:
    if role.startswith("pause_duration") and unit not in _DURATION_UNITS:
        raise InputError(f"{where}: role {role!r} needs unit 'us' or 'ms', not {unit!r}")
    if role.startswith("bytes_") and unit not in ("bytes", "octets/4"):
        raise InputError(f"{where}: role {role!r} needs unit 'bytes' or 'octets/4', not {unit!r}")
    if unit == "percent" and kind != "gauge":
        raise InputError(f"{where}: a 'percent' counter is a level, so its kind must be 'gauge', "
                         f"not {kind!r}")
    if kind == "setting" and (role != "other" or diagnostic):
        raise InputError(f"{where}: a 'setting' is not a counter: its role must be 'other' and it cannot be "
                         f"diagnostic")
    if role == "diagnostic" and not diagnostic:
        raise InputError(f"{where}: role 'diagnostic' needs diagnostic = true")


def _prefix_owners(catalogs: Iterable[Catalog]) -> dict[str, str]:
    """Device prefix -> the driver of the catalog that declares it; a prefix in two catalogs is an error."""
    owners: dict[str, str] = {}
    for cat in catalogs:
        for prefix in cat.device_prefixes:
            other = owners.get(prefix)
            if other is not None and other != cat.driver:
                raise InputError(
                    f"{_catalog_label(cat.driver)}: device_prefixes: {prefix!r} is already claimed by "
                    f"{_catalog_label(other)}; a device prefix may belong to one catalog only"
                )
            owners[prefix] = cat.driver
    return owners


def _catalog_label(dialect: str) -> str:
    path = catalog_path(dialect)
    return str(path) if path.is_file() else f"the {dialect} catalog"


def device_prefixes() -> dict[str, str]:
    """Every device-name prefix of the shipped catalogs -> its dialect (the ``device_prefixes`` fields).

    Raises:
        InputError: a catalog breaks the schema, or two catalogs claim one prefix.
    """
    return _prefix_owners(load_catalog(d) for d in available_dialects())


def guess_dialect(names: Iterable[str], hint: str = "") -> str | None:
    """The dialect whose catalog best explains ``names``, or ``None`` if no catalog knows any of them.

    Args:
        names: counter names seen (current names, aliases or ``source:name``).
        hint: a device or driver name (``mlx5_0``, ``bnxt_en``, ``rxe0``); if it starts with a catalog's
            ``device_prefixes`` (the longest such prefix), that catalog's dialect is chosen at once.

    Raises:
        InputError: a shipped catalog breaks the schema, or two catalogs claim one device prefix.

    The simulator's own catalog (``sim``) is never guessed: it only adds ``sim_*`` counters to a dialect.
    """
    matches = [(len(p), d) for p, d in device_prefixes().items() if hint.startswith(p) and d != "sim"]
    if matches:
        return max(matches)[1]
    seen = list(dict.fromkeys(names))
    best: tuple[int, str] | None = None
    for dialect in available_dialects():
        if dialect == "sim":
            continue
        cat = load_catalog(dialect)
        score = sum(1 for n in seen if cat.lookup(n) is not None)
        if score and (best is None or score > best[0]):
            best = (score, dialect)
    return best[1] if best else None
