"""The fleet check's schedule and localisation on synthetic fleets: links slow wherever they touch a slow host
(a port, NIC or PCIe fault slows both ways), healthy links at one rate. No simulator: the rule alone."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from collie.fleet import RoundKind, check_fleet, check_rails, ring_orders
from collie.model.collective import LinkFigure

HEALTHY = 22.9


def fleet(n: int) -> list[str]:
    return [f"h{i:02d}" for i in range(n)]


class Fake:
    """A fleet whose ``slow`` hosts get ``factor`` of the healthy rate on every link they are an end of."""

    def __init__(self, slow: dict[str, float]) -> None:
        self.slow = slow
        self.rounds: list[tuple[RoundKind, tuple[str, ...]]] = []

    def __call__(self, kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
        self.rounds.append((kind, order))
        return links(kind, order, lambda src, dst: HEALTHY * min(self.slow.get(src, 1.0), self.slow.get(dst, 1.0)))


def links(kind: RoundKind, order: tuple[str, ...], rate: Callable[[str, str], float]) -> tuple[LinkFigure, ...]:
    """A round's links (a ring over ``order``, or its consecutive pairs both ways), each at ``rate(src, dst)``."""
    n = len(order)
    pairs = [(i, (i + 1) % n) for i in range(n)] if kind is RoundKind.RING else \
        [p for i in range(0, n - 1, 2) for p in ((i, i + 1), (i + 1, i))]
    return tuple(LinkFigure(c, s, d, order[s], order[d], rate(order[s], order[d]), f"{order[s]}->{order[d]}")
                 for c, (s, d) in enumerate(pairs))


def test_a_clean_fleet_takes_one_ring() -> None:
    run = Fake({})
    result = check_fleet(run, fleet(16))
    assert result.suspects == () and result.experiments == 1 and run.rounds[0][0] is RoundKind.RING


def test_one_slow_host_is_named_in_two_rounds_beside_a_healthy_partner() -> None:
    run = Fake({"h05": 0.5})
    result = check_fleet(run, fleet(16))
    assert [s.host for s in result.suspects] == ["h05"] and result.experiments == 2
    kind, order = run.rounds[1]
    assert kind is RoundKind.PAIRS
    # the implicated hosts h04, h05, h06 each beside a host the ring cleared
    pairs = [order[i:i + 2] for i in range(0, len(order), 2)]
    assert {p[0] for p in pairs[:3]} == {"h04", "h05", "h06"}
    assert all(p[1] not in ("h04", "h05", "h06") for p in pairs)
    (s,) = result.suspects
    assert s.worst == pytest.approx(0.5) and any("round 2 (pairs)" in e for e in s.evidence)


def test_each_implicated_host_is_paired_with_its_nearest_cleared_host_in_the_fleets_order() -> None:
    """Where the fleet's order follows its racks, the nearest host is behind the same switch: a slow host's
    congestion stays off the links between switches, where it would slow other pairs."""
    run = Fake({"h27": 0.5})
    result = check_fleet(run, fleet(32))
    assert [s.host for s in result.suspects] == ["h27"]
    _, order = run.rounds[1]
    pairs = dict(zip(order[0::2], order[1::2], strict=True))
    assert (pairs["h26"], pairs["h27"], pairs["h28"]) == ("h25", "h29", "h30")  # in turn, the nearest left


