from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from collie.collectors.catalog import load_catalog, load_catalogs
from collie.errors import InputError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.oracle import SYMPTOM_ORDER, Ceilings, Oracle, Thresholds, starved_host
from collie.preset import load_preset
from collie.targets.base import FlowResult, HostResult, RunResult

CEIL = Ceilings({"oneway": 100e9, "bidirectional": 100e9, "loopback": 80e9},
                {"oneway": 50e6, "bidirectional": 50e6, "loopback": 40e6}, 100e9)
W = Workload((Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), mtu=4096),))


def run(bps: float, pps: float, counters_b: dict[str, float], duration: float = 2.0,
        **kw: object) -> RunResult:
    return RunResult(
        workload_key=W.key(), target="t", duration_s=duration, setup_s=0.1,
        flows=(FlowResult(0, "a", "b", bps, pps, pps / 16, 5, 9, 12),),
        hosts=(HostResult("a", bps, 0, pps, 0, {}), HostResult("b", 0, bps, 0, pps, counters_b)), **kw)  # type: ignore[arg-type]


def oracle(dialect: str = "mlx5", baseline: dict[str, float] | None = None) -> Oracle:
    return Oracle(load_catalog(dialect), CEIL, Thresholds(), baseline)


def test_clean_line_rate_run() -> None:
    v = oracle().judge(run(97e9, 3e6, {"tx_prio3_pause_duration": 1000.0}), W)  # 0.05 % paused
    assert not v.anomalous and v.signature == "" and 0.95 < v.metrics["throughput"] < 1.05


def test_pause_over_threshold_from_mlx5_and_bnxt_names() -> None:
    v = oracle().judge(run(97e9, 3e6, {"tx_prio3_pause_duration": 400_000.0}), W)  # 20 %
    assert v.anomalous and v.signature == "pause@receiver" and v.symptoms[0].host == "b"
    assert abs(v.evidence["hosts"]["b"]["pause_ratio_tx"]["3"] - 0.2) < 1e-9
    assert (v.symptoms[0].counter, v.symptoms[0].source) == ("tx_prio3_pause_duration", "ethtool")
    assert v.evidence["hosts"]["b"]["counters"]["tx_prio3_pause_duration"] == {"delta": 400_000.0,
                                                                              "source": "ethtool"}
    bnxt = oracle("bnxt_re").judge(run(97e9, 3e6, {"pfc_pri3_tx_duration_us": 400_000.0}), W)
    assert bnxt.signature == "pause@receiver"


def test_low_throughput_needs_both_ceilings() -> None:
    low = oracle().judge(run(30e9, 0.9e6, {}), W)
    assert low.signature == "low_throughput@receiver"
    # small messages far below bits/s but at the packet-rate ceiling are not an anomaly
    small = Workload((Flow(Endpoint("a"), Endpoint("b"), sizes=(64,), mr_size=4096),))
    r = dataclasses.replace(run(20e9, 45e6, {}), workload_key=small.key())
    assert not oracle().judge(r, small).anomalous


def test_mtu_overhead_is_not_an_anomaly() -> None:
    w = Workload((Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,), mtu=256),))
    # 256 B of payload per 338 B on the wire: 75 % of the wire rate is the ceiling at this MTU
    v = oracle().judge(dataclasses.replace(run(74e9, 36e6, {}), workload_key=w.key()), w)
    assert not v.anomalous


def test_loss_against_baseline_and_engine_bound_runs() -> None:
    o = oracle(baseline={"b:out_of_sequence": 100.0})
    assert not o.judge(run(97e9, 3e6, {"out_of_sequence": 300.0}), W).anomalous  # 150/s < 2 x 100 + 10
    lossy = o.judge(run(97e9, 3e6, {"out_of_sequence": 2000.0}), W)
    assert lossy.signature == "loss@receiver" and lossy.symptoms[0].counter == "out_of_sequence"
    bound = o.judge(run(3e9, 0.1e6, {"tx_prio3_pause_duration": 900_000.0}, engine_bound=True), W)
    assert not bound.anomalous and bound.evidence["not_judged"] == "engine-bound run"


