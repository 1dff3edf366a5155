"""What a report says about one anomaly, derived once from its case record and its campaign.

Every renderer (HTML, Markdown, JSON, JUnit, the comparison) reads these facts, so all formats say the same
thing: the leading symptom and its magnitude, the MFS in words, the minimal case, the exact replay command, the
target's fingerprint and the machines that played each role, the counters that moved on each host (with their
units) and the perftest lines.

Numbering: a find is placed by its trial number (the journal's, the one the plots' x axis shows); the number of
budgeted experiments spent by then is given beside it.

The verdict a card shows is the minimal case's own (``evidence.json``'s ``case``); a folder from before case
records had one shows the original find's, and says so (:attr:`AnomalyFacts.verdict_of`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from collie.collectors.catalog import Catalog
from collie.errors import CollieError
from collie.mfs import MFS, Condition
from collie.model.flow import Flow
from collie.model.units import format_bytes
from collie.model.workload import Workload
from collie.oracle import Symptom, Verdict
from collie.report.load import CampaignData
from collie.report.machines import LOCAL, Machines, machines_of
from collie.report.perftest import PerftestLines, perftest_lines
from collie.storage.campaign import ANOMALIES
from collie.storage.case import CaseRecord, Hit, HitKind
from collie.storage.records import TrialRecord, TrialState
from collie.targets.base import TargetInfo

#: How a person names each feature an MFS condition can be about.
_NOUNS: Final = {
    "transport": "transport", "opcode": "opcode", "flows": "flows", "hosts": "hosts",
    "qps_total": "queue pairs in all", "qps_flow": "queue pairs per flow", "qps_host": "queue pairs per host",
    "batch": "work requests per post (batch)", "sges": "scatter/gather entries per request",
    "sge_bytes": "bytes per scatter/gather entry", "wq_depth": "send queue depth", "rq_depth": "receive queue depth",
    "mtu": "path MTU", "max_msg": "largest message", "min_msg": "smallest message",
    "sizes": "message sizes per flow", "mrs_host": "memory regions per host", "mr_size": "memory region size",
    "mr_footprint": "registered memory per host", "processes": "processes per host",
    "inline": "inline data size", "signal_every": "work requests per signalled completion",
}
_FLAGS: Final = {
    "size_mix": "small and large messages mixed", "bidirectional": "traffic both ways between two hosts",
    "loopback": "a flow from a host to itself", "incast": "a host receiving from itself and from another host",
    "remote_numa": "buffers on the other NUMA socket", "gpu": "buffers in GPU memory",
    "burst": "traffic in on/off bursts",
}
#: Each symptom kind in a headline.
_SYMPTOMS: Final = {"pause": "PFC pause", "low_throughput": "low throughput", "loss": "loss",
                    "retransmission": "retransmissions", "rnr": "receiver not ready",
                    "isolation": "victim slowed by its aggressor", "straggler": "straggler"}
#: A counter's catalog unit as a report writes it beside its value.
UNIT_WORDS: Final = {"bytes": "bytes", "octets/4": "4-byte words", "packets": "packets", "frames": "frames",
                     "us": "µs", "ms": "ms", "percent": "%", "events": "events"}
_BYTES: Final = {"sge_bytes", "mtu", "max_msg", "min_msg", "mr_size", "mr_footprint", "inline"}
#: The fingerprint rows of a card, in order: (label, TargetInfo field or ``details`` key).
FINGERPRINT_ROWS: Final = (("NIC", "nic_model"), ("firmware", "firmware"), ("driver", "driver"),
                           ("kernel", "kernel"), ("PCIe", "pcie"), ("line rate", "line_rate_bps"))


@dataclass(frozen=True)
class MovedCounter:
    """A counter that moved during the case's run on one host (``unit``: its catalog unit in words, ``""``:
    unknown)."""

    host: str
    end: str
    name: str
    delta: float
    source: str
    unit: str = ""


@dataclass(frozen=True)
class AnomalyFacts:
    """One anomaly, as every report format shows it.

    Attributes:
        anomaly_id, signature, confirmed: as the case records them.
        leading: ``kind@end`` of the strongest symptom (``""`` when no verdict is recorded).
        symptom: the strongest symptom of the verdict shown (None: none recorded).
        magnitude: how far past its threshold it is (1.0 at the threshold; the oracle's score).
        symptom_text: the symptom and its magnitude in one sentence.
        headline: the symptom and where, in a few words (``PFC pause on node-b (mlx5_0:1, receiver)``).
        symptom_size: the symptom's size with its unit (``paused 11.72% of the time``).
        mfs: the minimal feature set (None: not minimized).
        mfs_words: the MFS as a sentence.
        case_toml: ``case.toml`` as text; case_flows each flow in words (a pattern: two lines,
            :func:`workload_lines`); case_key its workload key; case_name
            its name.
        found_at: budgeted experiments spent when it was found (None: unknown).
        found_trial: the trial number of the run that found it (None: unknown).
        folder: the anomaly's folder; replay: the exact ``collie replay`` command (on the target it was found on).
        target_spec: where it was found; fingerprint: that target's fingerprint (None: unknown).
        machines: the machines that played its roles, and whether they were simulated.
        hosts: per host, the evidence the oracle kept (end, rates, pause ratios, counters).
        moved: every counter that moved on each host, largest first per host.
        throughput: the case's throughput as a fraction of the calibrated ceiling (None: unknown).
        perftest: the perftest lines of the case, or what perftest lacks.
        verdict_of: ``case`` (the minimal case's own runs) or ``original`` (the original find's run).
        further_hits: the campaign's later finds that were this anomaly (docs/search.md, "the same anomaly").
        collective_text: a pattern's figures in one sentence (busbw and algbw as nccl-tests, the reference and
            slowest link, the spread; ``""``: not a pattern).
    """

    anomaly_id: str
    signature: str
    confirmed: bool
    leading: str
    symptom: Symptom | None
    magnitude: float
    symptom_text: str
    headline: str
    symptom_size: str
    mfs: MFS | None
    mfs_words: str
    case_toml: str
    case_flows: tuple[str, ...]
    case_key: str
    case_name: str
    found_at: int | None
    found_trial: int | None
    folder: Path
    replay: str
    target_spec: str
    fingerprint: TargetInfo | None
    machines: Machines
    hosts: dict[str, dict[str, Any]]
    moved: tuple[MovedCounter, ...]
    throughput: float | None
    perftest: PerftestLines
    verdict_of: str
    further_hits: tuple[Hit, ...] = ()
    collective_text: str = ""

    @property
    def hits(self) -> int:
        """The finds of this anomaly: the one that made it and the further hits."""
        return 1 + len(self.further_hits)

    @property
    def hits_text(self) -> str:
        """The further hits in words (``""``: none): the trial of each and how it was recognised."""
        return "; ".join(f"trial {h.trial}: {_HIT_WORDS[h.kind]}"
                         + (f" (after {h.experiments} experiments)" if h.experiments else "")
                         for h in self.further_hits)

    @property
    def symptom_name(self) -> str:
        """The symptom's kind in words (``PFC pause``; ``""``: none)."""
        return _SYMPTOMS.get(self.symptom.kind, self.symptom.kind) if self.symptom is not None else ""

    @property
    def headline_counter(self) -> str:
        """The counter the symptom rests on (``""``: none, e.g. low throughput)."""
        return self.symptom.counter if self.symptom is not None else ""

    def is_headline(self, m: MovedCounter) -> bool:
        """Whether ``m`` is the counter the symptom rests on, on the host it was read on."""
        return self.symptom is not None and bool(self.symptom.counter) and \
            (m.host, m.name) == (self.symptom.counter_host, self.symptom.counter)

    @property
    def magnitude_text(self) -> str:
        """The magnitude with its unit (``117x its threshold``)."""
        return magnitude_text(self.magnitude)

    @property
    def symptom_host(self) -> str:
        """Where the symptom showed, as :meth:`Machines.label` names it (``""``: no symptom)."""
        return self.machines.label(self.symptom.host, self.symptom.end) if self.symptom is not None else ""

    def host_label(self, host: str) -> str:
        """How the report names ``host`` of the evidence, with its end (see :meth:`Machines.label`)."""
        return self.machines.label(host, str(self.hosts.get(host, {}).get("end", "")))

    def fingerprint_rows(self) -> list[tuple[str, str]]:
        """(label, value) of the fingerprint's NIC, firmware, driver, kernel, PCIe and line rate (those known)."""
        return fingerprint_rows(self.fingerprint)

    def moved_on(self, host: str) -> list[MovedCounter]:
        return [m for m in self.moved if m.host == host]

    def top_moved(self, host: str, n: int) -> list[MovedCounter]:
        """The ``n`` largest deltas on ``host``, the symptom's counter always among them (last, if it is not)."""
        moved = self.moved_on(host)
        headline = [m for m in moved[n:] if self.is_headline(m)]
        return moved[:n - len(headline)] + headline


