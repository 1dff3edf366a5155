"""ethtool -S text: the real mlx5 and bnxt_en dumps, ice-style names, and garbage."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.collectors.catalog import load_catalog
from collie.collectors.ethtool import ethtool_snapshot, parse_ethtool
from collie.errors import InputError


def test_mlx5_connectx4lx_dump_without_header_or_indent(fixtures: Path) -> None:
    text = (fixtures / "ethtool_S_mlx5_core_connectx4lx.txt").read_text()
    stats = parse_ethtool(text, "mlx5.txt")
    assert stats.port["rx_bytes_phy"] == 2202570777997
    assert stats.port["tx_pci_signal_integrity"] == 34
    assert stats.port["outbound_pci_stalled_rd"] == 0
    assert stats.port["rx_prio0_packets"] == 845715962
    assert "rx_prio0_pause" not in stats.port  # PFC was off on that port
    # rings: rx0..rx15 and tx0..tx15 are per-queue, not port-wide
    assert "rx0_packets" not in stats.port
    assert sorted(stats.queues) == list(range(16))
    assert stats.queues[3]["rx_packets"] == 55915567
    assert stats.queues[15]["tx_xmit_more"] == 5530
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(stats.port) + sum(len(q) for q in stats.queues.values()) == len(lines)
    cat = load_catalog("mlx5")
    assert cat.lookup("rx_vport_rdma_unicast_bytes").role == "bytes_rx"  # type: ignore[union-attr]
    known = [n for n in stats.port if cat.lookup(n) is not None]
    assert "rx_discards_phy" in known and "outbound_pci_stalled_wr_events" in known


def test_bnxt_en_dump_with_header_and_ring_lines(fixtures: Path) -> None:
    text = (fixtures / "ethtool_S_bnxt_en.txt").read_text()
    stats = parse_ethtool(text, "bnxt.txt")
    assert stats.queues[0]["rx_ucast_packets"] == 10198513532
    assert stats.queues[0]["rx_discards"] == 11763190
    assert "rx_ucast_packets" not in stats.port
    assert stats.port["pfc_pri3_rx_duration_us"] == 0
    assert stats.port["rx_pfc_ena_frames_pri7"] == 0
    assert stats.port["rx_buffer_passed_threshold"] == 417
    assert stats.port["continuous_roce_pause_events"] == 0
    assert stats.queue_total("rx_discards") == sum(q["rx_discards"] for q in stats.queues.values())
    assert stats.queue_total("no_such_counter") is None
    cat = load_catalog("bnxt_re")
    assert cat.lookup("pfc_pri3_tx_duration_us").priority == 3  # type: ignore[union-attr]
    for name in ("rx_pfc_ena_frames_pri0", "continuous_roce_pause_events", "rx_discard_packets_cos0"):
        assert name in stats.port and cat.lookup(name) is not None


def test_grep_prio_excerpt_is_ethtool_text(fixtures: Path) -> None:
    text = (fixtures / "hw_counters_and_ethtool_prio_byteps_issue179_EXCERPT.txt").read_text()
    block = text.split("```")[1]
    stats = parse_ethtool(block, "excerpt")
    assert stats.port["rx_prio0_bytes"] == 88178050405854
    assert len(stats.port) == 32


def test_ice_names_with_nic_suffix_and_queue_lines() -> None:
    text = """NIC statistics:
     rx_unicast: 10
     tx_queue_0_packets: 5
     tx_queue_0_bytes: 500
     rx_queue_11_packets: 7
     rx_bytes.nic: 123456
     rx_priority_3_xoff.nic: 42
     tx_priority_3_xoff.nic: 9
     link_xoff_rx.nic: 0
"""
    stats = parse_ethtool(text)
    assert stats.queues[0] == {"tx_packets": 5, "tx_bytes": 500}
    assert stats.queues[11] == {"rx_packets": 7}
    assert stats.port["rx_priority_3_xoff.nic"] == 42
    spec = load_catalog("irdma").lookup("rx_priority_3_xoff.nic")
    assert spec is not None and spec.role == "pause_frames_rx" and spec.priority == 3


def test_trailing_blank_in_name_repeated_names_and_snapshot() -> None:
    stats = parse_ethtool("tx_pause_storm_warning_events : 3\nfoo: 1\nfoo: 2\n")
    assert stats.port == {"tx_pause_storm_warning_events": 3, "foo": 1}
    snap = ethtool_snapshot(stats, "eth0", timestamp=5.0)
    assert snap.device == "eth0" and snap.timestamp == 5.0 and snap.values["foo"] == 1


@pytest.mark.parametrize(("text", "message"), [
    ("", "no counters found"),
    ("NIC statistics:\n", "no counters found"),
    ("rx_bytes: 12\nthis is not ethtool\n", "line 2 is not ethtool -S output"),
    ("rx_bytes: twelve\n", "line 1 is not ethtool -S output"),
    ("\x00\x01\x02 binary", "line 1 is not ethtool -S output"),
    ("link mlx5_0/1 rx_write_requests 0\n", "line 1 is not ethtool -S output"),
])
def test_garbage_gives_one_sentence(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_ethtool(text, "junk.txt")
    assert message in str(exc.value) and str(exc.value).startswith("junk.txt: ")
    assert "\n" not in str(exc.value)
