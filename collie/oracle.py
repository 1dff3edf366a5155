"""Verdicts: is a run anomalous, why, at which end, and how strongly.

The field's definitions (ANOMALIES.md), made configurable by :class:`Thresholds`:
    * **PFC pause**: the pause-duration ratio (paused time / measured time, per priority) above 0.1 % on any
      host. ``tx`` pauses on host H mean H's receive path could not keep up; ``rx`` pauses are the peer's. A
      driver with frame counts only gives an upper-bound estimate, labelled as such in the evidence. Pause a
      host received beyond the most any of its peers sent came from the fabric (``pause@fabric``): a congested
      switch port paused the links feeding it. It is attributed to the port, not to the victims it reaches: the
      switch's port into the host that the most paused hosts send payload to while it is not paused itself
      (ties: the one whose port carried the most, headers included); when no such host is fed by two paused hosts
      (or by the only one), to a link between switches. A host's received pause is its peers' when it is within
      :data:`PEER_SLACK` times the most a peer sent (noise on two counters of one pause).
    * **Low throughput**: a receiving host got less than 0.8 x (``throughput_fraction``) of what its flows can
      get. Ceilings come from :class:`Ceilings`, calibrated per direction kind (one-way, bidirectional,
      loopback) and corrected for the flows' MTU and message sizes. What a host's flows can get is the tightest
      of, each in its own unit (the host is low only when it is below the fraction of every one):

      - its bits/s ceiling and its packets/s ceiling;
      - when every flow into it has a limit of its own: the sum over its flows of the requests/s each can
        complete, the least of
        its QPs' rate ``Q = qps / (wr + doorbell / batch)`` (``wr`` and ``doorbell``: what one QP spends per
        work request and per post, from two one-QP calibration runs, one WR per post and post lists);
        for a flow with READs or atomics in its request cycle (``Flow.requests()``, n requests of which k are
        READs or atomics of b_1..b_k bytes) what Little's law lets it complete,
        ``W = qps x max_rd_atomic x n / sum_i(rtt + wire(b_i) / wire_bps)`` (``rtt``: the calibrated round trip
        of one small READ; ``wire(b)``: the response's bytes on the wire at the flow's MTU); and the atomic rate
        ``A = atomic_ops x n / a`` for a cycle with ``a`` atomics: a mixed cycle is limited by its READ/atomic
        share;
      - when every flow into it has atomics: the calibrated atomic ceiling ``atomic_ops`` against the atomic
        operations/s of all of them together (one responder executes them all);
      - in a collective pattern's run: what its senders could send it, each flow into it scaled up by its
        sender's fraction of its own bits/s ceiling (a sender at its ceiling, the root of an outcast, explains
        what each of its receivers misses; a slow sender does not).

      A bound whose calibration is missing (a record made before it was kept, a target without atomics) is
      not applied. The evidence names the bound the host came nearest to (``bound``).
    * **Loss / retransmission**: counters of those roles above ``margin x`` the clean baseline of the same
      target plus a floor rate.
    * **Receiver not ready** (``rnr``): receiver-starvation counters (RNR NAKs sent or received, packets dropped
      for want of a receive WQE) judged the same way, against their own margin and floor. The symptom names the
      host whose receive queue ran dry, the responder, even where the requester counted the NAKs it got.
    * **Isolation** (``isolation``): in an isolation experiment (some flow is a victim, ``Flow.victim``; the others
      its aggressors) a victim got less than its fair share, or waited longer, than when it ran alone (its *solo*
      baseline: ``Workload.solo``, measured once per distinct victim; :attr:`Oracle.solos`). Its slowdown is the worse
      of ``fair / bps`` and ``p99 / solo p99``, where the fair share is
      ``min(solo bps, bits/s ceiling / tenants, solo bits per packet x packets/s ceiling / tenants)`` and the tenants
      are the flows whose payload enters the victim's receiving host (a flow mixing READ with other opcodes enters
      both its hosts: READ responses the client's, the rest the server's), or those whose payload leaves its sending
      host over the same path (the wire, or loopback), when they are more: a bandwidth victim beside a bandwidth
      aggressor that gets half the link got its fair share (Husky's definition, Kong et al., NSDI 2023). It is a
      symptom when ``fair / bps`` passes ``isolation_slowdown`` or ``p99 / solo p99`` passes ``isolation_latency``; it
      names the victim's receiving host, end ``victim``, and its value is the factor that passed its threshold by
      more. Without a solo baseline no isolation is judged. The victim's traffic stays in its receiver's
      low-throughput judgement: the ceiling bounds what all the flows into a host get together (leaving it out would
      make an aggressor sharing the link fairly look low).
    * **Straggler** (``straggler``): in a run of a collective pattern (``Workload.pattern``; every link of a ring
      or an all-to-all should perform alike), a connection slower than ``1 - straggler_margin`` x the pattern's
      reference link rate, the median of the faster half of the links of its group
      (:meth:`collie.model.collective.CollectiveResult.group_of`: loopback links between two ranks of one host
      with loopback links, links between hosts with links between hosts of the same standing in the pattern;
      :func:`collie.model.collective.reference_gbs`: it stays a healthy link's rate while up to half the links
      are slow). A host with slow links to two or more other
      hosts is named for all of them (end ``host``: its port, NIC or PCIe, in and out), the host with the most
      peers first; each slow link left names its sending host (end ``link``), since the two ends of slow links
      between two hosts alone cannot be told apart. Its value is the slowest link's fraction of the reference; the
      links are in ``Symptom.link`` and the collective's figures (time, algbw, busbw, every link) in
      ``evidence["collective"]``. A re-run confirms it as it confirms every anomaly.
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

from collie.codec import Reader, decode
from collie.collectors.catalog import Catalog
from collie.collectors.normalize import NormalizedCounters, Work, normalize
from collie.metrics import DIAG_PREFIX, THROUGHPUT
from collie.model import rocev2
from collie.model.collective import CollectiveResult, LinkFigure, collective
from collie.model.features import features
from collie.model.flow import ATOMIC_OPCODES, Flow
from collie.model.workload import Workload
from collie.targets.base import FlowResult, HostResult, RunResult

SYMPTOM_ORDER: Final = ("pause", "low_throughput", "loss", "retransmission", "rnr", "isolation", "straggler")
#: Symptom kinds whose value is a fraction that is anomalous *below* its threshold.
BELOW_THRESHOLD: Final = frozenset(("low_throughput", "straggler"))
#: A host's received pause up to this many times the most any of its peers sent is theirs, not the fabric's.
PEER_SLACK: Final = 1.1
#: Most links a verdict's evidence lists one by one (beyond it: the slow ones and the figures).
EVIDENCE_LINKS: Final = 64
#: Opcodes that take a slot of a QP's READ/atomic window (``max_rd_atomic``) for a round trip.
WINDOWED: Final = frozenset({"READ", *ATOMIC_OPCODES})
DIRECTION_KINDS: Final = ("oneway", "bidirectional", "loopback")


@dataclass(frozen=True)
class Thresholds:
    """Oracle thresholds (preset ``[oracle]`` table): ``loss_*`` judge loss and retransmission counters,
    ``rnr_*`` receiver-starvation counters (events/s above ``margin x`` the clean baseline plus the floor),
    ``isolation_*`` a victim's slowdown against its solo baseline: its fair share over its bits/s, and its p99
    latency over its solo p99; ``straggler_margin`` how far below its pattern's reference link a link is slow."""

    pause_ratio: float = 0.001
    throughput_fraction: float = 0.8
    loss_margin: float = 2.0
    loss_floor_per_s: float = 10.0
    rnr_margin: float = 2.0
    rnr_floor_per_s: float = 10.0
    isolation_slowdown: float = 1.5
    isolation_latency: float = 3.0
    straggler_margin: float = 0.2