def fingerprint_rows(info: TargetInfo | None) -> list[tuple[str, str]]:
    """(label, value) of a fingerprint's main fields, those it records (empty: none recorded)."""
    if info is None:
        return []
    rows: list[tuple[str, str]] = []
    for label, name in FINGERPRINT_ROWS:
        if name == "line_rate_bps":
            value = f"{info.line_rate_bps / 1e9:g} Gb/s" if info.line_rate_bps else ""
        elif name == "pcie":
            value = info.details.get("pcie", "")
        else:
            value = str(getattr(info, name))
        if value:
            rows.append((label, value))
    return rows


def counter_catalog(info: TargetInfo | None) -> Catalog | None:
    """The counter catalog of a target's dialect, for the counters' units (None: unknown dialect)."""
    from collie.calibrate import catalog_of

    try:
        return catalog_of(info) if info is not None else None
    except CollieError:
        return None


#: How each kind of further hit was recognised, in words.
_HIT_WORDS: Final = {HitKind.INSIDE: "inside its minimal feature set",
                     HitKind.WIDENED: "just past an edge, which moved out to take it in",
                     HitKind.NESTED: "minimized to the same region"}


def facts_of(record: CaseRecord, campaign: CampaignData, catalog: Catalog | None = None) -> AnomalyFacts:
    """The facts of anomaly ``record`` of ``campaign`` (``catalog``: its target's counters, for their units)."""
    verdict, verdict_of = _verdict(record)
    symptom = verdict.symptoms[0] if verdict is not None and verdict.symptoms else None
    spec = record.target.spec if record.target is not None else campaign.config.target
    fingerprint = record.target.fingerprint if record.target is not None and record.target.fingerprint \
        else campaign.config.target_info
    machines = machines_of(fingerprint, spec)
    hosts: dict[str, dict[str, Any]] = dict(verdict.evidence.get("hosts", {})) if verdict is not None else {}
    duration = _duration(campaign)
    folder = campaign.root / ANOMALIES / record.anomaly_id
    found_at = record.original.found_at if record.original is not None else None
    return AnomalyFacts(
        anomaly_id=record.anomaly_id, signature=record.signature, confirmed=record.confirmed,
        leading=verdict.leading if verdict is not None else "", symptom=symptom,
        magnitude=verdict.score if verdict is not None else 0.0, symptom_text=symptom_text(symptom, machines),
        headline=headline(symptom, machines), symptom_size=symptom_size(symptom, machines),
        mfs=record.mfs, mfs_words=mfs_words(record.mfs), case_toml=record.workload.to_toml(),
        case_flows=workload_lines(record.workload),
        case_key=record.workload.key(), case_name=record.workload.name,
        found_at=found_at, found_trial=trial_of(found_at, campaign.trials),
        folder=folder, replay=replay_command(folder, spec), target_spec=spec, fingerprint=fingerprint,
        machines=machines, hosts=hosts, moved=moved_counters(hosts, catalog),
        throughput=verdict.metrics.get("throughput") if verdict is not None else None,
        perftest=perftest_lines(record.workload, machines.devices(), duration), verdict_of=verdict_of,
        further_hits=record.hits,
        collective_text=collective_words(verdict.evidence.get("collective")) if verdict is not None else "")


