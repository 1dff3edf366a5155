"""An aggressor and its victim in the base model: flows share a host's resources by their demand, wait behind each
other's packets at a busy shared resource, and share the caches that churn loads; no quirk."""

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
    before, after = _run(calm, LATENCY), _run(churned, LATENCY)
    assert after.flows[1].msg_rate < 0.5 * before.flows[1].msg_rate
    assert after.flows[0].bps > 0.95 * before.flows[0].bps
    assert after.truth == ("base:churn",) and before.truth == ()
