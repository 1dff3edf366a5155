"""The strategy protocol: ``ask()`` for a point, ``tell(point, outcome)`` what it did. Knows nothing about RDMA.

An :class:`Outcome` is a bag of named metrics plus the oracle's yes/no. Metric names are conventions shared with
the oracle (:mod:`collie.metrics`): ``throughput`` is the fraction of the target's ceiling a run reached (lower
is more anomalous); ``diag:<counter>`` is the rate of a NIC-internal diagnostic counter (higher is closer to
trouble).

What a strategy is given, it is given through narrow interfaces, so it never imports what a point means:
    * a :class:`Space` (names and typed dimensions, sampling, one-dimension mutation, legality), which
      :class:`collie.model.space.SearchSpace` is;
    * an :data:`Encoder` (a point's regression columns) for a strategy that models its objectives, made by
      whoever builds the strategy (for workloads: :func:`collie.model.features.point_encoder`).

Invariants every strategy keeps:
    * it is deterministic for a seed and a sequence of tells (so a campaign can be resumed by replaying its
      journal);
    * ``ask()`` never returns a point the space rejects, nor one the exclusion predicate rejects when it can
      avoid it;
    * ``tell(point, None)`` means the point was pruned or failed: no information, no budget wasted on it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from collie.model.dimensions import Dimension

Point = dict[str, Any]
#: how many known anomalies' regions hold a point (0: it is worth asking)
Exclusion = Callable[[Mapping[str, Any]], int]
#: A point's regression columns: column name -> value (absent columns are 0).
Row = Mapping[str, float]
#: How a point becomes regression columns (injected by whoever builds a strategy: it knows what points mean).
Encoder = Callable[[Mapping[str, Any]], Row]


class Space(Protocol):
    """What a strategy uses of a search space (:class:`collie.model.space.SearchSpace` is one).

    Invariant (the space keeps it): :meth:`sample` and :meth:`mutate` only return points :meth:`is_valid`
    accepts.
    """

    @property
    def names(self) -> tuple[str, ...]:
        """The searched dimensions' names, in the space's order."""
        ...

    @property
    def dimensions(self) -> Sequence[Dimension]:
        """The searched dimensions (typed: :mod:`collie.model.dimensions`), in the order of :attr:`names`."""
        ...

    def is_valid(self, point: Mapping[str, Any]) -> bool:
        """Whether ``point`` is a legal point of the space."""
        ...

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """A uniformly sampled legal point."""
        ...

    def mutate(self, point: Mapping[str, Any], rng: np.random.Generator, name: str | None = None,
               repair: float = 0.0, refused: Callable[[Mapping[str, Any]], int] | None = None
               ) -> tuple[dict[str, Any], str]:
        """A legal neighbour of ``point`` differing in one dimension (``name``, or one drawn) and that
        dimension's name; with chance ``repair``, an illegal or ``refused`` move is completed by a few other
        changes rather than redrawn; ``(dict(point), name)`` when no acceptable neighbour is found."""
        ...


@dataclass(frozen=True)
class Region:
    """A region of the space known to hold an anomaly: ``point`` lies inside it, and ``misses(p)`` counts the
    conditions of the region that point ``p`` breaks (0: ``p`` is inside)."""

    point: Point
    misses: Callable[[Mapping[str, Any]], int]


#: The known regions as they are now (they grow, and are narrowed or widened, as a campaign goes on).
Regions = Callable[[], Sequence[Region]]


@dataclass(frozen=True)
class Outcome:
    """What a strategy learns from one experiment."""

    metrics: Mapping[str, float] = field(default_factory=dict)
    anomalous: bool = False


class Strategy(Protocol):
    """Ask/tell search strategy."""

    name: str

    def ask(self) -> Point: ...

    def tell(self, point: Point, outcome: Outcome | None) -> None: ...

    def restart(self) -> None:
        """Called after an anomaly was found: leave the region, start afresh."""
        ...

    def set_exclusion(self, exclude: Exclusion | None) -> None:
        """Points for which ``exclude(point)`` is not 0 are not worth asking (inside that many known MFSs)."""
        ...

    def set_regions(self, regions: Regions | None) -> None:
        """The regions of the anomalies known so far, for a strategy that searches beside them."""
        ...
