"""Calibration: measure a target's ceilings with simple perftest-like workloads before a campaign.

Per direction kind (one-way, bidirectional, loopback: their host pairs from :data:`collie.model.space.DIRECTION_PAIRS`)
three runs, as the field does it: large RC WRITEs for bits/s, many-QP 64 B RC WRITEs with post lists for
packets/s, and one 64 B RC READ at depth 1 on one QP for the round trip a READ or atomic holds its slot of the
QP's window (``ib_read_lat``). On the first kind, two runs of 64 B RC WRITEs on one QP measure what one QP does
alone (``ib_write_bw -s 64``): one WR per post, then post lists of :data:`QP_LIST`; the cost of a WR and of a
doorbell follow. On a target with atomics, one more run on the first kind measures the atomic operation rate of one
responder (8 B fetch-adds on many QPs with deep post lists). The clean runs' loss,
retransmission and receiver-starvation (RNR) counters are the baseline the oracle compares against,
``host:counter`` -> events/s. A baseline recorded before a counter was kept (a campaign calibrated before
receiver starvation was judged) lacks its key, which the oracle reads as 0: that counter is judged against the
floor alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from collie.collectors.catalog import Catalog
from collie.collectors.normalize import catalog_for
from collie.model import rocev2
from collie.model.flow import ATOMIC_BYTES, Endpoint, Flow
from collie.model.space import DIRECTION_PAIRS
from collie.model.workload import Workload
from collie.oracle import (
    DIRECTION_KINDS,
    Ceilings,
    Oracle,
    Thresholds,
    direction_kind,
    event_rates,
    normalized_hosts,
    receivers,
)
from collie.targets.base import FlowResult, RunResult, Target, TargetInfo

BANDWIDTH_SIZE: Final = 1 << 20
RATE_SIZE: Final = 64
ROUND_TRIP_SIZE: Final = 64
MTU: Final = 4096
#: The post-list length of the second one-QP run (the first posts one WR at a time).
QP_LIST: Final = 32
CALIBRATION_SECONDS: Final = 5.0


class Measure(StrEnum):
    """What one calibration run measures."""

    BITS = "bps"
    PACKETS = "pps"
    ROUND_TRIP = "rtt"
    ATOMICS = "atomic"
    QP_SINGLE = "qp"
    QP_LIST = "qp-list"


def calibration_workloads(kinds: Iterable[str] = DIRECTION_KINDS, atomics: bool = True
                          ) -> list[tuple[str, Measure, Workload]]:
    """``(kind, measure, workload)`` for every calibration run of the direction kinds ``kinds`` (default: all),
    with the two one-QP runs on the first of them, and the atomic rate's when the target has ``atomics``."""
    out: list[tuple[str, Measure, Workload]] = []
    for kind in (k for k in DIRECTION_KINDS if k in set(kinds)):
        pairs = DIRECTION_PAIRS[kind]
        bw = Workload(tuple(Flow(Endpoint(c), Endpoint(s), sizes=(BANDWIDTH_SIZE,), qps=4, mtu=MTU,
                                 mrs=4, mr_size=BANDWIDTH_SIZE, sq_depth=128, rq_depth=128) for c, s in pairs),
                      name=f"calibrate-{kind}-bandwidth")
        rate = Workload(tuple(Flow(Endpoint(c), Endpoint(s), sizes=(RATE_SIZE,), qps=64, batch=32,
                                   sq_depth=256, rq_depth=256, signal_every=32, mtu=MTU, mrs=64,
                                   mr_size=4096) for c, s in pairs),
                        name=f"calibrate-{kind}-rate")
        rtt = Workload(tuple(Flow(Endpoint(c), Endpoint(s), opcodes=("READ",), sizes=(ROUND_TRIP_SIZE,),
                                  sq_depth=1, rq_depth=1, mtu=MTU, mr_size=4096) for c, s in pairs),
                       name=f"calibrate-{kind}-round-trip")
        out += [(kind, Measure.BITS, bw), (kind, Measure.PACKETS, rate), (kind, Measure.ROUND_TRIP, rtt)]
    if out:
        first = out[0][0]
        for measure, batch, name in ((Measure.QP_SINGLE, 1, "qp-rate"), (Measure.QP_LIST, QP_LIST, "qp-post-list")):
            one = Workload(tuple(Flow(Endpoint(c), Endpoint(s), sizes=(RATE_SIZE,), batch=batch, sq_depth=256,
                                      rq_depth=256, signal_every=batch, mtu=MTU, mr_size=4096)
                                 for c, s in DIRECTION_PAIRS[first][:1]),
                           name=f"calibrate-{first}-{name}")
            out.append((first, measure, one))
    if atomics and out:
        fa = Workload(tuple(Flow(Endpoint(c), Endpoint(s), opcodes=("ATOMIC_FA",), sizes=(ATOMIC_BYTES,), qps=64,
                                 batch=32, sq_depth=256, rq_depth=256, signal_every=32, mtu=MTU, mrs=64,
                                 mr_size=4096) for c, s in DIRECTION_PAIRS[first]),
                      name=f"calibrate-{first}-atomics")
        out.append((first, Measure.ATOMICS, fa))
    return out


def wire_bps_from_payload(payload_bps: float) -> float:
    """Wire bits/s (payload + headers) of a calibration bandwidth run."""
    return payload_bps / rocev2.efficiency([BANDWIDTH_SIZE], MTU)


def catalog_of(info: TargetInfo) -> Catalog:
    """The counter catalog a target's results are read with (its dialect, plus ``sim`` on the simulator, local or
    on remote sim hosts)."""
    return catalog_for(info.counter_dialect, simulated=info.simulated)


