"""What a worker measured, how workers' measurements combine, and the rate math (pure: no pyverbs needed).

Invariants:
    * a :class:`FlowStats` counts only work requests whose completion was seen inside the measured interval
      (after warm-up, before the deadline); ``seconds`` is that interval's length;
    * latencies are completion latencies of signalled WRs (post to poll), in nanoseconds, a bounded sample;
    * a run is **engine bound** when the engine, not the device, limited it: the send queues were full (the
      device was the one holding back) for less than :data:`SATURATION_MIN` of the engine's loop iterations,
      *and* less than :data:`VERBS_TIME_MIN` of the measured interval was spent inside verbs calls
      (``post_send``, ``post_recv``, ``poll_cq``). The second condition matters for software devices such as
      rxe, whose "device" work runs inside ``post_send`` on the posting thread: their queues never fill, yet
      the time goes to the device, not to the engine's Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

#: A run whose send queues were full for less than this fraction of the loop iterations was limited by the
#: engine (Python could not keep the device busy).
SATURATION_MIN: Final = 0.5
#: ... unless at least this fraction of the measured interval was spent inside verbs calls.
VERBS_TIME_MIN: Final = 0.5
#: Latency samples kept per worker and flow.
MAX_LAT_SAMPLES: Final = 100_000


@dataclass(frozen=True)
class FlowStats:
    """One worker's measurement of (its share of) one flow.

    Attributes:
        flow: index into ``Workload.flows``.
        seconds: length of the measured interval.
        wrs, bytes, packets: completed in the measured interval.
        lat_ns: a sample of completion latencies in ns.
        loops, full_loops: engine loop iterations in the measured interval, and those in which no QP of the
            flow had room for another chain.
        verbs_s: seconds of the measured interval this worker spent inside verbs calls.
        wc_errors: error completions by status name.
        verify_errors: data-verification failures (empty when verified or not asked).
        verified: data was checked and matched.
        measures: the stats' counts measure the flow's rate: the client end's completions, or on UD (which
            drops) the server end's receive completions, what arrived. False: a server end alone on its host in
            a cross-host RC/UC run (only its errors and its verification count). A UD client end alone measures
            what it sent and its latencies; a cross-host run takes the rate from the server's host.
        checks: this part holds the flow's destination buffers, where data is verified.
        qp_wrs: WRs each of this part's client QPs completed in the measured interval (per-QP fairness).
    """

    flow: int
    seconds: float
    wrs: int
    bytes: int
    packets: int
    lat_ns: tuple[int, ...] = ()
    loops: int = 0
    full_loops: int = 0
    verbs_s: float = 0.0
    wc_errors: dict[str, int] = field(default_factory=dict)
    verify_errors: tuple[str, ...] = ()
    verified: bool = False
    measures: bool = True
    checks: bool = True
    qp_wrs: tuple[int, ...] = ()


@dataclass(frozen=True)
class FlowSummary:
    """All workers' measurements of one flow combined."""

    flow: int
    bps: float
    pps: float
    msg_rate: float
    lat_p50_us: float
    lat_p99_us: float
    lat_p999_us: float
    saturation: float
    verbs_fraction: float
    wc_errors: dict[str, int]
    verify_errors: tuple[str, ...]
    verified: bool
    qp_min_share: float = 0.0


def percentile(sorted_values: Sequence[int], q: float) -> float:
    """Nearest-rank percentile ``q`` (0 < q <= 100) of ascending values; 0.0 for no values."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-int(q * len(sorted_values) * 1000) // 100_000))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def combine(flow: int, parts: Iterable[FlowStats]) -> FlowSummary:
    """Combine workers' stats of one flow: rates add (workers run the same interval), latencies pool,
    saturation is the loop-weighted mean; rates come from measuring parts only, errors from every part, and the
    flow is verified when some part checked its data and every part that checked found it intact."""
    every = list(parts)
    ps = [p for p in every if p.measures]
    bps = sum(p.bytes * 8 / p.seconds for p in ps if p.seconds > 0)
    pps = sum(p.packets / p.seconds for p in ps if p.seconds > 0)
    msg = sum(p.wrs / p.seconds for p in ps if p.seconds > 0)
    lat = sorted(v for p in ps for v in p.lat_ns)
    loops = sum(p.loops for p in ps)
    sat = sum(p.full_loops for p in ps) / loops if loops else 0.0
    wall = sum(p.seconds for p in ps)
    verbs = min(1.0, sum(p.verbs_s for p in ps) / wall) if wall > 0 else 0.0
    errs: dict[str, int] = {}
    for p in every:
        for k, v in p.wc_errors.items():
            errs[k] = errs.get(k, 0) + v
    verify = tuple(e for p in every for e in p.verify_errors)
    checking = [p for p in every if p.checks]
    per_qp = [n for p in ps for n in p.qp_wrs]
    mean_qp = sum(per_qp) / len(per_qp) if len(per_qp) > 1 else 0.0
    verified = bool(checking) and all(p.verified for p in checking) and not verify
    return FlowSummary(
        flow=flow, bps=bps, pps=pps, msg_rate=msg,
        lat_p50_us=percentile(lat, 50) / 1e3, lat_p99_us=percentile(lat, 99) / 1e3,
        lat_p999_us=percentile(lat, 99.9) / 1e3, saturation=sat, verbs_fraction=verbs, wc_errors=errs,
        verify_errors=verify,
        verified=verified, qp_min_share=min(per_qp) / mean_qp if mean_qp else 0.0,
    )


def engine_bound(summaries: Iterable[FlowSummary]) -> bool:
    """True when, for any flow, the send queues were rarely full and little time went into verbs calls: the
    engine's Python, not the device, set that flow's rate (see the module docstring)."""
    return any(s.saturation < SATURATION_MIN and s.verbs_fraction < VERBS_TIME_MIN for s in summaries)
