"""The strategies search any :class:`collie.strategies.base.Space`, not just workload spaces."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from collie.model.dimensions import Choice, Dimension, Flag, IntRange
from collie.strategies import STRATEGIES, Outcome, Strategy, make_strategy
from collie.strategies.base import Row, Space


@dataclass(frozen=True)
class Toy:
    """Three dimensions and one constraint (``big`` and ``x`` over 512 do not go together)."""

    dimensions: tuple[Dimension, ...] = (IntRange("x", 1, 1024), Choice("colour", ("red", "blue"), "red"),
                                         Flag("big"))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    def is_valid(self, point: Mapping[str, Any]) -> bool:
        return all(d.check(point[d.name]) is None for d in self.dimensions) and \
            not (point["big"] and point["x"] > 512)

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        while True:
            point = {d.name: d.sample(rng) for d in self.dimensions}
            if self.is_valid(point):
                return point

    def mutate(self, point: Mapping[str, Any], rng: np.random.Generator, name: str | None = None,
               repair: float = 0.0, refused: Callable[[Mapping[str, Any]], int] | None = None
               ) -> tuple[dict[str, Any], str]:
        dims = [d for d in self.dimensions if name is None or d.name == name]
        for _ in range(100):
            d = dims[int(rng.integers(len(dims)))]
            new = {**point, d.name: d.mutate(point[d.name], rng)}
            if new != point and self.is_valid(new) and (refused is None or not refused(new)):
                return new, d.name
        return dict(point), dims[0].name


def _encode(point: Mapping[str, Any]) -> Row:
    return {"x": math.log2(point["x"]), f"colour={point['colour']}": 1.0, "big": float(point["big"])}


def _metrics(point: Mapping[str, Any]) -> dict[str, float]:
    return {"throughput": 1.0 / (1.0 + point["x"] / 100), "diag:x": float(point["x"])}


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_searches_a_space_that_is_no_workload_space(name: str) -> None:
    space: Space = Toy()
    options: dict[str, dict[str, Any]] = {"anneal": {"warmup": 5, "screen": 8, "repair": 0.5},
                                          "bayes": {"initial": 5, "trees": 8, "points": 100}}
    strategy: Strategy = make_strategy(name, space, 3, options.get(name), encoder=_encode)
    asked = []
    for _ in range(40):
        point = strategy.ask()
        assert space.is_valid(point)
        asked.append(point)
        strategy.tell(point, Outcome(_metrics(point)))
    assert len({repr(sorted(p.items())) for p in asked}) > 10