@dataclass(frozen=True)
class Ceilings:
    """What the subsystem can do, per direction kind: wire bits/s and data packets/s into one host, and what
    bounds READs and atomics.

    ``wire_bps`` counts payload plus RoCEv2 per-packet headers, so the payload ceiling of any size pattern and
    MTU follows from :func:`collie.model.rocev2.efficiency`.

    Attributes:
        wire_bps, pps: per direction kind, wire bits/s and data packets/s into one receiving host.
        line_rate_bps: the link speed (0: unknown).
        read_rtt_us: per direction kind, the completion latency (p50) of one small READ at depth 1 on one QP:
            how long a READ or atomic holds its slot of the window beyond its response's serialisation (a kind
            without it: no window bound).
        max_rd_atomic: READs/atomics a QP keeps outstanding (``TargetInfo.max_rd_atomic``; 0: no window bound).
        atomic_ops: atomic operations/s one responding host executes (0: not measured, no atomic bound).
        qp_wr_us, qp_doorbell_us: what one QP spends per work request and per post (one doorbell rings for a
            post list of ``Flow.batch`` WRs), from two one-QP calibration runs (both 0: not measured, no per-QP
            bound).
    """

    wire_bps: Mapping[str, float]
    pps: Mapping[str, float]
    line_rate_bps: float = 0.0
    read_rtt_us: Mapping[str, float] = field(default_factory=dict)
    max_rd_atomic: int = 0
    atomic_ops: float = 0.0
    qp_wr_us: float = 0.0
    qp_doorbell_us: float = 0.0

    def qp_rate(self, flow: Flow) -> float | None:
        """Requests/s ``flow``'s QPs reach alone at its post-list length: ``qps / (wr + doorbell / batch)``; None
        when the per-QP costs are not calibrated."""
        per = self.qp_wr_us + self.qp_doorbell_us / flow.batch
        return flow.qps / (per * 1e-6) if per > 0 else None

    def payload_bps(self, kind: str, sizes: list[int], mtu: int) -> float:
        return self.wire_bps[kind] * rocev2.efficiency(sizes, mtu)

    def window_hold_us(self, kind: str, flow: Flow) -> float | None:
        """Mean microseconds a READ or atomic request of ``flow``'s cycle holds its window slot: the calibrated
        round trip plus its response's serialisation at the wire ceiling; None when ``flow`` has neither or the
        window is not calibrated for ``kind``."""
        rtt = self.read_rtt_us.get(kind)
        held = [b for op, b in flow.requests() if op in WINDOWED]
        if rtt is None or not held or self.max_rd_atomic <= 0 or not self.wire_bps.get(kind):
            return None
        wire = sum(b + rocev2.packets(b, flow.mtu) * rocev2.PACKET_OVERHEAD for b in held) / len(held)
        return rtt + wire * 8 / self.wire_bps[kind] * 1e6

    def to_dict(self) -> dict[str, Any]:
        """Every field; the READ/atomic ones only when calibrated (so an older record writes back as it was)."""
        out: dict[str, Any] = {"wire_bps": dict(self.wire_bps), "pps": dict(self.pps),
                               "line_rate_bps": self.line_rate_bps}
        if self.read_rtt_us:
            out["read_rtt_us"] = dict(self.read_rtt_us)
        if self.max_rd_atomic:
            out["max_rd_atomic"] = self.max_rd_atomic
        if self.atomic_ops:
            out["atomic_ops"] = self.atomic_ops
        if self.qp_wr_us or self.qp_doorbell_us:
            out["qp_wr_us"] = self.qp_wr_us
            out["qp_doorbell_us"] = self.qp_doorbell_us
        return out

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Ceilings:
        """Read :meth:`to_dict`'s form (``line_rate_bps``, the READ/atomic and the per-QP fields may be absent: a
        record calibrated before they were kept, judged without their bounds), every field checked.

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped or unknown).
        """
        return decode(cls, data, reader)