def calibrated_oracle(run: Callable[[Workload], RunResult], catalog: Catalog, info: TargetInfo,
                      thresholds: Thresholds, kinds: Iterable[str] = DIRECTION_KINDS) -> Oracle:
    """Run every calibration workload of the direction kinds ``kinds`` through ``run`` and build the oracle
    from what they measured.

    Ceilings are the best receiving (WRITE) or responding (atomic) host's rates per direction kind, the round trip
    the lowest READ latency p50 of its run, the window ``info.max_rd_atomic``, a QP's rates its one flow's
    requests/s; the baseline is the highest loss,
    retransmission and receiver-starvation rate any clean calibration run showed, per counter and host, read
    from the counters' normal form. An oracle calibrated for some kinds only judges only workloads of those kinds
    (see :func:`kinds_of`).
    """
    wire: dict[str, float] = {}
    pps: dict[str, float] = {}
    rtt: dict[str, float] = {}
    atomic_ops = 0.0
    qp_rates: dict[Measure, float] = {}
    baseline: dict[str, float] = {}
    for kind, measure, workload in calibration_workloads(kinds, info.atomics):
        result = run(workload)
        if measure is Measure.BITS:
            wire[kind] = wire_bps_from_payload(_best(result, lambda fr: fr.bps))
        elif measure is Measure.PACKETS:
            pps[kind] = _best(result, lambda fr: fr.pps)
        elif measure is Measure.ROUND_TRIP and (best := min((fr.lat_p50_us for fr in result.flows), default=0.0)):
            rtt[kind] = best
        elif measure is Measure.ATOMICS:
            atomic_ops = _best(result, lambda fr: fr.msg_rate)
        elif measure in (Measure.QP_SINGLE, Measure.QP_LIST):
            qp_rates[measure] = max((fr.msg_rate for fr in result.flows), default=0.0)
        for name, rate in event_rates(normalized_hosts(result, catalog, info.line_rate_bps)).items():
            baseline[name] = max(baseline.get(name, 0.0), rate)
    ceilings = Ceilings(wire, pps, info.line_rate_bps, rtt, info.max_rd_atomic, atomic_ops,
                        *qp_costs(qp_rates.get(Measure.QP_SINGLE, 0.0), qp_rates.get(Measure.QP_LIST, 0.0)))
    return Oracle(catalog, ceilings, thresholds, baseline)


def qp_costs(single: float, listed: float) -> tuple[float, float]:
    """A QP's cost per WR and per doorbell (post), in microseconds, from its requests/s posting one WR at a time
    (``single``) and post lists of :data:`QP_LIST` (``listed``): ``1 / single = wr + doorbell`` and
    ``1 / listed = wr + doorbell / QP_LIST``. Neither is negative (a noisy pair whose post lists were no faster
    puts it all on the WR); ``(0, 0)`` when either run moved nothing (no per-QP bound)."""
    if single <= 0 or listed <= 0:
        return 0.0, 0.0
    t1, tl = 1e6 / single, 1e6 / listed
    doorbell = max((t1 - tl) * QP_LIST / (QP_LIST - 1), 0.0)
    return max(t1 - doorbell, 0.0), min(doorbell, t1)


def _best(result: RunResult, rate: Callable[[FlowResult], float]) -> float:
    """The highest total ``rate`` of a calibration run's flows into one server (the payload's receiver of a
    WRITE, the responder of an atomic)."""
    return max((sum(rate(fr) for fr in result.flows if fr.server == h) for h in {fr.server for fr in result.flows}),
               default=0.0)


@dataclass(frozen=True)
class Calibration:
    """An oracle and what making it cost.

    Attributes:
        oracle: judges results of the target it was made for.
        runs: the calibration runs it took (0: its ceilings were taken from a campaign that measured them).
    """

    oracle: Oracle
    runs: int


def calibrate_target(target: Target, thresholds: Thresholds, kinds: Iterable[str] = DIRECTION_KINDS,
                     seconds: float = CALIBRATION_SECONDS) -> Calibration:
    """Calibrate an oracle on the entered ``target`` for the direction kinds ``kinds`` (three runs of ``seconds``
    each per kind, one more for atomics; see :func:`calibrated_oracle`), counting the runs. The campaign
    calibrates through its journaled trials instead; everything else (``run``, ``replay``, ``minimize``)
    calibrates here.

    Raises:
        Unsupported: the target cannot run a calibration workload.
    """
    info = target.describe()
    runs = 0

    def one(workload: Workload) -> RunResult:
        nonlocal runs
        runs += 1
        return target.run(workload, seconds)

    oracle = calibrated_oracle(one, catalog_of(info), info, thresholds, kinds)
    return Calibration(oracle, runs)


def recorded_oracle(info: TargetInfo, ceilings: Ceilings, baseline: Mapping[str, float],
                    thresholds: Thresholds) -> Calibration:
    """An oracle from ceilings and a baseline a campaign calibrated on the target ``info`` describes (no run)."""
    return Calibration(Oracle(catalog_of(info), ceilings, thresholds, dict(baseline)), 0)


def kinds_of(workload: Workload) -> tuple[str, ...]:
    """The direction kinds whose ceilings judging ``workload`` needs (one per receiving host), in
    :data:`~collie.oracle.DIRECTION_KINDS` order: what a single run calibrates (:func:`calibration_workloads`)."""
    needed = {direction_kind(workload, host) for host in receivers(workload)}
    return tuple(k for k in DIRECTION_KINDS if k in needed)
