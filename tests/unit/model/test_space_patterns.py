"""Collective patterns in the search space (``workloads/collective.toml``): a point with a pattern builds that
collective over the host roles r0, r1, ..., every connection shaped as the point's flow; ``point_of`` inverts it;
a pattern that cannot be placed is one named problem; the features say which pattern and how many ranks; and
targets play the host roles with their hosts in order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from collie.errors import InputError
from collie.model.features import features
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind, rank_host_index, rank_hosts
from collie.model.space import PATTERNS, load_space
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget
from tests.conftest import ROOT

SPACE = load_space(ROOT / "workloads" / "collective.toml")
RING = {"pattern": "ring_allreduce", "hosts": 4, "ranks_per_host": 2, "nics": 1, "pattern_size": 1 << 24,
        "op": "RC_SEND",
        "qps": 4, "sizes": [65536], "mtu": 2048, "wq_depth": 256, "direction": "bidirectional", "victim": "none",
        "tclass": "default"}


def test_the_host_roles_are_r0_r1_and_nothing_else() -> None:
    assert rank_hosts(3) == ("r0", "r1", "r2")
    assert [rank_host_index(h) for h in ("r0", "r12", "r01", "r", "a", "h1", "r1x")] == [0, 12, None, None, None,
                                                                                          None, None]


def test_a_pattern_point_builds_its_collective_over_host_roles() -> None:
    w = SPACE.build(RING)
    assert w.pattern is not None
    p = w.pattern
    assert (p.kind, p.hosts, p.ranks_per_host, p.size) == (PatternKind.RING_ALLREDUCE, ("r0", "r1", "r2", "r3"), 2,
                                                            1 << 24)
    assert len(w.flows) == 8 and {f.qps for f in w.flows} == {4} and {f.opcodes for f in w.flows} == {("SEND",)}
    assert {f.mtu for f in w.flows} == {2048} and {f.sq_depth for f in w.flows} == {256}
    # direction does not apply to a pattern: the same workload either way
    assert SPACE.build({**RING, "direction": "oneway"}).key() == w.key()
    f = features(w)
    assert (f.pattern, f.ranks_per_host, f.hosts, f.flows) == ("ring_allreduce", 2, 4, 8)
    plain = features(SPACE.build({**RING, "pattern": "none"}))
    assert (plain.pattern, plain.ranks_per_host, plain.hosts) == ("none", 1, 2)


def test_point_of_inverts_build_for_patterns_and_refuses_named_hosts() -> None:
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(200):
        point = SPACE.sample(rng)
        w = SPACE.build(point)
        seen.add(point["pattern"])
        assert SPACE.build(SPACE.point_of(w)).key() == w.key(), point
    assert seen == set(PATTERNS)
    named = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, ("h0", "h1", "h2"), 1 << 20,
                                        flow=Flow(Endpoint("a"), Endpoint("b"))))
    with pytest.raises(InputError, match=r"places its ranks on the hosts r0, r1, \.\.\. in order"):
        SPACE.point_of(named)


def test_a_victim_beside_a_pattern_runs_from_r1_to_its_last_host() -> None:
    for hosts, ends in ((4, ("r1", "r3")), (3, ("r1", "r2")), (2, ("r1", "r0"))):
        w = SPACE.build({**RING, "hosts": hosts, "victim": "bandwidth"})
        assert w.pattern is not None and w.pattern.victim is not None
        victim = w.flows[-1]
        assert (victim.client.host, victim.server.host, victim.victim) == (*ends, "bandwidth")
        assert victim.sizes == (65536,) and victim.opcodes == ("WRITE",)
        assert SPACE.point_of(w)["victim"] == "bandwidth" and features(w).victim == "bandwidth"
        assert SPACE.build(SPACE.point_of(w)).key() == w.key()
    alone = SPACE.build({**RING, "hosts": 1, "ranks_per_host": 2, "victim": "bandwidth"})  # one host: loopback
    assert (alone.flows[-1].client.host, alone.flows[-1].server.host) == ("r0", "r0")
    assert SPACE.build(SPACE.point_of(alone)).key() == alone.key()
    moved = SPACE.build({**RING, "victim": "bandwidth"}).pattern
    assert moved is not None and moved.victim is not None
    elsewhere = replace(moved, victim=replace(moved.victim, server=Endpoint("r2")))
    with pytest.raises(InputError, match="at most one victim, one of the space's"):
        SPACE.point_of(Workload.of_pattern(elsewhere))


@pytest.mark.parametrize(("change", "message"), [
    ({"pattern": "kv_scatter"}, "kv_scatter moves a KV cache with WRITE_IMM only"),
    ({"pattern": "pairwise", "hosts": 3, "ranks_per_host": 1}, "needs an even number of ranks"),
])
def test_a_pattern_that_cannot_be_placed_is_one_named_problem(change: dict[str, object], message: str) -> None:
    problems = SPACE.problems({**RING, **change})
    assert [name for name, _ in problems] == ["pattern"] and message in problems[0][1]
    assert SPACE.is_valid({**RING, **change, "pattern": "ring_allreduce"})


def test_a_simulated_fleet_plays_the_host_roles_in_order_and_refuses_too_many() -> None:
    w = SPACE.build({**RING, "ranks_per_host": 1})
    fleet = SimTarget("fleet8-cx6-faults", seed=1)
    placed, names = fleet.placed(w)
    assert names == {"h0": "r0", "h1": "r1", "h2": "r2", "h3": "r3"}
    assert {f.client.host for f in placed.flows} == {"h0", "h1", "h2", "h3"}
    r = fleet.run(w, 1.0)
    assert {f.client for f in r.flows} == set(rank_hosts(4)) and [h.host for h in r.hosts] == list(rank_hosts(4))
    assert "fault:h2:port_speed" in r.truth  # ground truth names the profile's host
    two = SimTarget("cx6-200g", seed=1)
    assert two.run(SPACE.build({**RING, "hosts": 2, "ranks_per_host": 1}), 1.0).flows  # r0, r1 on a, b
    with pytest.raises(Unsupported, match=r"^a pattern over the host roles r0 \.\. r3 needs 4 hosts; profile "
                                          r"cx6-200g has 2"):
        two.run(w, 1.0)


def test_moves_only_change_parameters_that_apply() -> None:
    """Beside a pattern, direction changes nothing, and without one the pattern's own parameters change nothing:
    neither is moved, so no experiment reruns the same workload; a victim applies to both."""
    assert not SPACE.applies("direction", RING) and SPACE.applies("hosts", RING) and SPACE.applies("qps", RING)
    assert SPACE.applies("victim", RING) and SPACE.applies("victim", {**RING, "pattern": "none"})
    plain = {**RING, "pattern": "none"}
    assert SPACE.applies("direction", plain) and not SPACE.applies("hosts", plain)
    assert not SPACE.applies("pattern_size", plain) and SPACE.applies("pattern", plain)
    rng = np.random.default_rng(5)
    for point, idle in ((RING, {"direction"}), (plain, {"hosts", "ranks_per_host", "nics", "pattern_size"})):
        moved = {SPACE.mutate(point, rng)[1] for _ in range(300)}
        assert moved and not moved & idle, moved
    assert SPACE.mutate(RING, rng, name="direction")[1] == "direction"  # named: moved all the same
