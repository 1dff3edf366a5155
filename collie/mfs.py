"""Minimal feature sets: the conditions over workload features that an anomaly needs.

An :class:`MFS` is a conjunction of :class:`Condition` records over the feature vocabulary of
:mod:`collie.model.features` (the same names the simulator's quirks and the reports use). It is the dedup key of a
campaign (a point whose workload matches a known MFS is not explored again) and the human-readable repro.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from collie.codec import Reader
from collie.model.features import FEATURE_NAMES, Features, features
from collie.model.workload import Workload

OPS: Final = ("==", "in", ">=", "<=")
_FEATURE_TYPES: Final = {f.name: str(f.type) for f in dataclasses.fields(Features)}


@dataclass(frozen=True)
class Condition:
    """``feature OP value``; ``in`` takes a tuple of allowed values."""

    feature: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.feature not in FEATURE_NAMES:
            raise ValueError(f"unknown feature {self.feature!r}")
        if self.op not in OPS:
            raise ValueError(f"unknown operator {self.op!r}")

    def holds(self, f: Features | Mapping[str, Any]) -> bool:
        v = f[self.feature] if isinstance(f, Mapping) else getattr(f, self.feature)
        if self.op == "==":
            return bool(v == self.value)
        if self.op == "in":
            return v in self.value
        if self.op == ">=":
            return bool(v >= self.value)
        return bool(v <= self.value)

    def __str__(self) -> str:
        value = "{" + ", ".join(map(str, self.value)) + "}" if self.op == "in" else self.value
        return f"{self.feature} {self.op} {value}"

    def to_dict(self) -> dict[str, Any]:
        value = list(self.value) if self.op == "in" else self.value
        return {"feature": self.feature, "op": self.op, "value": value}

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Condition:
        """Read :meth:`to_dict`'s form: a known feature, a known operator, and values of the feature's type
        (numbers only for ``>=``/``<=``; a list for ``in``). Raises ``reader``'s error."""
        c = reader.table(data, ("feature", "op", "value"))
        feature, op = c.text("feature"), c.text("op")
        kind = _FEATURE_TYPES.get(feature)
        if kind is None:
            c.at("feature").fail(f"{feature!r} is not a workload feature")
        if op not in OPS:
            c.at("op").fail(f"{op!r} is not an operator; use one of {', '.join(OPS)}")
        numeric = op in (">=", "<=")
        what = "a number" if numeric or kind == "int" else ("true or false" if kind == "bool" else "a string")
        values = c.items("value") if op == "in" else [c.get("value", what=what)]
        for v in values:
            if not _is_feature_value(v, kind, numeric):
                c.at("value").wrong(v, f"{what} (feature {feature})")
        return cls(feature, op, tuple(values) if op == "in" else values[0])


def _implied(condition: Condition, given: list[Condition]) -> bool:
    """Whether every value of the feature that satisfies all of ``given`` (conditions on that same feature)
    satisfies ``condition``; False when ``given`` is empty (the feature is free)."""
    if not given:
        return False
    allowed: set[Any] | None = None
    for g in given:
        if g.op in ("==", "in"):
            values = {g.value} if g.op == "==" else set(g.value)
            allowed = values if allowed is None else allowed & values
    if allowed is not None:  # a finite set of values: check each one that the bounds let through
        return all(condition.holds({condition.feature: v}) for v in allowed
                   if all(g.holds({g.feature: v}) for g in given))
    lows = [g.value for g in given if g.op == ">="]
    highs = [g.value for g in given if g.op == "<="]
    if condition.op == ">=":
        return bool(lows) and max(lows) >= condition.value
    if condition.op == "<=":
        return bool(highs) and min(highs) <= condition.value
    return False  # an interval never implies ==/in on a feature free to vary in it


def _is_feature_value(value: Any, kind: str, numeric_only: bool) -> bool:
    if kind == "bool":
        return isinstance(value, bool) and not numeric_only
    if kind == "int":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, str) and not numeric_only


@dataclass(frozen=True)
class MFS:
    """A minimal feature set: all conditions must hold for the anomaly with ``signature`` to appear."""

    signature: str
    conditions: tuple[Condition, ...]

    def matches(self, workload: Workload) -> bool:
        return self.holds(features(workload))

    def holds(self, f: Features) -> bool:
        """Whether every condition holds for already computed features (compute them once for many MFS)."""
        return all(c.holds(f) for c in self.conditions)

    def broken(self, f: Features) -> list[Condition]:
        """The conditions that do not hold for ``f`` (none: ``f`` is inside)."""
        return [c for c in self.conditions if not c.holds(f)]

    def describe(self) -> str:
        return " and ".join(map(str, self.conditions)) or "(always)"

    def within(self, other: MFS) -> bool:
        """Whether this MFS's region lies inside ``other``'s: every workload it holds for, ``other`` holds for.

        Decided condition by condition, without sampling: each condition of ``other`` must follow from this
        MFS's conditions on the same feature (``qps_total >= 512`` follows from ``qps_total >= 1024``;
        ``opcode in {READ, WRITE}`` from ``opcode == READ``). A feature this MFS leaves free cannot satisfy a
        condition of ``other`` on it, so ``a.within(b) and b.within(a)`` exactly when both say the same.
        Symptoms are not compared (see :meth:`nests`).
        """
        return all(_implied(c, [d for d in self.conditions if d.feature == c.feature]) for c in other.conditions)

    def nests(self, other: MFS) -> bool:
        """Whether the two regions are equal or one holds the other (the symptoms are not compared)."""
        return self.within(other) or other.within(self)

    def widened_to(self, f: Features, factor: float = 2.0) -> MFS | None:
        """This MFS with its numeric edges moved just far enough to hold for ``f``, or None.

        None unless every ``==``/``in`` condition holds for ``f`` and each failing ``>=``/``<=`` edge misses by
        at most ``factor`` (``f``'s value within edge / factor .. edge x factor). A bisection stops on a ladder
        step, so a region's true edge can lie a little beyond the one found; a point just past it is the same
        anomaly, and widening is cheaper than minimizing it again.
        """
        out: list[Condition] = []
        widened = False
        for c in self.conditions:
            if c.holds(f):
                out.append(c)
                continue
            v = getattr(f, c.feature)
            if c.op not in (">=", "<=") or isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
                return None
            if (c.op == ">=" and v * factor < c.value) or (c.op == "<=" and v > c.value * factor):
                return None
            out.append(Condition(c.feature, c.op, v))
            widened = True
        return MFS(self.signature, tuple(out)) if widened else None

    def to_dict(self) -> dict[str, Any]:
        return {"signature": self.signature, "conditions": [c.to_dict() for c in self.conditions],
                "text": self.describe()}

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> MFS:
        """Read :meth:`to_dict`'s form (``text`` is written for people and not read back). Raises ``reader``'s
        error: one sentence naming the field."""
        d = reader.table(data, ("signature", "conditions", "text"))
        signature = d.text("signature")
        conditions = tuple(Condition.from_dict(c, d.at("conditions").at(i))
                           for i, c in enumerate(d.items("conditions", what="a list of conditions")))
        d.text("text", "")
        return cls(signature, conditions)