def collective_words(figures: Mapping[str, Any] | None) -> str:
    """A pattern run's figures (the verdict's ``evidence["collective"]``) in one sentence, ``""`` without any:
    ``busbw 11.46 GB/s, algbw 7.64 GB/s; links at 22.90 GB/s (the reference), the slowest r1->r2 at 11.45 GB/s;
    spread 50%``."""
    if not figures:
        return ""
    links = figures.get("links", {})
    slowest = figures.get("slowest_link", "")
    at = f" at {links[slowest]:.2f} GB/s" if slowest in links else ""
    own = figures.get("slow_references", {}).get(slowest)
    if own is not None and abs(own - figures["reference_gbs"]) > 0.01 * figures["reference_gbs"]:
        at += f" (its group's reference {own:.2f} GB/s)"  # links of another standing are not compared with it
    return (f"busbw {figures['busbw_gbs']:.2f} GB/s, algbw {figures['algbw_gbs']:.2f} GB/s; links at "
            f"{figures['reference_gbs']:.2f} GB/s (the reference), the slowest {slowest}{at}; spread "
            f"{figures['spread']:.0%}")


def trial_of(found_at: int | None, trials: tuple[TrialRecord, ...]) -> int | None:
    """The trial number of the ``found_at``-th budgeted experiment (pruned trials are not experiments)."""
    if found_at is None:
        return None
    numbers = [t.trial for t in trials if t.phase.budgeted and t.state is not TrialState.PRUNED]
    return numbers[found_at - 1] if 0 < found_at <= len(numbers) else None


