"""The straggler verdict on collective patterns run on simulated fleets: a fault-free fleet is clean, a slow host
is named with the links it slows, a lone slow link names its sender, and the collective's figures are evidence."""

from __future__ import annotations

import functools
import json
from dataclasses import replace

import pytest
from simhelpers import oracle_for

from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import Fault, FaultKind, host_names

FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)


def fleet(n: int, *faults: Fault) -> SimTarget:
    return SimTarget(replace(load_profile("fleet8-cx6"), hosts=host_names(n), faults=faults), seed=7)


@functools.lru_cache(maxsize=1)
def oracle() -> Oracle:
    return oracle_for(fleet(8))  # faults do not change the calibration hosts a and b (h0, h1) in these tests


def judge(kind: PatternKind, n: int, *faults: Fault) -> tuple[Verdict, Workload]:
    target = fleet(n, *faults)
    w = Workload.of_pattern(Pattern(kind, target.profile.hosts, 64 << 20, flow=FLOW))
    return oracle().judge(target.run(w, 1.0), w), w


@pytest.mark.parametrize("kind", list(PatternKind))
def test_a_fault_free_fleet_has_no_straggler(kind: PatternKind) -> None:
    verdict, _ = judge(kind, 8)
    assert not any(s.kind == "straggler" for s in verdict.symptoms), verdict.symptoms
    figures = verdict.evidence["collective"]
    assert figures["busbw_gbs"] > 0 and figures["slow_links"] == [] and figures["spread"] < 0.05
    assert 0 < verdict.levels["straggler@link"] < 1
    json.dumps(verdict.to_dict(), allow_nan=False)  # the evidence is plain JSON


@pytest.mark.parametrize("kind", [PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL, PatternKind.PERMUTATION])
def test_a_host_at_half_speed_is_named_with_the_links_it_slows(kind: PatternKind) -> None:
    verdict, _ = judge(kind, 8, Fault("h5", FaultKind.PORT_SPEED, 0.5))
    stragglers = [s for s in verdict.symptoms if s.kind == "straggler"]
    assert len(stragglers) == 1, stragglers
    (s,) = stragglers
    assert (s.host, s.end) == ("h5", "host") and s.value == pytest.approx(0.5, abs=0.08)
    named = set(s.link.split(", "))
    assert named == {link for link in verdict.evidence["collective"]["slow_links"]}
    assert all("h5" in link for link in named) and len(named) >= 2
    assert verdict.anomalous and "straggler@host" in verdict.signature.split("+")


def test_a_slow_pair_names_its_links_not_a_host() -> None:
    """Pairwise: h4 and h5 exchange with each other alone, so which of them is slow cannot be told."""
    verdict, _ = judge(PatternKind.PAIRWISE, 8, Fault("h5", FaultKind.PORT_SPEED, 0.5))
    found = sorted((s.host, s.end, s.link) for s in verdict.symptoms if s.kind == "straggler")
    assert found == [("h4", "link", "h4->h5"), ("h5", "link", "h5->h4")]


def test_two_slow_hosts_are_each_named() -> None:
    verdict, _ = judge(PatternKind.RING_ALLREDUCE, 16, Fault("h03", FaultKind.PORT_SPEED, 0.5),
                       Fault("h11", FaultKind.PCIE, 0.25))
    hosts = sorted((s.host, s.end) for s in verdict.symptoms if s.kind == "straggler")
    assert hosts == [("h03", "host"), ("h11", "host")]


def test_a_lone_slow_link_names_its_sender() -> None:
    target = fleet(8)
    w = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, target.profile.hosts, 64 << 20, flow=FLOW))
    run = target.run(w, 1.0)
    slowed = replace(run, flows=tuple(replace(f, bps=f.bps * 0.6) if f.flow == 2 else f for f in run.flows))
    verdict = oracle().judge(slowed, w)
    (s,) = [s for s in verdict.symptoms if s.kind == "straggler"]
    assert (s.host, s.end, s.link) == ("h2", "link", "h2->h3") and s.value == pytest.approx(0.6, abs=0.05)
    assert s.to_dict()["link"] == "h2->h3"


def test_a_two_host_workload_has_no_collective_evidence() -> None:
    target = fleet(8)
    w = Workload(flows=(FLOW,))
    verdict = oracle().judge(target.run(w, 1.0), w)
    assert "collective" not in verdict.evidence and "straggler@link" not in verdict.levels
    assert all("link" not in s.to_dict() for s in verdict.symptoms)


@pytest.mark.parametrize("ranks_per_host", [1, 2, 4])
@pytest.mark.parametrize("kind", list(PatternKind))
def test_a_fault_free_fleet_is_clean_for_every_pattern(kind: PatternKind, ranks_per_host: int) -> None:
    """No straggler, and no receiver low: an outcast's receivers share their root's port, which is at its ceiling
    (the senders' bound), and links of hosts with different loads (a permutation of several ranks per host) or of
    another kind (loopback) are not compared."""
    flow = replace(FLOW, opcodes=("WRITE_IMM",)) if kind is PatternKind.KV_SCATTER else FLOW  # WRITE_IMM only
    target = fleet(6)
    w = Workload.of_pattern(Pattern(kind, target.profile.hosts, 64 << 20, ranks_per_host, flow=flow))
    verdict = oracle().judge(target.run(w, 1.0), w)
    assert not verdict.anomalous, (verdict.signature, verdict.symptoms)


def test_an_outcast_from_a_slow_root_leaves_its_receivers_low() -> None:
    """The senders' bound explains a receiver's shortfall only when its sender is at its own ceiling."""
    verdict, _ = judge(PatternKind.OUTCAST, 4, Fault("h0", FaultKind.PORT_SPEED, 0.5))
    low = sorted(s.host for s in verdict.symptoms if s.kind == "low_throughput")
    assert low == ["h1", "h2", "h3"], verdict.symptoms
