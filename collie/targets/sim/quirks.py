"""Quirks: the simulator's anomalies, each a condition over workload features, a symptom and a precursor.

A quirk is declared once (in the shared library ``quirks.toml`` or inline in a profile file) and referenced by
id from every profile whose subsystem has it. Conditions speak the feature vocabulary of
:mod:`collie.model.features`, so a condition means the same thing to the simulator, the minimizer and MFS reports.

Condition syntax (one clause per string; every clause must hold):
    ``"batch >= 64"``, ``"mtu <= 1K"``, ``"transport == UD"``, ``"opcode in [SEND, SEND_IMM]"``,
    ``"bidirectional"`` (a flag is true), ``"not loopback"`` (a flag is false). Numbers accept size
    suffixes (``16K``, ``4M``, binary).

Invariants:
    * a quirk fires exactly when every clause holds (necessary conditions are a conjunction);
    * :meth:`Quirk.proximity` is 1 inside the condition, in (0, 1) outside, and grows monotonically as any
      numeric feature moves toward its threshold (log scale) or a categorical clause becomes true; this is
      the smooth precursor the quirk adds to its diagnostic counters;
    * quirks are immutable and precompiled: evaluating one never parses anything.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from collie.codec import check_fields, expect_type
from collie.errors import InputError
from collie.model.features import FEATURE_NAMES, Features
from collie.model.units import parse_size

#: The simulator's NIC-internal diagnostic counters (also listed in ``counters/sim.toml``).
DIAGNOSTIC_COUNTERS: Final = (
    "sim_rx_wqe_cache_miss",
    "sim_qpc_cache_miss",
    "sim_mtt_cache_miss",
    "sim_pcie_backpressure",
    "sim_pkt_pipeline_stall",
)
#: Where a quirk's pause shows (see docs/sim-profiles.md).
PAUSE_AT: Final = ("receivers", "incast", "remote_numa", "gpu")
#: Subsystem properties a quirk may require of its profile (checked when the profile loads).
REQUIRES: Final = ("relaxed_ordering", "cpu_vendor", "min_sockets", "gpu")
GPU_PLACEMENTS: Final = ("none", "same-switch", "acs-misrouted")

#: Closeness of a categorical clause that does not hold (see :meth:`Quirk.proximity`).
MISS_CLOSENESS: Final = 0.3
#: Exponent of the log-scale closeness of a numeric clause that does not hold.
CLOSENESS_EXP: Final = 0.5

_NUMERIC = frozenset(
    n for n, f in Features.__dataclass_fields__.items() if f.type in ("int", int)
)
_FLAGS = frozenset(n for n, f in Features.__dataclass_fields__.items() if f.type in ("bool", bool))
_STRINGS = frozenset(n for n, f in Features.__dataclass_fields__.items() if f.type in ("str", str))

_CLAUSE_RE = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(==|!=|>=|<=|>|<|\bin\b)\s*(.+?)\s*$")
_FLAG_RE = re.compile(r"^\s*(not\s+|!\s*)?([a-z_][a-z0-9_]*)\s*$")
_REFLECTED: Final = {">=": "__le__", "<=": "__ge__", ">": "__lt__", "<": "__gt__", "==": "__eq__",
                     "!=": "__ne__"}
_CMP: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt,
    "==": operator.eq, "!=": operator.ne,
}


@dataclass(frozen=True)
class Clause:
    """One necessary condition: ``feature op value``.

    Attributes:
        text: the clause as written (for messages and ``collie sim show``).
        feature: a name of :data:`collie.model.features.FEATURE_NAMES`.
        op: ``>=``, ``<=``, ``>``, ``<``, ``==``, ``!=`` or ``in``.
        value: an int, a bool, a string or a frozenset of strings (for ``in``).
    """

    text: str
    feature: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        # a bound method of the value is the fastest test CPython offers: ``x >= v`` is ``v.__le__(x)``;
        # values always have the feature's type (int, bool, str), so NotImplemented cannot occur
        v = self.value
        test = v.__contains__ if self.op == "in" else getattr(v, _REFLECTED[self.op])
        object.__setattr__(self, "test", test)

    def holds(self, feats: Features) -> bool:
        return bool(self.test(getattr(feats, self.feature)))  # type: ignore[attr-defined]

    def closeness(self, feats: Features) -> float:
        """1 when the clause holds; otherwise how near the feature is (log distance to the threshold)."""
        x = getattr(feats, self.feature)
        op = self.op
        if op == "in":
            return 1.0 if x in self.value else MISS_CLOSENESS
        if op in ("==", "!="):
            return 1.0 if _CMP[op](x, self.value) else MISS_CLOSENESS
        if _CMP[op](x, self.value):
            return 1.0
        t = max(float(self.value), 1.0)
        xv = max(float(x), 1.0)
        ratio = xv / t if op in (">=", ">") else t / xv
        return float(min(1.0, ratio) ** CLOSENESS_EXP) * 0.95


@dataclass(frozen=True)
class Symptom:
    """What a fired quirk does.

    Attributes:
        pause: PFC pause ratio (0..1) at the hosts chosen by ``pause_at``.
        throughput: factor (0..1] on the throughput of every flow of the workload.
        loss: fraction of data packets lost and retransmitted (0..0.5).
        pause_at: ``receivers`` (every host receiving data), ``incast`` (hosts receiving loopback and remote
            traffic at once), ``remote_numa`` / ``gpu`` (receivers whose buffers are on the other socket /
            in GPU memory).
    """

    pause: float = 0.0
    throughput: float = 1.0
    loss: float = 0.0
    pause_at: str = "receivers"


@dataclass(frozen=True)
class Quirk:
    """One anomaly of a simulated subsystem (see the module docstring).

    Attributes:
        id: short stable id (``f01-ud-rx-wqe``).
        anomaly: the number in the Collie paper's Table 2 (0 for user-defined quirks).
        summary: one line for listings.
        cause: what the vendor or the paper says causes it.
        when: the necessary conditions.
        symptom: what it does when it fires.
        diagnostics: the ``sim_*`` counters its precursor feeds.
        requires: subsystem properties the profile must have for the quirk to be active.
        precursor: misses (or stall events) per message at full proximity.
    """

    id: str
    anomaly: int
    summary: str
    cause: str
    when: tuple[Clause, ...]
    symptom: Symptom
    diagnostics: tuple[str, ...]
    requires: Mapping[str, Any] = field(default_factory=dict)
    precursor: float = 0.5

    def fires(self, feats: Features) -> bool:
        return all(c.holds(feats) for c in self.when)

    def proximity(self, feats: Features) -> float:
        """Product of the clauses' closeness: exactly 1 inside the condition, < 1 outside."""
        return Conditions((self,)).proximities(feats)[0]

    def condition_text(self) -> str:
        return " and ".join(c.text for c in self.when)


