"""Combining workers' measurements, percentiles, engine_bound, counter deltas."""

from __future__ import annotations

from collie.targets.verbs.measure import FlowStats, combine, engine_bound, percentile


def test_percentile_nearest_rank() -> None:
    v = list(range(1, 101))
    assert percentile(v, 50) == 50
    assert percentile(v, 99) == 99
    assert percentile(v, 99.9) == 100
    assert percentile([7], 99.9) == 7
    assert percentile([], 50) == 0.0


def test_rates_add_across_workers_and_latencies_pool() -> None:
    a = FlowStats(flow=0, seconds=2.0, wrs=1000, bytes=1000 * 4096, packets=1000, lat_ns=(1000, 3000),
                  loops=100, full_loops=80, verbs_s=0.2)
    b = FlowStats(flow=0, seconds=2.0, wrs=500, bytes=500 * 4096, packets=500, lat_ns=(2000,),
                  loops=100, full_loops=20, verbs_s=0.2)
    s = combine(0, [a, b])
    assert s.msg_rate == 750.0
    assert s.bps == 1500 * 4096 * 8 / 2.0
    assert s.pps == 750.0
    assert s.lat_p50_us == 2.0
    assert s.saturation == 0.5
    assert abs(s.verbs_fraction - 0.1) < 1e-12


def test_engine_bound_needs_empty_queues_and_little_verbs_time() -> None:
    def summary(full: int, verbs_s: float) -> object:
        return combine(0, [FlowStats(flow=0, seconds=1.0, wrs=1, bytes=1, packets=1, loops=100,
                                     full_loops=full, verbs_s=verbs_s)])

    assert engine_bound([summary(10, 0.1)])          # Python was the limit
    assert not engine_bound([summary(90, 0.1)])      # queues full: the device was the limit
    assert not engine_bound([summary(10, 0.8)])      # time went into the (software) device's verbs calls
    assert engine_bound([summary(90, 0.1), summary(10, 0.1)])  # any flow limited by the engine


def test_errors_and_verification_combine() -> None:
    ok = FlowStats(flow=1, seconds=1.0, wrs=1, bytes=1, packets=1, verified=True,
                   wc_errors={"IBV_WC_RETRY_EXC_ERR (vendor_err 0x0)": 2})
    bad = FlowStats(flow=1, seconds=1.0, wrs=1, bytes=1, packets=1, verified=False,
                    verify_errors=("flow 1: MR 0 byte 3 is 0, expected 9",),
                    wc_errors={"IBV_WC_RETRY_EXC_ERR (vendor_err 0x0)": 1})
    s = combine(1, [ok, bad])
    assert s.wc_errors == {"IBV_WC_RETRY_EXC_ERR (vendor_err 0x0)": 3}
    assert not s.verified and s.verify_errors == ("flow 1: MR 0 byte 3 is 0, expected 9",)
    assert combine(1, [ok]).verified


def test_per_qp_fairness_is_the_slowest_qps_share_of_the_mean_over_every_worker() -> None:
    import pytest

    from collie.targets.verbs.measure import FlowStats, combine

    parts = [FlowStats(flow=0, seconds=1.0, wrs=300, bytes=1, packets=1, qp_wrs=(100, 200)),
             FlowStats(flow=0, seconds=1.0, wrs=300, bytes=1, packets=1, qp_wrs=(300,))]
    assert combine(0, parts).qp_min_share == pytest.approx(0.5)  # 100 of a mean of 200
    one_qp = FlowStats(flow=0, seconds=1.0, wrs=10, bytes=1, packets=1, qp_wrs=(10,))
    assert combine(0, [one_qp]).qp_min_share == 0.0  # unmeasured: nothing to compare


def test_a_flow_result_without_per_qp_fairness_reads_and_writes_as_before() -> None:
    from collie.targets.base import FlowResult

    plain = FlowResult(flow=0, client="a", server="b", bps=1.0, pps=1.0, msg_rate=1.0, lat_p50_us=1.0,
                       lat_p99_us=1.0, lat_p999_us=1.0)
    assert "qp_min_share" not in plain.to_dict()
    fair = FlowResult(**{**plain.__dict__, "qp_min_share": 0.97})
    assert fair.to_dict()["qp_min_share"] == 0.97
