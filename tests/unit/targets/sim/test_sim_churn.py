"""Control-path churn in the base model: MR register/deregister and QP create/destroy beside the data path load
the NIC's translation and QP-context caches and its firmware command path, slow the data path once its working
set and the churned entries exceed the cache (``base:churn``), and report their own latencies."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from simhelpers import one, random_workload, reference_key

from collie.model.workload import Workload
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.churn import host_churn
from collie.targets.sim.profile import PROFILE_DIR, parse_profile

D = 10.0


def _run(w: Workload, profile: str = "cx6-200g") -> RunResult:
    return SimTarget(profile).run(w, D)


def _many_mrs(mr_churn: int) -> Workload:
    """64 B WRITEs over 4096 MRs a side: half the MPT cache of cx6-200g, at the message-rate limit."""
    return one(qps=16, batch=16, sizes=(64,), mrs=4096, mr_churn=mr_churn)


def test_mr_churn_raises_translation_misses_and_slows_a_data_path_of_many_mrs() -> None:
    calm, churned = _run(_many_mrs(0)), _run(_many_mrs(10_000))
    assert churned.flows[0].msg_rate < 0.8 * calm.flows[0].msg_rate
    for h in ("a", "b"):
        assert churned.host(h).counters["sim_mtt_cache_miss"] > 1.05 * calm.host(h).counters["sim_mtt_cache_miss"]
    assert churned.truth == ("base:churn",) and calm.truth == ()


def test_small_churn_changes_nothing_measurable() -> None:
    calm, churned = _run(_many_mrs(0)), _run(_many_mrs(100))
    assert churned.flows[0].msg_rate == pytest.approx(calm.flows[0].msg_rate, rel=0.03)
    assert churned.host("b").counters["sim_mtt_cache_miss"] == pytest.approx(
        calm.host("b").counters["sim_mtt_cache_miss"], rel=0.03)
    assert churned.truth == ()


def test_mr_churn_leaves_a_bandwidth_bound_flow_of_few_mrs_alone() -> None:
    calm = _run(one(qps=8, batch=16, sizes=(65536,)))
    churned = _run(one(qps=8, batch=16, sizes=(65536,), mr_churn=10_000, qp_churn=1000))
    assert churned.flows[0].bps == pytest.approx(calm.flows[0].bps, rel=0.03)
    assert churned.truth == ()


def _small_qpc() -> SimTarget:
    text = (PROFILE_DIR / "cx6-200g.toml").read_text().replace("qpc_entries = 512", "qpc_entries = 256")
    return SimTarget(parse_profile(text, "small-qpc.toml").without_quirks())


def test_qp_churn_slows_many_qp_traffic_on_a_small_qp_context_cache() -> None:
    target = _small_qpc()
    w = one(qps=128, batch=16, sizes=(64,))
    calm, churned = target.run(w, D), target.run(w.with_flows((replace(w.flows[0], qp_churn=1000),)), D)
    assert churned.flows[0].msg_rate < 0.8 * calm.flows[0].msg_rate
    assert churned.host("b").counters["sim_qpc_cache_miss"] > 1.2 * calm.host("b").counters["sim_qpc_cache_miss"]
    assert churned.truth == ("base:churn",)


def test_churn_latencies_rise_with_the_rate() -> None:
    mr = [_run(one(qps=8, batch=16, mr_churn=r)).flows[0].mr_churn_us for r in (100, 10_000, 30_000)]
    qp = [_run(one(qps=8, batch=16, qp_churn=r)).flows[0].qp_churn_us for r in (100, 3000, 9000)]
    assert mr[0] < mr[1] < mr[2] and qp[0] < qp[1] < qp[2]
    m = load_profile("cx6-200g").model
    # an idle command path: registration + pinning + the deregistration's command, tens of microseconds
    idle = m.setup_mr_us + m.fw_cmd_us + 65536 * 8 / (m.setup_pin_gbps * 1e3)
    assert idle < mr[0] < 1.5 * idle
    calm = _run(one(qps=8, batch=16)).flows[0]
    assert calm.mr_churn_us == 0.0 and calm.qp_churn_us == 0.0


def test_a_flow_reports_the_churn_its_hosts_achieved_and_its_p99() -> None:
    p = load_profile("cx6-200g")
    capacity = 1e6 / p.model.fw_cmd_us  # firmware commands per second
    below, beyond = (int(0.4 * capacity / 2), int(2 * capacity / 2))
    for rate in (below, beyond):
        f = _run(one(qps=8, batch=16, mr_churn=rate)).flows[0]
        done = host_churn(p, one(mr_churn=rate))["a"].done
        assert f.mr_churn_per_s == pytest.approx(rate * done) and f.mr_churn_p99_us > f.mr_churn_us > 0
        assert f.qp_churn_per_s == f.qp_churn_p99_us == 0.0
    assert _run(one(qps=8, batch=16, mr_churn=beyond)).flows[0].mr_churn_per_s == pytest.approx(beyond / 2)
    q = _run(one(qps=8, batch=16, qp_churn=1000)).flows[0]
    assert q.qp_churn_per_s == 1000 and q.qp_churn_p99_us > q.qp_churn_us > 0 and q.mr_churn_per_s == 0.0


def test_the_firmware_command_path_saturates() -> None:
    p = load_profile("cx6-200g")
    capacity = 1e6 / p.model.fw_cmd_us  # commands per second
    below = host_churn(p, one(mr_churn=int(0.4 * capacity / 2)))["a"]
    beyond = host_churn(p, one(mr_churn=int(2 * capacity / 2)))["a"]
    assert below.done == 1.0 and below.fw_load == pytest.approx(0.4, rel=1e-3)
    assert beyond.done == pytest.approx(0.5, rel=1e-3) and beyond.wait_us > 10 * below.wait_us
    # what the firmware cannot execute does not reach the caches
    assert beyond.xlate == pytest.approx(below.xlate * (2 / 0.4) * 0.5, rel=1e-3)
    assert host_churn(p, one()) == {}


def test_the_fast_key_agrees_on_churn_fields() -> None:
    rng = random.Random(6)
    n = 0
    while n < 50:
        w = random_workload(rng)
        if w is None:
            continue
        f = replace(w.flows[0], mr_churn=rng.choice((0, 100, 10_000)), qp_churn=rng.choice((0, 1000)))
        w = w.with_flows((f, *w.flows[1:]))
        assert w.key() == reference_key(w)
        n += 1
