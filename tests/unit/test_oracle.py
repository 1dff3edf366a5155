from __future__ import annotations

import dataclasses

from collie.collectors.catalog import load_catalog, load_catalogs
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.oracle import Ceilings, Oracle, Thresholds
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