class Conditions:
    """The conditions of several quirks compiled together for the hot path: every distinct clause is tested once
    per feature vector, then each quirk's proximity is the product of its clauses' closeness in clause order
    (a clause that holds counts 1.0), exactly :meth:`Clause.closeness` multiplied out."""

    def __init__(self, quirks: Sequence[Quirk]) -> None:
        index: dict[tuple[str, str, Any], int] = {}
        # per distinct clause: (feature, kind, test, threshold); kind 0 = categorical/in,
        # 1 = numeric lower bound (>=, >), 2 = numeric upper bound (<=, <)
        clauses: list[tuple[str, int, Callable[[Any], bool], float]] = []
        plans = []
        for q in quirks:
            plan = []
            for c in q.when:
                key = (c.feature, c.op, c.value)
                if key not in index:
                    index[key] = len(clauses)
                    kind = 1 if c.op in (">=", ">") else 2 if c.op in ("<=", "<") else 0
                    clauses.append((c.feature, kind, c.test, max(float(c.value), 1.0) if kind else 0.0))  # type: ignore[attr-defined]
                plan.append(index[key])
            plans.append(tuple(plan))
        self._clauses = tuple(clauses)
        self._plans = tuple(plans)

    def proximities(self, feats: Features) -> list[float]:
        """Each quirk's :meth:`Quirk.proximity`, in the quirks' order."""
        values = vars(feats)
        miss, exp = MISS_CLOSENESS, CLOSENESS_EXP
        closeness: list[float] = []
        add = closeness.append
        for name, kind, test, t in self._clauses:
            x = values[name]
            if test(x):
                add(1.0)
            elif kind == 0:
                add(miss)
            else:
                x = float(x)
                x = x if x >= 1.0 else 1.0
                ratio = x / t if kind == 1 else t / x
                add((ratio if ratio < 1.0 else 1.0) ** exp * 0.95)
        # math.prod multiplies in order from its start, as ``p = 1.0; p *= c`` would
        get = closeness.__getitem__
        return [math.prod(map(get, plan), start=1.0) for plan in self._plans]


def line_of(text: str | None, needle: str) -> int | None:
    """The 1-based line of ``text`` where ``needle`` first appears, or None."""
    if not text or not needle:
        return None
    idx = text.find(needle)
    if idx < 0:
        return None
    return text.count("\n", 0, idx) + 1


def _where(source: str, text: str | None, needle: str, path: str) -> str:
    line = line_of(text, needle)
    return f"{source}:{line}: {path}" if line else f"{source}: {path}"


