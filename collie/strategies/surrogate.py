"""A cheap surrogate of each search objective, to screen an annealer's proposals before they cost an experiment.

The model is ridge regression of ``log(metric)`` on an encoding of the point, made by the :data:`Encoder` the
surrogate is given (for workloads, :func:`collie.model.features.point_encoder`: numeric features as ``log2(1 + x)``,
flags as 0/1, categorical features one-hot). Metrics that move multiplicatively with the encoded quantities are
log-linear in such columns, so the model captures the direction in which a metric grows even where it cannot
predict its value; that direction is all screening needs.

Invariants:
    * predictions use only what the strategy was told (points and their measured metrics);
    * the model is refitted lazily, only when an objective has new data since its last fit;
    * with fewer than ``min_points`` observations of an objective it predicts nothing (``None``), and the
      caller falls back to its unscreened proposal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from collie.strategies.base import Encoder, Point, Row


class Surrogate:
    """Per-objective ridge regressions of log(metric) on encoded points.

    Args:
        encoder: a point's regression columns.
        ridge: the L2 penalty on standardized coefficients.
        min_points: observations of an objective needed before it is predicted.
    """

    def __init__(self, encoder: Encoder, *, ridge: float = 1.0, min_points: int = 20) -> None:
        self.encoder = encoder
        self.ridge = ridge
        self.min_points = min_points
        self._columns: dict[str, int] = {}
        self._x = np.zeros((64, 0))  # rows grow by doubling; the first ``_n`` are observations
        self._n = 0
        self._targets: dict[str, tuple[list[int], list[float]]] = {}
        # objective -> (observations at fit, columns at fit, mean, scale, coefficients, mean target)
        self._fits: dict[str, tuple[int, int, np.ndarray, np.ndarray, np.ndarray, float]] = {}

    def row(self, point: Point) -> Row:
        """The regression columns of ``point``."""
        return self.encoder(point)

    def _vector(self, row: Row, width: int) -> np.ndarray:
        out = np.zeros(width)
        for name, value in row.items():
            i = self._columns.get(name)
            if i is not None and i < width:
                out[i] = value
        return out

    def add(self, point: Point, metrics: Mapping[str, float]) -> None:
        """Record one measured point (every metric it reports becomes an observation of that objective)."""
        row = self.row(point)
        for name in row:
            self._columns.setdefault(name, len(self._columns))
        width = len(self._columns)
        rows, cols = self._x.shape
        if width > cols or self._n == rows:
            self._x = np.pad(self._x, ((0, rows if self._n == rows else 0), (0, max(0, width - cols))))
        index = self._n
        self._x[index, :width] = self._vector(row, width)
        self._n += 1
        for name, value in metrics.items():
            if value >= 0 and math.isfinite(value):
                indices, targets = self._targets.setdefault(name, ([], []))
                indices.append(index)
                targets.append(math.log(value + 1e-9))

    def observations(self, objective: str) -> int:
        return len(self._targets.get(objective, ((), ()))[0])

    def _fit(self, objective: str) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray, float] | None:
        indices, targets = self._targets.get(objective, ([], []))
        if len(indices) < self.min_points:
            return None
        cached = self._fits.get(objective)
        if cached is not None and cached[0] == len(indices):
            return cached
        x = self._x[indices]
        y = np.array(targets)
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        z = (x - mean) / scale
        y_mean = float(y.mean())
        coef = np.linalg.solve(z.T @ z + self.ridge * np.eye(x.shape[1]), z.T @ (y - y_mean))
        fit = (len(indices), x.shape[1], mean, scale, coef, y_mean)
        self._fits[objective] = fit
        return fit

    def predict(self, objective: str, rows: Sequence[Row]) -> np.ndarray | None:
        """Predicted ``log(metric)`` of each encoded row, or None while the objective has too little data."""
        fit = self._fit(objective)
        if fit is None:
            return None
        _, width, mean, scale, coef, y_mean = fit
        x = np.array([self._vector(r, width) for r in rows])
        predicted: np.ndarray = ((x - mean) / scale) @ coef + y_mean
        return predicted
