"""Dimensions: sizes reach region boundaries as often as round sizes, and every value they make is legal."""

from __future__ import annotations

import numpy as np

from collie.model.dimensions import SIZE_BOUNDARIES, SizeVector
from collie.model.space import load_space

SIZES = SizeVector("sizes", 1, 8 << 20)
PAGE_OR_MTU = (256, 512, 1024, 2048, 4096)


def _round(v: int) -> bool:
    return v & (v - 1) == 0


def _beside_a_boundary(v: int) -> bool:
    """Off a power of two and within 64 B of a multiple of an MTU or the 4 KiB page (any size is within 32 B of
    a cache line, so lines do not count here)."""
    return not _round(v) and v >= 192 and any(abs(v - max(1, round(v / b)) * b) <= 64 for b in PAGE_OR_MTU)


def test_fresh_sizes_are_round_or_at_a_boundary_about_equally_often() -> None:
    # measured on 100 000 sizes: 53 % powers of two, 44 % off a power of two within 64 B of a multiple of an
    # MTU or 4 KiB, 27 % within 8 B of a cache line's edge without being whole lines
    rng = np.random.default_rng(1)
    sizes = [v for _ in range(4000) for v in SIZES.sample(rng)]
    n = len(sizes)
    assert 0.45 <= sum(map(_round, sizes)) / n <= 0.60
    assert 0.38 <= sum(map(_beside_a_boundary, sizes)) / n <= 0.50
    assert 0.20 <= sum(0 < v % 64 <= 8 or v % 64 >= 56 for v in sizes) / n <= 0.35
    assert sum(v % 256 == 1 and v > 256 for v in sizes) / n >= 0.01  # MTU + 1: a 1-byte last packet


def test_mutations_reach_boundaries_and_keep_log_scale_moves() -> None:
    rng = np.random.default_rng(2)
    reached: set[int] = set()
    for _ in range(3000):
        reached.update(SIZES.mutate([4096], rng))
    # the old power-of-two moves still work: x2, /2, scale, and off-power-of-two neighbours are reached
    assert {8192, 2048, 32768, 512} <= reached
    assert {4097, 4095} <= reached and any(_beside_a_boundary(v) and v % 64 for v in reached)
    # round to the nearest power of two, the nearest boundary
    assert SIZES.nearest_round(4097) == 4096 and SIZES.nearest_round(12289) == 16384
    assert SIZES.nearest_boundary(4161, 4096) == 4096 and SIZES.nearest_boundary(30, 64) == 64


def test_every_sampled_and_mutated_size_pattern_is_legal() -> None:
    rng = np.random.default_rng(3)
    narrow = SizeVector("sizes", 100, 5000, max_len=3)
    for dim in (SIZES, narrow, load_space().dimension("sizes")):
        assert isinstance(dim, SizeVector)
        value = dim.sample(rng)
        for _ in range(3000):
            assert dim.check(value) is None, value
            value = dim.mutate(value, rng) if rng.random() < 0.9 else dim.sample(rng)


def test_a_space_may_add_its_own_boundary() -> None:
    rng = np.random.default_rng(4)
    burst = SizeVector("sizes", 1, 1 << 20, boundaries=(*SIZE_BOUNDARIES, 3000))

    def on_3000(dim: SizeVector) -> float:
        sizes = [v for _ in range(3000) for v in dim.sample(rng)]
        return sum(v % 3000 == 0 for v in sizes) / len(sizes)

    assert on_3000(burst) >= 0.01 and on_3000(SIZES) < 0.002


def test_the_domain_says_any_size() -> None:
    assert SIZES.domain() == "1..8 sizes of 1 .. 8388608 B (any size, boundaries favoured)"
