"""Bayesian optimisation of the throughput metric with scikit-optimize's ask/tell ``Optimizer``.

The space's dimensions map to skopt dimensions: a choice or flag is ``Categorical``, a log2 integer range is
``Integer(prior="log-uniform")``, a size vector is a length plus ``max_len`` exponents (only the first
``length`` are used). Illegal points (the space's constraints) and pruned runs are told a penalty equal to the
worst value seen, so the model learns to avoid them. skopt's GBRT is broken with current scikit-learn, so the
surrogate is a GP (``base="GP"``) or extra trees (``base="ET"``, the default: it scales to thousands of points).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from collie.metrics import THROUGHPUT
from collie.model.dimensions import Choice, Flag, IntRange, SizeVector
from collie.model.points import point_key
from collie.strategies.base import Exclusion, Outcome, Point, Regions, Space

_ATTEMPTS = 3


class BayesSearch:
    """skopt ``Optimizer`` over an encoding of the space; minimises the ``throughput`` metric."""

    name = "bayes"

    def __init__(self, space: Space, seed: int = 0, *, base: str = "ET", initial: int = 10,
                 trees: int = 24, points: int = 500) -> None:
        try:
            from skopt import Optimizer
            from skopt.space import Categorical, Integer, Real
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise RuntimeError("the bayes strategy needs scikit-optimize: pip install scikit-optimize") from exc
        self.space = space
        dims: list[Any] = []
        for d in space.dimensions:
            if isinstance(d, Choice):
                dims.append(Categorical(list(range(len(d.values))), name=d.name))
            elif isinstance(d, Flag):
                dims.append(Categorical([0, 1], name=d.name))
            elif isinstance(d, IntRange):
                # the dimension's own [0, 1] scale (log2 or linear), so the surrogate sees it as the space does
                dims.append(Real(0.0, 1.0, name=d.name))
            elif isinstance(d, SizeVector):
                e_lo, e_hi = (d.lo - 1).bit_length(), d.hi.bit_length() - 1
                dims.append(Integer(1, max(2, d.max_len), name=f"{d.name}.len"))
                dims.extend(Integer(e_lo, e_hi, name=f"{d.name}.{i}") for i in range(d.max_len))
        estimator: Any = base
        if base == "ET":
            from skopt.learning import ExtraTreesRegressor

            estimator = ExtraTreesRegressor(n_estimators=trees, min_samples_leaf=3, random_state=seed)
        elif base != "GP":
            raise ValueError(f"base must be GP or ET, not {base!r}")
        self.optimizer = Optimizer(dims, base_estimator=estimator, n_initial_points=initial,
                                   acq_func="EI", acq_optimizer="sampling", random_state=seed,
                                   acq_optimizer_kwargs={"n_points": points})
        self._rng = np.random.default_rng(seed)
        self._worst = 1.0
        self._pending: dict[str, list[Any]] = {}

    def _decode(self, x: list[Any]) -> Point:
        point: Point = {}
        i = 0
        for d in self.space.dimensions:
            if isinstance(d, Choice):
                point[d.name] = d.values[int(x[i])]
                i += 1
            elif isinstance(d, Flag):
                point[d.name] = bool(x[i])
                i += 1
            elif isinstance(d, IntRange):
                point[d.name] = d._from_unit(float(x[i]))
                i += 1
            elif isinstance(d, SizeVector):
                n = min(int(x[i]), d.max_len)
                point[d.name] = [1 << int(e) for e in x[i + 1: i + 1 + n]]
                i += 1 + d.max_len
        return point

    def _encode(self, point: Point) -> list[Any]:
        x: list[Any] = []
        for d in self.space.dimensions:
            v = point[d.name]
            if isinstance(d, Choice):
                x.append(d.values.index(v))
            elif isinstance(d, Flag):
                x.append(int(v))
            elif isinstance(d, IntRange):
                x.append(min(1.0, max(0.0, d.to_unit(v))))
            elif isinstance(d, SizeVector):
                exps = [int(s).bit_length() - 1 for s in v]
                x.append(max(1, len(exps)))
                x.extend(exps + [exps[-1]] * (d.max_len - len(exps)))
        return x

    def ask(self) -> Point:
        for _ in range(_ATTEMPTS):
            x = self.optimizer.ask()
            point = self._decode(x)
            if self.space.is_valid(point):
                self._pending[point_key(point)] = x
                return point
            self.optimizer.tell(x, self._worst)
        # the model keeps proposing illegal points: take a legal random one and let the model learn from it
        point = self.space.sample(self._rng)
        self._pending[point_key(point)] = self._encode(point)
        return point

    def tell(self, point: Point, outcome: Outcome | None) -> None:
        x = self._pending.pop(point_key(point), None)
        if x is None:
            return
        if outcome is None or THROUGHPUT not in outcome.metrics:
            value = self._worst
        else:
            value = float(outcome.metrics[THROUGHPUT])
            self._worst = max(self._worst, value)
        self.optimizer.tell(x, value)

    def restart(self) -> None:
        return None

    def set_exclusion(self, exclude: Exclusion | None) -> None:
        return None

    def set_regions(self, regions: Regions | None) -> None:
        return None