@dataclass(frozen=True)
class FlowLimit:
    """What a flow's own limits let it complete (see the module docstring's rule).

    Attributes:
        rate: requests/s, the tightest of its QPs' rate, its window's and the atomic rate's.
        why: the bound in words (``QP rate: 1 QP x 2.8 M WRs/s``, ``READ window: 16 outstanding x 8 QPs / 2.1 us``,
            ``atomic rate: ...``).
    """

    rate: float
    why: str


@dataclass(frozen=True)
class Symptom:
    """One reason a run is anomalous.

    Attributes:
        kind: ``pause``, ``low_throughput``, ``loss``, ``retransmission``, ``rnr`` or ``isolation``.
        host, end: where it showed, and whether that host received or sent the payload (for ``rnr``: the host
            whose receive queue ran dry; for ``isolation``: the victim's receiving host, end ``victim``; for a
            pause from the fabric: the host whose switch port it is attributed to, end ``fabric``).
        value, threshold: the reading and the limit it passed (a pause ratio, a fraction of the ceiling, events
            per second, a victim's slowdown factor).
        counter: the counter it rests on (``tx_prio3_pause_duration``); ``""`` for low throughput, which rests
            on the traffic the target measured.
        estimate: the pause ratio is an upper bound from XOFF frame counts, not a measured duration.
        source: where ``counter`` was read (``ethtool``, ``hw``, ...).
        read_on: the host ``counter`` was read on when it is not ``host`` (an ``rnr`` symptom resting on the RNR
            NAKs its requester received); ``""``: on ``host``.
        link: the slow links of a ``straggler`` (``h2->h3, h3->h4``); the port a pause from the fabric is
            attributed to (``switch->h3``; ``fabric``: a link between switches); ``""`` for other kinds.
    """

    kind: str
    host: str
    end: str
    value: float
    threshold: float
    counter: str = ""
    estimate: bool = False
    source: str = ""
    read_on: str = ""
    link: str = ""

    @property
    def strength(self) -> float:
        """How far past its threshold it is: 1.0 at the threshold, 2.0 twice as far (a kind anomalous below its
        threshold, :data:`BELOW_THRESHOLD`: the threshold over the value)."""
        if self.kind in BELOW_THRESHOLD:
            return self.threshold / max(self.value, 1e-6)
        return self.value / max(self.threshold, 1e-12)

    def port_words(self, host: str = "") -> str:
        """The port a pause from the fabric is attributed to, in words: ``the switch port into h0`` (``host``:
        how the caller labels :attr:`host`), or ``a link between switches``."""
        return "a link between switches" if self.link == "fabric" else f"the switch port into {host or self.host}"

    @property
    def counter_host(self) -> str:
        """The host ``counter`` was read on (the key of its clean baseline is ``counter_host:counter``)."""
        return self.read_on or self.host

    def to_dict(self) -> dict[str, Any]:
        """Every field, ``read_on`` and ``link`` only when set (a symptom of an older record writes back as it
        was)."""
        return {k: v for k, v in asdict(self).items() if k not in ("read_on", "link") or v}


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
        return {"anomalous": self.anomalous, "symptoms": [s.to_dict() for s in self.symptoms],
                "score": self.score, "signature": self.signature, "metrics": dict(self.metrics),
                "evidence": dict(self.evidence), "levels": dict(self.levels)}


def leading_symptom(signature: str) -> str:
    """The ``kind@end`` a signature leads with (``""`` for a clean run)."""
    return signature.split("+")[0]


def direction_kind(workload: Workload, receiver: str) -> str:
    """Which calibrated ceiling applies to the data flowing into ``receiver``."""
    into = [f for f in workload.flows if f.payload_receiver.host == receiver]
    if into and all(f.loopback for f in into):
        return "loopback"
    if features(workload).bidirectional:
        return "bidirectional"
    return "oneway"


def receivers(workload: Workload) -> set[str]:
    """The hosts ``workload``'s payload flows into (the server of a WRITE or SEND, the client of a READ)."""
    return {f.payload_receiver.host for f in workload.flows}


def normalized_hosts(run: RunResult, catalog: Catalog, line_rate_bps: float = 0.0
                     ) -> dict[str, NormalizedCounters]:
    """Each host's counters of ``run`` in the one normal form (:func:`~collie.collectors.normalize.normalize`);
    ``line_rate_bps`` (0: unknown) turns XOFF frame counts into upper-bound pause ratios."""
    line = line_rate_bps if line_rate_bps > 0 else None
    return {h.host: normalize(h.counters, run.duration_s, catalog, line_rate_bps=line, sources=h.sources)
            for h in run.hosts}


def event_rates(views: Mapping[str, NormalizedCounters]) -> dict[str, float]:
    """Per-second rates of the loss, retransmission and receiver-starvation counters of every host,
    ``host:counter`` -> rate (what the clean baseline holds)."""
    return {f"{host}:{name}": rate for host, n in views.items()
            for name, rate in {**n.loss_rates, **n.retransmission_rates, **n.receiver_starvation_rates}.items()}