def test_behind_a_fabric_a_slow_port_is_named_without_its_congestions_victims_and_a_slow_link_as_a_link() -> None:
    """On a simulated fleet of four leaves with PFC, a slow port's congestion spreads to every flow through the
    links it pauses; pairs behind one switch keep it there. A slow link between switches leaves every host
    healthy: the check names the hosts' link it slowed."""
    from dataclasses import replace

    from collie.model.collective import collective
    from collie.model.flow import Endpoint, Flow
    from collie.model.patterns import Pattern, PatternKind
    from collie.model.workload import Workload
    from collie.targets.sim import SimTarget, load_profile
    from collie.targets.sim.fabric import spread
    from collie.targets.sim.profile import Fabric, Fault, FaultKind, host_names

    hosts = host_names(32)
    profile = replace(load_profile("fleet8-cx6"), hosts=hosts, fabric=Fabric(8, 4, 400.0, True, 256.0))
    flow = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)
    for bad in ("h03", "h13", "h27"):
        target = SimTarget(replace(profile, faults=(Fault(bad, FaultKind.PORT_SPEED, 0.5),)), seed=1)

        def run(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
            p = Pattern(PatternKind.RING_ALLREDUCE if kind is RoundKind.RING else PatternKind.PAIRWISE, order,
                        64 << 20, flow=flow)
            return collective(p, target.run(Workload.of_pattern(p), 1.0).flows).links  # noqa: B023

        result = check_fleet(run, hosts)
        assert [s.host for s in result.suspects] == [bad] and result.unexplained == ()
    # a slow link between leaf 0 and the spine ECMP puts one of h07 -> h08's QPs on: the ring's link between the
    # leaves is slow, every host healthy; the check names the link
    (spine, _), *_ = spread("h07", "h08", 2, 4)
    slow_link = replace(profile, fabric=replace(profile.fabric, slow_links=((0, spine, 0.1),)))  # type: ignore[type-var]
    target = SimTarget(slow_link, seed=1)

    def run_link(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
        p = Pattern(PatternKind.RING_ALLREDUCE if kind is RoundKind.RING else PatternKind.PAIRWISE, order,
                    64 << 20, flow=flow)
        return collective(p, target.run(Workload.of_pattern(p), 1.0).flows).links

    result = check_fleet(run_link, hosts)
    assert result.suspects == () and result.unexplained == ("h07->h08",)


@pytest.mark.parametrize(("n", "bad"), [(8, ("h01", "h02")), (8, ("h01", "h03")), (8, ("h00", "h04")),
                                        (16, ("h02", "h05", "h06")), (16, ("h01", "h03", "h05"))])
def test_many_faults_on_a_small_fleet_are_all_named_and_nothing_else(n: int, bad: tuple[str, ...]) -> None:
    result = check_fleet(Fake(dict.fromkeys(bad, 0.5)), fleet(n))
    assert sorted(s.host for s in result.suspects) == sorted(bad)
    assert result.experiments <= 4


def test_every_pair_of_faults_on_ten_hosts_is_localised_exactly() -> None:
    hosts = fleet(10)
    for bad in itertools.combinations(hosts, 2):
        for seed in range(2):
            result = check_fleet(Fake(dict.fromkeys(bad, 0.4)), hosts, seed=seed)
            assert sorted(s.host for s in result.suspects) == sorted(bad), (bad, seed, result.rounds)


def test_the_second_ring_shares_no_neighbours_with_the_first() -> None:
    for n in (8, 32, 257):
        first, second = ring_orders(fleet(n), seed=3)
        near = {frozenset((first[i], first[(i + 1) % n])) for i in range(n)}
        assert sorted(second) == sorted(first)
        assert not any(frozenset((second[i], second[(i + 1) % n])) in near for i in range(n))


def test_a_slowdown_within_the_margin_is_not_a_suspect() -> None:
    assert check_fleet(Fake({"h03": 0.85}), fleet(8), margin=0.2).suspects == ()
    assert [s.host for s in check_fleet(Fake({"h03": 0.85}), fleet(8), margin=0.1).suspects] == ["h03"]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 3 hosts, got 2"):
        check_fleet(Fake({}), fleet(2))
    with pytest.raises(ValueError, match="margin must be in"):
        check_fleet(Fake({}), fleet(4), margin=1.0)
    assert check_fleet(Fake({}), fleet(4)).matrix()[("h00", "h01")] == HEALTHY


def test_candidates_with_no_healthy_partner_left_are_all_named() -> None:
    """Three hosts, all slowed on their links to one another except one pair: no host is cleared by the rings,
    so the candidates that the rounds cannot pair with a healthy host are named, not dropped."""

    def run(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
        return links(kind, order, lambda src, dst: HEALTHY * (1.0 if {src, dst} == {"h00", "h01"} else 0.5))

    result = check_fleet(run, fleet(3))
    assert {s.host for s in result.suspects} >= {"h02"}
    assert all(s.evidence for s in result.suspects)


def test_a_slow_link_between_healthy_hosts_is_named_as_unexplained() -> None:
    """The path h05 -> h06 is slow (a link between switches), its hosts are not: no suspect, the link is named."""
    calls: list[tuple[RoundKind, tuple[str, ...]]] = []

    def run(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
        calls.append((kind, order))
        return links(kind, order, lambda src, dst: HEALTHY * (0.4 if (src, dst) == ("h05", "h06") else 1.0))

    result = check_fleet(run, fleet(16))
    assert result.suspects == () and result.unexplained == ("h05->h06",) and result.flagged
    assert not check_fleet(Fake({}), fleet(16)).flagged
    assert check_fleet(Fake({"h05": 0.5}), fleet(16)).unexplained == ()  # every slow link has the suspect at an end


def test_hosts_of_two_nics_are_checked_rail_by_rail_and_a_suspect_is_a_nic() -> None:
    run = Fake({"h05/1": 0.5})
    result = check_rails(run, fleet(16), 2)
    assert [s.host for s in result.suspects] == ["h05/1"] and result.rails == 2
    # the first rail is clean in one ring; the second takes a ring and a round of pairs, numbered on
    assert [r.index for r in result.rounds] == [1, 2, 3] and result.experiments == 3
    assert all(len({h.split("/")[0] for h in order}) == len(order) for _, order in run.rounds)  # one NIC a host
    assert run.rounds[0][1] == tuple(fleet(16)) and run.rounds[1][1][0] == "h00/1"
    assert result.hosts == (*fleet(16), *(f"{h}/1" for h in fleet(16)))
    assert result.all_pairs == 2 * 120 and result.checked == "32 NICs (16 hosts x 2)"
    assert all(e.startswith(("round 2 ", "round 3 ")) for e in result.suspects[0].evidence)


def test_hosts_of_one_nic_are_checked_as_a_fleet() -> None:
    assert check_rails(Fake({"h03": 0.5}), fleet(8), 1) == check_fleet(Fake({"h03": 0.5}), fleet(8))
    assert check_fleet(Fake({}), fleet(8)).checked == "8 hosts"
