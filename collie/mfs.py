"""Minimal feature sets: the conditions over workload features that an anomaly needs.

An :class:`MFS` is a conjunction of :class:`Condition` records over the feature vocabulary of
:mod:`collie.model.features` (the same names the simulator's quirks and the reports use). It is the dedup key of a
campaign (a point whose workload matches a known MFS is not explored again) and the human-readable repro.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from collie.model.features import FEATURE_NAMES, Features, features
from collie.model.workload import Workload

OPS: Final = ("==", "in", ">=", "<=")


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
    def from_dict(cls, d: Mapping[str, Any]) -> Condition:
        value = tuple(d["value"]) if d["op"] == "in" else d["value"]
        return cls(d["feature"], d["op"], value)


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
    def from_dict(cls, d: Mapping[str, Any]) -> MFS:
        return cls(d["signature"], tuple(Condition.from_dict(c) for c in d["conditions"]))
