"""Counter deltas of one simulated host under the real driver names of the profile's dialect.

Names follow ``/work/shared/COUNTERS.md`` (and the catalogs in ``counters/``): mlx5 (ethtool -S PFC and vport
counters, hw_counters, port counters), bnxt_re/bnxt_en (2025 names for the renamed hw counters), rxe
(hw_counters only: it has no PFC of its own). Every dialect also gets the simulator's ``sim_*`` diagnostic
counters (``counters/sim.toml``).

Invariants:
    * values are deltas over the measured interval (gauges, e.g. ``outbound_pci_stalled_rd``: the mean);
    * pause durations in µs are ``pause ratio x duration x 1e6`` (priority 3, as in Collie);
    * byte and packet counters equal rate x duration, so they agree with
      :class:`~collie.targets.base.HostResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from collie.targets.sim.model import HostAcc

PRIO: Final = 3
#: µs one pause frame covers at a refresh of half its quanta (65535 x 512 bit times at the line rate).
_QUANTA_BITS: Final = 65535 * 512 / 2


def _diag(acc: HostAcc, d: float) -> dict[str, float]:
    return {
        "sim_rx_wqe_cache_miss": acc.diag_rx_wqe * d,
        "sim_qpc_cache_miss": acc.diag_qpc * d,
        "sim_mtt_cache_miss": acc.diag_mtt * d,
        "sim_pcie_backpressure": acc.diag_pcie * d,
        "sim_pkt_pipeline_stall": acc.diag_pkt * d,
    }


def _frames(ratio: float, d: float, line: float) -> float:
    if ratio <= 0:
        return 0.0
    per_frame_s = _QUANTA_BITS / line
    return float(round(ratio * d / per_frame_s))


def _transitions(ratio: float, d: float) -> float:
    # one XOFF->XON transition per ~200 µs of pause, at least one when paused at all
    return float(max(1, round(ratio * d * 1e6 / 200.0))) if ratio > 0 else 0.0


def _int(x: float) -> float:
    return float(int(x + 0.5))


def mlx5(acc: HostAcc, d: float, line: float) -> dict[str, float]:
    """ConnectX (mlx5_core ethtool -S, mlx5_ib hw_counters, IB port counters)."""
    p = PRIO
    c = {
        "tx_vport_rdma_unicast_bytes": _int(acc.tx_wire * d),
        "tx_vport_rdma_unicast_packets": _int(acc.tx_pkts * d),
        "rx_vport_rdma_unicast_bytes": _int(acc.rx_wire * d),
        "rx_vport_rdma_unicast_packets": _int(acc.rx_pkts * d),
        f"tx_prio{p}_bytes": _int(acc.tx_wire * d),
        f"tx_prio{p}_packets": _int(acc.tx_pkts * d),
        f"rx_prio{p}_bytes": _int(acc.rx_wire * d),
        f"rx_prio{p}_packets": _int(acc.rx_pkts * d),
        f"tx_prio{p}_pause": _frames(acc.pause_tx, d, line),
        f"tx_prio{p}_pause_duration": _int(acc.pause_tx * d * 1e6),
        f"rx_prio{p}_pause": _frames(acc.pause_rx, d, line),
        f"rx_prio{p}_pause_duration": _int(acc.pause_rx * d * 1e6),
        f"rx_prio{p}_pause_transition": _transitions(acc.pause_rx, d),
        "port_xmit_data": _int(acc.tx_wire * d / 4),
        "port_rcv_data": _int(acc.rx_wire * d / 4),
        "port_xmit_packets": _int(acc.tx_pkts * d),
        "port_rcv_packets": _int(acc.rx_pkts * d),
        "out_of_buffer": 0.0,
        "out_of_sequence": _int(acc.lost_rx * d),
        "duplicate_request": _int(acc.lost_rx * d * 0.1),
        "packet_seq_err": _int(acc.lost_tx * d * 0.9),
        "implied_nak_seq_err": 0.0,
        "local_ack_timeout_err": _int(acc.lost_tx * d * 0.01),
        "rnr_nak_retry_err": 0.0,
        "roce_adp_retrans": _int(acc.lost_tx * d * 0.05),
        "rx_write_requests": _int(acc.rx_write * d),
        "rx_read_requests": _int(acc.rx_read * d),
        "rx_atomic_requests": _int(acc.rx_atomic * d),
        "np_ecn_marked_roce_packets": 0.0,
        "np_cnp_sent": 0.0,
        "rp_cnp_handled": 0.0,
        "rx_discards_phy": 0.0,
        "tx_pause_storm_warning_events": 0.0,
        "tx_pause_storm_error_events": 0.0,
        "outbound_pci_stalled_rd": round(acc.pcie_stall * 0.4, 3),
        "outbound_pci_stalled_wr": round(acc.pcie_stall, 3),
    }
    c.update(_diag(acc, d))
    return c


def bnxt_re(acc: HostAcc, d: float, line: float) -> dict[str, float]:
    """Broadcom (bnxt_re hw_counters with the 2025 names, bnxt_en ethtool -S PFC counters)."""
    p = PRIO
    c = {
        "tx_bytes": _int(acc.tx_wire * d),
        "tx_pkts": _int(acc.tx_pkts * d),
        "rx_bytes": _int(acc.rx_wire * d),
        "rx_pkts": _int(acc.rx_pkts * d),
        f"pfc_pri{p}_tx_duration_us": _int(acc.pause_tx * d * 1e6),
        f"pfc_pri{p}_tx_transitions": _transitions(acc.pause_tx, d),
        f"pfc_pri{p}_rx_duration_us": _int(acc.pause_rx * d * 1e6),
        f"pfc_pri{p}_rx_transitions": _transitions(acc.pause_rx, d),
        f"tx_pfc_ena_frames_pri{p}": _frames(acc.pause_tx, d, line),
        f"rx_pfc_ena_frames_pri{p}": _frames(acc.pause_rx, d, line),
        "continuous_roce_pause_events": 0.0,
        "resume_roce_pause_events": 0.0,
        "out_of_sequence": _int(acc.lost_rx * d),
        "duplicate_request": _int(acc.lost_rx * d * 0.1),
        "packet_seq_err": _int(acc.lost_tx * d * 0.9),
        "local_ack_timeout_err": _int(acc.lost_tx * d * 0.01),
        "rnr_nak_retry_err": 0.0,
        "implied_nak_seq_err": 0.0,
        "out_of_buffer": 0.0,
        "rx_roce_errors": 0.0,
        "rx_roce_discards": 0.0,
        f"rx_discard_packets_cos{p}": 0.0,
    }
    c.update(_diag(acc, d))
    return c


def rxe(acc: HostAcc, d: float, line: float) -> dict[str, float]:
    """soft-RoCE (rxe hw_counters; no PFC of its own)."""
    c = {
        "sent_pkts": _int(acc.tx_pkts * d),
        "rcvd_pkts": _int(acc.rx_pkts * d),
        "duplicate_request": _int(acc.lost_rx * d * 0.1),
        "out_of_seq_request": _int(acc.lost_rx * d),
        "rcvd_rnr_err": 0.0,
        "send_rnr_err": 0.0,
        "rcvd_seq_err": _int(acc.lost_tx * d * 0.9),
        "ack_deferred": 0.0,
        "retry_exceeded_err": 0.0,
        "retry_rnr_exceeded_err": 0.0,
        "completer_retry_err": _int(acc.lost_tx * d * 0.05),
        "send_err": 0.0,
        "link_downed": 0.0,
        "rdma_sends": _int(acc.tx_send * d),
        "rdma_recvs": _int(acc.rx_send * d),
    }
    c.update(_diag(acc, d))
    return c


DIALECT_COUNTERS: Final[dict[str, Callable[[HostAcc, float, float], dict[str, float]]]] = {
    "mlx5": mlx5, "bnxt_re": bnxt_re, "rxe": rxe,
}
