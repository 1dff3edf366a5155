"""The target interface: something that runs a workload and reports what happened, with counters.

A target is a context manager. ``describe()`` fingerprints the subsystem (NIC, firmware, driver, kernel, line
rate, ceilings); ``run(workload, duration)`` runs one experiment and returns a :class:`RunResult`; it may be told
the run's ``repetition`` (see :meth:`Target.run`), which makes seeded noise a function of the caller's record. A
workload the target cannot run (over a device limit, an opcode it lacks) raises :class:`Unsupported`: the campaign
prunes that trial and never counts it as an anomaly.

Invariants of a :class:`RunResult`:
    * rates are per second of the measured interval (setup excluded);
    * ``counters`` of a host are deltas over the measured interval under the driver's real counter names, except
      gauges (catalog kind ``gauge``), which are the mean of the samples; a counter the host does not have is
      absent, never 0;
    * ``truth`` is filled by the simulator only and may be read by tests and benchmarks only; no strategy,
      oracle or minimizer may look at it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Final, Protocol, Self, runtime_checkable

from collie.codec import Reader, decode, encode_fields
from collie.model.workload import Workload


class Unsupported(Exception):
    """The target cannot run this workload; ``str(exc)`` says why (e.g. ``qps 20000 > device max_qp 16384``)."""


@dataclass(frozen=True)
class TargetInfo:
    """Fingerprint of a target's subsystem, stored with every campaign.

    Attributes:
        name: the target spec as given (``sim:cx6-200g``, ``verbs:rxe0``, ...).
        kind: ``sim``, ``verbs`` or ``remote``.
        nic_model: NIC model as the vendor names it.
        firmware: firmware version, or ``""`` when unknown.
        driver: kernel RDMA driver (``mlx5``, ``bnxt_re``, ``rxe``, ...).
        kernel: kernel release.
        counter_dialect: which counter catalog the names follow (``mlx5``, ``bnxt_re``, ``rxe``, ...).
        line_rate_bps: link speed in bits/s (before any header overhead).
        msg_rate_pps: the NIC's packet-rate ceiling in packets/s (0 when unknown; calibration measures it).
        hosts: the host names workloads may use.
        details: anything else worth fingerprinting (PCIe gen/width, CPU, NUMA layout, ...); ``nics``: the NICs of
            each host, when more than one (see :attr:`nics_per_host`).
        max_rd_atomic: READ and atomic requests a QP keeps outstanding (its ``max_rd_atomic`` as the target sets
            it up, within the device's ``max_qp_rd_atom``): the window that bounds a READ or atomic flow's rate
            (0 = unknown, as in fingerprints recorded before it was kept).
        atomics: the target executes atomics (calibration measures their rate only then).
    """

    name: str
    kind: str
    nic_model: str
    firmware: str
    driver: str
    kernel: str
    counter_dialect: str
    line_rate_bps: float
    msg_rate_pps: float
    hosts: tuple[str, ...]
    details: Mapping[str, str] = field(default_factory=dict)
    max_rd_atomic: int = 0
    atomics: bool = True

    @property
    def simulated(self) -> bool:
        """Whether every number measured on this target comes from the simulator: the ``sim`` target, or a
        ``remote`` one whose every host runs it (``details["simulated"] == "yes"``)."""
        return self.kind == "sim" or (self.kind == "remote" and self.details.get("simulated") == "yes")

    @property
    def nics_per_host(self) -> int:
        """The NICs of each host (``details["nics"]``; 1 when it does not say): NIC ``i`` of host ``h`` is
        addressed ``h/i`` (:func:`~collie.model.flow.nic_address`)."""
        return int(self.details.get("nics", "1"))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (``hosts`` a list), every field but ``max_rd_atomic`` and ``atomics`` at their
        defaults (so a fingerprint recorded before they were kept writes back as it was)."""
        out = encode_fields(self)
        if not self.max_rd_atomic:
            del out["max_rd_atomic"]
        if self.atomics:
            del out["atomics"]
        return out

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> TargetInfo:
        """Read :meth:`to_dict`'s form (``details``, ``max_rd_atomic`` and ``atomics`` may be absent), every
        field checked.

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped or unknown).
        """
        return decode(cls, data, reader)


#: :class:`FlowResult` fields left out of its JSON form at 0.
_ZERO_OMITTED: Final = frozenset({*(f"{kind}_churn_{figure}" for kind in ("mr", "qp")
                                    for figure in ("us", "per_s", "p99_us")), "qp_min_share"})


@dataclass(frozen=True)
class FlowResult:
    """Measured performance of one flow of the workload (index into ``Workload.flows``).

    Attributes:
        bps: payload bits/s delivered.
        pps: packets/s on the wire (data packets).
        msg_rate: messages (work requests) completed per second.
        lat_p50_us, lat_p99_us, lat_p999_us: completion latency percentiles in µs.
        mr_churn_us: mean latency in µs of one MR the flow's control-path churn registered and deregistered
            (``Flow.mr_churn``), both sides; 0 when it churns no MRs (left out of :meth:`to_dict` then).
        mr_churn_per_s: MRs registered and deregistered per second per side in the measured interval (what
            ``Flow.mr_churn`` asked, or less when the device could not keep up), the mean of both sides.
        mr_churn_p99_us: 99th-percentile latency in µs of one MR cycle, the higher of both sides'.
        qp_churn_us: mean latency in µs of one QP the churn created, brought up (the simulator: to RTS; verbs:
            to INIT) and destroyed (``Flow.qp_churn``); 0 when it churns no QPs (left out of :meth:`to_dict` then).
        qp_churn_per_s, qp_churn_p99_us: the same of its QPs.
        qp_min_share: per-QP fairness: the WRs its slowest QP completed in the measured interval over the mean of
            its QPs (1.0: every QP alike); 0 when unmeasured (one QP, or a target that does not measure it).

    Invariant: every churn figure is 0 when the flow churns nothing of its kind, and a churn figure or a
    ``qp_min_share`` of 0 is left out of :meth:`to_dict`, so a result without them reads and writes as before they
    existed.
    """

    flow: int
    client: str
    server: str
    bps: float
    pps: float
    msg_rate: float
    lat_p50_us: float
    lat_p99_us: float
    lat_p999_us: float
    mr_churn_us: float = 0.0
    mr_churn_per_s: float = 0.0
    mr_churn_p99_us: float = 0.0
    qp_churn_us: float = 0.0
    qp_churn_per_s: float = 0.0
    qp_churn_p99_us: float = 0.0
    qp_min_share: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form, every field but a churn figure or per-QP fairness of 0 (results without them read
        as before)."""
        return {k: v for k, v in encode_fields(self).items() if v or k not in _ZERO_OMITTED}

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> FlowResult:
        """Read :meth:`to_dict`'s form, every field checked (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class ChurnStats:
    """What one kind of control-path churn (MRs or QPs) did at one end of a flow in the measured interval.

    Attributes:
        asked: operations per second the flow asked (``Flow.mr_churn`` or ``qp_churn``; 0: none of this kind).
        ops: operations done.
        rate: operations done per second of the interval.
        mean_us, p99_us: mean and 99th-percentile latency of one operation in µs (0 when none was done).
    """

    asked: int
    ops: int
    rate: float
    mean_us: float
    p99_us: float


@dataclass(frozen=True)
class EndChurn:
    """The control-path churn one end (``side``: ``client`` or ``server``) of flow ``flow`` did: its MRs and QPs.
    A cross-host run reports each end from its own host; :func:`with_churn` makes a flow's figures of them."""

    flow: int
    side: str
    mr: ChurnStats
    qp: ChurnStats


def with_churn(result: FlowResult, ends: Sequence[EndChurn]) -> FlowResult:
    """``result`` with the churn figures of its flow's churning ``ends``, per kind: the achieved rate (the mean of
    the ends that asked some), the mean latency (the mean of the means of the ends that did some) and the p99
    latency (the higher of those ends'); ``result`` itself when no end churned."""
    if not ends:
        return result
    mr, qp = _figures([e.mr for e in ends]), _figures([e.qp for e in ends])
    return replace(result, mr_churn_per_s=mr[0], mr_churn_us=mr[1], mr_churn_p99_us=mr[2],
                   qp_churn_per_s=qp[0], qp_churn_us=qp[1], qp_churn_p99_us=qp[2])


def _figures(ends: list[ChurnStats]) -> tuple[float, float, float]:
    """One kind's achieved rate, mean and p99 latency over its ends (0 where none asked or did any)."""
    asked = [s for s in ends if s.asked]
    done = [s for s in asked if s.ops]
    rate = sum(s.rate for s in asked) / len(asked) if asked else 0.0
    if not done:
        return rate, 0.0, 0.0
    return rate, sum(s.mean_us for s in done) / len(done), max(s.p99_us for s in done)


@dataclass(frozen=True)
class HostResult:
    """What one host's NIC did during the measured interval.

    Attributes:
        tx_bps, rx_bps: bits/s sent and received by the NIC (payload; loopback counts both ways).
        tx_pps, rx_pps: packets/s sent and received.
        counters: counter deltas (gauges: means) under the driver's names; absent = not available.
        sources: counter name -> where it was read (``port``, ``hw``, ``ethtool``, ``rdma-stat``, ...); empty
            when the target does not say (the simulator: its counters stand where the catalog declares them).
        unreadable: source -> why this host could not read it (its counters are absent, not 0).
    """

    host: str
    tx_bps: float
    rx_bps: float
    tx_pps: float
    rx_pps: float
    counters: Mapping[str, float] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form; ``sources`` and ``unreadable`` only when there are any."""
        d: dict[str, Any] = {"host": self.host, "tx_bps": self.tx_bps, "rx_bps": self.rx_bps,
                             "tx_pps": self.tx_pps, "rx_pps": self.rx_pps, "counters": dict(self.counters)}
        if self.sources:
            d["sources"] = dict(self.sources)
        if self.unreadable:
            d["unreadable"] = dict(self.unreadable)
        return d

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> HostResult:
        """Read :meth:`to_dict`'s form, every field checked (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class RunResult:
    """The outcome of one experiment (see the module docstring for invariants)."""

    workload_key: str
    target: str
    duration_s: float
    setup_s: float
    flows: tuple[FlowResult, ...]
    hosts: tuple[HostResult, ...]
    errors: tuple[str, ...] = ()
    engine_bound: bool = False
    truth: tuple[str, ...] = ()

    def host(self, name: str) -> HostResult:
        """The result of host ``name``; KeyError if that host took no part."""
        for h in self.hosts:
            if h.host == name:
                return h
        raise KeyError(name)

    @property
    def payload_gbps(self) -> float:
        """Payload Gb/s of every flow together (what perftest's bandwidth tools report: both directions of a
        bidirectional run)."""
        return sum(f.bps for f in self.flows) / 1e9

    @property
    def lat_p50_us(self) -> float:
        """The median completion latency of its slowest flow (0 without flows): what a latency tool's typical
        latency is set beside."""
        return max((f.lat_p50_us for f in self.flows), default=0.0)

    def to_dict(self, include_truth: bool = False) -> dict[str, Any]:
        """Plain JSON-ready form; ``truth`` is left out unless asked for (tests and benchmarks only)."""
        d: dict[str, Any] = {
            "workload_key": self.workload_key,
            "target": self.target,
            "duration_s": self.duration_s,
            "setup_s": self.setup_s,
            "flows": [f.to_dict() for f in self.flows],
            "hosts": [h.to_dict() for h in self.hosts],
            "errors": list(self.errors),
            "engine_bound": self.engine_bound,
        }
        if include_truth:
            d["truth"] = list(self.truth)
        return d

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> RunResult:
        """Read :meth:`to_dict`'s form (with or without ``truth``), every field checked to the leaves.

        Raises:
            ``reader``'s error: one sentence naming the field (missing, mistyped or unknown).
        """
        return decode(cls, data, reader)


@runtime_checkable
class Target(Protocol):
    """What every target implements (sim, verbs, remote)."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def describe(self) -> TargetInfo:
        """Fingerprint of the subsystem under test."""
        ...

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        """Run one experiment for ``duration`` seconds of measured traffic.

        Args:
            workload: what to run.
            duration: seconds of measured traffic.
            repetition: how many times the caller ran this very workload before (a campaign counts its
                journal's completed trials of the same key). A target whose measurements come from a seeded
                noise source (the simulator) draws this run's noise from it, so that a resumed campaign,
                which takes its earlier trials from the journal instead of running them, measures what an
                uninterrupted one did. Real targets ignore it. None: the target counts its own runs.

        Raises:
            Unsupported: the target cannot run this workload.
        """
        ...
