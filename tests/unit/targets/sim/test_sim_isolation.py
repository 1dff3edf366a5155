"""An aggressor and its victim in the base model: flows share each resource of a host max-min (it serves them
round-robin), wait behind each other's packets at a busy shared resource, and share the caches that churn loads;
no quirk."""

from __future__ import annotations

from dataclasses import replace

from simhelpers import flow

from collie.model.workload import Workload
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget

D = 10.0
LATENCY = flow(opcodes=("SEND",), sizes=(64,), sq_depth=1, rq_depth=1, mr_size=4096, victim="latency")
BANDWIDTH = flow(sizes=(65536,), victim="bandwidth")


def _run(*flows: object) -> RunResult:
    return SimTarget("cx6-200g", seed=3).run(Workload(tuple(flows)), D)  # type: ignore[arg-type]


def test_a_bandwidth_victim_beside_a_bandwidth_aggressor_gets_about_half() -> None:
    alone = _run(replace(BANDWIDTH, victim=""))
    shared = _run(flow(sizes=(65536,), qps=8), BANDWIDTH)
    assert 0.4 < shared.flows[1].bps / alone.flows[0].bps < 0.6
    assert 0.8 < shared.flows[0].bps / shared.flows[1].bps < 1.25
    assert shared.truth == ()


def test_a_victim_waits_a_packet_of_a_busy_aggressor_and_nothing_beside_an_idle_one() -> None:
    alone = _run(replace(LATENCY, victim=""))
    busy = _run(flow(sizes=(65536,), qps=64), LATENCY)
    # one 4 KiB packet at 200 Gb/s is about 0.17 us
    assert 0.1 < busy.flows[1].lat_p99_us - alone.flows[0].lat_p99_us < 0.5
    assert busy.flows[1].lat_p99_us > busy.flows[1].lat_p50_us
    # an aggressor the other way shares no resource with the victim
    apart = _run(flow("b", "a", sizes=(65536,), qps=64), LATENCY)
    assert abs(apart.flows[1].lat_p99_us - alone.flows[0].lat_p99_us) < 0.05 * alone.flows[0].lat_p99_us


def test_an_aggressors_mr_churn_slows_a_small_message_victim_and_not_itself() -> None:
    """Churned MR translations evict the data path's from the NIC's cache: every packet of the host pays the
    misses, which binds a victim at the packet rate while a wire-bound aggressor keeps its share (Husky's MR
    churn attack; the example workloads/examples/aggressor-victim.toml)."""
    calm = flow(sizes=(65536,), mrs=256, mr_size=16 << 20)
    churned = replace(calm, mr_churn=10_000)
    victim = replace(LATENCY, qps=64)  # at the packet rate: one QP alone is held by its own WR rate
    before, after = _run(calm, victim), _run(churned, victim)
    assert after.flows[1].msg_rate < 0.5 * before.flows[1].msg_rate
    assert after.flows[0].bps > 0.95 * before.flows[0].bps
    assert after.truth == ("base:churn",) and before.truth == ()


def test_a_flow_that_asks_less_than_an_equal_share_of_a_link_gets_all_it_asks() -> None:
    """A link serves its flows round-robin, so it shares max-min: a flow held below half the link by its own READ
    window (512 B READs on one QP) keeps its rate beside a WRITE aggressor, which takes the rest; cut in
    proportion to what each asked, it kept about 0.8 of it."""
    windowed = flow("b", "a", opcodes=("READ",), sizes=(512,))
    alone = _run(windowed).flows[0]
    shared = _run(windowed, flow(sizes=(65536,), qps=8))
    assert shared.flows[0].bps > 0.97 * alone.bps
    line = SimTarget("cx6-200g").describe().line_rate_bps
    assert shared.flows[0].bps + shared.flows[1].bps > 0.85 * line


def test_a_flow_that_uses_a_saturated_resource_lightly_is_not_held_by_it() -> None:
    """Two WRITE flows a -> b over-subscribe a's wire and PCIe reads; a flow b -> a mixing atomics into its WRITEs
    reads 8 B of a's memory per atomic there. Its share of those resources is all it asks, so it keeps its line
    rate: it was cut to about half when every flow of an over-subscribed resource was cut in proportion."""
    back = flow("b", "a", opcodes=("ATOMIC_FA", "WRITE"), sizes=(65536,))
    alone = _run(back).flows[0]
    shared = _run(flow(sizes=(65536,), qps=8), back, BANDWIDTH)
    assert shared.flows[1].bps > 0.95 * alone.bps
    assert 0.8 < shared.flows[0].bps / shared.flows[2].bps < 1.25
    assert shared.truth == ()