def starved_host(workload: Workload, host: str) -> str:
    """The host whose receive queue ran dry, by a receiver-starvation counter read on ``host``: ``host`` itself
    when it serves a flow that consumes receives (it sent the RNR NAKs, or dropped for want of a receive WQE),
    else the server of such a flow ``host`` is the client of (whose RNR NAKs ``host`` received), else ``host``."""
    consuming = [f for f in workload.flows if f.consumes_receives]
    if any(f.server.host == host for f in consuming):
        return host
    return next((f.server.host for f in consuming if f.client.host == host), host)


class Oracle:
    """Judges runs of one target against its ceilings and clean baseline, reading each host's counters only in
    their normal form.

    Attributes:
        solos: the solo baselines of isolation experiments: the key of a ``Workload.solo`` -> its run on this
            target. Whoever runs the experiments fills it (a campaign from its SOLO trials); judging only reads
            it, so a verdict is a function of the run, the workload and this state.
    """

    def __init__(self, catalog: Catalog, ceilings: Ceilings, thresholds: Thresholds | None = None,
                 baseline: Mapping[str, float] | None = None) -> None:
        self.catalog = catalog
        self.ceilings = ceilings
        self.thresholds = thresholds or Thresholds()
        self.baseline = dict(baseline or {})
        self.solos: dict[str, RunResult] = {}

    def judge(self, run: RunResult, workload: Workload) -> Verdict:
        t = self.thresholds
        symptoms: list[Symptom] = []
        evidence: dict[str, Any] = {"hosts": {}}
        receivers = {f.payload_receiver.host for f in workload.flows}
        diag: dict[str, float] = defaultdict(float)
        levels: dict[str, float] = defaultdict(float)
        views = normalized_hosts(run, self.catalog, self.ceilings.line_rate_bps)
        notes: list[str] = []
        for h in run.hosts:
            n = views[h.host]
            end = "receiver" if h.host in receivers else "sender"
            packets = h.tx_pps + h.rx_pps
            # work requests this host handled: each flow's messages once per end on this host
            messages = sum(f.msg_rate * ((f.client == h.host) + (f.server == h.host)) for f in run.flows)
            for name, value in n.diagnostic_per_s.items():
                work = n.diagnostic_work[name]
                if work is Work.LEVEL:
                    diag[name] = max(diag[name], value)
                else:
                    # events per packet (or per message) the host handled: a miss *ratio*, which rises with a
                    # resource's working set rather than with the traffic rate alone
                    per = messages if work is Work.MESSAGE else packets
                    if per > 0:
                        diag[name] = max(diag[name], value / per)
            tx_max = n.max_pause_ratio_tx or 0.0
            levels[f"pause@{end}"] = max(levels[f"pause@{end}"], tx_max / t.pause_ratio)
            if tx_max > t.pause_ratio:
                counter = _strongest_pause_counter(n)
                symptoms.append(Symptom("pause", h.host, end, tx_max, t.pause_ratio, counter,
                                        n.pause_estimated_tx, n.sources.get(counter, "")))
            starved = starved_host(workload, h.host)
            for role, rates, margin, floor, host in (
                    ("loss", n.loss_rates, t.loss_margin, t.loss_floor_per_s, h.host),
                    ("retransmission", n.retransmission_rates, t.loss_margin, t.loss_floor_per_s, h.host),
                    ("rnr", n.receiver_starvation_rates, t.rnr_margin, t.rnr_floor_per_s, starved)):
                at = "receiver" if host in receivers else "sender"
                for counter, rate in rates.items():
                    base = self.baseline.get(f"{h.host}:{counter}", self.baseline.get(counter, 0.0))
                    limit = base * margin + floor
                    tag = f"{role}@{at}"
                    levels[tag] = max(levels[tag], rate / limit)
                    if rate > limit:
                        symptoms.append(Symptom(role, host, at, rate, limit, counter, False,
                                                n.sources.get(counter, ""), "" if host == h.host else h.host))
            evidence["hosts"][h.host] = _host_evidence(h, n, end)
            notes.extend(f"{h.host}: {note}" for note in n.notes)
        if notes:
            evidence["notes"] = notes
        self._fabric_pause(run, workload, views, symptoms, levels)
        fraction = self._throughput(run, workload, symptoms, evidence)
        if workload.isolation:
            self._isolation(run, workload, symptoms, evidence, levels)
        if workload.pattern is not None and run.flows:
            self._straggler(collective(workload.pattern, run.flows), symptoms, evidence, levels)
        if fraction > 0:
            levels["low_throughput@receiver"] = t.throughput_fraction / fraction
        metrics: dict[str, float] = {THROUGHPUT: fraction}
        metrics.update({f"{DIAG_PREFIX}{k}": v for k, v in diag.items()})
        if run.engine_bound or run.errors:
            evidence["not_judged"] = "engine-bound run" if run.engine_bound else "run had errors"
            return Verdict(False, (), 0.0, "", metrics, evidence)  # no levels: the run says nothing of them
        symptoms.sort(key=_order)
        kinds: list[str] = []
        for s in symptoms:
            tag = f"{s.kind}@{s.end}"
            if tag not in kinds:
                kinds.append(tag)
        score = max((s.strength for s in symptoms), default=0.0)
        return Verdict(bool(symptoms), tuple(symptoms), score, "+".join(kinds), metrics, evidence,
                       dict(levels))

    def _fabric_pause(self, run: RunResult, workload: Workload, views: Mapping[str, NormalizedCounters],
                      symptoms: list[Symptom], levels: dict[str, float]) -> None:
        """Append a ``pause@fabric`` symptom when hosts were paused by no host of the run (see the module
        docstring): named after the port it is attributed to, resting on the most paused host's counter."""
        sent = {h: views[h].max_pause_ratio_tx or 0.0 for h in views}
        peers: dict[str, set[str]] = defaultdict(set)
        for f in workload.flows:
            if not f.loopback:
                peers[f.client.host].add(f.server.host)
                peers[f.server.host].add(f.client.host)
        # the pause a host received beyond the most any of its peers sent (give or take what noise makes of it)
        beyond = {h: (views[h].max_pause_ratio_rx or 0.0)
                  - PEER_SLACK * max([sent[p] for p in peers[h] if p in sent], default=0.0) for h in views}
        most = max(beyond, key=lambda h: beyond[h], default="")
        if not most or beyond[most] <= 1e-9:
            return
        t = self.thresholds
        levels["pause@fabric"] = beyond[most] / t.pause_ratio
        paused = {h for h, r in beyond.items() if r > t.pause_ratio}
        if not paused:
            return
        origin, link = fabric_origin(workload, run, paused)
        n = views[most]
        counter = _strongest_pause_counter(n, "rx")
        symptoms.append(Symptom("pause", origin or most, "fabric", beyond[most], t.pause_ratio, counter,
                                n.pause_estimated_rx, n.sources.get(counter, ""), most, link))

    def _throughput(self, run: RunResult, workload: Workload, symptoms: list[Symptom],
                    evidence: dict[str, Any]) -> float:
        """Append low-throughput symptoms; return the lowest receiver's fraction of what its flows can get (the
        largest of its fractions of each bound, see the module docstring).

        A flow that mixes READ with other opcodes moves payload both ways (:func:`_payload_into`): each host is
        judged on the part that lands on it, against its own ceiling; and a host all of whose flows are such
        mixes between two hosts has one more bound, the other direction's (its flows' other host's fraction of
        its own bounds): a cycle paced by the other direction lands no faster here."""
        t = self.thresholds
        into: dict[str, list[tuple[FlowResult, _Landing]]] = defaultdict(list)
        for fr in run.flows:
            for landing in _payload_into(workload.flows[fr.flow]):
                into[landing.host].append((fr, landing))
        judged: dict[str, tuple[dict[str, Any], dict[str, float]]] = {}  # host -> its evidence, its fractions
        for host, parts in sorted(into.items()):
            kind = direction_kind(workload, host)
            flows = [workload.flows[r.flow] for r, _ in parts]
            sizes = [s for _, landing in parts for s in landing.sizes]
            mtu = min(f.mtu for f in flows)
            bps = sum(r.bps * landing.bytes_share for r, landing in parts)
            pps = sum(r.pps * landing.packets_share for r, landing in parts)
            bps_ceiling = self._shared_bps_ceiling(kind, workload, parts) or self.ceilings.payload_bps(kind, sizes,
                                                                                                       mtu)
            pps_ceiling = self.ceilings.pps[kind]
            fractions = {"bits/s ceiling": bps / bps_ceiling if bps_ceiling else 0.0,
                         "packets/s ceiling": pps / pps_ceiling if pps_ceiling else 0.0}
            judged[host] = ({"kind": kind, "bps": bps, "pps": pps, "bps_ceiling": bps_ceiling,
                             "pps_ceiling": pps_ceiling}, fractions)
        reached = {host: max(fractions.values()) for host, (_, fractions) in judged.items()}
        for host, parts in into.items():
            judged[host][1].update(self._limit_fractions(direction_kind(workload, host), workload, parts, reached))
        if workload.pattern is not None:
            for host, fraction in self._senders_bound(run, workload, into, judged).items():
                judged[host][1]["what its senders could send"] = fraction
        own = {host: max(fractions.values()) for host, (_, fractions) in judged.items()}
        lowest = math.inf
        for host, (seen, fractions) in judged.items():
            partners = [landing.partner for _, landing in into[host]]
            if all(partners):
                other = min(partners, key=lambda h: own[h])
                fractions[f"the other direction of its READ mix, into {other}"] = own[other]
            bound = max(fractions, key=lambda k: fractions[k])
            frac = fractions[bound]
            lowest = min(lowest, frac)
            evidence.setdefault("throughput", {})[host] = {**seen, "fraction": frac, "bound": bound}
            if seen["bps"] < t.throughput_fraction * seen["bps_ceiling"] \
                    and seen["pps"] < t.throughput_fraction * seen["pps_ceiling"] and frac < t.throughput_fraction:
                symptoms.append(Symptom("low_throughput", host, "receiver", frac, t.throughput_fraction))
        return lowest if lowest < math.inf else 0.0

    def _senders_bound(self, run: RunResult, workload: Workload,
                       into: Mapping[str, list[tuple[FlowResult, _Landing]]],
                       judged: Mapping[str, tuple[dict[str, Any], dict[str, float]]]) -> dict[str, float]:
        """Each receiving host's fraction of what its senders could send it, in a pattern's run: each flow into
        it scaled up by its sender's fraction of its own bits/s ceiling (the sum over its flows of each one's
        bits/s against the ceiling of its kind, sizes and MTU: the share of the sender's link it took), what
        arrives capped by the host's ceiling. A sender at its ceiling explains what its receivers miss: in an
        outcast the root's port is shared by every receiver, none of whom is low; a sender below it (a slow port)
        does not."""
        rate: dict[str, float] = defaultdict(float)
        for fr in run.flows:  # a pattern's flows push: the client sends the payload
            f = workload.flows[fr.flow]
            sender = f.client.host
            ceiling = self.ceilings.payload_bps(direction_kind(workload, sender), list(f.sizes), f.mtu)
            rate[sender] += fr.bps / ceiling if ceiling else 0.0
        out: dict[str, float] = {}
        for host, (seen, _) in judged.items():
            could = sum(r.bps * landing.bytes_share / rate[s] for r, landing in into[host]
                        if (s := workload.flows[r.flow].client.host) in rate and rate[s] > 0)
            if could > 0 and seen["bps_ceiling"]:
                out[host] = seen["bps"] / min(could, seen["bps_ceiling"])
        return out

    def _shared_bps_ceiling(self, kind: str, workload: Workload,
                            parts: list[tuple[FlowResult, _Landing]]) -> float:
        """The bits/s ceiling of the payload landing on one host when its parts differ in sizes or MTU (an
        aggressor and its victim): each part's bits/s is its share of the ceiling of its own sizes and MTU, and
        the host's ceiling is what those shares make whole, ``sum(bps) / sum(bps_i / ceiling_i)``; 0 when the
        parts are alike or moved nothing (the ceiling of their sizes applies)."""
        shapes = [(landing.sizes, workload.flows[r.flow].mtu) for r, landing in parts]
        if len(set(shapes)) < 2:
            return 0.0
        moved = [r.bps * landing.bytes_share for r, landing in parts]
        share = sum(b / c for b, (sizes, mtu) in zip(moved, shapes, strict=True)
                    if (c := self.ceilings.payload_bps(kind, list(sizes), mtu)) > 0)
        return sum(moved) / share if share > 0 else 0.0

    def _isolation(self, run: RunResult, workload: Workload, symptoms: list[Symptom], evidence: dict[str, Any],
                   levels: dict[str, float]) -> None:
        """Append an isolation symptom per victim slowed past a threshold against its solo baseline (see the
        module docstring); record every victim's readings in ``evidence["isolation"]`` (a note when the solo
        baseline is missing)."""
        t = self.thresholds
        solo_workload = workload.solo()
        solo = self.solos.get(solo_workload.key())
        if solo is None:
            evidence["isolation"] = {"note": f"no solo baseline of {solo_workload.key()}: isolation not judged"}
            return
        alone = {r.flow: r for r in solo.flows}
        got = {r.flow: r for r in run.flows}
        readings: dict[str, Any] = {}
        for j, i in enumerate(i for i, f in enumerate(workload.flows) if f.victim):
            f = workload.flows[i]
            if i not in got or j not in alone:
                continue
            host = f.payload_receiver.host
            kind = direction_kind(workload, host)
            # a flow mixing READ with other opcodes lands payload on both its hosts: a tenant of each; the flows
            # leaving the victim's sender on its path share the sender's link (a victim beside a pattern's sender)
            sender = f.payload_sender.host
            tenants = max(sum(any(part.host == host for part in _payload_into(g)) for g in workload.flows),
                          sum(g.payload_sender.host == sender and g.loopback == f.loopback for g in workload.flows))
            was, now = alone[j], got[i]
            shares = [was.bps, self.ceilings.payload_bps(kind, list(f.sizes), f.mtu) / tenants]
            if was.pps > 0:
                shares.append(was.bps / was.pps * self.ceilings.pps[kind] / tenants)
            fair = min(shares)
            slow_bps = fair / max(now.bps, 1e-9)
            # a flow that keeps its queue full waits in inverse proportion to its rate (Little's law): its solo p99
            # at the rate it got is what it may wait
            expected = was.lat_p99_us * max(1.0, was.bps / max(now.bps, 1e-9))
            slow_p99 = now.lat_p99_us / expected if expected > 0 else 1.0
            level_bps, level_p99 = slow_bps / t.isolation_slowdown, slow_p99 / t.isolation_latency
            levels["isolation@victim"] = max(levels["isolation@victim"], level_bps, level_p99)
            readings[f.victim] = {"flow": i, "host": host, "tenants": tenants, "bps": now.bps, "solo_bps": was.bps,
                                  "fair_bps": fair, "lat_p99_us": now.lat_p99_us, "solo_lat_p99_us": was.lat_p99_us,
                                  "slowdown_bps": slow_bps, "slowdown_p99": slow_p99}
            if max(level_bps, level_p99) > 1.0:
                value, limit = (slow_bps, t.isolation_slowdown) if level_bps >= level_p99 else \
                    (slow_p99, t.isolation_latency)
                symptoms.append(Symptom("isolation", host, "victim", value, limit))
        evidence["isolation"] = readings

    def _straggler(self, figures: CollectiveResult, symptoms: list[Symptom], evidence: dict[str, Any],
                   levels: dict[str, float]) -> None:
        """Append the straggler symptoms of a pattern's run (see the module docstring); record its figures."""
        floor = 1.0 - self.thresholds.straggler_margin
        reference = figures.reference_of
        slow = [link for link in figures.links if reference(link) > 0 and link.gbs < floor * reference(link)]
        evidence["collective"] = _collective_evidence(figures, slow)
        fractions = [link.gbs / reference(link) for link in figures.links if reference(link) > 0]
        if fractions:
            levels["straggler@link"] = floor / max(min(fractions), 1e-12)
        left = sorted(slow, key=lambda lk: lk.gbs / reference(lk))
        while left:  # a host with slow links to two or more peers is named for all of them, the most first
            peers: dict[str, set[str]] = defaultdict(set)
            for link in left:
                peers[link.src].add(link.dst)
                peers[link.dst].add(link.src)
            host, count = max(((h, len(p - {h})) for h, p in peers.items()),
                              key=lambda kv: (kv[1], kv[0] == left[0].src, kv[0]))
            if count < 2:
                break
            mine = [link for link in left if host in (link.src, link.dst)]
            left = [link for link in left if link not in mine]
            symptoms.append(Symptom("straggler", host, "host", mine[0].gbs / reference(mine[0]), floor,
                                    link=", ".join(link.name for link in mine)))
        for link in left:
            symptoms.append(Symptom("straggler", link.src, "link", link.gbs / reference(link), floor,
                                    link=link.name))

    def _limit_fractions(self, kind: str, workload: Workload, parts: list[tuple[FlowResult, _Landing]],
                         reached: Mapping[str, float]) -> dict[str, float]:
        """The fractions of their own limits that the flows landing on one host (``parts``) reached, by the bound
        in words: what they complete against what they could (:meth:`flow_limit`) when every flow has a limit, and
        the shared atomic rate when every flow has atomics; none when a bound is not calibrated.

        A flow that mixes READ with other opcodes could complete no more than its own limit, nor more than its
        other direction lets it: its rate over its other host's fraction of that host's bits/s and packets/s
        ceilings (``reached``, the larger), when that is less (a mix paced by READ responses into a saturated
        client). The flows with atomics could together run no more atomics than the responder's rate: when what
        they could complete asks more, each is scaled down alike."""
        out: dict[str, float] = {}
        results = list({r.flow: (r, landing) for r, landing in parts}.values())  # a loopback flow lands twice
        flows = [workload.flows[r.flow] for r, _ in results]
        limits = [lim for f in flows if (lim := self.flow_limit(kind, f)) is not None]
        shares = [_atomic_share(f) for f in flows]
        if self.ceilings.atomic_ops > 0 and all(shares) and len(flows) > 1:  # a flow alone: its own limit says it
            # first: a tie with the flows' own limits (scaled to the shared rate) is named by the shared rate
            ops = sum(r.msg_rate * share for (r, _), share in zip(results, shares, strict=True))
            out[f"atomic rate: {self.ceilings.atomic_ops / 1e6:.3g} M ops/s shared"] = ops / self.ceilings.atomic_ops
        if len(limits) == len(flows):
            could = [min(lim.rate, r.msg_rate / reached[landing.partner]) if reached.get(landing.partner)
                     else lim.rate for lim, (r, landing) in zip(limits, results, strict=True)]
            ops = sum(c * share for c, share in zip(could, shares, strict=True))
            if self.ceilings.atomic_ops > 0 and ops > self.ceilings.atomic_ops:  # one responder runs them all
                could = [c * self.ceilings.atomic_ops / ops if share else c
                         for c, share in zip(could, shares, strict=True)]
            out[" + ".join(lim.why for lim in limits)] = sum(r.msg_rate for r, _ in results) / sum(could)
        return out

    def flow_limit(self, kind: str, flow: Flow) -> FlowLimit | None:
        """The requests/s ``flow``'s QPs, its READ/atomic window and the atomic rate let it complete alone (see
        the module docstring), with the tightest bound in words; None when none of them applies or is
        calibrated."""
        c = self.ceilings
        requests = flow.requests()
        hold = c.window_hold_us(kind, flow)
        bounds: list[FlowLimit] = []
        if (qp_rate := c.qp_rate(flow)) is not None:
            posts = f", post lists of {flow.batch}" if flow.batch > 1 else ""
            bounds.append(FlowLimit(qp_rate, f"QP rate: {flow.qps} QP{'s' if flow.qps > 1 else ''} x "
                                             f"{qp_rate / flow.qps / 1e6:.3g} M WRs/s{posts}"))
        if hold is not None:
            held = sum(op in WINDOWED for op, _ in requests)
            what = "/".join(sorted({"READ" if op == "READ" else "atomic" for op, _ in requests if op in WINDOWED}))
            bounds.append(FlowLimit(flow.qps * c.max_rd_atomic * len(requests) / held / (hold * 1e-6),
                                    f"{what} window: {c.max_rd_atomic} outstanding x {flow.qps} QPs / "
                                    f"{hold:.3g} us"))
        share = _atomic_share(flow)
        if share and c.atomic_ops > 0:
            bounds.append(FlowLimit(c.atomic_ops / share, f"atomic rate: {c.atomic_ops / 1e6:.3g} M ops/s"))
        return min(bounds, key=lambda b: b.rate, default=None)


