"""A collective's figures from its connections' rates: nccl-tests' algbw and busbw, the steps' dependencies (one
slow link slows a ring), per-rank and per-link figures, and what a connection that moved nothing does."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind

HOSTS = tuple(f"h{i}" for i in range(8))
FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20)
GBS = 20e9  # bytes/s of a healthy link


@dataclass(frozen=True)
class Measured:
    flow: int
    bps: float
    lat_p50_us: float = 0.0


def measured(p: Pattern, slow: dict[int, float] | None = None, lat_us: float = 0.0) -> list[Measured]:
    slow = slow or {}
    return [Measured(i, GBS * 8 * slow.get(i, 1.0), lat_us) for i in range(len(p.pairs()))]


def test_a_homogeneous_ring_has_nccl_tests_figures() -> None:
    p = Pattern(PatternKind.RING_ALLREDUCE, HOSTS, 64 << 20, flow=FLOW)
    c = collective(p, measured(p))
    # 2(n-1) steps of S/n bytes at the link rate: t = 2(n-1)/n * S / rate, so busbw is the link rate
    assert c.time_s == pytest.approx(2 * 7 / 8 * (64 << 20) / GBS)
    assert c.algbw_gbs == pytest.approx((64 << 20) / c.time_s / 1e9)
    assert c.busbw_gbs == pytest.approx(GBS / 1e9)
    assert c.spread == 0 and all(r.send_gbs == pytest.approx(GBS / 1e9) for r in c.ranks)
    assert len(c.links) == 8 and c.links[3].name == "h3->h4"


def test_one_slow_link_slows_the_whole_ring_and_is_named() -> None:
    p = Pattern(PatternKind.RING_ALLREDUCE, HOSTS, 64 << 20, flow=FLOW)
    c = collective(p, measured(p, {5: 0.5}))  # h5 -> h6 at half rate
    assert c.busbw_gbs == pytest.approx(GBS / 2e9, rel=1e-6)  # every step waits for it
    assert c.slowest_link.name == "h5->h6" and c.spread == pytest.approx(0.5)
    assert min(c.ranks, key=lambda r: r.send_gbs).host == "h5"
    assert min(c.ranks, key=lambda r: r.recv_gbs).host == "h6"


def test_a_slow_sender_of_an_all_to_all_delays_only_its_own_step() -> None:
    p = Pattern(PatternKind.ALL_TO_ALL, HOSTS, 64 << 20, flow=FLOW)
    fast = collective(p, measured(p))
    slow = collective(p, measured(p, {0: 0.25}))  # h0 -> h1
    assert slow.time_s == pytest.approx(fast.time_s * 4)
    assert fast.busbw_gbs == pytest.approx(fast.algbw_gbs * 7 / 8)


def test_latency_is_a_floor_for_small_transfers() -> None:
    p = Pattern(PatternKind.RING_ALLREDUCE, HOSTS, 8 * 1024, flow=FLOW)  # 1 KiB per step
    c = collective(p, measured(p, lat_us=5.0))
    assert c.time_s == pytest.approx(14 * 5e-6)


def test_a_connection_that_moved_nothing_makes_the_collective_never_finish() -> None:
    p = Pattern(PatternKind.INCAST, HOSTS[:4], 1 << 20, flow=FLOW)
    c = collective(p, measured(p, {1: 0.0}))
    assert math.isinf(c.time_s) and c.algbw_gbs == c.busbw_gbs == 0.0
    assert c.slowest_link.name == "h2->h0" and c.slowest_link.gbs == 0.0


def test_results_must_cover_every_connection() -> None:
    p = Pattern(PatternKind.INCAST, HOSTS[:4], 1 << 20, flow=FLOW)
    with pytest.raises(ValueError, match="2 flow results for a pattern of 3 connections"):
        collective(p, measured(p)[:2])


@pytest.mark.parametrize("kind", [PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL, PatternKind.PAIRWISE])
def test_a_symmetric_pattern_compares_wire_links_together_and_loopback_links_together(kind: PatternKind) -> None:
    p = Pattern(kind, HOSTS[:4], 64 << 20, ranks_per_host=2, flow=FLOW)
    c = collective(p, measured(p))
    groups = {c.group_of(link) for link in c.links}
    wire = {c.group_of(link) for link in c.links if not link.loopback}
    assert len(wire) <= 1 and len(groups - wire) == 1
    assert all(c.reference_of(link) == pytest.approx(GBS / 1e9) for link in c.links)


def test_hosts_of_different_loads_are_not_compared() -> None:
    """A permutation of four ranks per host on six hosts loads its hosts unevenly: colour refinement splits them,
    so a link is judged only beside links between hosts of the same standing."""
    p = Pattern(PatternKind.PERMUTATION, HOSTS[:6], 64 << 20, ranks_per_host=4, flow=FLOW)
    c = collective(p, measured(p))
    standing = {link.src: c.group_of(link)[1] for link in c.links}
    assert len(set(standing.values())) > 1
    for link in c.links:
        alike = [o for o in c.links if c.group_of(o) == c.group_of(link)]
        assert all(o.loopback == link.loopback for o in alike)


def test_one_slow_host_of_a_ring_is_compared_with_its_healthy_peers() -> None:
    p = Pattern(PatternKind.RING_ALLREDUCE, HOSTS, 64 << 20, flow=FLOW)
    c = collective(p, measured(p, {2: 0.5, 3: 0.5}))  # h2's links in and out at half rate
    assert len({c.group_of(link) for link in c.links}) == 1  # standing is the pattern's, not the rates'
    assert c.reference_gbs == pytest.approx(GBS / 1e9)
