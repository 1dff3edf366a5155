"""Parse ``ethtool -S NETDEV`` text (ethtool prints no JSON for ``-S`` on the versions that matter).

Accepted, for every driver: an optional header line (``NIC statistics:``), then one ``name: value`` per line,
indented or not; blank lines are ignored. Per-queue lines are kept apart from port-wide ones:

* ``[3]: rx_ucast_packets: 12`` (bnxt_en rings) -> queue 3, ``rx_ucast_packets``;
* ``rx3_packets: 12`` / ``tx3_bytes`` / ``ch3_events`` (mlx5 rings and channels) -> queue 3, ``rx_packets``;
* ``rx_queue_3_packets: 12`` / ``tx_queue_3_bytes`` (ice, and other Intel drivers) -> queue 3, ``rx_packets``.

Names are stripped (mlx5 prints ``tx_pause_storm_warning_events`` with a trailing blank on some kernels).
The first occurrence of a repeated name wins. Anything else is an :class:`~collie.errors.InputError` naming
the line.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from collie.collectors.snapshot import Snapshot, now
from collie.errors import InputError

_HEADERS: Final = re.compile(r"^\s*(NIC statistics|Statistics for \S+|Standard stats for \S+)\s*:?\s*$",
                             re.IGNORECASE)
_LINE: Final = re.compile(r"^\s*(?:\[(\d+)\]:\s*)?(\S(?:.*?\S)?)\s*:\s*(-?\d+)\s*$")
_MLX5_QUEUE: Final = re.compile(r"^(rx|tx|ch|xdp|xsk|ptp)(\d+)_(.+)$")
_INTEL_QUEUE: Final = re.compile(r"^(rx|tx)_queue_(\d+)_(.+)$")


@dataclass(frozen=True)
class EthtoolStats:
    """One ``ethtool -S`` dump.

    Attributes:
        port: port-wide counters (name -> value).
        queues: queue index -> per-queue counters under their queue-free name (``rx_packets``).
    """

    port: Mapping[str, float]
    queues: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def queue_total(self, name: str) -> float | None:
        """Sum of a per-queue counter over every queue that has it, or ``None`` if none has it."""
        vals = [q[name] for q in self.queues.values() if name in q]
        return sum(vals) if vals else None


def parse_ethtool(text: str, source: str = "<ethtool -S>") -> EthtoolStats:
    """Parse ``ethtool -S`` output.

    Args:
        text: the output.
        source: a name for messages (file name or ``ethtool -S eth0``).

    Raises:
        InputError: a line that is neither a header nor ``name: value``, or no counters at all.
    """
    port: dict[str, float] = {}
    queues: dict[int, dict[str, float]] = {}
    count = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if _HEADERS.match(line) and count == 0:
            continue
        m = _LINE.match(line)
        if m is None:
            shown = line.strip()
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise InputError(f"{source}: line {lineno} is not ethtool -S output (expected 'name: value', "
                             f"got {shown!r})")
        ring, name, raw = m.group(1), m.group(2).strip(), m.group(3)
        value = int(raw)
        count += 1
        if ring is not None:
            queues.setdefault(int(ring), {}).setdefault(name, value)
            continue
        q = _MLX5_QUEUE.match(name) or _INTEL_QUEUE.match(name)
        if q is not None:
            queues.setdefault(int(q.group(2)), {}).setdefault(f"{q.group(1)}_{q.group(3)}", value)
            continue
        port.setdefault(name, value)
    if count == 0:
        raise InputError(f"{source}: no counters found; expected ethtool -S output ('name: value' lines)")
    return EthtoolStats(port, queues)


def ethtool_snapshot(stats: EthtoolStats, device: str, *, timestamp: float | None = None,
                     source: str = "ethtool") -> Snapshot:
    """The port-wide counters as a :class:`Snapshot` (per-queue counters are left out)."""
    return Snapshot(now() if timestamp is None else timestamp, dict(stats.port), source, device,
                    sources=dict.fromkeys(stats.port, "ethtool"))


def read_ethtool(netdev: str, *, timeout: float = 10.0) -> Snapshot:
    """Run ``ethtool -S NETDEV`` and parse it.

    Raises:
        InputError: ethtool is not installed, the netdev does not exist, or the output cannot be parsed.
    """
    if not netdev or netdev.startswith("-") or "/" in netdev:
        raise InputError(f"{netdev!r} is not a network interface name")
    ts = now()
    try:
        proc = subprocess.run(["ethtool", "-S", netdev], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except FileNotFoundError:
        raise InputError("ethtool is not installed; install it (package 'ethtool') to read netdev counters") \
            from None
    except subprocess.TimeoutExpired:
        raise InputError(f"ethtool -S {netdev} did not answer within {timeout:g} s") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise InputError(f"ethtool -S {netdev} failed: {msg}")
    return ethtool_snapshot(parse_ethtool(proc.stdout, f"ethtool -S {netdev}"), netdev, timestamp=ts)