@dataclass(frozen=True)
class _Landing:
    """The part of a flow's payload that lands on one host: the sizes that do, their shares of the flow's
    payload bytes and of its data packets, and the host the rest lands on (``""``: none, or the same host)."""

    host: str
    sizes: tuple[int, ...]
    bytes_share: float
    packets_share: float
    partner: str = ""


def _payload_into(flow: Flow) -> tuple[_Landing, ...]:
    """Where ``flow``'s payload lands: all of it on its payload receiver, unless its cycle mixes READ with other
    opcodes; then READ responses land on the client and everything else (WRITE, SEND, atomics) on the server,
    each host its share of the cycle's bytes and packets."""
    requests = flow.requests()
    reads = tuple(b for op, b in requests if op == "READ")
    pushes = tuple(b for op, b in requests if op != "READ")
    if not reads or not pushes:  # the cycle's own sizes: an atomic moves 8 B whatever the size pattern says
        return (_Landing(flow.payload_receiver.host, tuple(b for _, b in requests), 1.0, 1.0),)
    nbytes = sum(b for _, b in requests)
    packets = sum(rocev2.packets(b, flow.mtu) for _, b in requests)
    ends = ((flow.client.host, reads, flow.server.host), (flow.server.host, pushes, flow.client.host))
    return tuple(_Landing(host, part, sum(part) / nbytes, sum(rocev2.packets(b, flow.mtu) for b in part) / packets,
                          "" if flow.loopback else partner)
                 for host, part, partner in ends)


