"""The base model: ceilings per direction and loopback, header overhead, message-rate limit, setup time,
device limits, counters consistent with rates on both hosts under real driver names."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from simhelpers import bi, fired, one, random_workload, reference_key

from collie.collectors.catalog import load_catalogs
from collie.model.flow import Endpoint
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import PROFILE_DIR, parse_profile

D = 10.0


def _run(w: Workload, profile: str = "ideal", seed: int = 0) -> object:
    return SimTarget(profile, seed=seed).run(w, D)


def test_large_messages_are_line_rate_bound_and_mtu_costs_headers() -> None:
    r4 = SimTarget("ideal").run(one(qps=8, batch=16, sizes=(65536,), mtu=4096), D).flows[0]
    r1 = SimTarget("ideal").run(one(qps=8, batch=16, sizes=(65536,), mtu=1024), D).flows[0]
    r256 = SimTarget("ideal").run(one(qps=8, batch=16, sizes=(65536,), mtu=256), D).flows[0]
    assert r4.bps > r1.bps > r256.bps
    # payload share of the wire: 4096/(4096+82) vs 256/(256+82)
    assert r256.bps / r4.bps == pytest.approx((256 / 338) / (4096 / 4178), rel=0.06)
    assert r1.pps == pytest.approx(r1.bps / 8 / 1024, rel=0.01)


def test_small_messages_are_message_rate_bound() -> None:
    t = SimTarget("cx6-200g")
    small = t.run(one(qps=64, batch=32, sizes=(64,)), D).flows[0]
    assert small.pps <= 110e6 and small.pps > 0.9 * 110e6
    assert small.bps < 0.5 * 200e9
    # batching amortises the doorbell: on QPs enough to reach the packet rate unbatched (each QP's own rate is
    # lower then), unbatched is a little slower, never more than ~10 %
    unbatched = t.run(one(qps=64, batch=1, sizes=(64,)), D).flows[0]
    assert 0.9 * small.pps < unbatched.pps < small.pps


def test_each_direction_has_its_own_ceiling_and_loopback_its_own() -> None:
    t = SimTarget("ideal")
    w1 = one(qps=4, batch=16, sizes=(65536,))
    one_way = t.run(w1, D)
    both = t.run(bi(qps=4, batch=16, sizes=(65536,)), D)
    assert both.host("a").tx_bps == pytest.approx(one_way.host("a").tx_bps, rel=0.05)
    assert both.host("a").rx_bps == pytest.approx(one_way.host("a").tx_bps, rel=0.05)
    loop = w1.with_flows((replace(w1.flows[0], server=Endpoint("a")),))
    lr = t.run(loop, D)
    assert lr.hosts[0].tx_bps == lr.hosts[0].rx_bps > 0.9 * one_way.flows[0].bps
    # two flows out of one host share its line rate
    two = Workload(flows=(w1.flows[0], replace(w1.flows[0], qps=8)))
    r2 = t.run(two, D)
    assert sum(f.bps for f in r2.flows) == pytest.approx(one_way.flows[0].bps, rel=0.05)


def test_rxe_is_cpu_bound() -> None:
    r = SimTarget("rxe").run(one(qps=4, batch=16, sizes=(65536,), mtu=1024), D).flows[0]
    assert r.pps <= 0.6e6 and r.bps < 10e9
    assert r.lat_p50_us > 20


def test_setup_time_grows_with_qps_and_mrs_and_is_not_slept() -> None:
    t = SimTarget("cx6-200g")
    base = t.run(one(qps=1, mrs=1), D).setup_s
    qps = t.run(one(qps=2000, mrs=1), D).setup_s
    mrs = t.run(one(qps=1, mrs=20000), D).setup_s
    assert base < qps and base < mrs
    assert t.run(one(qps=20000, mrs=1), D).setup_s > qps > 0.1


def test_pace_sleeps_a_fraction_of_the_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("collie.targets.sim.target.time.sleep", slept.append)
    SimTarget("ideal", pace=0.01).run(one(), 30.0)
    SimTarget("ideal").run(one(), 30.0)
    assert slept == [pytest.approx(0.3)]


@pytest.mark.parametrize(("profile", "w", "why"), [
    ("cx6-200g", Workload(flows=(one().flows[0].__class__(client=Endpoint("a"), server=Endpoint("c")),)),
     "host 'c'"),
    ("p2100g-100g", one(smem="gpu"), "no GPU"),
    ("rxe", one(cmem="remote"), "one socket"),
    ("p2100g-100g", one(qps=70000), "max_qp"),
    ("p2100g-100g", one(sges=8, sizes=(4096,)), "max_sge"),
    ("rxe", one(mrs=300000, mr_size=4096, sizes=(4096,)), "max_mr"),
    ("rxe", one(wq=20000), "max_qp_wr"),
])
def test_unsupported(profile: str, w: Workload, why: str) -> None:
    with pytest.raises(Unsupported, match=why):
        SimTarget(profile).run(w, D)


def test_bad_duration_and_pace() -> None:
    from collie.errors import InputError

    with pytest.raises(ValueError):
        SimTarget("ideal").run(one(), 0)
    with pytest.raises(InputError):
        SimTarget("ideal", pace=-1)


@pytest.mark.parametrize(("profile", "dialect"), [("cx6-200g", "mlx5"), ("p2100g-100g", "bnxt_re"),
                                                  ("rxe", "rxe")])
def test_counters_are_real_names_on_both_hosts(profile: str, dialect: str) -> None:
    catalog = load_catalogs(dialect, "sim")
    r = SimTarget(profile).run(one(qps=4, batch=8, sizes=(65536,)), D)
    assert [h.host for h in r.hosts] == ["a", "b"]
    for h in r.hosts:
        assert h.counters
        for name in h.counters:
            assert catalog.lookup(name) is not None, name
        for d in ("sim_rx_wqe_cache_miss", "sim_qpc_cache_miss", "sim_mtt_cache_miss",
                  "sim_pcie_backpressure", "sim_pkt_pipeline_stall"):
            assert catalog.lookup(d).diagnostic  # type: ignore[union-attr]
            assert d in h.counters


def test_mlx5_counters_agree_with_rates_and_pause_sits_at_the_receiver() -> None:
    w = one(transport="UD", opcodes=("SEND",), qps=1, wq=256, mtu=2048, batch=64, sizes=(2048,))  # anomaly #1
    r = SimTarget("cx6-200g").run(w, D)
    assert fired(r.truth) == {"f01-ud-rx-wqe"}
    a, b = r.host("a").counters, r.host("b").counters
    assert a["tx_vport_rdma_unicast_bytes"] == b["rx_vport_rdma_unicast_bytes"]
    assert a["tx_vport_rdma_unicast_packets"] == pytest.approx(r.flows[0].pps * D, rel=1e-6)
    assert a["port_xmit_data"] == pytest.approx(a["tx_vport_rdma_unicast_bytes"] / 4, abs=1)
    # b's RX cannot keep up: b asks a to pause, a is paused
    assert b["tx_prio3_pause_duration"] > 0.1 * D * 1e6
    assert a["rx_prio3_pause_duration"] == b["tx_prio3_pause_duration"]
    assert b["tx_prio3_pause"] > 0 and a["rx_prio3_pause_transition"] > 0
    assert a["tx_prio3_pause_duration"] == 0


def test_bnxt_pause_names() -> None:
    w = one(transport="UD", opcodes=("SEND",), qps=32, wq=64, mtu=2048, sizes=(1024,))  # anomaly #15
    r = SimTarget("p2100g-100g").run(w, D)
    assert r.truth == ("h15-ud-many-qp",)
    assert r.host("b").counters["pfc_pri3_tx_duration_us"] > 0.05 * D * 1e6
    assert r.host("a").counters["pfc_pri3_rx_duration_us"] > 0.05 * D * 1e6


def test_setup_pause_is_far_below_the_threshold() -> None:
    rng = random.Random(9)
    for duration in (0.5, 10.0, 60.0):
        for _ in range(50):
            w = random_workload(rng)
            if w is None:
                continue
            r = SimTarget("ideal", seed=rng.randrange(100)).run(w, duration)
            for h in r.hosts:
                for k in ("tx_prio3_pause_duration", "rx_prio3_pause_duration"):
                    assert h.counters[k] <= 1e-4 * duration * 1e6 + 1


def test_loss_symptom_moves_loss_counters_on_both_ends() -> None:
    text = (PROFILE_DIR / "ideal.toml").read_text() + '''
[[quirk]]
id = "lossy-big-batch"
when = ["batch >= 64"]
symptom = { loss = 0.01 }
diagnostics = ["sim_pkt_pipeline_stall"]
'''
    t = SimTarget(parse_profile(text, "lossy.toml"))
    clean = t.run(one(batch=8, qps=4), D)
    lossy = t.run(one(batch=64, wq=128, qps=4), D)
    assert lossy.truth == ("lossy-big-batch",) and clean.truth == ()
    assert lossy.host("b").counters["out_of_sequence"] > 0 and lossy.host("a").counters["packet_seq_err"] > 0
    assert clean.host("b").counters["out_of_sequence"] == 0
    assert lossy.flows[0].bps < clean.flows[0].bps


def test_key_is_the_documented_hash() -> None:
    rng = random.Random(2)
    n = 0
    while n < 200:
        w = random_workload(rng)
        if w is not None:
            assert w.key() == reference_key(w)
            n += 1


def test_without_quirks_is_the_base_model() -> None:
    p = load_profile("cx6-200g")
    w = one(transport="UD", opcodes=("SEND",), qps=1, wq=256, mtu=2048, batch=64, sizes=(2048,))
    quirky = SimTarget(p).run(w, D)
    base = SimTarget(p.without_quirks()).run(w, D)
    assert fired(quirky.truth) and not fired(base.truth)
    assert base.flows[0].bps > 2 * quirky.flows[0].bps
