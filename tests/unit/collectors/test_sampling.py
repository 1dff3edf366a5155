"""Periodic sampling: mean and spread of per-interval rates, wraps across intervals, gauges, resets."""

from __future__ import annotations

import pytest

from collie.collectors.catalog import load_catalog
from collie.collectors.sampling import DEFAULT_SAMPLES, sample, sample_during, summarize
from collie.collectors.snapshot import WRAP32, Snapshot
from collie.errors import InputError

MLX5 = load_catalog("mlx5")


def readings(series: dict[str, list[float | None]], step: float = 1.0) -> list[Snapshot]:
    n = len(next(iter(series.values())))
    return [Snapshot(i * step, {k: v[i] for k, v in series.items()}, "t", "mlx5_0/1") for i in range(n)]


def test_mean_and_spread_of_rates() -> None:
    s = summarize(readings({"np_cnp_sent": [0, 10, 30, 60, 100]}), MLX5)
    st = s.stats["np_cnp_sent"]
    assert (st.mean, st.minimum, st.maximum, st.samples) == (25.0, 10.0, 40.0, 4)
    assert st.stdev == pytest.approx(12.909944, rel=1e-6)
    assert st.cv == pytest.approx(st.stdev / 25.0)
    assert s.total.values["np_cnp_sent"] == 100 and s.total.seconds == 4


def test_wrap32_in_the_middle_of_a_run() -> None:
    s = summarize(readings({"out_of_sequence": [WRAP32 - 100, WRAP32 - 10, 20, 50]}), MLX5)
    assert s.total.values["out_of_sequence"] == 150
    assert s.total.wraps == ("out_of_sequence",)


def test_gauge_total_is_mean_of_all_readings() -> None:
    s = summarize(readings({"outbound_pci_stalled_wr": [0, 10, 20, 30, 40]}), MLX5)
    assert s.total.values["outbound_pci_stalled_wr"] == 20
    assert s.stats["outbound_pci_stalled_wr"].maximum == 40


def test_reset_or_missing_in_one_interval_makes_the_total_unknown() -> None:
    s = summarize(readings({"np_cnp_sent": [0, 10, 2, 5], "rp_cnp_handled": [1, None, 3, 4]}), MLX5)
    assert s.total.values == {"np_cnp_sent": None, "rp_cnp_handled": None}
    assert [r.name for r in s.total.resets] == ["np_cnp_sent"]
    assert "np_cnp_sent" not in s.stats


def test_sample_uses_injected_sleep_and_reads_samples_plus_one_times() -> None:
    clock = {"t": 0.0, "v": 0.0}
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock["t"] += s
        clock["v"] += 1000 * s

    def read() -> Snapshot:
        return Snapshot(clock["t"], {"np_cnp_sent": clock["v"]}, "t", "d")

    s = sample(read, interval=0.5, warmup=2.0, catalog=MLX5, sleep=sleep)
    assert slept == [2.0] + [0.5] * DEFAULT_SAMPLES
    assert len(s.intervals) == DEFAULT_SAMPLES
    assert s.stats["np_cnp_sent"].mean == pytest.approx(1000)
    assert s.stats["np_cnp_sent"].stdev == pytest.approx(0)
    s2 = sample_during(read, 8.0, samples=2, catalog=MLX5, sleep=sleep)
    assert [d.seconds for d in s2.intervals] == [4.0, 4.0]


def test_bad_sampling_arguments() -> None:
    with pytest.raises(InputError, match="at least 2 readings"):
        summarize(readings({"a": [1]}))
    with pytest.raises(InputError, match="samples must be at least 1"):
        sample(lambda: Snapshot(0, {}, "t", "d"), samples=0)
    with pytest.raises(InputError, match="interval must be positive"):
        sample(lambda: Snapshot(0, {}, "t", "d"), interval=0)