def test_pause_estimated_from_xoff_frames_without_durations() -> None:
    cat = load_catalogs("irdma")
    names = [s.name for s in cat if s.role == "pause_frames_tx"]
    assert names, "ice reports XOFF frame counts"
    v = Oracle(cat, CEIL).judge(run(97e9, 3e6, {names[0]: 20000.0}), W)
    host = v.evidence["hosts"]["b"]
    assert host["pause_basis"]["tx"] == "xoff-estimate" and v.anomalous and v.symptoms[0].estimate
    assert v.symptoms[0].counter == names[0] and v.symptoms[0].source == "ethtool"


def test_diagnostic_metrics_are_per_packet_or_per_message() -> None:
    cat = load_catalogs("mlx5", "sim")
    counters = {"sim_rx_wqe_cache_miss": 6e6, "sim_mtt_cache_miss": 6e6}
    v = Oracle(cat, CEIL).judge(run(97e9, 3e6, counters), W)
    # 2 s; host b received 3e6 packets/s (16 per 64 KiB message at MTU 4K, so 3e6 / 16 messages/s)
    assert abs(v.metrics["diag:sim_mtt_cache_miss"] - 6e6 / 2 / 3e6) < 1e-9  # per packet (the default)
    assert abs(v.metrics["diag:sim_rx_wqe_cache_miss"] - 6e6 / 2 / (3e6 / 16)) < 1e-9  # per message


def test_levels_say_how_near_each_symptom_a_run_came() -> None:
    o = oracle(baseline={"b:out_of_sequence": 100.0})
    clean = o.judge(run(97e9, 3e6, {"tx_prio3_pause_duration": 1000.0, "out_of_sequence": 300.0}), W)
    assert not clean.anomalous
    assert abs(clean.levels["pause@receiver"] - 0.5) < 1e-9  # 0.05 % paused against a 0.1 % threshold
    assert abs(clean.levels["loss@receiver"] - 150.0 / 210.0) < 1e-9  # 150/s against 2 x 100 + 10
    assert abs(clean.levels["low_throughput@receiver"] - 0.8 / clean.metrics["throughput"]) < 1e-9
    paused = o.judge(run(97e9, 3e6, {"tx_prio3_pause_duration": 400_000.0}), W)
    assert paused.levels["pause@receiver"] == paused.score > 1.0  # the symptom's level is its score
    assert paused.shows("pause@receiver") and not clean.shows("pause@receiver")
    low = o.judge(run(30e9, 0.9e6, {}), W)
    assert low.levels["low_throughput@receiver"] > 1.0
    # a run the oracle does not judge says nothing of how near it came
    bound = o.judge(run(3e9, 0.1e6, {}, engine_bound=True), W)
    assert bound.levels == {}


def test_a_host_without_pause_counters_gets_no_pause_verdict_and_says_why() -> None:
    v = oracle().judge(run(30e9, 0.9e6, {"out_of_sequence": 0.0}), W)
    assert not v.shows("pause@receiver")
    assert not v.evidence["hosts"]["b"]["pause_readable"]
    assert any(n.startswith("b: pause counters were not readable") for n in v.evidence["notes"])


def test_the_source_a_host_reported_wins_over_the_catalogs() -> None:
    r = run(97e9, 3e6, {"ethtool:tx_prio3_pause_duration": 400_000.0})
    b = dataclasses.replace(r.hosts[1], sources={"ethtool:tx_prio3_pause_duration": "rdma-stat"})
    v = oracle().judge(dataclasses.replace(r, hosts=(r.hosts[0], b)), W)
    assert (v.symptoms[0].counter, v.symptoms[0].source) == ("tx_prio3_pause_duration", "rdma-stat")
    assert v.evidence["hosts"]["b"]["counters"]["tx_prio3_pause_duration"]["delta"] == 400_000.0


# receiver not ready: a SEND a -> b, whose receives b posts; rxe counts RNR NAKs where they are sent
# (send_rnr_err, the responder b) and where they are received (rcvd_rnr_err, the requester a)
SEND = Workload((Flow(Endpoint("a"), Endpoint("b"), opcodes=("SEND",), sizes=(65536,), mtu=4096),))


def rnr_run(counters_a: dict[str, float], counters_b: dict[str, float], workload: Workload = SEND,
            **kw: object) -> RunResult:
    r = run(97e9, 3e6, counters_b, **kw)
    a = dataclasses.replace(r.hosts[0], counters=counters_a)
    return dataclasses.replace(r, workload_key=workload.key(), hosts=(a, r.hosts[1]))