def _verdict(record: CaseRecord) -> tuple[Verdict | None, str]:
    if record.evidence is not None:
        return record.evidence.verdict, "case"
    if record.original is not None:
        return record.original.verdict, "original"
    return None, ""


def _duration(campaign: CampaignData) -> float:
    """The measured seconds of the campaign's runs (5 when it ran none)."""
    for t in campaign.trials:
        if t.result is not None and t.result.duration_s > 0:
            return t.result.duration_s
    return 5.0


def replay_command(folder: Path, target_spec: str) -> str:
    """``collie replay FOLDER --target SPEC``, shell-quoted."""
    return shlex.join(["collie", "replay", str(folder), "--target", target_spec])


def moved_counters(hosts: dict[str, dict[str, Any]], catalog: Catalog | None = None) -> tuple[MovedCounter, ...]:
    """Every counter whose delta is not 0, per host (hosts by name), largest delta first, each with its unit
    in ``catalog`` (none: no unit)."""
    out: list[MovedCounter] = []
    for host in sorted(hosts):
        ev = hosts[host]
        counters = ev.get("counters", {}) if isinstance(ev, dict) else {}
        moved = [MovedCounter(host, str(ev.get("end", "")), name, float(c["delta"]), str(c.get("source", "")),
                              _unit(catalog, name))
                 for name, c in counters.items()
                 if isinstance(c, dict) and isinstance(c.get("delta"), int | float) and c["delta"] != 0]
        out.extend(sorted(moved, key=lambda m: (-abs(m.delta), m.name)))
    return tuple(out)


def _unit(catalog: Catalog | None, name: str) -> str:
    spec = catalog.lookup(name) if catalog is not None else None
    return UNIT_WORDS.get(spec.unit, spec.unit) if spec is not None else ""


def headline(s: Symptom | None, machines: Machines = LOCAL) -> str:
    """The symptom and where it showed, in a few words (``""``: none)."""
    if s is None:
        return ""
    if s.end == "fabric":  # a pause no host sent: named after the port it is attributed to
        return f"{_SYMPTOMS.get(s.kind, s.kind)} from {s.port_words(machines.label(s.host))}"
    return f"{_SYMPTOMS.get(s.kind, s.kind)} on {machines.label(s.host, s.end)}"