def _atomic_share(flow: Flow) -> float:
    """Atomics per request of ``flow``'s cycle."""
    requests = flow.requests()
    return sum(op in ATOMIC_OPCODES for op, _ in requests) / len(requests)


def _collective_evidence(figures: CollectiveResult, slow: list[LinkFigure]) -> dict[str, Any]:
    """A pattern run's figures for reports: every link's GB/s when there are few, else the slow ones, and the
    reference of each slow link's group (what it was judged against); a time that never ended (a connection moved
    nothing) is None."""
    shown = figures.links if len(figures.links) <= EVIDENCE_LINKS else slow
    return {"time_s": figures.time_s if figures.time_s < math.inf else None,
            "algbw_gbs": figures.algbw_gbs, "busbw_gbs": figures.busbw_gbs,
            "median_link_gbs": figures.median_link_gbs, "reference_gbs": figures.reference_gbs,
            "spread": figures.spread,
            "slowest_link": figures.slowest_link.name, "slow_links": [link.name for link in slow],
            "slow_references": {link.name: figures.reference_of(link) for link in slow},
            "links": {link.name: link.gbs for link in shown}}


def fabric_origin(workload: Workload, run: RunResult, paused: set[str]) -> tuple[str, str]:
    """The port a pause that no host of the run sent is attributed to, and how a symptom names it: the switch's
    port into the host that the most paused hosts send to while it is not paused itself (the congested port
    pauses the links feeding it, not its own host), ties to the one whose port carried the most, headers
    included (a congested port runs full); ``("", "fabric")``
    when no such host is fed by two paused hosts, or by the only one (their traffic met on a link between
    switches)."""
    fed: dict[str, set[str]] = defaultdict(set)
    wire: dict[str, float] = defaultdict(float)  # what each host's port carried, headers included
    for h in run.hosts:
        wire[h.host] = h.rx_bps + h.rx_pps * rocev2.PACKET_OVERHEAD * 8
    for f in workload.flows:
        sender, receiver = f.payload_sender.host, f.payload_receiver.host
        if sender in paused and receiver not in paused and sender != receiver:
            fed[receiver].add(sender)
    origin = max(sorted(fed), key=lambda h: (len(fed[h]), wire[h]), default="")
    if not origin or len(fed[origin]) < min(2, len(paused)):
        return "", "fabric"  # no port that paused hosts share: their traffic met between the switches
    return origin, f"switch->{origin}"


