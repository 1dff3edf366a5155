"""Counter catalogs: every shipped dialect loads, expands and resolves aliases; bad catalogs fail clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.collectors import catalog as catalog_module
from collie.collectors.catalog import (
    KINDS,
    ROLES,
    SOURCES,
    UNITS,
    available_dialects,
    device_prefixes,
    guess_dialect,
    load_catalog,
    load_catalog_file,
    merge_catalogs,
    parse_catalog,
)
from collie.errors import InputError
from collie.tomlio import parse_toml

OWN_DIALECTS = ("mlx5", "bnxt_re", "irdma", "rxe")


def test_own_dialects_are_shipped() -> None:
    assert set(OWN_DIALECTS) <= set(available_dialects())


@pytest.mark.parametrize("dialect", available_dialects())
def test_every_shipped_catalog_loads_and_is_consistent(dialect: str) -> None:
    cat = load_catalog(dialect)
    assert cat.driver == dialect
    assert len(cat) > 0
    for spec in cat:
        assert spec.source in SOURCES and spec.kind in KINDS and spec.unit in UNITS and spec.role in ROLES
        assert cat.lookup(spec.name) is spec
        for alias in spec.aliases:
            assert cat.lookup(alias) is spec
        assert "{p}" not in spec.name
        assert spec.meaning.strip()


def test_priority_templates_expand_to_eight_priorities() -> None:
    cat = load_catalog("mlx5")
    specs = [cat.lookup(f"tx_prio{p}_pause_duration") for p in range(8)]
    assert [s.priority for s in specs if s] == list(range(8))
    assert all(s is not None and s.role == "pause_duration_tx" and s.unit == "us" for s in specs)
    assert cat.lookup("tx_prio8_pause_duration") is None
    assert cat.lookup("rx_global_pause_duration").priority is None  # type: ignore[union-attr]


def test_bnxt_re_2025_rename_is_resolved_through_aliases() -> None:
    cat = load_catalog("bnxt_re")
    pairs = {
        "to_retransmits": "local_ack_timeout_err", "seq_err_naks_rcvd": "packet_seq_err",
        "rnr_naks_rcvd": "rnr_nak_retry_err", "missing_resp": "implied_nak_seq_err",
        "dup_req": "duplicate_request", "oos_drop_count": "out_of_sequence",
        "rx_out_of_buffer": "out_of_buffer", "rx_cnp_pkts": "rp_cnp_handled",
        "rx_ecn_marked_pkts": "np_ecn_marked_roce_packets", "tx_cnp_pkts": "np_cnp_pkts",
    }
    for old, new in pairs.items():
        spec = cat.lookup(old)
        assert spec is not None and spec.name == new, old
        assert cat.canonical(old) == new
    assert cat.lookup("local_ack_timeout_err").role == "loss"  # type: ignore[union-attr]
    assert cat.lookup("duplicate_request").role == "retransmission"  # type: ignore[union-attr]


def test_kinds_follow_counters_md() -> None:
    mlx5 = load_catalog("mlx5")
    assert mlx5.lookup("out_of_sequence").kind == "wrap32"  # type: ignore[union-attr]
    assert mlx5.lookup("np_cnp_sent").kind == "monotonic"  # type: ignore[union-attr]
    assert mlx5.lookup("rx_icrc_encapsulated").kind == "monotonic"  # type: ignore[union-attr]
    assert mlx5.lookup("outbound_pci_stalled_rd").kind == "gauge"  # type: ignore[union-attr]
    assert mlx5.lookup("port_xmit_data").unit == "octets/4"  # type: ignore[union-attr]
    assert mlx5.lookup("port_xmit_data").scale == 4.0  # type: ignore[union-attr]
    for dialect in ("mlx5", "rxe", "bnxt_re"):
        assert load_catalog(dialect).lookup("lifespan").kind == "setting"  # type: ignore[union-attr]
    bnxt = load_catalog("bnxt_re")
    assert bnxt.lookup("active_qps").kind == "gauge"  # type: ignore[union-attr]
    assert bnxt.lookup("watermark_qps").kind == "gauge"  # type: ignore[union-attr]


def test_source_prefixed_names_resolve() -> None:
    cat = load_catalog("bnxt_re")
    assert cat.lookup("ethtool:rx_bytes") is cat.lookup("rx_bytes")
    assert cat.canonical("hw:dup_req") == "hw:duplicate_request"
    assert cat.lookup("nosuchsource:rx_bytes") is None
    assert cat.lookup("definitely_not_a_counter") is None


def test_diagnostic_lists_only_flagged_counters() -> None:
    cat = load_catalog("mlx5")
    diag = cat.diagnostic()
    assert diag and all(s.diagnostic for s in diag)
    assert "outbound_pci_stalled_rd" in {s.name for s in diag}


GOOD = '''
driver = "toy"
description = "a toy"
[[counter]]
name = "sim_rx_wqe_cache_miss"
source = "sim"
kind = "monotonic"
unit = "events"
role = "diagnostic"
meaning = "receive WQE cache misses"
diagnostic = true
'''


def _parse(text: str) -> object:
    return parse_catalog(parse_toml(text, "toy.toml"), "toy.toml", stem="toy")


def test_a_sim_style_catalog_parses_and_merges() -> None:
    toy = _parse(GOOD)
    assert toy.lookup("sim_rx_wqe_cache_miss").per == "packet"  # type: ignore[attr-defined]
    assert load_catalog("sim").lookup("sim_rx_wqe_cache_miss").per == "message"  # type: ignore[union-attr]
    merged = merge_catalogs([load_catalog("mlx5"), toy])  # type: ignore[list-item]
    assert merged.lookup("sim_rx_wqe_cache_miss").diagnostic  # type: ignore[union-attr]
    assert merged.lookup("np_cnp_sent") is not None


def test_merging_two_catalogs_with_one_name_is_an_error() -> None:
    with pytest.raises(InputError, match="declared twice"):
        merge_catalogs([load_catalog("mlx5"), load_catalog("bnxt_re")])


@pytest.mark.parametrize(("change", "message"), [
    (('kind = "monotonic"', 'kind = "wraps"'), "kind: 'wraps' is not allowed; use one of monotonic, wrap32"),
    (('role = "diagnostic"', 'role = "gremlins"'), "role: 'gremlins' is not allowed"),
    (('unit = "events"', 'unit = "furlongs"'), "unit: 'furlongs' is not allowed"),
    (('source = "sim"', 'source = "snmp"'), "source: 'snmp' is not allowed"),
    (('meaning = "receive WQE cache misses"\n', 'colour = "red"\nmeaning = "x"\n'), "unknown field 'colour'"),
    (('meaning = "receive WQE cache misses"\n', ''), "meaning: missing (a required field)"),
    (('diagnostic = true', 'diagnostic = "yes"'), "diagnostic: expected true or false"),
    (('diagnostic = true', 'diagnostic = false'), "role 'diagnostic' needs diagnostic = true"),
    (('driver = "toy"', 'driver = "other"'), "driver 'other' must equal the file name 'toy'"),
    (('name = "sim_rx_wqe_cache_miss"', 'name = "sim rx"'), "no blanks allowed"),
    (('name = "sim_rx_wqe_cache_miss"', 'name = "x_{q}"'), "the only placeholder allowed is one {p}"),
    (('diagnostic = true', 'diagnostic = true\nper = "byte"'), "per: 'byte' is not allowed; use one of packet"),
    (('role = "diagnostic"\nmeaning = "receive WQE cache misses"\ndiagnostic = true',
      'role = "other"\nmeaning = "x"\nper = "message"'), "only a diagnostic counter has a unit of work"),
    (('description = "a toy"', 'description = "a toy"\ndevice_prefixes = "toy"'),
     "toy.toml: device_prefixes: expected an array of device-name prefixes, got 'toy'"),
    (('description = "a toy"', 'description = "a toy"\ndevice_prefixes = ["toy", 5]'),
     "toy.toml: device_prefixes[1]: expected a device-name prefix string, got 5"),
    (('description = "a toy"', 'description = "a toy"\ndevice_prefixes = [""]'),
     "toy.toml: device_prefixes[0]: '' is not a device-name prefix (non-empty, no blanks)"),
    (('description = "a toy"', 'description = "a toy"\ndevice_prefixes = ["toy 0"]'),
     "toy.toml: device_prefixes[0]: 'toy 0' is not a device-name prefix (non-empty, no blanks)"),
    (('description = "a toy"', 'description = "a toy"\ndevice_prefixes = ["toy", "toy"]'),
     "toy.toml: device_prefixes[1]: 'toy' is listed twice"),
    (('diagnostic = true', 'diagnostic = true\nsim = 5'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim: expected the name of a simulated quantity, got 5"),
    (('diagnostic = true', 'diagnostic = true\nsim = "Rx WQE"'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim: 'Rx WQE' is not a simulated quantity name (lowercase "
     "letters, digits and _)"),
    (('diagnostic = true', 'diagnostic = true\nsim = ""'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim: '' is not a simulated quantity name"),
    (('diagnostic = true', 'diagnostic = true\nsim_scale = 0.5'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim_scale: only a counter the simulator reports has a scale; "
     "remove sim_scale or add sim"),
    (('diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"\nsim_scale = "half"'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim_scale: expected a number > 0, got 'half'"),
    (('diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"\nsim_scale = true'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim_scale: expected a number > 0, got True"),
    (('diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"\nsim_scale = 0'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim_scale: 0 is not allowed; use a finite number > 0"),
    (('diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"\nsim_scale = inf'),
     "toy.toml: counter[0] (sim_rx_wqe_cache_miss).sim_scale: inf is not allowed; use a finite number > 0"),
])
def test_bad_catalogs_fail_with_one_clear_sentence(change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(InputError) as exc:
        _parse(GOOD.replace(old, new, 1))
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_sim_fields_parse_and_expand_with_templates() -> None:
    toy = _parse(GOOD.replace('diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"'))
    spec = toy.lookup("sim_rx_wqe_cache_miss")  # type: ignore[attr-defined]
    assert (spec.sim, spec.sim_scale) == ("diag_rx_wqe", 1.0)
    templated = _parse(GOOD.replace('name = "sim_rx_wqe_cache_miss"', 'name = "miss_prio{p}"').replace(
        'diagnostic = true', 'diagnostic = true\nsim = "diag_rx_wqe"\nsim_scale = 2'))
    specs = [templated.lookup(f"miss_prio{p}") for p in range(8)]  # type: ignore[attr-defined]
    assert {(s.sim, s.sim_scale) for s in specs} == {("diag_rx_wqe", 2.0)}
    plain = _parse(GOOD).lookup("sim_rx_wqe_cache_miss")  # type: ignore[attr-defined]
    assert (plain.sim, plain.sim_scale) == ("", 1.0)
    mlx5 = load_catalog("mlx5")
    dup = mlx5.lookup("duplicate_request")
    assert dup is not None and (dup.sim, dup.sim_scale) == ("lost_rx", 0.1)
    assert mlx5.lookup("tx_prio5_pause_duration").sim == "pause_tx_time"  # type: ignore[union-attr]


def test_duplicate_names_and_alias_rules() -> None:
    dup = GOOD + GOOD.split("\n", 3)[3]
    with pytest.raises(InputError, match="declared twice"):
        _parse(dup)
    with pytest.raises(InputError, match="must use \\{p\\} exactly when the name does"):
        _parse(GOOD.replace('diagnostic = true', 'diagnostic = true\naliases = ["old_{p}"]'))
    percent = GOOD.replace('unit = "events"', 'unit = "percent"')
    with pytest.raises(InputError, match="kind must be 'gauge'"):
        _parse(percent)
    setting = GOOD.replace('kind = "monotonic"', 'kind = "setting"')
    with pytest.raises(InputError, match="a 'setting' is not a counter"):
        _parse(setting)


def test_unknown_dialect_and_broken_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown counter dialect 'nope'; known dialects are"):
        load_catalog("nope")
    broken = tmp_path / "toy.toml"
    broken.write_text("driver = \n")
    with pytest.raises(InputError, match="malformed TOML"):
        load_catalog_file(broken)
    empty = tmp_path / "empty.toml"
    empty.write_text('driver = "empty"\ndescription = "x"\ncounter = []\n')
    with pytest.raises(InputError, match="declares no counters"):
        load_catalog_file(empty)


OLD_NAME_HINTS = {"mlx5": "mlx5", "mlx4": "mlx5", "bnxt": "bnxt_re", "irdma": "irdma", "i40iw": "irdma",
                  "ice": "irdma", "rxe": "rxe"}


def test_device_prefixes_come_from_the_catalogs() -> None:
    assert device_prefixes() == OLD_NAME_HINTS
    assert load_catalog("mlx5").device_prefixes == ("mlx5", "mlx4")
    assert load_catalog("sim").device_prefixes == ()
    merged = merge_catalogs([load_catalog("mlx5"), load_catalog("sim")])
    assert merged.device_prefixes == ("mlx5", "mlx4")


@pytest.mark.parametrize(("hint", "dialect"), [
    ("mlx5_0", "mlx5"), ("mlx4_1", "mlx5"), ("mlx5_core", "mlx5"), ("bnxt_re0", "bnxt_re"), ("bnxt_en", "bnxt_re"),
    ("irdma0", "irdma"), ("i40iw0", "irdma"), ("ice", "irdma"), ("rxe0", "rxe"), ("siw0", None), ("", None),
])
def test_guess_dialect_by_device_prefix(hint: str, dialect: str | None) -> None:
    assert guess_dialect((), hint) == dialect


def test_a_device_prefix_beats_counter_names() -> None:
    rxe_names = ["sent_pkts", "rcvd_pkts", "rdma_sends"]
    assert guess_dialect(rxe_names) == "rxe"
    assert guess_dialect(rxe_names, "mlx5_0") == "mlx5"
    assert guess_dialect(rxe_names, "siw0") == "rxe"


def _toy(driver: str, prefixes: str) -> object:
    text = GOOD.replace('driver = "toy"', f'driver = "{driver}"').replace(
        'description = "a toy"', f'description = "a toy"\ndevice_prefixes = {prefixes}')
    return parse_catalog(parse_toml(text, f"{driver}.toml"), f"{driver}.toml", stem=driver)


def test_the_longest_device_prefix_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    toys = {"short": _toy("short", '["mlx"]'), "long": _toy("long", '["mlx5"]')}
    monkeypatch.setattr(catalog_module, "available_dialects", lambda: sorted(toys))
    monkeypatch.setattr(catalog_module, "load_catalog", lambda d: toys[d])
    assert guess_dialect((), "mlx5_0") == "long"
    assert guess_dialect((), "mlx4_0") == "short"


def test_a_device_prefix_claimed_by_two_catalogs_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    toys = {"a": _toy("a", '["mlx5", "x"]'), "b": _toy("b", '["y", "x"]')}
    sentence = ("the b catalog: device_prefixes: 'x' is already claimed by the a catalog; a device prefix may "
                "belong to one catalog only")
    with pytest.raises(InputError) as exc:
        merge_catalogs([toys["a"], toys["b"]])  # type: ignore[list-item]
    assert str(exc.value) == sentence
    monkeypatch.setattr(catalog_module, "available_dialects", lambda: sorted(toys))
    monkeypatch.setattr(catalog_module, "load_catalog", lambda d: toys[d])
    for listing_or_guessing in (device_prefixes, lambda: guess_dialect((), "mlx5_0")):
        with pytest.raises(InputError) as exc:
            listing_or_guessing()
        assert str(exc.value) == sentence