def _parse_value(raw: str, feature: str, where: str) -> Any:
    raw = raw.strip().strip("'\"")
    if feature in _FLAGS:
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise InputError(f"{where}: {feature} is a flag; compare it with true or false, not {raw!r}")
    if feature in _NUMERIC:
        try:
            return parse_size(raw)
        except ValueError:
            raise InputError(f"{where}: {feature} is a number; {raw!r} is not (e.g. 64 or 16K)") from None
    return raw


def parse_clause(text: Any, where: str) -> Clause:
    """Compile one condition string (syntax in the module docstring).

    Raises:
        InputError: unknown feature, unknown operator, or a value of the wrong kind (the message names it).
    """
    if not isinstance(text, str):
        raise InputError(f"{where}: expected a condition string like \"batch >= 64\", got {text!r}")
    m = _FLAG_RE.match(text)
    if m:
        name = m.group(2)
        if name not in _FLAGS:
            raise _unknown(name, where, text)
        return Clause(text.strip(), name, "==", not m.group(1))
    m = _CLAUSE_RE.match(text)
    if not m:
        raise InputError(f"{where}: cannot read condition {text!r}; write 'FEATURE OP VALUE' "
                         f"(OP one of >=, <=, >, <, ==, !=, in) or a flag name")
    name, op, raw = m.group(1), m.group(2), m.group(3)
    if name not in FEATURE_NAMES:
        raise _unknown(name, where, text)
    if op == "in":
        if not (raw.startswith("[") and raw.endswith("]")):
            raise InputError(f"{where}: 'in' needs a list like [SEND, SEND_IMM], got {raw!r}")
        items = [s.strip().strip("'\"") for s in raw[1:-1].split(",") if s.strip()]
        if not items:
            raise InputError(f"{where}: 'in' needs a non-empty list, got {raw!r}")
        vals = frozenset(_parse_value(s, name, where) for s in items)
        return Clause(text.strip(), name, "in", vals)
    value = _parse_value(raw, name, where)
    if name in _STRINGS and op not in ("==", "!="):
        raise InputError(f"{where}: {name} is categorical; use ==, != or in, not {op}")
    if name in _FLAGS and op not in ("==", "!="):
        raise InputError(f"{where}: {name} is a flag; use == or != (or just '{name}' / 'not {name}')")
    return Clause(text.strip(), name, op, value)


def _unknown(name: str, where: str, text: str) -> InputError:
    return InputError(f"{where}: {text!r} uses unknown feature {name!r}; features are "
                      f"{', '.join(FEATURE_NAMES)}")


_QUIRK_FIELDS: Final = ("id", "anomaly", "summary", "cause", "when", "symptom", "diagnostics", "requires",
                        "precursor")
_SYMPTOM_FIELDS: Final = ("pause", "throughput", "loss", "pause_at")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,39}$")


def _fraction(value: Any, lo: float, hi: float, where: str, lo_open: bool = False) -> float:
    expect_type(value, (int, float), where, f"a number from {lo} to {hi}")
    v = float(value)
    if not (lo < v <= hi if lo_open else lo <= v <= hi):
        raise InputError(f"{where}: {value} is out of range; allowed is {lo} to {hi}")
    return v


