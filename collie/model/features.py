"""Derived features of a workload: one vocabulary for the simulator's quirk conditions, the minimizer and MFS.

A feature is a named scalar (int, bool or str) computed from a :class:`~collie.model.workload.Workload` alone. Quirk
conditions, minimal feature sets and reports all speak in these names, so a condition written once (e.g.
``qps_total >= 160``) means the same thing everywhere.

Aggregation rules (for workloads of several flows):
    * categorical features (``transport``, ``opcode``) are the common value, or ``MIXED`` when flows differ (a
      flow whose requests cycle over several opcodes has the opcode ``MIXED`` itself);
    * size-like and count-like features are the maximum over flows, except ``*_total`` (sums), ``mtu`` (the
      smallest: the most packets per message) and ``min_msg`` (the smallest message);
    * flags (``bidirectional``, ``loopback``, ``incast``, ``remote_numa``, ``gpu``, ``burst``, ``read_write_mix``,
      ``atomics``) are true when any flow has them;
    * ``line_tail`` and ``tail_packet`` describe where sizes sit against region boundaries: the smallest
      non-zero ``size mod 64`` (bytes in a message's partial last cache line; 0 when every size is whole lines)
      and the smallest payload of the last packet of a message of several packets (1 for MTU + 1 bytes; 0 when
      no message spans packets). "size mod 64 in 1..8" is ``line_tail >= 1 and line_tail <= 8``;
    * ``victim`` names the victim flow of an isolation experiment (``Flow.victim``: ``latency``, say; several
      joined by ``+``), ``none`` when no flow is one. Every other feature describes the aggressors only (the
      flows that are no victim): a condition on them, in a quirk or an MFS, means the same with a victim beside
      them or without (``opcode == READ`` of a READ aggressor beside a SEND victim), and the victim is named by
      ``victim`` alone.
    * ``recv_gap_ns`` is a paced receiver against its sender: the nanoseconds between two of a flow's requests
      that its receiver can take at its pace (each QP reposts ``recv_batch`` receives every ``recv_delay_us``;
      a request that consumes none costs none), ``recv_delay_us x 1000 x share / (qps x recv_batch)`` with
      ``share`` the receive-consuming part of the opcode pattern, at least 1; the largest over flows, 0 when no
      flow's receiver is paced. A sender whose requests come closer than that starves the receiver (RNR): for
      one sender (its request rate set by sizes, MTU and the NIC), ``recv_gap_ns >= G`` is that ratio-shaped
      region, which conditions on ``qps_total``, ``recv_batch`` and ``recv_delay_us`` apart cut into boxes.

:func:`encode` turns features into regression columns, and :func:`point_encoder` makes the encoder a search
strategy's surrogate is given (the strategies know nothing of workloads; whoever builds them injects it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from collie.model.flow import RECV_CONSUMING, Flow, hosts_of
from collie.model.workload import Workload

SMALL_MSG: Final = 1024
LARGE_MSG: Final = 65536
#: Bytes of a cache line: a DMA write that ends inside one is a partial-line write (``line_tail``).
CACHE_LINE: Final = 64
_WRITES: Final = frozenset(("WRITE", "WRITE_IMM"))


@dataclass(frozen=True)
class Features:
    """The derived features of one workload (see the module docstring for aggregation)."""

    transport: str
    opcode: str
    flows: int
    hosts: int
    qps_total: int
    qps_flow: int
    qps_host: int
    batch: int
    sges: int
    sge_bytes: int
    wq_depth: int
    rq_depth: int
    mtu: int
    max_msg: int
    min_msg: int
    sizes: int
    size_mix: bool
    bidirectional: bool
    loopback: bool
    incast: bool
    remote_numa: bool
    gpu: bool
    mrs_host: int
    mr_size: int
    mr_footprint: int
    processes: int
    inline: int
    signal_every: int
    burst: bool
    read_write_mix: bool
    atomics: bool
    line_tail: int
    tail_packet: int
    recv_batch: int
    recv_sges: int
    recv_delay_us: int
    mr_churn: int
    qp_churn: int
    victim: str
    recv_gap_ns: int

    def as_dict(self) -> dict[str, int | bool | str]:
        return asdict(self)


FEATURE_NAMES: Final = tuple(Features.__dataclass_fields__)


def _common(values: list[str]) -> str:
    return values[0] if len(set(values)) == 1 else "MIXED"


def _recv_gap_ns(f: Flow) -> int:
    """``recv_gap_ns`` of one flow (see the module docstring): 0 unless its receiver is paced."""
    consuming = sum(o in RECV_CONSUMING for o in f.opcodes)
    if not consuming or f.recv_delay_us <= 0:
        return 0
    return max(1, round(f.recv_delay_us * 1000 * consuming / len(f.opcodes) / (f.qps * f.recv_batch)))


def features(workload: Workload) -> Features:
    """Compute the features of ``workload`` (pure, cheap: called on every simulated experiment)."""
    flows = tuple(f for f in workload.flows if not f.victim) or workload.flows  # all victims: illegal, described
    qps_host: dict[str, int] = defaultdict(int)
    mrs_host: dict[str, int] = defaultdict(int)
    bytes_host: dict[str, int] = defaultdict(int)
    remote_pairs: set[tuple[str, str]] = set()
    loop_rx: set[str] = set()
    remote_rx: set[str] = set()
    all_sizes: list[int] = []
    for f in flows:
        # both ends count on their host, so a loopback flow's host holds 2 x qps QPs and 2 x mrs MRs
        qps_host[f.client.host] += f.qps
        qps_host[f.server.host] += f.qps
        mrs_host[f.client.host] += f.mrs
        mrs_host[f.server.host] += f.mrs
        bytes_host[f.client.host] += f.mrs * f.mr_size
        bytes_host[f.server.host] += f.mrs * f.mr_size
        all_sizes.extend(f.sizes)
        receiver = f.payload_receiver.host
        if f.loopback:
            loop_rx.add(receiver)
        else:
            remote_pairs.add((f.client.host, f.server.host))
            remote_rx.add(receiver)
    max_msg = max(all_sizes)
    min_msg = min(all_sizes)
    line_tails = [s % CACHE_LINE for s in all_sizes if s % CACHE_LINE]
    tails = [s - (s - 1) // f.mtu * f.mtu for f in flows if f.transport != "UD" for s in f.sizes if s > f.mtu]
    return Features(
        transport=_common([f.transport for f in flows]),
        opcode=_common([f.opcode for f in flows]),
        flows=len(flows),
        hosts=len(hosts_of(flows)),
        qps_total=sum(f.qps for f in flows),
        qps_flow=max(f.qps for f in flows),
        qps_host=max(qps_host.values()),
        batch=max(f.batch for f in flows),
        sges=max(f.sges for f in flows),
        sge_bytes=max(-(-f.max_size // f.sges) for f in flows),
        wq_depth=max(f.sq_depth for f in flows),
        rq_depth=max(f.rq_depth for f in flows),
        mtu=min(f.mtu for f in flows),
        max_msg=max_msg,
        min_msg=min_msg,
        sizes=max(len(f.sizes) for f in flows),
        size_mix=min_msg <= SMALL_MSG and max_msg >= LARGE_MSG,
        bidirectional=any((b, a) in remote_pairs for a, b in remote_pairs),
        loopback=bool(loop_rx),
        incast=bool(loop_rx & remote_rx),
        remote_numa=any(e.memory == "remote" for f in flows for e in (f.client, f.server)),
        gpu=any(e.memory == "gpu" for f in flows for e in (f.client, f.server)),
        mrs_host=max(mrs_host.values()),
        mr_size=max(f.mr_size for f in flows),
        mr_footprint=max(bytes_host.values()),
        processes=max(f.processes for f in flows),
        inline=max(f.inline for f in flows),
        signal_every=max(f.signal_every for f in flows),
        burst=any(f.burst for f in flows),
        read_write_mix=any("READ" in f.opcodes and _WRITES.intersection(f.opcodes) for f in flows),
        atomics=any(f.atomic for f in flows),
        line_tail=min(line_tails, default=0),
        tail_packet=min(tails, default=0),
        recv_batch=max(f.recv_batch for f in flows),
        recv_sges=max(f.recv_sges for f in flows),
        recv_delay_us=max(f.recv_delay_us for f in flows),
        mr_churn=max(f.mr_churn for f in flows),
        qp_churn=max(f.qp_churn for f in flows),
        victim="+".join(sorted({f.victim for f in workload.flows if f.victim})) or "none",
        recv_gap_ns=max(_recv_gap_ns(f) for f in flows),
    )


def encode(feats: Features) -> dict[str, float]:
    """The regression columns of one feature vector: numeric features as ``log2(1 + x)``, flags as 0/1,
    categorical features one-hot (``name=value``; absent columns are 0).

    Counters of NIC-internal events and rates tend to move multiplicatively with sizes, counts and depths, so a
    model linear in these columns captures the direction in which a metric grows.
    """
    row: dict[str, float] = {}
    for name in FEATURE_NAMES:
        value = getattr(feats, name)
        if isinstance(value, bool):
            row[name] = float(value)
        elif isinstance(value, int):
            row[name] = math.log2(1.0 + max(value, 0))
        else:
            row[f"{name}={value}"] = 1.0
    return row


def point_encoder(build: Callable[[Mapping[str, Any]], Workload]) -> Callable[[Mapping[str, Any]], dict[str, float]]:
    """The encoder of a search space's points: ``point -> encode(features(build(point)))``.

    Args:
        build: how a point becomes a workload (``SearchSpace.build``).
    """

    def encoder(point: Mapping[str, Any]) -> dict[str, float]:
        return encode(features(build(point)))

    return encoder
