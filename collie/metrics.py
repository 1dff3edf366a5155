"""Names of the metrics the oracle reports and search strategies climb (a convention both sides share).

``throughput`` is the fraction of the target's ceiling a run reached (lower is more anomalous);
``diag:<counter>`` is a NIC-internal diagnostic counter's rate per unit of work (higher is closer to trouble).
"""

from __future__ import annotations

from typing import Final

THROUGHPUT: Final = "throughput"
DIAG_PREFIX: Final = "diag:"
