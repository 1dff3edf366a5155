"""Random search: independent uniform samples of the space (the baseline every strategy must beat)."""

from __future__ import annotations

import numpy as np

from collie.strategies.base import Exclusion, Outcome, Point, Regions, Space


class RandomSearch:
    """Uniform sampling. With an exclusion set, it resamples (bounded) away from excluded points."""

    name = "random"

    def __init__(self, space: Space, seed: int = 0, use_exclusion: bool = False) -> None:
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.use_exclusion = use_exclusion
        self._exclude: Exclusion | None = None

    def ask(self) -> Point:
        point = self.space.sample(self.rng)
        if self._exclude is not None and self.use_exclusion:
            for _ in range(50):
                if not self._exclude(point):
                    break
                point = self.space.sample(self.rng)
        return point

    def tell(self, point: Point, outcome: Outcome | None) -> None:
        return None

    def restart(self) -> None:
        return None

    def set_exclusion(self, exclude: Exclusion | None) -> None:
        self._exclude = exclude

    def set_regions(self, regions: Regions | None) -> None:
        return None  # the baseline samples uniformly
