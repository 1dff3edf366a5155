"""Priorities in the simulator: a flow's traffic class maps to a priority (DSCP / 8), PFC protects the fabric's
lossless priorities only (another priority's congested queue drops, and RC resends), a pause holds only the flows
of its own priority (no head-of-line blocking across priorities), and the per-priority counters count each
priority's traffic and pause apart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from collie.model.flow import Endpoint, Flow
from collie.model.rocev2 import priority
from collie.model.workload import Workload
from collie.storage.corpus import load_corpus
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.model import HOST_TCLASS
from collie.targets.sim.totals import SimTotals

FABRIC = load_profile("fleet8-cx6-fabric")  # PFC on priority 3 only
ROOT = Path(__file__).resolve().parents[4]
PAUSE_CASE = "f03-read-mtu1k"  # a pause storm on sim:cx6-200g (Collie #3)


def run(*flows: Flow, profile_name: str = "fleet8-cx6-fabric") -> RunResult:
    return SimTarget(load_profile(profile_name), seed=4).run(Workload(flows=flows), 1.0)


def flow(a: str, b: str, tclass: int | None = None) -> Flow:
    return Flow(Endpoint(a), Endpoint(b), tclass=tclass)


def gbps(result: RunResult) -> dict[str, float]:
    return {f"{f.client}->{f.server}": f.bps / 1e9 for f in result.flows}


def counter(result: RunResult, host: str, name: str) -> float:
    return next(h for h in result.hosts if h.host == host).counters.get(name, 0.0)


def test_a_traffic_class_maps_to_its_dscps_priority() -> None:
    assert [priority(t) for t in (0, 26 << 2, HOST_TCLASS, 48 << 2, 255)] == [0, 3, 3, 6, 7]
    assert FABRIC.fabric is not None and FABRIC.fabric.protected == frozenset({3})


def test_an_incast_on_a_lossy_priority_drops_where_the_lossless_one_pauses() -> None:
    lossless = run(flow("h1", "h0"), flow("h2", "h0"))
    lossy = run(flow("h1", "h0", 0), flow("h2", "h0", 0))
    assert lossless.truth == ("fabric:pause:leaf0->h0",) and lossy.truth == ("fabric:drop:leaf0->h0",)
    assert counter(lossless, "h1", "rx_prio3_pause_duration") > 0.4e6  # paused about half the second
    assert counter(lossy, "h1", "rx_prio0_pause_duration") == 0 and counter(lossy, "h1", "rx_prio3_pause_duration") == 0
    assert counter(lossless, "h0", "out_of_sequence") == 0 < counter(lossy, "h0", "out_of_sequence")
    assert sum(gbps(lossy).values()) < 0.5 * sum(gbps(lossless).values())  # go-back-N resends half of it
    # the class 106 the hosts give a QP that sets none is priority 3's: the same run as without a class (within
    # the noise, which another workload draws afresh)
    same = run(flow("h1", "h0", HOST_TCLASS), flow("h2", "h0", HOST_TCLASS))
    assert same.truth == lossless.truth
    assert gbps(same) == pytest.approx(gbps(lossless), rel=0.03)


def test_a_pause_holds_the_flows_of_its_own_priority_only() -> None:
    """Three senders into h0 on priority 3; h1 also sends to h4, whose port is free. On priority 3 that flow
    waits behind the paused incast (head-of-line blocking); on priority 0 its queue is not paused, and it takes
    what h1's link has left."""
    incast = (flow("h1", "h0"), flow("h2", "h0"), flow("h3", "h0"))
    held = gbps(run(*incast, flow("h1", "h4")))
    free = gbps(run(*incast, flow("h1", "h4", 0)))
    assert held["h1->h4"] == pytest.approx(held["h1->h0"], rel=0.05)
    assert free["h1->h4"] == pytest.approx(122, rel=0.05) and free["h1->h4"] > 1.8 * held["h1->h4"]
    assert free["h1->h0"] == pytest.approx(held["h1->h0"], rel=0.05)  # the incast's share of the port is its own


def test_per_priority_counters_count_each_prioritys_traffic() -> None:
    both = run(flow("h1", "h0"), flow("h2", "h0", 0))
    rx3, rx0 = counter(both, "h0", "rx_prio3_bytes"), counter(both, "h0", "rx_prio0_bytes")
    assert rx3 > 0 and rx0 > 0
    assert rx3 + rx0 == counter(both, "h0", "rx_vport_rdma_unicast_bytes")  # all of it, split by priority
    # a congested port holds both priorities: priority 3's queue pauses h1, priority 0's drops h2's packets
    assert counter(both, "h1", "rx_prio3_pause_duration") > 0 and counter(both, "h2", "rx_prio0_pause_duration") == 0
    assert both.truth == ("fabric:pause:leaf0->h0", "fabric:drop:leaf0->h0")
    only0 = run(flow("h1", "h0", 0))
    assert counter(only0, "h0", "rx_prio3_bytes") == 0 and counter(only0, "h0", "rx_prio0_bytes") > 0
    assert "rx_prio0_bytes" not in run(flow("h1", "h0")).hosts[0].counters  # a priority without traffic: none


def test_without_a_fabric_every_priority_is_lossless_at_the_nic() -> None:
    """A quirk's pause (the NIC cannot keep up) is on the priority the traffic is on, whichever it is (within the
    noise, which another workload draws afresh)."""
    profile = load_profile("cx6-200g")
    case = next(c for c in load_corpus(ROOT / "workloads" / "corpus") if c.name == PAUSE_CASE)
    base = SimTarget(profile, seed=4).run(case.workload, 1.0)
    moved = SimTarget(profile, seed=4).run(Workload(tuple(replace(f, tclass=0) for f in case.workload.flows)), 1.0)
    assert base.truth == moved.truth and any(h.counters["rx_prio3_pause_duration"] > 0 for h in base.hosts)
    for h in base.hosts:
        got = next(m for m in moved.hosts if m.host == h.host).counters
        assert got["rx_prio0_pause_duration"] == pytest.approx(h.counters["rx_prio3_pause_duration"], rel=0.05)
        assert got["rx_prio3_pause_duration"] == 0


def test_a_sampled_sim_host_has_every_prioritys_counters_from_the_start() -> None:
    """A remote sim agent's samples (SimTotals): a counter missing from the first sample would have no delta."""
    target = SimTarget(load_profile("fleet8-cx6-fabric"), seed=4)
    totals = SimTotals.for_target(target)
    before = totals.snapshots()[0].values
    assert before["rx_prio0_bytes"] == 0 and "tx_prio7_pause_duration" in before
    totals.add(target.run(Workload((flow("h1", "h0", 0),)), 1.0))
    assert totals.snapshots()[0].values["rx_prio0_bytes"] > 0
