"""The simulator reports exactly the catalog counters that have a ``sim`` field, with the conversions of
``collie.targets.sim.counters``; an unknown quantity or a unit it cannot be reported in is one sentence."""

from __future__ import annotations

import math
import random

import pytest
from simhelpers import one

from collie.collectors.catalog import Catalog, available_dialects, catalog_path, load_catalog, parse_catalog
from collie.collectors.normalize import catalog_for
from collie.errors import InputError
from collie.model.rocev2 import XOFF_BITS
from collie.targets.sim import SimTarget, builtin_names, load_profile
from collie.targets.sim import counters as sim_counters
from collie.targets.sim.counters import PRIO, QUANTITIES, counter_function, dialect_counters, reported
from collie.targets.sim.model import HostAcc
from collie.tomlio import parse_toml

D = 2.0
LINE = 100e9


def _expected(dialect: str) -> set[str]:
    return {s.name for s in catalog_for(dialect, simulated=True) if s.sim and s.priority in (None, PRIO)}


@pytest.mark.parametrize("profile", builtin_names())
def test_every_catalog_counter_with_a_sim_field_round_trips(profile: str) -> None:
    target = SimTarget(profile)
    expected = _expected(target.profile.dialect)
    assert expected, f"{profile}: no counter of the {target.profile.dialect} catalog has a sim field"
    run = target.run(one(qps=4, batch=8, sizes=(65536,)), D)
    for host in run.hosts:
        assert set(host.counters) == expected, host.host


@pytest.mark.parametrize("dialect", ["mlx5", "bnxt_re", "rxe"])
def test_names_follow_the_catalog_order_and_the_lossless_priority(dialect: str) -> None:
    catalog = catalog_for(dialect, simulated=True)
    names = list(dialect_counters(dialect)(HostAcc(), D, LINE))
    assert names == [s.name for s in reported(catalog)]
    assert all(s.priority in (None, PRIO) for s in reported(catalog))
    templated = [s for s in catalog if s.sim and s.priority is not None]
    assert templated or dialect == "rxe"
    assert not {s.name for s in templated if s.priority != PRIO} & set(names)


@pytest.mark.parametrize("dialect", available_dialects())
def test_every_shipped_sim_field_names_a_known_quantity_in_a_fitting_unit(dialect: str) -> None:
    catalog = load_catalog(dialect)
    counter_function(catalog)  # raises on an unknown quantity or a unit it cannot be reported in
    assert {s.sim for s in catalog if s.sim} <= set(QUANTITIES)


def test_the_conversions() -> None:
    acc = HostAcc(tx_wire=1e9 + 0.3, rx_wire=5e8, tx_pkts=1000.4, rx_pkts=2000.0, lost_rx=100.0, lost_tx=50.0,
                  pause_tx=0.25, pause_rx=0.001, pcie_stall=12.34567, diag_rx_wqe=7.25, rx_write=3.0)
    c = dialect_counters("mlx5")(acc, D, LINE)
    assert c["tx_vport_rdma_unicast_bytes"] == c["tx_prio3_bytes"] == float(round(2e9 + 0.6))
    assert c["port_xmit_data"] == float(round((2e9 + 0.6) / 4))  # octets/4
    assert c["tx_vport_rdma_unicast_packets"] == 2001.0
    assert c["tx_prio3_pause_duration"] == 0.25 * D * 1e6  # µs
    assert c["tx_prio3_pause"] == round(0.25 * D * LINE / (XOFF_BITS / 2))  # frames at half a full XOFF
    assert c["rx_prio3_pause_transition"] == 10.0  # one per 200 µs of pause
    assert c["duplicate_request"] == 20.0 and c["packet_seq_err"] == 90.0  # sim_scale 0.1 and 0.9
    assert c["outbound_pci_stalled_wr"] == 12.346 and c["outbound_pci_stalled_rd"] == round(12.34567 * 0.4, 3)
    assert c["sim_rx_wqe_cache_miss"] == 14.5  # unrounded: the model adds noise, then rounds
    assert c["rx_write_requests"] == 6.0 and c["np_cnp_sent"] == 0.0
    bnxt = dialect_counters("bnxt_re")(HostAcc(pause_tx=1e-12), D, LINE)
    assert bnxt["pfc_pri3_tx_transitions"] == 1.0  # paused at all: at least one transition
    assert bnxt["pfc_pri3_rx_transitions"] == 0.0 and bnxt["rx_pfc_ena_frames_pri3"] == 0.0



@pytest.mark.parametrize("dialect", ["mlx5", "bnxt_re", "rxe", "sim"])
def test_each_counter_is_its_quantity_rounded_whatever_is_zero(dialect: str) -> None:
    """The counter function (rates read at once, zero amounts left at 0) against each spec computed alone."""
    rng = random.Random(dialect)
    fields = [f for f in HostAcc.__dataclass_fields__ if f != "by_priority"]
    catalog = sim_counters.dialect_catalog(dialect)
    fn = counter_function(catalog)
    for _ in range(200):
        acc = HostAcc(**{f: rng.choice([0.0, rng.uniform(0, 1), 10 ** rng.uniform(-3, 12)]) for f in fields})
        got = fn(acc, D, LINE)
        want = {}
        for spec in reported(catalog):
            q = QUANTITIES[spec.sim]
            want[spec.name] = q.rounding(q.amount(acc, D, LINE) * spec.sim_scale * q.units.get(spec.unit, 1.0))
        assert list(got) == list(want) and got == want


def test_a_whole_count_rounds_halves_up_as_int_did() -> None:
    rng = random.Random(3)
    xs = [0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 2.0 ** 52 + 0.5, 2.0 ** 53, 1e300]
    xs += [10 ** rng.uniform(-6, 18) for _ in range(20000)]
    xs += [math.floor(x) + 0.5 for x in xs[:5000]]
    for x in xs:
        assert sim_counters._int(x) == float(int(x + 0.5)), x

TOY = '''
driver = "toy"
description = "a toy"
[[counter]]
name = "toy_prio{p}_events"
source = "hw"
kind = "monotonic"
unit = "events"
role = "other"
sim = "QUANTITY"
meaning = "a toy counter"
'''


def _toy(quantity: str) -> Catalog:
    return parse_catalog(parse_toml(TOY.replace("QUANTITY", quantity), "toy.toml"), "toy.toml", stem="toy")


def test_a_template_is_reported_at_the_lossless_priority_only() -> None:
    assert list(counter_function(_toy("zero"))(HostAcc(), D, LINE)) == [f"toy_prio{PRIO}_events"]


def test_an_unknown_quantity_is_one_sentence_naming_the_file_and_counter() -> None:
    with pytest.raises(InputError) as exc:
        counter_function(_toy("warp_drive"))
    assert str(exc.value) == (f"{catalog_path('toy')}: counter (toy_prio{{p}}_events).sim: 'warp_drive' is not a "
                              f"simulated quantity; use one of {', '.join(sorted(QUANTITIES))}")


def test_a_quantity_in_a_unit_it_cannot_be_reported_in_is_one_sentence() -> None:
    with pytest.raises(InputError) as exc:
        counter_function(_toy("tx_wire"))
    assert str(exc.value) == (f"{catalog_path('toy')}: counter (toy_prio{{p}}_events).sim: 'tx_wire' cannot be "
                              "reported in unit 'events'; the counter's unit must be bytes or octets/4")


def test_a_broken_catalog_stops_the_target_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim_counters, "load_catalogs", lambda *dialects: _toy("warp_drive"))
    with pytest.raises(InputError, match="'warp_drive' is not a simulated quantity"):
        SimTarget(load_profile("cx6-200g"))