def symptom_size(s: Symptom | None, machines: Machines = LOCAL) -> str:
    """How large the symptom is, with its unit (``""``: none)."""
    if s is None:
        return ""
    if s.kind == "pause":
        whom = f"{machines.label(s.read_on)} " if s.end == "fabric" else ""
        return f"{whom}paused {s.value:.2%} of the time"
    if s.kind == "low_throughput":
        return f"{s.value:.0%} of the calibrated ceiling"
    if s.kind == "rnr":
        return f"{s.value:,.0f} RNR NAKs/s of {s.counter}"
    if s.kind == "isolation":
        return f"slowed {s.value:.3g}x against its share alone"
    if s.kind == "straggler":
        return f"{s.link} at {s.value:.0%} of the reference link"
    return f"{s.value:,.0f} events/s of {s.counter}"


def magnitude_text(score: float) -> str:
    """The oracle's score with its unit: how many times its threshold the symptom is."""
    return f"{score:.3g}x its threshold"


def symptom_text(s: Symptom | None, machines: Machines = LOCAL) -> str:
    """The symptom and its magnitude in one sentence (``""``: none); hosts named as ``machines`` names them."""
    if s is None:
        return ""
    head, size = headline(s, machines), symptom_size(s, machines)
    if s.kind == "pause":
        how = "estimated from pause frame counts, an upper bound" if s.estimate else f"counter {s.counter}"
        return (f"{head}: {size}, {s.value / max(s.threshold, 1e-12):.0f}x the {s.threshold:.2%} threshold "
                f"({how})")
    if s.kind == "low_throughput":
        return f"{head}: {size}, below the {s.threshold:.0%} threshold"
    if s.kind == "isolation":
        return f"{head}: {size}, {s.value / max(s.threshold, 1e-12):.1f}x the threshold of {s.threshold:.3g}x"
    if s.kind == "straggler":
        return f"{head}: {size}, below the {s.threshold:.0%} threshold"
    where = f" counted on {machines.label(s.read_on)}" if s.read_on else ""
    return f"{head}: {size}{where}, {s.value / max(s.threshold, 1e-12):.1f}x the limit of {s.threshold:,.0f}/s"


def mfs_words(mfs: MFS | None) -> str:
    """The minimal feature set as a sentence a person reads."""
    if mfs is None:
        return "not minimized: the conditions the anomaly needs are unknown"
    if not mfs.conditions:
        return "shows in every workload tried (no condition found)"
    parts = [_condition_words(c) for c in mfs.conditions]
    return "needs " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def _value(feature: str, value: Any) -> str:
    if feature in _BYTES and isinstance(value, int) and not isinstance(value, bool):
        return format_bytes(value)
    return str(value)


def _condition_words(c: Condition) -> str:
    if c.feature in _FLAGS:
        phrase = _FLAGS[c.feature]
        return phrase if c.value is True or c.op != "==" else f"without {phrase}"
    noun = _NOUNS.get(c.feature, c.feature)
    if c.op == ">=":
        return f"{noun} at least {_value(c.feature, c.value)}"
    if c.op == "<=":
        return f"{noun} at most {_value(c.feature, c.value)}"
    if c.op == "in":
        return f"{noun} one of {', '.join(_value(c.feature, v) for v in c.value)}"
    return f"{noun} {_value(c.feature, c.value)}"


def point_words(point: Mapping[str, Any]) -> str:
    """A search point in a line: ``RC WRITE incast of 32 B to 512 KiB (8 sizes), 1 QP, batch 55, MTU 1024``;
    ``ring_allreduce over 4 hosts x 2 ranks (64 MiB per rank): RC WRITE of 1 MiB, 2 QPs, MTU 4096`` for a
    pattern (``""`` for an empty point)."""
    if not point:
        return ""
    sizes = [int(x) for x in point.get("sizes", [])]
    size = _value("max_msg", sizes[0]) if len(sizes) == 1 else \
        f"{_value('max_msg', min(sizes))} to {_value('max_msg', max(sizes))} ({len(sizes)} sizes)" if sizes else ""
    pattern = point.get("pattern", "none")
    shape = () if pattern == "none" else (f"{pattern} over {point.get('hosts', 2)} hosts"
                                          + (f" x {point['ranks_per_host']} ranks" if point.get("ranks_per_host", 1)
                                             != 1 else "")
                                          + (f" on {point['nics']} NICs" if point.get("nics", 1) != 1 else "")
                                          + (f" ({_value('max_msg', point['pattern_size'])} per rank):"
                                             if "pattern_size" in point else ":"),)
    verb = str(point.get("op", "")).replace("_", " ")
    head = " ".join(str(x) for x in (*shape, verb, point.get("direction", "") if not shape else "") if x)
    parts = [head + (f" of {size}" if size else "")]
    if "qps" in point:
        parts.append(f"{point['qps']} QP{'s' if point['qps'] != 1 else ''}")
    parts += [f"{label} {point[key]}" for key, label in (("batch", "batch"), ("mtu", "MTU")) if key in point]
    if point.get("memory", "local") != "local":
        parts.append(f"{point['memory']} memory")
    if point.get("burst"):
        parts.append("bursts")
    return ", ".join(parts)


