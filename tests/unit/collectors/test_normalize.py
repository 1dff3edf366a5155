"""Normalized view: pause ratios (durations or XOFF estimates), traffic, events, PCIe gauges, None not 0."""

from __future__ import annotations

import pytest

from collie.collectors.catalog import load_catalog, merge_catalogs, parse_catalog
from collie.collectors.normalize import NormalizedCounters, catalog_for, normalize
from collie.errors import InputError
from collie.tomlio import parse_toml

MLX5 = load_catalog("mlx5")
BNXT = load_catalog("bnxt_re")
IRDMA = load_catalog("irdma")
RXE = load_catalog("rxe")


def test_empty_counters_give_none_everywhere_never_zero() -> None:
    n = normalize({}, 2.0, MLX5)
    for key, value in n.to_dict().items():
        if key in ("seconds", "pause_estimated_rx", "pause_estimated_tx", "pause_basis_rx", "pause_basis_tx",
                   "pause_readable", "notes"):
            continue
        assert value in (None, {}, []), key
    assert n.pause_basis_rx == "none" and not n.pause_estimated_tx
    assert not n.pause_readable
    assert n.notes == ("pause counters were not readable: none of this driver's pause counters is among the "
                       "host's counters (mlx5 and bnxt_en count pause in 'ethtool -S' of the port's netdev), so "
                       "no pause verdict is possible",)


def test_mlx5_pause_from_durations_per_priority() -> None:
    counters = {"tx_prio3_pause_duration": 500_000.0, "rx_prio3_pause_duration": 20_000.0,
                "tx_prio3_pause": 1000.0, "rx_prio0_pause_duration": 0.0}
    n = normalize(counters, 2.0, MLX5)
    assert n.pause_ratio_tx == {3: pytest.approx(0.25)}
    assert n.pause_ratio_rx == {3: pytest.approx(0.01), 0: 0.0}
    assert n.max_pause_ratio_tx == pytest.approx(0.25) and n.max_pause_ratio_rx == pytest.approx(0.01)
    assert n.pause_basis_tx == "duration" and not n.pause_estimated_tx
    assert n.pause_frames_tx_per_s == 500 and n.pause_frames_rx_per_s is None
    assert n.global_pause_ratio_tx is None
    assert n.to_dict()["pause_ratio_tx_p3"] == pytest.approx(0.25)


def test_pause_ratio_is_clipped_to_one() -> None:
    n = normalize({"tx_prio3_pause_duration": 5e6}, 1.0, MLX5)
    assert n.pause_ratio_tx[3] == 1.0


def test_bnxt_pause_durations_and_storm_and_old_names() -> None:
    counters = {"pfc_pri5_rx_duration_us": 100_000.0, "continuous_roce_pause_events": 2.0,
                "to_retransmits": 30.0, "dup_req": 10.0, "rx_cnp_pkts": 40.0, "tx_cnp_pkts": 8.0,
                "rx_ecn_marked_pkts": 16.0, "max_retry_exceeded": 1.0}
    n = normalize(counters, 1.0, BNXT)
    assert n.pause_ratio_rx == {5: pytest.approx(0.1)}
    assert n.storm_events == 2
    assert n.loss_per_s == 30 and n.retransmission_per_s == 10
    assert n.cnp_rx_per_s == 40 and n.cnp_tx_per_s == 8 and n.ecn_marked_per_s == 16
    assert n.fatal_events == 1
    assert n.uncatalogued == ()


def test_ice_xoff_frames_upper_bound_estimate_is_labelled() -> None:
    counters = {"tx_priority_3_xoff.nic": 100.0, "rx_priority_3_xoff.nic": 0.0}
    frames_only = normalize(counters, 1.0, IRDMA)
    assert frames_only.pause_ratio_tx == {} and frames_only.pause_basis_tx == "frames-only"
    assert frames_only.pause_frames_tx_per_s == 100
    assert any("frames only" in note for note in frames_only.notes)
    est = normalize(counters, 1.0, IRDMA, line_rate_bps=100e9)
    expected = 100 * 65535 * 512 / 100e9
    assert est.pause_ratio_tx == {3: pytest.approx(expected)}
    assert est.pause_estimated_tx and est.pause_basis_tx == "xoff-estimate"
    assert est.pause_ratio_rx == {3: 0.0}
    assert any("upper-bound estimate" in note for note in est.notes)
    link = normalize({"link_xoff_rx.nic": 1e9}, 1.0, IRDMA, line_rate_bps=25e9)
    assert link.global_pause_ratio_rx == 1.0 and link.max_pause_ratio_rx == 1.0


def test_traffic_prefers_vport_rdma_then_port_counters_with_octets_scaled() -> None:
    n = normalize({"rx_vport_rdma_unicast_bytes": 1e9, "rx_bytes_phy": 5e9, "port_rcv_data": 1e6}, 2.0, MLX5)
    assert n.bytes_rx_per_s == 5e8
    n = normalize({"port_rcv_data": 1e6, "port_xmit_data": 2e6}, 2.0, MLX5)
    assert n.bytes_rx_per_s == 2e6 and n.bytes_tx_per_s == 4e6  # octets/4 x 4 / 2 s
    n = normalize({"rx_prio0_bytes": 10.0, "rx_prio3_bytes": 30.0}, 1.0, MLX5)
    assert n.bytes_rx_per_s == 40
    assert n.bytes_tx_per_s is None


