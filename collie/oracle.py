"""Verdicts: is a run anomalous, why, at which end, and how strongly.

The field's definitions (ANOMALIES.md), made configurable by :class:`Thresholds`:
    * **PFC pause**: the pause-duration ratio (paused time / measured time, per priority) above 0.1 % on any
      host. ``tx`` pauses on host H mean H's receive path could not keep up; ``rx`` pauses are the peer's. A
      driver with frame counts only gives an upper-bound estimate, labelled as such in the evidence.
    * **Low throughput**: a receiving host got less than 0.8 x its bits/s ceiling **and** less than 0.8 x its
      packets/s ceiling. Ceilings come from :class:`Ceilings`, calibrated per direction kind (one-way,
      bidirectional, loopback) and corrected for the flows' MTU and message sizes.
    * **Loss / retransmission**: counters of those roles above ``margin x`` the clean baseline of the same
      target plus a floor rate.
    * An ``engine_bound`` run (the traffic engine, not the subsystem, was the limit) or a run with errors is
      never anomalous.

Invariants: the verdict depends only on the run's measured data (never on ``RunResult.truth``); the
``signature`` is a stable string of symptom kinds and ends, used to compare re-runs of a case.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from collie import rocev2
from collie.collectors.catalog import Catalog, CounterSpec
from collie.features import features
from collie.strategies.base import DIAG_PREFIX, THROUGHPUT
from collie.targets.base import RunResult
from collie.workload import Workload

SYMPTOM_ORDER: Final = ("pause", "low_throughput", "loss", "retransmission")
DIRECTION_KINDS: Final = ("oneway", "bidirectional", "loopback")
_UNIT_SECONDS: Final = {"us": 1e-6, "ms": 1e-3}
#: Longest pause one PFC XOFF frame can request: 65535 quanta of 512 bit times.
_XOFF_BITS: Final = 65535 * 512


@dataclass(frozen=True)
class Thresholds:
    """Oracle thresholds (preset ``[oracle]`` table)."""

    pause_ratio: float = 0.001
    throughput_fraction: float = 0.8
    loss_margin: float = 2.0
    loss_floor_per_s: float = 10.0


@dataclass(frozen=True)
class Ceilings:
    """What the subsystem can do, per direction kind: wire bits/s and data packets/s into one host.

    ``wire_bps`` counts payload plus RoCEv2 per-packet headers, so the payload ceiling of any size pattern and
    MTU follows from :func:`collie.rocev2.efficiency`.
    """

    wire_bps: Mapping[str, float]
    pps: Mapping[str, float]
    line_rate_bps: float = 0.0

    def payload_bps(self, kind: str, sizes: list[int], mtu: int) -> float:
        return self.wire_bps[kind] * rocev2.efficiency(sizes, mtu)

    def to_dict(self) -> dict[str, Any]:
        return {"wire_bps": dict(self.wire_bps), "pps": dict(self.pps), "line_rate_bps": self.line_rate_bps}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Ceilings:
        return cls(dict(d["wire_bps"]), dict(d["pps"]), float(d.get("line_rate_bps", 0.0)))


@dataclass(frozen=True)
class Symptom:
    """One reason a run is anomalous."""

    kind: str
    host: str
    end: str
    value: float
    threshold: float
    counter: str = ""
    estimate: bool = False


@dataclass(frozen=True)
class Verdict:
    """The oracle's judgement of one run.

    Attributes:
        anomalous: any symptom present.
        symptoms: every symptom, strongest first.
        score: how far past its threshold the strongest symptom is (1.0 = at the threshold; 0 = clean).
        signature: ``kind@end`` of each symptom kind, sorted by :data:`SYMPTOM_ORDER` (``""`` when clean).
        metrics: what search strategies see: ``throughput`` (fraction of ceiling, lowest receiver) and
            ``diag:<counter>``: a diagnostic counter's events per packet handled (its level, for gauges),
            the highest over hosts.
        evidence: per-host pause ratios, rates and counters that moved, for reports.
        levels: per ``kind@end``, the strongest reading of that symptom over its threshold (as ``score``: 1.0
            at the threshold, above it the symptom), for clean runs too: how near a run came to each symptom.
    """

    anomalous: bool
    symptoms: tuple[Symptom, ...]
    score: float
    signature: str
    metrics: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, Any] = field(default_factory=dict)
    levels: Mapping[str, float] = field(default_factory=dict)

    @property
    def primary(self) -> str:
        """The strongest symptom kind by :data:`SYMPTOM_ORDER` (``""`` when clean)."""
        return self.signature.split("+")[0].split("@")[0] if self.signature else ""

    @property
    def leading(self) -> str:
        """``kind@end`` of the strongest symptom: what re-runs of one anomaly share even near a threshold,
        where weaker symptoms (a throughput dip at 0.79 or 0.81 of the ceiling) come and go with noise."""
        return leading_symptom(self.signature)

    def shows(self, tag: str) -> bool:
        """Whether the run has the symptom ``tag`` (``kind@end``), leading or not."""
        return tag in self.signature.split("+")

    def to_dict(self) -> dict[str, Any]:
        return {"anomalous": self.anomalous, "symptoms": [asdict(s) for s in self.symptoms],
                "score": self.score, "signature": self.signature, "metrics": dict(self.metrics),
                "evidence": dict(self.evidence), "levels": dict(self.levels)}


def leading_symptom(signature: str) -> str:
    """The ``kind@end`` a signature leads with (``""`` for a clean run)."""
    return signature.split("+")[0]


def direction_kind(workload: Workload, receiver: str) -> str:
    """Which calibrated ceiling applies to the data flowing into ``receiver``."""
    into = [f for f in workload.flows if _receiver(f.client.host, f.server.host, f.opcode) == receiver]
    if into and all(f.loopback for f in into):
        return "loopback"
    if features(workload).bidirectional:
        return "bidirectional"
    return "oneway"


def _receiver(client: str, server: str, opcode: str) -> str:
    return client if opcode == "READ" else server


def loss_rates(run: RunResult, catalog: Catalog) -> dict[str, float]:
    """Per-second rates of loss and retransmission counters, ``host:counter`` -> rate."""
    out: dict[str, float] = {}
    for h in run.hosts:
        for name, value in h.counters.items():
            spec = catalog.lookup(name)
            if spec is not None and spec.role in ("loss", "retransmission"):
                out[f"{h.host}:{spec.name}"] = value / run.duration_s
    return out


class Oracle:
    """Judges runs of one target against its ceilings and clean baseline."""

    def __init__(self, catalog: Catalog, ceilings: Ceilings, thresholds: Thresholds | None = None,
                 baseline: Mapping[str, float] | None = None) -> None:
        self.catalog = catalog
        self.ceilings = ceilings
        self.thresholds = thresholds or Thresholds()
        self.baseline = dict(baseline or {})

    def _spec(self, name: str) -> CounterSpec | None:
        return self.catalog.lookup(name)

    def judge(self, run: RunResult, workload: Workload) -> Verdict:
        t = self.thresholds
        symptoms: list[Symptom] = []
        evidence: dict[str, Any] = {"hosts": {}}
        receivers = {_receiver(f.client.host, f.server.host, f.opcode) for f in workload.flows}
        diag: dict[str, float] = defaultdict(float)
        levels: dict[str, float] = defaultdict(float)
        seconds = run.duration_s
        for h in run.hosts:
            end = "receiver" if h.host in receivers else "sender"
            pause: dict[str, dict[int, float]] = {"rx": defaultdict(float), "tx": defaultdict(float)}
            frames: dict[str, dict[int, float]] = {"rx": defaultdict(float), "tx": defaultdict(float)}
            loss: dict[str, float] = {}
            packets = h.tx_pps + h.rx_pps
            # work requests this host handled: each flow's messages once per end on this host
            messages = sum(f.msg_rate * ((f.client == h.host) + (f.server == h.host)) for f in run.flows)
            for name, value in h.counters.items():
                spec = self._spec(name)
                if spec is None:
                    continue
                prio = spec.priority if spec.priority is not None else -1
                if spec.role in ("pause_duration_rx", "pause_duration_tx"):
                    pause[spec.role[-2:]][prio] += value * _UNIT_SECONDS.get(spec.unit, 1e-6) / seconds
                elif spec.role in ("pause_frames_rx", "pause_frames_tx"):
                    frames[spec.role[-2:]][prio] += value
                elif spec.role in ("loss", "retransmission"):
                    loss[spec.name] = value / seconds
                if spec.diagnostic and spec.kind == "gauge":
                    diag[spec.name] = max(diag[spec.name], value)
                elif spec.diagnostic:
                    # events per packet (or per message) the host handled: a miss *ratio*, which rises with a
                    # resource's working set rather than with the traffic rate alone
                    work = messages if spec.per == "message" else packets
                    if work > 0:
                        diag[spec.name] = max(diag[spec.name], value / seconds / work)
            estimated = {d: not pause[d] and bool(frames[d]) for d in ("rx", "tx")}
            for d in ("rx", "tx"):
                if estimated[d] and self.ceilings.line_rate_bps > 0:
                    for prio, n in frames[d].items():
                        pause[d][prio] = min(1.0, n * _XOFF_BITS / self.ceilings.line_rate_bps / seconds)
            tx_max = max(pause["tx"].values(), default=0.0)
            levels[f"pause@{end}"] = max(levels[f"pause@{end}"], tx_max / t.pause_ratio)
            if tx_max > t.pause_ratio:
                prio = max(pause["tx"], key=lambda p: pause["tx"][p])
                symptoms.append(Symptom("pause", h.host, end, tx_max, t.pause_ratio,
                                        f"tx priority {prio}", estimated["tx"]))
            for counter, rate in loss.items():
                spec = self._spec(counter)
                base = self.baseline.get(f"{h.host}:{counter}", self.baseline.get(counter, 0.0))
                limit = base * t.loss_margin + t.loss_floor_per_s
                if spec is not None:
                    tag = f"{spec.role}@{end}"
                    levels[tag] = max(levels[tag], rate / limit)
                if rate > limit and spec is not None:
                    symptoms.append(Symptom(spec.role, h.host, end, rate, limit, counter))
            evidence["hosts"][h.host] = {
                "end": end,
                "pause_ratio_tx": {str(p): r for p, r in sorted(pause["tx"].items())},
                "pause_ratio_rx": {str(p): r for p, r in sorted(pause["rx"].items())},
                "pause_estimated_from_frames": estimated,
                "loss_rates": loss,
                "tx_bps": h.tx_bps, "rx_bps": h.rx_bps, "tx_pps": h.tx_pps, "rx_pps": h.rx_pps,
            }
        fraction = self._throughput(run, workload, symptoms, evidence)
        if fraction > 0:
            levels["low_throughput@receiver"] = t.throughput_fraction / fraction
        metrics: dict[str, float] = {THROUGHPUT: fraction}
        metrics.update({f"{DIAG_PREFIX}{k}": v for k, v in diag.items()})
        if run.engine_bound or run.errors:
            evidence["not_judged"] = "engine-bound run" if run.engine_bound else "run had errors"
            return Verdict(False, (), 0.0, "", metrics, evidence)  # no levels: the run says nothing of them
        symptoms.sort(key=lambda s: (SYMPTOM_ORDER.index(s.kind), -s.value / max(s.threshold, 1e-12)))
        kinds: list[str] = []
        for s in symptoms:
            tag = f"{s.kind}@{s.end}"
            if tag not in kinds:
                kinds.append(tag)
        score = max((_strength(s) for s in symptoms), default=0.0)
        return Verdict(bool(symptoms), tuple(symptoms), score, "+".join(kinds), metrics, evidence,
                       dict(levels))

    def _throughput(self, run: RunResult, workload: Workload, symptoms: list[Symptom],
                    evidence: dict[str, Any]) -> float:
        """Append low-throughput symptoms; return the lowest receiver's fraction of its ceiling."""
        t = self.thresholds
        by_receiver: dict[str, list[int]] = defaultdict(list)
        for fr in run.flows:
            f = workload.flows[fr.flow]
            by_receiver[_receiver(f.client.host, f.server.host, f.opcode)].append(fr.flow)
        lowest = math.inf
        for host, indices in sorted(by_receiver.items()):
            kind = direction_kind(workload, host)
            flows = [workload.flows[i] for i in indices]
            results = [r for r in run.flows if r.flow in indices]
            sizes = [s for f in flows for s in f.sizes]
            mtu = min(f.mtu for f in flows)
            bps = sum(r.bps for r in results)
            pps = sum(r.pps for r in results)
            bps_ceiling = self.ceilings.payload_bps(kind, sizes, mtu)
            pps_ceiling = self.ceilings.pps[kind]
            frac = max(bps / bps_ceiling if bps_ceiling else 0.0, pps / pps_ceiling if pps_ceiling else 0.0)
            lowest = min(lowest, frac)
            evidence.setdefault("throughput", {})[host] = {
                "kind": kind, "bps": bps, "pps": pps, "bps_ceiling": bps_ceiling, "pps_ceiling": pps_ceiling,
                "fraction": frac,
            }
            if bps < t.throughput_fraction * bps_ceiling and pps < t.throughput_fraction * pps_ceiling:
                symptoms.append(Symptom("low_throughput", host, "receiver", frac, t.throughput_fraction))
        return lowest if lowest < math.inf else 0.0


def _strength(s: Symptom) -> float:
    if s.kind == "low_throughput":
        return s.threshold / max(s.value, 1e-6)
    return s.value / max(s.threshold, 1e-12)