def workload_lines(w: Workload) -> tuple[str, ...]:
    """A workload in lines: one per flow, or for a pattern its collective and the shape of every connection
    (``ring_allreduce of 64 MiB per rank over r0, r1, r2 (3 hosts, 1 rank each): 3 connections``, then ``each
    connection: RC WRITE of 256 KiB, ...``), which stays two lines for a thousand connections, then its victim's
    line if it has one (``victim bulk: r1 -> r2: RC WRITE of 64 KiB, ...``)."""
    p = w.pattern
    if p is None:
        return tuple(flow_words(f) for f in w.flows)
    ranks = f"{p.ranks_per_host} rank{'s' if p.ranks_per_host != 1 else ''} each" + \
        (f" on {p.nics} NICs" if p.nics != 1 else "")
    victim = () if p.victim is None else (f"victim {p.victim.victim}: {flow_words(p.victim)}",)
    return (f"{p.kind.value} of {format_bytes(p.size)} per rank over {', '.join(p.hosts)} ({len(p.hosts)} hosts, "
            f"{ranks}): {len(p.pairs())} connections", f"each connection: {flow_shape(w.flows[0])}", *victim)


def flow_words(f: Flow) -> str:
    """One flow in a line: ``a -> b: RC WRITE of 64 KiB, 4 QPs, batch 1, SQ depth 128, MTU 4096``."""
    ends = f"{f.client.host} -> {f.server.host}" + (" (loopback)" if f.loopback else "")
    return f"{ends}: {flow_shape(f)}"


def flow_shape(f: Flow) -> str:
    """A flow's shape without its ends: ``RC WRITE of 64 KiB, 4 QPs, batch 1, SQ depth 128, MTU 4096``."""
    sizes = ", ".join(_value("max_msg", s) for s in f.sizes)
    parts = [f"{f.transport} {f.verbs} of {sizes}", f"{f.qps} QP{'s' if f.qps != 1 else ''}", f"batch {f.batch}",
             f"SQ depth {f.sq_depth}"]
    if f.consumes_receives:
        parts.append(f"RQ depth {f.rq_depth}")
        if f.recv_batch != 1:
            parts.append(f"receive batch {f.recv_batch}")
        if f.recv_sges != 1:
            parts.append(f"{f.recv_sges} receive SGEs")
        if f.recv_delay_us:
            parts.append(f"receives reposted after {f.recv_delay_us} us")
    parts.append(f"MTU {f.mtu}")
    if f.sges != 1:
        parts.append(f"{f.sges} SGEs")
    if f.mrs != 1:
        parts.append(f"{f.mrs} MRs of {_value('mr_size', f.mr_size)}")
    if f.inline:
        parts.append(f"inline {f.inline} B")
    if f.signal_every != 1:
        parts.append(f"signal every {f.signal_every}")
    if f.processes != 1:
        parts.append(f"{f.processes} processes")
    if f.burst:
        parts.append("bursts")
    if f.mr_churn:
        parts.append(f"{f.mr_churn} MR registrations/s")
    if f.qp_churn:
        parts.append(f"{f.qp_churn} QP creations/s")
    if f.tclass is not None:
        parts.append(f"traffic class {f.tclass}")
    memory = [f"{side} memory {e.memory}" for side, e in (("client", f.client), ("server", f.server))
              if e.memory != "local"]
    return ", ".join(parts + memory)
