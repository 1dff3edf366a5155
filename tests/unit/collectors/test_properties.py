"""Properties of deltas and the ethtool parser over generated inputs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collie.collectors.catalog import load_catalog
from collie.collectors.ethtool import parse_ethtool
from collie.collectors.snapshot import WRAP32, Snapshot, delta

MLX5 = load_catalog("mlx5")
u32 = st.integers(min_value=0, max_value=WRAP32 - 1)


@given(u32, u32)
def test_wrap32_delta_is_a_small_forward_step_or_a_reported_reset(a: int, b: int) -> None:
    d = delta(Snapshot(0, {"out_of_sequence": a}, "t", "d"), Snapshot(1, {"out_of_sequence": b}, "t", "d"), 1.0,
              MLX5)
    v = d.values["out_of_sequence"]
    if v is None:
        assert [r.name for r in d.resets] == ["out_of_sequence"] and b < a
    else:
        assert 0 <= v <= WRAP32 // 2 or (b >= a and v == b - a)
        assert (a + v) % WRAP32 == b
        assert d.resets == ()


@given(st.integers(min_value=0, max_value=2**64 - 1), st.integers(min_value=0, max_value=2**64 - 1))
def test_monotonic_delta_is_exact_and_never_negative(a: int, b: int) -> None:
    d = delta(Snapshot(0, {"np_cnp_sent": a}, "t", "d"), Snapshot(1, {"np_cnp_sent": b}, "t", "d"), 1.0, MLX5)
    v = d.values["np_cnp_sent"]
    assert (v is None and b < a and len(d.resets) == 1) or (v == b - a and not d.resets)


names = st.from_regex(r"[a-z][a-z0-9_.]{0,30}", fullmatch=True).filter(
    lambda n: not n.startswith(("rx_queue_", "tx_queue_")) and not any(
        n.startswith(p) and n[len(p):len(p) + 1].isdigit() for p in ("rx", "tx", "ch", "xdp", "xsk", "ptp")))


@settings(max_examples=60)
@given(st.dictionaries(names, st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=30),
       st.booleans(), st.sampled_from(["", "     ", "\t"]))
def test_ethtool_round_trip(counters: dict[str, int], header: bool, indent: str) -> None:
    text = ("NIC statistics:\n" if header else "") + "".join(f"{indent}{k}: {v}\n" for k, v in counters.items())
    assert parse_ethtool(text).port == counters
