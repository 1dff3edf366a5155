"""Turning workers' reports into results: flow summaries, errors, port counters, host rates.

Shared by the local target (every flow and host) and a cross-host session (the flows and roles of one host).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from collie.model.flow import Flow
from collie.model.workload import Workload
from collie.targets.base import FlowResult
from collie.targets.verbs.counters import counter_delta
from collie.targets.verbs.engine import WorkerReport
from collie.targets.verbs.measure import FlowSummary, combine


def summaries(reports: Iterable[WorkerReport], flows: Iterable[int]) -> tuple[FlowSummary, ...]:
    """One summary per flow index of ``flows``, combining every worker's stats of it."""
    stats = [s for r in reports for s in r.stats]
    return tuple(combine(i, (s for s in stats if s.flow == i)) for i in flows)


def run_errors(reports: Iterable[WorkerReport], sums: Iterable[FlowSummary], verify: bool,
               checked_here: Iterable[int] | None = None) -> list[str]:
    """Every error of the run, one sentence each: workers' notes, error completions by status, verification
    failures, and flows not verified although asked (only flows in ``checked_here``; ``None``: every flow)."""
    errors = [e for r in reports for e in r.errors]
    checked = None if checked_here is None else set(checked_here)
    for s in sums:
        for status, n in sorted(s.wc_errors.items()):
            errors.append(f"flow {s.flow}: {n} completions with {status}")
        errors.extend(s.verify_errors)
        if verify and not s.verified and not s.verify_errors and (checked is None or s.flow in checked):
            errors.append(f"flow {s.flow}: data not verified")
    return errors


@dataclass(frozen=True)
class PortCounters:
    """The port's counter deltas over the measured interval, each counter's source, unreadable sources."""

    counters: dict[str, float]
    sources: dict[str, str]
    unreadable: dict[str, str]


def port_counters(reports: Iterable[WorkerReport], driver: str) -> PortCounters:
    """The deltas of the worker that read the counters at both edges (empty when none did)."""
    out = PortCounters({}, {}, {})
    for r in reports:
        if r.counters_before is not None and r.counters_after is not None:
            d = counter_delta(r.counters_before, r.counters_after, r.counter_seconds, driver)
            counters = d.counters()
            out = PortCounters(counters, {n: d.sources[n] for n in counters if n in d.sources},
                               dict(d.unreadable))
    return out


def flow_result(flow: Flow, s: FlowSummary) -> FlowResult:
    return FlowResult(flow=s.flow, client=flow.client.host, server=flow.server.host, bps=s.bps, pps=s.pps,
                      msg_rate=s.msg_rate, lat_p50_us=s.lat_p50_us, lat_p99_us=s.lat_p99_us,
                      lat_p999_us=s.lat_p999_us, qp_min_share=s.qp_min_share)


def host_rates(workload: Workload, sums: Iterable[FlowSummary],
               hosts: Iterable[str]) -> Mapping[str, tuple[float, float, float, float]]:
    """``(tx_bps, rx_bps, tx_pps, rx_pps)`` of each of ``hosts`` from the flows summarised in ``sums``."""
    rates = {h: [0.0, 0.0, 0.0, 0.0] for h in hosts}
    for s in sums:
        f = workload.flows[s.flow]
        sender, receiver = f.payload_sender.host, f.payload_receiver.host
        if sender in rates:
            rates[sender][0] += s.bps
            rates[sender][2] += s.pps
        if receiver in rates:
            rates[receiver][1] += s.bps
            rates[receiver][3] += s.pps
    return {h: (v[0], v[1], v[2], v[3]) for h, v in rates.items()}