def parse_quirk(raw: Any, source: str, index: int, text: str | None = None) -> Quirk:
    """Build one quirk from its TOML table (``[[quirk]]`` number ``index`` of ``source``).

    Raises:
        InputError: one sentence naming the file, line when it can be found, and field.
    """
    path = f"quirk[{index}]"
    expect_type(raw, dict, f"{source}: {path}", "a table")
    qid = raw.get("id")
    if isinstance(qid, str):
        path = f"quirk {qid!r}"
    w = _where(source, text, f'"{qid}"' if isinstance(qid, str) else "[[quirk]]", path)
    check_fields(raw, w, _QUIRK_FIELDS, required=("id", "when", "symptom", "diagnostics"))
    expect_type(qid, str, f"{w}.id", "a string")
    if not _ID_RE.match(qid):
        raise InputError(f"{w}.id: {qid!r} is not a quirk id (2-40 lowercase letters, digits and '-')")
    anomaly = expect_type(raw.get("anomaly", 0), int, f"{w}.anomaly", "an integer (the paper's number)")
    summary = expect_type(raw.get("summary", ""), str, f"{w}.summary", "a string")
    cause = expect_type(raw.get("cause", ""), str, f"{w}.cause", "a string")
    when_raw = expect_type(raw["when"], list, f"{w}.when", "a list of condition strings")
    if not when_raw:
        raise InputError(f"{w}.when: a quirk needs at least one condition")
    clauses = []
    for i, c in enumerate(when_raw):
        cw = _where(source, text, str(c), f"{path}.when[{i}]") if isinstance(c, str) else f"{w}.when[{i}]"
        clauses.append(parse_clause(c, cw))
    sym_raw = expect_type(raw["symptom"], dict, f"{w}.symptom", "a table")
    check_fields(sym_raw, f"{w}.symptom", _SYMPTOM_FIELDS)
    pause_at = expect_type(sym_raw.get("pause_at", "receivers"), str, f"{w}.symptom.pause_at", "a string")
    if pause_at not in PAUSE_AT:
        raise InputError(f"{w}.symptom.pause_at: {pause_at!r} is not allowed; "
                         f"use one of {', '.join(PAUSE_AT)}")
    symptom = Symptom(
        pause=_fraction(sym_raw.get("pause", 0.0), 0.0, 0.9, f"{w}.symptom.pause"),
        throughput=_fraction(sym_raw.get("throughput", 1.0), 0.0, 1.0, f"{w}.symptom.throughput", True),
        loss=_fraction(sym_raw.get("loss", 0.0), 0.0, 0.5, f"{w}.symptom.loss"),
        pause_at=pause_at,
    )
    if symptom.pause == 0 and symptom.throughput == 1 and symptom.loss == 0:
        raise InputError(f"{w}.symptom: has no effect; set pause, throughput (< 1) or loss")
    diags = expect_type(raw["diagnostics"], list, f"{w}.diagnostics", "a list of sim_* counter names")
    if not diags:
        raise InputError(f"{w}.diagnostics: a quirk needs at least one diagnostic counter "
                         f"({', '.join(DIAGNOSTIC_COUNTERS)})")
    for d in diags:
        if d not in DIAGNOSTIC_COUNTERS:
            raise InputError(f"{w}.diagnostics: {d!r} is not a diagnostic counter; use "
                             f"{', '.join(DIAGNOSTIC_COUNTERS)}")
    requires = _parse_requires(raw.get("requires", {}), f"{w}.requires")
    precursor = _fraction(raw.get("precursor", 0.5), 0.0, 10.0, f"{w}.precursor")
    return Quirk(qid, anomaly, summary, cause, tuple(clauses), symptom, tuple(diags), requires, precursor)


def _parse_requires(raw: Any, where: str) -> dict[str, Any]:
    expect_type(raw, dict, where, "a table")
    check_fields(raw, where, REQUIRES)
    out: dict[str, Any] = {}
    if "relaxed_ordering" in raw:
        out["relaxed_ordering"] = expect_type(raw["relaxed_ordering"], bool, f"{where}.relaxed_ordering",
                                              "true or false")
    if "cpu_vendor" in raw:
        out["cpu_vendor"] = expect_type(raw["cpu_vendor"], str, f"{where}.cpu_vendor", "a string").lower()
    if "min_sockets" in raw:
        out["min_sockets"] = expect_type(raw["min_sockets"], int, f"{where}.min_sockets", "an integer")
    if "gpu" in raw:
        g = expect_type(raw["gpu"], str, f"{where}.gpu", "a string")
        if g not in GPU_PLACEMENTS:
            raise InputError(f"{where}.gpu: {g!r} is not allowed; use one of {', '.join(GPU_PLACEMENTS)}")
        out["gpu"] = g
    return out


def parse_quirks(raws: Any, source: str, text: str | None = None) -> list[Quirk]:
    """Parse a list of ``[[quirk]]`` tables; ids must be unique within it."""
    expect_type(raws, list, f"{source}: quirk", "a list of [[quirk]] tables")
    out: list[Quirk] = []
    seen: set[str] = set()
    for i, r in enumerate(raws):
        q = parse_quirk(r, source, i, text)
        if q.id in seen:
            raise InputError(f"{_where(source, text, q.id, 'quirk')}: id {q.id!r} is declared twice")
        seen.add(q.id)
        out.append(q)
    return out


def describe_quirks(quirks: Sequence[Quirk]) -> list[dict[str, Any]]:
    """Rows for listings (``collie sim show``)."""
    return [
        {
            "id": q.id, "anomaly": q.anomaly, "summary": q.summary, "when": q.condition_text(),
            "pause": q.symptom.pause, "throughput": q.symptom.throughput, "loss": q.symptom.loss,
            "diagnostics": list(q.diagnostics),
        }
        for q in quirks
    ]


def soft_fraction(u: float) -> float:
    """A smooth saturating miss ratio of a working set ``u`` times a cache's capacity: u^2 / (1 + u^2)."""
    u2 = u * u
    return u2 / (1.0 + u2) if u2 < 1e12 else 1.0


def log_ratio(x: float, t: float) -> float:
    """log2(x / t), safe for zero."""
    return math.log2(max(x, 1e-9) / max(t, 1e-9))