def _strongest_pause_counter(n: NormalizedCounters, way: str = "tx") -> str:
    """The counter behind the largest pause ratio of one way, ``tx`` or ``rx`` (a priority's, or the link's
    global pause)."""
    per_priority, global_ratio = (n.pause_ratio_tx, n.global_pause_ratio_tx) if way == "tx" else \
        (n.pause_ratio_rx, n.global_pause_ratio_rx)
    ratios = {f"pause_ratio_{way}_p{p}": r for p, r in per_priority.items()}
    if global_ratio is not None:
        ratios[f"global_pause_ratio_{way}"] = global_ratio
    key = max(ratios, key=lambda k: ratios[k])
    return n.basis.get(key, ("",))[0]


def _host_evidence(h: HostResult, n: NormalizedCounters, end: str) -> dict[str, Any]:
    """What a report shows of one host: its rates, pause ratios, event rates and every counter those rest on,
    with its delta and source."""
    used = sorted(n.counters_used())
    out: dict[str, Any] = {
        "end": end,
        "tx_bps": h.tx_bps, "rx_bps": h.rx_bps, "tx_pps": h.tx_pps, "rx_pps": h.rx_pps,
        "pause_readable": n.pause_readable,
        "pause_ratio_tx": _pause_map(n.pause_ratio_tx, n.global_pause_ratio_tx),
        "pause_ratio_rx": _pause_map(n.pause_ratio_rx, n.global_pause_ratio_rx),
        "pause_basis": {"tx": n.pause_basis_tx, "rx": n.pause_basis_rx},
        "loss_rates": dict(n.loss_rates),
        "retransmission_rates": dict(n.retransmission_rates),
        "receiver_starvation_rates": dict(n.receiver_starvation_rates),
        "counters": {name: {"delta": _delta_of(h, name), "source": n.sources.get(name, "")} for name in used},
    }
    if h.unreadable:
        out["unreadable"] = dict(h.unreadable)
    if n.notes:
        out["notes"] = list(n.notes)
    return out


def _pause_map(per_priority: Mapping[int, float], global_ratio: float | None) -> dict[str, float]:
    out = {str(p): r for p, r in sorted(per_priority.items())}
    if global_ratio is not None:
        out["global"] = global_ratio
    return out


def _delta_of(h: HostResult, name: str) -> float | None:
    """A counter's delta as the host reported it (under its current name, or a ``source:`` or older name)."""
    if name in h.counters:
        return h.counters[name]
    for reported, value in h.counters.items():
        if reported.partition(":")[2] == name:
            return value
    return None


def _order(s: Symptom) -> tuple[int, float]:
    """Symptoms by kind, then (stragglers) the strongest first, or (every other kind, as journals recorded
    them) the highest value over threshold first."""
    return SYMPTOM_ORDER.index(s.kind), -(s.strength if s.kind == "straggler" else s.value / max(s.threshold, 1e-12))