def rxe(baseline: dict[str, float] | None = None, thresholds: Thresholds | None = None) -> Oracle:
    return Oracle(load_catalog("rxe"), CEIL, thresholds or Thresholds(), baseline)


def test_rnr_nak_storm_on_the_responder_is_judged_above_its_clean_baseline() -> None:
    o = rxe(baseline={"b:send_rnr_err": 100.0})
    clean = o.judge(rnr_run({}, {"send_rnr_err": 400.0}), SEND)  # 200/s < 2 x 100 + 10
    assert not clean.anomalous and abs(clean.levels["rnr@receiver"] - 200.0 / 210.0) < 1e-9
    v = o.judge(rnr_run({}, {"send_rnr_err": 24_000.0}), SEND)  # 12,000/s
    assert v.anomalous and v.signature == "rnr@receiver" and v.leading == "rnr@receiver" and v.primary == "rnr"
    (s,) = v.symptoms
    assert (s.kind, s.host, s.end, s.counter, s.source, s.read_on) == ("rnr", "b", "receiver", "send_rnr_err",
                                                                        "hw", "")
    assert s.value == 12_000.0 and s.threshold == 210.0 and v.score == 12_000.0 / 210.0
    assert v.evidence["hosts"]["b"]["receiver_starvation_rates"] == {"send_rnr_err": 12_000.0}


def test_rnr_naks_the_requester_received_name_the_responder_whose_receiver_starved() -> None:
    o = rxe(baseline={"a:rcvd_rnr_err": 1000.0})  # the baseline of the host that counted them
    assert not o.judge(rnr_run({"rcvd_rnr_err": 4000.0}, {}), SEND).anomalous  # 2,000/s < 2,010
    v = o.judge(rnr_run({"rcvd_rnr_err": 30_000.0}, {}), SEND)
    (s,) = v.symptoms
    assert (s.host, s.end, s.read_on, s.counter_host) == ("b", "receiver", "a", "a")
    assert v.signature == "rnr@receiver" and s.threshold == 2010.0


def test_rnr_has_its_own_margin_and_floor() -> None:
    storm = rnr_run({}, {"send_rnr_err": 2000.0})  # 1,000/s
    assert rxe().judge(storm, SEND).anomalous
    assert not rxe(thresholds=Thresholds(rnr_floor_per_s=5000.0)).judge(storm, SEND).anomalous
    assert rxe(thresholds=Thresholds(loss_floor_per_s=5000.0)).judge(storm, SEND).anomalous
    margin = rxe({"b:send_rnr_err": 300.0}, Thresholds(rnr_margin=4.0))
    assert not margin.judge(storm, SEND).anomalous  # 1,000/s < 4 x 300 + 10


def test_missing_rnr_counters_stay_missing_and_judge_nothing() -> None:
    v = rxe().judge(rnr_run({}, {"out_of_seq_request": 0.0}), SEND)
    assert not v.anomalous and "rnr@receiver" not in v.levels and "rnr@sender" not in v.levels
    assert v.evidence["hosts"]["b"]["receiver_starvation_rates"] == {}
    unread = rxe().judge(rnr_run({"rcvd_rnr_err": None}, {"send_rnr_err": None}), SEND)  # type: ignore[dict-item]
    assert not unread.anomalous and "rnr@receiver" not in unread.levels
    # an old calibration without the counter's baseline: it is judged against the floor alone (missing = 0)
    assert rxe(baseline={"b:out_of_seq_request": 5.0}).judge(rnr_run({}, {"send_rnr_err": 42.0}), SEND).anomalous


def test_an_engine_bound_or_failed_run_is_never_rnr_anomalous() -> None:
    storm = {"send_rnr_err": 1e7}
    bound = rxe().judge(rnr_run({}, storm, engine_bound=True), SEND)
    failed = rxe().judge(rnr_run({}, storm, errors=("QP 0: RNR retry count exceeded",)), SEND)
    for v in (bound, failed):
        assert not v.anomalous and v.signature == "" and v.symptoms == () and v.levels == {}
    assert failed.evidence["not_judged"] == "run had errors"


