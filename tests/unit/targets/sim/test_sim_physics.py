"""Base-model physics of the whole workload space: opcode patterns move payload both ways with rates tied by the
cycle, a QP's own WR rate, the READ/atomic window per QP, the per-NIC atomic rate, partial cache-line writes and
tail packets, the receive side (refill, RNR NAKs, drops), max_inline, and the ``base:*`` labels of the ground truth."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from simhelpers import one, random_workload, reference_key

from collie.model.workload import Workload
from collie.targets.base import RunResult, Unsupported
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import PROFILE_DIR, parse_profile

D = 10.0


def _run(w: Workload, profile: str = "cx6-200g") -> RunResult:
    return SimTarget(profile).run(w, D)


def _free_qps() -> SimTarget:
    """cx6-200g without its per-QP costs: a QP alone reaches the NIC's rates, so its window and the atomic rate are
    what bind it."""
    nic = load_profile("cx6-200g").nic
    text = (PROFILE_DIR / "cx6-200g.toml").read_text().replace(f"qp_wr_ns = {nic.qp_wr_ns:g}\n", "").replace(
        f"doorbell_ns = {nic.doorbell_ns:g}\n", "")
    return SimTarget(parse_profile(text, "free.toml"))


def test_a_qp_posts_and_runs_its_work_requests_one_after_another() -> None:
    """One QP's requests/s: ``1 / (qp_wr_ns + doorbell_ns / batch)`` (a doorbell per post list), after the mild
    efficiency factors; many QPs together reach the NIC's packet rate instead, and only then."""
    nic = load_profile("cx6-200g").nic
    for batch in (1, 4, 32):
        bound = 1e9 / (nic.qp_wr_ns + nic.doorbell_ns / batch)
        r = _run(one(qps=1, batch=batch, sizes=(64,)))
        assert 0.9 * bound < r.flows[0].msg_rate <= bound and r.truth == ("base:qp_rate",), batch
    two = _run(one(qps=2, sizes=(64,))).flows[0].msg_rate
    assert two == pytest.approx(2 * _run(one(qps=1, sizes=(64,))).flows[0].msg_rate, rel=0.03)
    many = _run(one(qps=64, batch=32, sizes=(64,)))
    assert many.flows[0].msg_rate > 0.9 * nic.msg_rate_mpps * 1e6 and many.truth == ()
    # READs on one QP: the QP's own rate binds before the window does (as published single-QP sweeps show)
    assert _run(one(qps=1, sizes=(64,), opcodes=("READ",))).truth == ("base:qp_rate",)
    # without per-QP costs, one QP reaches the packet rate
    assert _free_qps().run(one(qps=1, batch=32, sizes=(64,)), D).flows[0].msg_rate > 0.9 * nic.msg_rate_mpps * 1e6


def _narrow_pcie() -> SimTarget:
    """cx6-200g behind PCIe Gen3 x4 (~30 Gb/s): the receiver's PCIe write direction is what binds."""
    text = (PROFILE_DIR / "cx6-200g.toml").read_text().replace("gen = 4\nwidth = 16", "gen = 3\nwidth = 4")
    return SimTarget(parse_profile(text, "narrow.toml").without_quirks())


def test_a_read_write_pattern_moves_payload_both_ways() -> None:
    r = _run(one(qps=8, batch=16, sizes=(65536,), opcodes=("READ", "WRITE")))
    a, b = r.host("a"), r.host("b")
    # WRITE data a -> b and READ data b -> a, each near line rate
    assert a.tx_bps > 0.9 * 200e9 * 0.98 and b.tx_bps > 0.9 * 200e9 * 0.98
    assert b.counters["rx_write_requests"] == pytest.approx(b.counters["rx_read_requests"], rel=1e-6)
    assert r.flows[0].bps == pytest.approx(a.tx_bps + b.tx_bps, rel=1e-6)


def test_the_read_window_bounds_reads_and_atomics_per_qp() -> None:
    nic = load_profile("cx6-200g").nic
    free = _free_qps()
    one_qp = free.run(one(qps=1, batch=16, sizes=(64,), opcodes=("READ",)), D)
    many = free.run(one(qps=64, batch=16, sizes=(64,), opcodes=("READ",)), D)
    window = nic.max_rd_atomic / ((nic.base_latency_us + 64 * 8 / 200e3) * 1e-6)
    assert 0.9 * window < one_qp.flows[0].msg_rate <= window
    assert many.flows[0].msg_rate > 0.9 * 110e6 * 0.9
    assert one_qp.truth == ("base:read_window",) and many.truth == ()


def test_the_cycle_ties_writes_to_window_limited_reads() -> None:
    free = _free_qps()

    def rate(qps: int, ops: tuple[str, ...]) -> float:
        return free.run(one(qps=qps, batch=16, sizes=(64,), opcodes=ops), D).flows[0].msg_rate

    read1, write1, mix1 = rate(1, ("READ",)), rate(1, ("WRITE",)), rate(1, ("READ", "WRITE"))
    # one READ per WRITE: the whole cycle runs at the READs' window
    assert mix1 == pytest.approx(2 * read1, rel=0.05) and mix1 < 0.3 * write1
    # 64 QPs: the window is no longer the limit; READ responses and WRITEs use opposite directions
    mix64, write64 = rate(64, ("READ", "WRITE")), rate(64, ("WRITE",))
    assert mix64 > 1.8 * write64


