"""The oracle's ``isolation`` symptom: a victim against its solo baseline and its fair share of the receiver."""

from __future__ import annotations

from collie.collectors.catalog import load_catalog
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.oracle import Ceilings, Oracle, Thresholds
from collie.targets.base import FlowResult, HostResult, RunResult

CEIL = Ceilings({"oneway": 100e9, "bidirectional": 100e9, "loopback": 80e9},
                {"oneway": 50e6, "bidirectional": 50e6, "loopback": 40e6}, 100e9)
AGGRESSOR = Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), qps=8)
BANDWIDTH = Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), victim="bandwidth")
LATENCY = Flow(Endpoint("a"), Endpoint("b"), opcodes=("SEND",), sizes=(64,), sq_depth=1, rq_depth=1, mr_size=4096,
               victim="latency")


def result(w: Workload, *flows: tuple[float, float, float]) -> RunResult:
    """A run of ``w``: per flow (bits/s, packets/s, p99 us)."""
    frs = tuple(FlowResult(i, "a", "b", bps, pps, pps, p99 / 2, p99, p99 * 2)
                for i, (bps, pps, p99) in enumerate(flows))
    total = sum(f.bps for f in frs)
    return RunResult(workload_key=w.key(), target="t", duration_s=2.0, setup_s=0.1, flows=frs,
                     hosts=(HostResult("a", total, 0, 1e6, 0, {}), HostResult("b", 0, total, 0, 1e6, {})))


def oracle(solo: Workload, *flows: tuple[float, float, float]) -> Oracle:
    o = Oracle(load_catalog("mlx5"), CEIL, Thresholds())
    o.solos[solo.key()] = result(solo, *flows)
    return o


def test_a_bandwidth_victim_at_half_the_link_beside_a_bandwidth_aggressor_got_its_fair_share() -> None:
    w = Workload((AGGRESSOR, BANDWIDTH))
    o = oracle(w.solo(), (96e9, 1.5e6, 100.0))
    fair = o.judge(result(w, (48e9, 0.75e6, 200.0), (47e9, 0.73e6, 205.0)), w)
    assert not fair.anomalous
    readings = fair.evidence["isolation"]["bandwidth"]
    assert readings["tenants"] == 2 and 45e9 < readings["fair_bps"] < 50e9
    # its p99 doubled with its rate halved: Little's law, not a longer wait
    assert 0.9 < readings["slowdown_p99"] < 1.1 and 0.95 < readings["slowdown_bps"] < 1.1
    starved = o.judge(result(w, (80e9, 1.2e6, 200.0), (15e9, 0.23e6, 600.0)), w)
    assert starved.signature == "isolation@victim"
    s = starved.symptoms[0]
    assert (s.host, s.end, s.threshold) == ("b", "victim", 1.5) and 3.0 < s.value < 3.3


def test_a_latency_victim_is_judged_by_its_tail_against_its_solo() -> None:
    w = Workload((AGGRESSOR, LATENCY))
    o = oracle(w.solo(), (0.2e9, 0.4e6, 4.0))
    assert not o.judge(result(w, (95e9, 1.5e6, 90.0), (0.2e9, 0.4e6, 9.0)), w).anomalous  # 2.25 x: under 3
    slow = o.judge(result(w, (95e9, 1.5e6, 90.0), (0.2e9, 0.4e6, 40.0)), w)
    assert slow.signature == "isolation@victim" and slow.symptoms[0].value == 10.0
    assert slow.symptoms[0].threshold == 3.0 and slow.levels["isolation@victim"] > 3.0


def test_no_solo_baseline_no_isolation_verdict() -> None:
    w = Workload((AGGRESSOR, LATENCY))
    o = Oracle(load_catalog("mlx5"), CEIL, Thresholds())
    v = o.judge(result(w, (95e9, 1.5e6, 90.0), (0.01e9, 0.02e6, 400.0)), w)
    assert not v.anomalous and "no solo baseline" in v.evidence["isolation"]["note"]


def test_flows_of_different_sizes_share_the_receivers_ceiling_in_proportion() -> None:
    """A 64 B victim beside a 64 KiB aggressor: each flow's bits/s against the ceiling of its own sizes; pooling
    their sizes into one ceiling would call a saturated receiver low."""
    w = Workload((AGGRESSOR, LATENCY))
    o = oracle(w.solo(), (20e9, 40e6, 4.0))
    # 60 % of the link for the aggressor, 40 % of the 64 B ceiling (~43.8 Gb/s of payload) for the victim
    v = o.judge(result(w, (57e9, 0.9e6, 90.0), (17.5e9, 34e6, 6.0)), w)
    assert "low_throughput@receiver" not in v.signature.split("+")
    assert 0.95 < v.evidence["throughput"]["b"]["fraction"] < 1.05


def test_a_flow_mixing_read_with_writes_is_a_tenant_of_both_hosts_its_payload_enters() -> None:
    """Aggressors a -> b and b -> a each mixing READ with WRITE: the first's WRITEs and the second's READ responses
    both land on b, where the victim's payload lands too, so the victim's fair share there is a third."""
    mixed = Flow(Endpoint("a"), Endpoint("b"), opcodes=("READ", "WRITE"), sizes=(65536,), qps=8)
    back = Flow(Endpoint("b"), Endpoint("a"), opcodes=("READ", "WRITE"), sizes=(65536,), qps=8)
    w = Workload((mixed, back, BANDWIDTH))
    o = oracle(w.solo(), (96e9, 1.5e6, 100.0))
    verdict = o.judge(result(w, (64e9, 1e6, 200.0), (64e9, 1e6, 200.0), (31e9, 0.47e6, 300.0)), w)
    readings = verdict.evidence["isolation"]["bandwidth"]
    assert readings["tenants"] == 3 and readings["slowdown_bps"] < 1.1
    assert "isolation" not in verdict.signature