def test_irdma_ipv4_and_ipv6_octets_are_summed() -> None:
    n = normalize({"ip4InOctets": 0.0, "ip6InOctets": 800.0, "rx_bytes.nic": 5000.0, "cnpSent": 4.0}, 2.0,
                  IRDMA)
    assert n.bytes_rx_per_s == 400
    assert n.cnp_tx_per_s == 2 and n.loss_per_s is None  # irdma has no RoCE loss counters: unknown, not 0


def test_rxe_events_and_pcie_gauges_and_diagnostics() -> None:
    n = normalize({"rcvd_seq_err": 4.0, "out_of_seq_request": 6.0, "duplicate_request": 2.0,
                   "send_rnr_err": 8.0, "sent_pkts": 1000.0, "retry_exceeded_err": 0.0}, 2.0, RXE)
    assert n.loss_per_s == 5 and n.retransmission_per_s == 1 and n.receiver_starvation_per_s == 4
    assert n.packets_tx_per_s == 500 and n.bytes_tx_per_s is None and n.fatal_events == 0
    m = normalize({"outbound_pci_stalled_rd": 12.0, "outbound_pci_stalled_wr": 3.0,
                   "outbound_pci_stalled_rd_events": 4.0, "out_of_buffer": 10.0, "rx_discards_phy": 6.0},
                  2.0, MLX5)
    assert m.pcie_stall_pct == {"outbound_pci_stalled_rd": 12.0, "outbound_pci_stalled_wr": 3.0}
    assert m.max_pcie_stall_pct == 12.0 and m.pcie_events == 4
    assert m.diagnostic_per_s["outbound_pci_stalled_rd"] == 12.0  # gauge: level, not a rate
    assert m.diagnostic_per_s["out_of_buffer"] == 5.0
    assert m.drops == 6 and m.drops_per_s == 3 and m.receiver_starvation_per_s == 5


def test_none_values_and_unknown_names() -> None:
    n = normalize({"np_cnp_sent": None, "mystery": 3.0}, 1.0, MLX5)  # type: ignore[dict-item]
    assert n.cnp_tx_per_s is None and n.uncatalogued == ("mystery",)


def test_prefixed_duplicates_do_not_override_the_exact_name() -> None:
    n = normalize({"rx_bytes": 100.0, "ethtool:rx_bytes": 9999.0}, 1.0, BNXT)
    assert n.bytes_rx_per_s == 100
    n = normalize({"ethtool:rx_bytes": 50.0}, 1.0, BNXT)
    assert n.bytes_rx_per_s == 50


def test_sim_style_diagnostics_through_a_merged_catalog() -> None:
    sim = parse_catalog(parse_toml('''
driver = "toy_sim"
description = "x"
[[counter]]
name = "sim_qpc_cache_miss"
source = "sim"
kind = "monotonic"
unit = "events"
role = "diagnostic"
meaning = "QP context cache misses"
diagnostic = true
''', "t"), "t")
    cat = merge_catalogs([MLX5, sim])
    n = normalize({"sim_qpc_cache_miss": 300.0, "tx_prio3_pause_duration": 1000.0}, 3.0, cat)
    assert n.diagnostic_per_s["sim_qpc_cache_miss"] == 100
    assert n.pause_ratio_tx[3] == pytest.approx(1000e-6 / 3)
    assert catalog_for("mlx5").driver == "mlx5"
    assert catalog_for("mlx5", simulated=True).lookup("np_cnp_sent") is not None


def test_interval_must_be_positive() -> None:
    with pytest.raises(InputError, match="must be positive"):
        normalize({}, 0.0, MLX5)


def test_record_is_frozen() -> None:
    n = normalize({}, 1.0, MLX5)
    with pytest.raises(AttributeError):
        n.seconds = 2.0  # type: ignore[misc]
    assert isinstance(n, NormalizedCounters)


def test_every_counter_a_quantity_rests_on_has_a_source() -> None:
    counters = {"rx_vport_rdma_unicast_bytes": 1e9, "port_rcv_packets": 5.0, "ethtool:out_of_sequence": 3.0,
                "tx_prio3_pause_duration": 10.0, "outbound_pci_stalled_rd": 1.0}
    n = normalize(counters, 1.0, MLX5, sources={"rx_vport_rdma_unicast_bytes": "rdma-stat",
                                                "ethtool:out_of_sequence": "ethtool"})
    assert n.basis["bytes_rx_per_s"] == ("rx_vport_rdma_unicast_bytes",)
    assert n.basis["packets_rx_per_s"] == ("port_rcv_packets",)
    assert n.sources == {"rx_vport_rdma_unicast_bytes": "rdma-stat",  # what the host said
                         "port_rcv_packets": "port",  # what the catalog declares, where the host said nothing
                         "out_of_sequence": "ethtool", "tx_prio3_pause_duration": "ethtool",
                         "outbound_pci_stalled_rd": "ethtool"}
    assert set(n.sources) == n.counters_used()