def test_rnr_comes_after_the_other_symptoms_in_a_signature() -> None:
    assert SYMPTOM_ORDER[3:] == ("retransmission", "rnr", "isolation", "straggler")
    v = oracle().judge(run(30e9, 0.9e6, {"out_of_buffer": 50_000.0, "out_of_sequence": 50_000.0}), W)
    assert v.signature == "low_throughput@receiver+loss@receiver+rnr@receiver"
    assert [s.kind for s in v.symptoms] == ["low_throughput", "loss", "rnr"]
    assert v.leading == "low_throughput@receiver" and v.shows("rnr@receiver")


def test_the_starved_host_is_the_responder() -> None:
    assert starved_host(SEND, "a") == "b" and starved_host(SEND, "b") == "b"
    read = Workload((Flow(Endpoint("a"), Endpoint("b"), opcodes=("READ",)),))
    assert starved_host(read, "a") == "a"  # nothing consumes receives: the counter's own host
    loop = Workload((Flow(Endpoint("a"), Endpoint("a"), opcodes=("WRITE_IMM",)),))
    assert starved_host(loop, "a") == "a"
    mixed = Workload((Flow(Endpoint("b"), Endpoint("a"), opcodes=("READ", "SEND_IMM")),))
    assert starved_host(mixed, "b") == "a"


def test_calibration_records_the_clean_baseline_of_receiver_starvation() -> None:
    from collie.calibrate import calibrated_oracle
    from collie.targets.sim import SimTarget

    info = SimTarget("cx6-200g").describe()

    def clean(workload: Workload) -> RunResult:  # one-way calibration runs: a writes to b, as rnr_run's flow
        return rnr_run({"rcvd_rnr_err": 6.0}, {"send_rnr_err": 2.0, "out_of_seq_request": 4.0}, workload)

    o = calibrated_oracle(clean, load_catalog("rxe"), info, Thresholds(), ("oneway",))
    assert o.baseline == {"a:rcvd_rnr_err": 3.0, "b:send_rnr_err": 1.0, "b:out_of_seq_request": 2.0}


