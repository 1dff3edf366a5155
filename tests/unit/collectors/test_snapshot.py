"""Deltas honour kinds: 32-bit wraps, resets, gauges, settings, missing values; snapshot files round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collie.codec import Reader
from collie.collectors.catalog import load_catalog
from collie.collectors.snapshot import WRAP32, Snapshot, combine, delta, read_snapshot_file
from collie.collectors.sysfs import read_sysfs
from collie.errors import InputError

MLX5 = load_catalog("mlx5")


def snap(t: float, **values: float | None) -> Snapshot:
    return Snapshot(t, values, "test", "mlx5_0/1")


def test_plain_monotonic_delta_and_rates() -> None:
    d = delta(snap(0, np_cnp_sent=100), snap(2, np_cnp_sent=300), catalog=MLX5)
    assert d.seconds == 2 and d.values == {"np_cnp_sent": 200}
    assert d.rates(MLX5) == {"np_cnp_sent": 100}
    assert d.resets == () and d.wraps == ()


def test_wrap32_counter_crossing_2_pow_32() -> None:
    a = snap(0, out_of_sequence=WRAP32 - 10)
    b = snap(1, out_of_sequence=5)
    d = delta(a, b, 1.0, MLX5)
    assert d.values["out_of_sequence"] == 15
    assert d.wraps == ("out_of_sequence",)
    assert d.resets == ()


def test_wrap32_that_is_really_a_reset() -> None:
    d = delta(snap(0, out_of_sequence=1000), snap(1, out_of_sequence=3), 1.0, MLX5)
    assert d.values["out_of_sequence"] is None
    assert [r.name for r in d.resets] == ["out_of_sequence"]
    assert "reset" in d.resets[0].sentence()


def test_monotonic_64_bit_counter_going_down_is_a_reset_not_a_huge_number() -> None:
    d = delta(snap(0, np_cnp_sent=5_000_000), snap(1, np_cnp_sent=12), 1.0, MLX5)
    assert d.values["np_cnp_sent"] is None
    assert d.resets[0].before == 5_000_000 and d.resets[0].after == 12
    assert d.counters() == {}


def test_gauge_is_averaged_not_differenced() -> None:
    d = delta(snap(0, outbound_pci_stalled_rd=30.0), snap(1, outbound_pci_stalled_rd=10.0), 1.0, MLX5)
    assert d.values["outbound_pci_stalled_rd"] == 20.0
    assert d.resets == ()
    assert d.rates(MLX5)["outbound_pci_stalled_rd"] == 20.0


def test_setting_is_not_a_counter() -> None:
    d = delta(snap(0, lifespan=10), snap(1, lifespan=12), 1.0, MLX5)
    assert "lifespan" not in d.values
    assert d.settings == {"lifespan": 12}


def test_missing_stays_missing() -> None:
    d = delta(snap(0, np_cnp_sent=1, rp_cnp_handled=None),
              snap(1, rp_cnp_handled=4, np_ecn_marked_roce_packets=2), 1.0, MLX5)
    assert d.values == {"np_cnp_sent": None, "rp_cnp_handled": None, "np_ecn_marked_roce_packets": None}
    assert d.counters() == {}


def test_uncatalogued_names_are_listed_and_treated_as_monotonic() -> None:
    d = delta(snap(0, weird_counter=1), snap(1, weird_counter=3), 1.0, MLX5)
    assert d.values == {"weird_counter": 2} and d.uncatalogued == ("weird_counter",)
    assert delta(snap(0, x=1), snap(1, x=3)).uncatalogued == ()  # no catalog, nothing to flag


def test_interval_must_be_positive() -> None:
    with pytest.raises(InputError, match="must be positive"):
        delta(snap(5, x=1), snap(5, x=2))


def test_alias_names_get_their_kind() -> None:
    bnxt = load_catalog("bnxt_re")
    d = delta(Snapshot(0, {"active_qps": 4}, "t", "bnxt_re0/1"), Snapshot(1, {"active_qps": 8}, "t", "b"),
              1.0, bnxt)
    assert d.values["active_qps"] == 6  # a gauge (level)


def test_combine_prefixes_collisions() -> None:
    s = combine([("hw", Snapshot(2, {"rx_bytes": 1}, "sysfs", "d")),
                 ("ethtool", Snapshot(1, {"rx_bytes": 2, "rx_pause_frames": 3}, "ethtool", "eth0"))])
    assert s.values == {"rx_bytes": 1, "ethtool:rx_bytes": 2, "rx_pause_frames": 3}
    assert s.timestamp == 1 and s.device == "d" and s.source == "combined"


def test_delta_over_a_fixture_tree(mlx5_root: Path) -> None:
    [a] = read_sysfs(mlx5_root)
    f = mlx5_root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters/duplicate_request"
    f.write_text("52\n")
    [b] = read_sysfs(mlx5_root)
    d = delta(a, b, 2.0, MLX5)
    assert d.values["duplicate_request"] == 11
    assert d.values["port_xmit_data"] == 0
    assert d.settings == {"lifespan": 10}


def test_snapshot_file_round_trip_and_errors(tmp_path: Path) -> None:
    s = Snapshot(1.5, {"a": 1.0, "b": None}, "sysfs", "mlx5_0/1", ("b: N/A",))
    p = tmp_path / "s.json"
    p.write_text(json.dumps([s.to_dict()]))
    assert read_snapshot_file(p) == [s]
    rows = [{"device": "mlx5_0/1", "name": "a", "value": 3, "timestamp": 9.0}]
    p.write_text(json.dumps(rows))
    [r] = read_snapshot_file(p)
    assert r.values == {"a": 3.0} and r.timestamp == 9.0
    for text, msg in [("{", "not JSON"), ("[]", "expected a JSON object or list"),
                      ('{"timestamp": 1}', "objects with 'timestamp' and 'values'"),
                      ('{"timestamp": "x", "values": {}}',
                       "s.json: snapshot 0: timestamp: expected a number of seconds, got 'x'$"),
                      ('{"timestamp": 1, "values": {"a": "lots"}}',
                       "s.json: snapshot 0: values: a: expected a number or null, got 'lots'$"),
                      ('{"timestamp": 1, "values": {}, "colour": 1}',
                       "s.json: snapshot 0: unknown field 'colour'; allowed fields are device, problems, "),
                      ('{"timestamp": 1, "values": {}, "sources": {"a": 3}}',
                       "s.json: snapshot 0: sources: a: expected a string, got 3$"),
                      ('[{"foo": 1}]', "expected counter snapshots")]:
        p.write_text(text)
        with pytest.raises(InputError, match=msg):
            read_snapshot_file(p)
    with pytest.raises(InputError, match="no such file"):
        read_snapshot_file(tmp_path / "missing.json")
    with pytest.raises(InputError, match=r"^snap: timestamp: missing \(a number of seconds\)$"):
        Snapshot.from_dict({"values": {}}, Reader("snap"))


def test_a_snapshot_read_back_keeps_64_bit_counters_exact_and_its_defaults() -> None:
    big = (1 << 64) - 3
    s = Snapshot.from_dict(json.loads(json.dumps({"timestamp": 2, "values": {"a": big, "b": None, "c": 1.5}})),
                           Reader("snap"))
    assert s.values == {"a": big, "b": None, "c": 1.5} and isinstance(s.values["a"], int)
    assert (s.timestamp, s.source, s.device, s.problems, s.sources, s.unreadable) == (2.0, "file", "", (), {}, {})