def test_atomics_have_a_per_nic_rate_and_results_come_back() -> None:
    p = load_profile("cx6-200g")
    r = _run(one(qps=64, batch=16, sizes=(8,), opcodes=("ATOMIC_FA",)))
    rate = r.flows[0].msg_rate
    assert 0.9 * p.nic.atomic_mops * 1e6 * 0.95 < rate <= p.nic.atomic_mops * 1e6
    assert r.truth == ("base:atomic_rate",)
    assert r.host("a").rx_bps == pytest.approx(rate * 8 * 8, rel=1e-6)  # 8 B of result per atomic
    assert r.host("b").counters["rx_atomic_requests"] == pytest.approx(rate * D, rel=1e-6)
    # one QP without per-QP costs: the window binds first, and only the limit that binds is labelled
    assert _free_qps().run(one(qps=1, batch=16, sizes=(8,), opcodes=("ATOMIC_CS",)), D).truth == ("base:read_window",)


def test_a_partial_cache_line_costs_the_receivers_pcie_write_direction() -> None:
    t = _narrow_pcie()
    whole = t.run(one(qps=16, batch=16, sizes=(64,)), D)
    partial = t.run(one(qps=16, batch=16, sizes=(65,)), D)
    assert partial.flows[0].msg_rate < 0.6 * whole.flows[0].msg_rate
    assert partial.truth == ("base:partial_line",) and whole.truth == ()
    # READ data lands at the client: the partial line costs the client's write direction just the same
    read = t.run(one(qps=64, batch=16, sizes=(65,), opcodes=("READ",)), D)
    assert read.truth == ("base:partial_line",)


def test_one_byte_over_the_mtu_costs_a_whole_packet() -> None:
    exact = _run(one(qps=16, batch=16, sizes=(1024,), mtu=1024), "rxe").flows[0]
    over = _run(one(qps=16, batch=16, sizes=(1025,), mtu=1024), "rxe").flows[0]
    assert exact.pps == pytest.approx(exact.msg_rate) and over.pps == pytest.approx(2 * over.msg_rate)
    # packet-rate bound (rxe): the 1-byte tail packet halves the messages per second
    assert over.msg_rate == pytest.approx(exact.msg_rate / 2, rel=0.05)


def _sender(qps: int = 4, **kw: object) -> Workload:
    return one(qps=qps, batch=16, sizes=(4096,), opcodes=("SEND",), **kw)


def test_a_paced_receiver_limits_the_flow_and_the_requester_gets_rnr_naks() -> None:
    p = load_profile("cx6-200g")
    fast = _run(_sender())
    paced = _run(_sender(recv_batch=16, recv_delay_us=100))
    refill = 4 * 16 / ((100 + p.model.recv_poll_us) * 1e-6)
    assert 0.9 * refill < paced.flows[0].msg_rate <= refill < 0.2 * fast.flows[0].msg_rate
    assert paced.truth == ("base:rnr",) and fast.truth == ()
    naks = paced.host("a").counters["rnr_nak_retry_err"]
    assert 0 < naks <= 4 / (p.model.rnr_timer_us * 1e-6) * D
    assert paced.host("b").counters["out_of_buffer"] == naks
    for h in fast.hosts:
        assert h.counters["rnr_nak_retry_err"] == h.counters["out_of_buffer"] == 0
    # a receiver that keeps up (a batch of 512 per 100 µs on each QP) sends no NAK
    assert _run(_sender(recv_batch=512, rq_depth=512, recv_delay_us=100)).host("a").counters[
        "rnr_nak_retry_err"] == 0


def test_rxe_counts_rnr_naks_on_both_ends() -> None:
    r = _run(_sender(qps=1, recv_delay_us=1000), "rxe")
    assert r.host("b").counters["send_rnr_err"] == r.host("a").counters["rcvd_rnr_err"] > 0
    assert r.truth == ("base:rnr",)


def test_a_starved_ud_receiver_drops_instead_of_naking() -> None:
    w = one(transport="UD", qps=4, batch=16, sizes=(1024,), mtu=1024, opcodes=("SEND",), recv_delay_us=100)
    r = _run(w, "p2100g-100g")
    assert r.host("b").counters["out_of_buffer"] > 0
    assert r.host("a").counters["rnr_nak_retry_err"] == 0


def test_the_receive_wqe_working_set_is_the_receive_queue() -> None:
    t = SimTarget(load_profile("cx6-200g").without_quirks())
    deep = t.run(_sender(qps=64, sq_depth=4096, rq_depth=4096), D).host("b").counters["sim_rx_wqe_cache_miss"]
    shallow = t.run(_sender(qps=64, sq_depth=4096, rq_depth=16), D).host("b").counters["sim_rx_wqe_cache_miss"]
    assert shallow < 0.2 * deep


@pytest.mark.parametrize(("profile", "inline"), [("p2100g-100g", 128), ("rxe", 1024), ("cx6-200g", 1000)])
def test_inline_beyond_the_device_is_unsupported(profile: str, inline: int) -> None:
    with pytest.raises(Unsupported, match="max_inline"):
        _run(one(inline=inline, sizes=(64,)), profile)
    _run(one(inline=load_profile(profile).nic.max_inline, sizes=(64,)), profile)


def test_the_fast_key_agrees_on_patterns_and_the_receive_side() -> None:
    rng = random.Random(4)
    n = 0
    while n < 50:
        w = random_workload(rng)
        if w is None:
            continue
        f = w.flows[0]
        mixed = replace(f, opcodes=("WRITE_IMM", "SEND")[: rng.randint(1, 2)], recv_batch=2,
                        recv_delay_us=rng.choice((0, 5)))
        w = w.with_flows((mixed, *w.flows[1:]))
        assert w.key() == reference_key(w)
        n += 1