def test_the_preset_reads_the_rnr_thresholds_and_names_a_bad_one(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text("[oracle]\nrnr_margin = 3\nrnr_floor_per_s = 50.0\n")
    t = load_preset(str(good)).thresholds
    assert (t.rnr_margin, t.rnr_floor_per_s, t.loss_margin) == (3.0, 50.0, 2.0)
    assert load_preset("collie").thresholds == Thresholds()  # the shipped preset writes the defaults
    bad = tmp_path / "bad.toml"
    bad.write_text('[oracle]\nrnr_floor_per_s = "high"\n')
    with pytest.raises(InputError) as exc:
        load_preset(str(bad))
    assert "oracle.rnr_floor_per_s" in str(exc.value) and "expected a number" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_campaign_calibrated_before_rnr_was_judged_judges_it_against_the_floor() -> None:
    from collie.calibrate import recorded_oracle
    from collie.storage.campaign import read_config
    from tests.conftest import ROOT

    config = read_config(ROOT / "tests" / "fixtures" / "campaigns" / "main-474e322")
    assert config.target_info is not None and config.ceilings is not None and config.baseline is not None
    assert not any(k.endswith(("rnr_nak_retry_err", "out_of_buffer")) for k in config.baseline)
    o = recorded_oracle(config.target_info, config.ceilings, config.baseline, Thresholds()).oracle
    r = rnr_run({"rnr_nak_retry_err": 100.0}, {}, duration=5.0)  # the requester got 20 RNR NAKs/s from b
    (s,) = [s for s in o.judge(r, SEND).symptoms if s.kind == "rnr"]
    assert (s.host, s.read_on, s.value, s.threshold) == ("b", "a", 20.0, 10.0)


# READ/atomic flows: bounded by their window (Little's law) and the atomic rate, not by the WRITE-made ceilings
WINDOWED = dataclasses.replace(CEIL, read_rtt_us={"oneway": 2.0, "bidirectional": 2.0, "loopback": 1.5},
                               max_rd_atomic=16, atomic_ops=40e6)
A, B = Endpoint("a"), Endpoint("b")


def one_flow_run(workload: Workload, msg_rate: float) -> RunResult:
    """``workload``'s one flow completing ``msg_rate`` requests/s of its cycle, its payload into its receiver."""
    (f,) = workload.flows
    requests = f.requests()
    nbytes = sum(b for _, b in requests) / len(requests)
    packets = sum(-(-b // f.mtu) for _, b in requests) / len(requests)
    bps, pps = msg_rate * nbytes * 8, msg_rate * packets
    into, out = f.payload_receiver.host, f.payload_sender.host
    return RunResult(workload_key=workload.key(), target="t", duration_s=2.0, setup_s=0.1,
                     flows=(FlowResult(0, f.client.host, f.server.host, bps, pps, msg_rate, 2, 3, 4),),
                     hosts=(HostResult(out, bps, 0, pps, 0), HostResult(into, 0, bps, 0, pps)))


def window_rate(qps: int, held: list[int], n: int, rtt_us: float = 2.0, wire_bps: float = 100e9) -> float:
    """The rule of the oracle's docstring, written out: qps x 16 x n / sum(rtt + wire(b) / wire_bps)."""
    return qps * 16 * n / sum((rtt_us + (b + 82) * 8 / wire_bps * 1e6) * 1e-6 for b in held)


def test_a_read_at_its_window_bound_is_not_low_throughput_and_at_half_of_it_is() -> None:
    read = Workload((Flow(A, B, opcodes=("READ",), sizes=(64,), qps=2, mr_size=4096),))
    bound = window_rate(2, [64], 1)  # 15.9 M READs/s: a third of the packets/s ceiling
    o = Oracle(load_catalog("mlx5"), WINDOWED)
    full = o.judge(one_flow_run(read, 0.95 * bound), read)
    assert not full.anomalous and abs(full.metrics["throughput"] - 0.95) < 1e-9
    assert full.evidence["throughput"]["a"]["bound"] == "READ window: 16 outstanding x 2 QPs / 2.01 us"
    half = o.judge(one_flow_run(read, 0.5 * bound), read)
    assert half.signature == "low_throughput@receiver" and abs(half.symptoms[0].value - 0.5) < 1e-9
    # the WRITE-made ceilings alone (a record calibrated before the window was kept) call the same READ low
    assert Oracle(load_catalog("mlx5"), CEIL).judge(one_flow_run(read, 0.95 * bound), read).anomalous


def test_a_mixed_cycle_is_bounded_by_its_read_share() -> None:
    mixed = Workload((Flow(A, B, opcodes=("READ", "WRITE", "WRITE"), sizes=(64,), qps=1, mr_size=4096),))
    bound = window_rate(1, [64], 3)  # one READ per three requests: three times the READs' own rate
    o = Oracle(load_catalog("mlx5"), WINDOWED)
    assert not o.judge(one_flow_run(mixed, 0.9 * bound), mixed).anomalous
    assert o.judge(one_flow_run(mixed, 0.6 * bound), mixed).signature == "low_throughput@receiver"


def test_a_read_write_flow_is_judged_on_what_lands_on_each_host_against_its_own_ceiling() -> None:
    """READ responses land on the client, WRITEs on the server: a flow moving 60 % of a one-way ceiling each way
    moves 120 % of it in all, and was judged clean against that one ceiling."""
    mixed = Workload((Flow(A, B, opcodes=("READ", "WRITE"), sizes=(65536,), mtu=4096, qps=8),))
    each_way = CEIL.payload_bps("oneway", [65536], 4096)
    o = Oracle(load_catalog("mlx5"), CEIL)
    slow = o.judge(one_flow_run(mixed, 2 * 0.6 * each_way / (65536 * 8)), mixed)
    assert slow.signature == "low_throughput@receiver" and {s.host for s in slow.symptoms} == {"a", "b"}
    for host in ("a", "b"):
        assert slow.evidence["throughput"][host]["bps"] == pytest.approx(0.6 * each_way)
        assert slow.evidence["throughput"][host]["fraction"] == pytest.approx(0.6)
    full = o.judge(one_flow_run(mixed, 2 * 0.95 * each_way / (65536 * 8)), mixed)
    assert not full.anomalous and full.metrics["throughput"] == pytest.approx(0.95)
    # one READ per three requests: a third of the bytes lands on the client, whose share is paced by the WRITEs
    lopsided = Workload((Flow(A, B, opcodes=("READ", "WRITE", "WRITE"), sizes=(65536,), mtu=4096, qps=8),))
    v = o.judge(one_flow_run(lopsided, 3 * 0.9 * each_way / (2 * 65536 * 8)), lopsided)
    assert not v.anomalous and v.evidence["throughput"]["b"]["fraction"] == pytest.approx(0.9)
    into_a = v.evidence["throughput"]["a"]
    assert into_a["bps"] == pytest.approx(0.45 * each_way) and into_a["fraction"] == pytest.approx(0.9)
    assert into_a["bound"] == "the other direction of its READ mix, into b"


def test_an_atomic_flow_at_the_atomic_ceiling_is_not_low_throughput() -> None:
    fa = Workload((Flow(A, B, opcodes=("ATOMIC_FA",), sizes=(8,), qps=64, mr_size=4096),))
    o = Oracle(load_catalog("mlx5"), WINDOWED)
    at = o.judge(one_flow_run(fa, 0.9 * 40e6), fa)  # its window (64 x 16 / 2 us) is far above 40 M ops/s
    assert not at.anomalous and at.evidence["throughput"]["b"]["bound"] == "atomic rate: 40 M ops/s"
    assert o.judge(one_flow_run(fa, 0.5 * 40e6), fa).signature == "low_throughput@receiver"
    # one atomic per two requests: twice the requests/s before the atomic rate holds
    mixed = Workload((Flow(A, B, opcodes=("ATOMIC_FA", "WRITE"), sizes=(64,), qps=64, mr_size=4096),))
    assert not o.judge(one_flow_run(mixed, 0.9 * 80e6), mixed).anomalous


def test_an_atomic_moves_its_8_bytes_whatever_size_the_pattern_gives_it() -> None:
    """Request i takes opcodes[i % 2] and sizes[i % 2]: every atomic of this cycle takes the 64 KiB size and moves
    8 B, every WRITE 512 B. At 0.95 of the bits/s ceiling of what it moves it is clean; it was judged low against
    the ceiling of 64 KiB messages, which it never sends."""
    mixed = Workload((Flow(A, B, opcodes=("ATOMIC_FA", "WRITE"), sizes=(65536, 512), mtu=4096, qps=8),))
    moved = CEIL.payload_bps("oneway", [8, 512], 4096)
    v = Oracle(load_catalog("mlx5"), CEIL).judge(one_flow_run(mixed, 0.95 * moved / (260 * 8)), mixed)
    assert not v.anomalous and v.evidence["throughput"]["b"]["bps_ceiling"] == pytest.approx(moved)


def test_atomic_flows_into_one_responder_share_its_atomic_rate() -> None:
    two = Workload((Flow(A, B, opcodes=("ATOMIC_FA",), sizes=(8,), qps=64, mr_size=4096),
                    Flow(B, B, opcodes=("ATOMIC_CS",), sizes=(8,), qps=64, mr_size=4096)))
    r = one_flow_run(Workload((two.flows[0],)), 0.45 * 40e6)
    r = dataclasses.replace(r, workload_key=two.key(), flows=(r.flows[0], dataclasses.replace(r.flows[0], flow=1,
                                                                                                client="b")))
    v = Oracle(load_catalog("mlx5"), WINDOWED).judge(r, two)  # 2 x 18 M ops/s: 0.9 of the one rate of b
    assert not v.anomalous and v.evidence["throughput"]["b"]["bound"] == "atomic rate: 40 M ops/s shared"


def test_a_write_is_judged_as_before_whatever_the_window() -> None:
    o = Oracle(load_catalog("mlx5"), WINDOWED)
    assert o.judge(run(30e9, 0.9e6, {}), W).signature == "low_throughput@receiver"
    v = o.judge(run(97e9, 3e6, {}), W)
    assert not v.anomalous and v.evidence["throughput"]["b"]["bound"] == "bits/s ceiling"
    # a READ host that also receives a WRITE flow has no window bound: the WRITE could have filled the link
    both = Workload((Flow(A, B, opcodes=("READ",), sizes=(64,), mr_size=4096), Flow(B, A, sizes=(64,))))
    r = one_flow_run(Workload((both.flows[0],)), 1e6)
    r = dataclasses.replace(r, workload_key=both.key(), flows=(r.flows[0], dataclasses.replace(
        r.flows[0], flow=1, client="b", server="a")))
    assert o.judge(r, both).signature == "low_throughput@receiver"


def test_ceilings_without_the_read_and_atomic_fields_load_and_apply_no_bound() -> None:
    from collie.codec import Reader

    old = {"wire_bps": {"oneway": 1e11}, "pps": {"oneway": 5e7}, "line_rate_bps": 1e11}
    c = Ceilings.from_dict(old, Reader("c.toml"))
    assert (c.read_rtt_us, c.max_rd_atomic, c.atomic_ops) == ({}, 0, 0.0) and c.to_dict() == old
    assert Ceilings.from_dict(WINDOWED.to_dict(), Reader("c.toml")) == WINDOWED
    read = Flow(A, B, opcodes=("READ",), sizes=(64,))
    assert Oracle(load_catalog("mlx5"), c).flow_limit("oneway", read) is None


def test_calibration_measures_the_round_trip_and_the_atomic_rate_and_skips_atomics_without_them() -> None:
    from collie.calibrate import Measure, calibrated_oracle
    from collie.targets.sim import SimTarget

    info = SimTarget("cx6-200g").describe()
    seen: list[Workload] = []

    def fake(workload: Workload) -> RunResult:
        seen.append(workload)
        f = workload.flows[0]
        rate = 30e6 if f.atomic else 1e6
        return RunResult(workload.key(), "t", 1.0, 0.1,
                         (FlowResult(0, "a", "b", 8e9, 1e6, rate, 1.7 if f.opcode == "READ" else 9.0, 2, 3),),
                         (HostResult("a", 8e9, 0, 1e6, 0), HostResult("b", 0, 8e9, 0, 1e6)))

    c = calibrated_oracle(fake, load_catalog("mlx5"), info, Thresholds(), ("oneway",)).ceilings
    assert (c.read_rtt_us, c.max_rd_atomic, c.atomic_ops) == ({"oneway": 1.7}, info.max_rd_atomic, 30e6)
    assert [w.name for w in seen] == ["calibrate-oneway-bandwidth", "calibrate-oneway-rate",
                                      "calibrate-oneway-round-trip", "calibrate-oneway-qp-rate",
                                      "calibrate-oneway-qp-post-list", "calibrate-oneway-atomics"]
    # both one-QP runs moved 1 M requests/s: post lists bought nothing, so it is all the WR's cost
    assert (c.qp_wr_us, c.qp_doorbell_us) == (1.0, 0.0)
    seen.clear()
    bare = dataclasses.replace(info, atomics=False, max_rd_atomic=0)
    c = calibrated_oracle(fake, load_catalog("mlx5"), bare, Thresholds(), ("oneway",)).ceilings
    assert c.atomic_ops == 0.0 and c.max_rd_atomic == 0 and len(seen) == 5
    assert Measure.ATOMICS == "atomic"


def test_a_campaign_recorded_before_the_window_was_kept_loads_and_judges_reads_by_its_ceilings() -> None:
    from collie.calibrate import recorded_oracle
    from collie.storage.campaign import read_config
    from tests.conftest import ROOT

    config = read_config(ROOT / "tests" / "fixtures" / "campaigns" / "main-474e322")
    assert config.target_info is not None and config.ceilings is not None
    assert (config.target_info.max_rd_atomic, config.target_info.atomics) == (0, True)
    assert (config.ceilings.read_rtt_us, config.ceilings.max_rd_atomic, config.ceilings.atomic_ops) == ({}, 0, 0.0)
    o = recorded_oracle(config.target_info, config.ceilings, config.baseline or {}, Thresholds()).oracle
    read = Workload((Flow(A, B, opcodes=("READ",), sizes=(64,), mr_size=4096),))
    v = o.judge(one_flow_run(read, 9e6), read)
    assert v.signature == "low_throughput@receiver" and v.evidence["throughput"]["a"]["bound"] == "packets/s ceiling"


def test_a_qps_costs_per_work_request_and_per_doorbell_follow_from_two_one_qp_runs() -> None:
    from collie.calibrate import QP_LIST, qp_costs

    wr, doorbell = 0.1, 0.25  # us
    single, listed = 1e6 / (wr + doorbell), 1e6 / (wr + doorbell / QP_LIST)
    assert qp_costs(single, listed) == pytest.approx((wr, doorbell))
    # post lists no faster (noise): all of it is the WR's; a run that moved nothing: no per-QP bound
    assert qp_costs(2e6, 1.9e6) == (pytest.approx(0.5), 0.0)
    assert qp_costs(0.0, 1e6) == qp_costs(1e6, 0.0) == (0.0, 0.0)


def test_a_flow_held_by_its_qps_own_rate_is_judged_against_it() -> None:
    from collie.codec import Reader

    c = Ceilings({"oneway": 200e9}, {"oneway": 110e6}, 200e9, qp_wr_us=0.1, qp_doorbell_us=0.25)
    assert Ceilings.from_dict(c.to_dict(), Reader("c.toml")) == c
    oracle = Oracle(load_catalog("mlx5"), c)
    flow = Flow(A, B, sizes=(64,), qps=2, batch=1)
    bound = 2 / 0.35e-6
    assert c.qp_rate(flow) == pytest.approx(bound)
    assert c.qp_rate(dataclasses.replace(flow, batch=5)) == pytest.approx(2 / 0.15e-6)
    limit = oracle.flow_limit("oneway", flow)
    assert limit is not None and limit.why == "QP rate: 2 QPs x 2.86 M WRs/s"
    workload = Workload((flow,))

    def run(rate: float) -> RunResult:
        bps = rate * 64 * 8
        return RunResult(workload.key(), "t", 1.0, 0.1, (FlowResult(0, "a", "b", bps, rate, rate, 2.0, 3.0, 4.0),),
                         (HostResult("a", bps, 0, rate, 0), HostResult("b", 0, bps, 0, rate)))

    at = oracle.judge(run(0.95 * bound), workload)
    assert not at.anomalous and at.evidence["throughput"]["b"]["bound"] == limit.why
    below = oracle.judge(run(0.5 * bound), workload)
    assert [s.kind for s in below.symptoms] == ["low_throughput"]
    # uncalibrated (a record made before the per-QP runs): no bound, the packet ceiling judges alone
    assert Ceilings({"oneway": 200e9}, {"oneway": 110e6}).qp_rate(flow) is None


def test_a_read_mix_paced_by_its_saturated_other_direction_does_not_make_its_fellow_flow_look_low() -> None:
    """Into b: the atomics of a READ+atomic mix whose 2 MiB READ responses fill a's link, and a one-QP SEND at its
    QP's own rate. Neither could complete more: b is not low, though the mix runs far below its own limits."""
    c = dataclasses.replace(WINDOWED, qp_wr_us=0.1, qp_doorbell_us=0.25)
    # on 16,384 QPs its window would let it complete 3 M requests/s: what holds it is a's link
    mix = Flow(A, B, opcodes=("READ", "ATOMIC_FA"), sizes=(2 << 20,), mtu=4096, qps=16384, mr_size=2 << 20)
    send = Flow(A, B, opcodes=("SEND",), sizes=(64,), qps=1)
    workload = Workload((mix, send))
    read_bps = 0.99 * c.payload_bps("oneway", [2 << 20], 4096)  # into a, its link full
    m = read_bps / ((2 << 20) * 8 / 2)  # requests/s of the mix: one READ per two requests
    s = 0.95 / 0.35e-6  # the SEND at 0.95 of its QP's rate
    flows = (FlowResult(0, "a", "b", m * ((2 << 20) + 8) / 2 * 8, m * 513 / 2, m, 2, 3, 4),
             FlowResult(1, "a", "b", s * 64 * 8, s, s, 2, 3, 4))
    run = RunResult(workload.key(), "t", 1.0, 0.1, flows,
                    (HostResult("a", s * 512, read_bps, s, m * 256), HostResult("b", read_bps, s * 512, m * 256, s)))
    v = Oracle(load_catalog("mlx5"), c).judge(run, workload)
    assert not v.anomalous, v.evidence["throughput"]
    into_b = v.evidence["throughput"]["b"]
    assert into_b["bound"].endswith("QP rate: 1 QP x 2.86 M WRs/s") and into_b["fraction"] == pytest.approx(0.95, 0.01)
    # without the per-QP runs the SEND has no limit of its own: b's packets and bits are all it is judged by
    assert Oracle(load_catalog("mlx5"), WINDOWED).judge(run, workload).signature == "low_throughput@receiver"
