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
    * ``pattern`` is the collective a workload runs (``ring_allreduce``, ...; ``none`` for a workload of flows),
      ``ranks_per_host`` its ranks on each host (1 without a pattern), ``hosts`` counts the hosts either
      touches and ``nics`` the most NICs of one host it uses (``h3`` and ``h3/1`` are two NICs of one host);
    * ``tclass`` is the traffic class the aggressors' packets carry (``106``), ``default`` when none sets one
      (their hosts' own applies), ``MIXED`` when they differ;
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
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from operator import attrgetter
from typing import Any, Final

from collie.codec import built
from collie.model.flow import ATOMIC_OPCODES, MIXED, RECV_CONSUMING, Flow, split_address
from collie.model.workload import Workload

SMALL_MSG: Final = 1024
LARGE_MSG: Final = 65536
#: Bytes of a cache line: a DMA write that ends inside one is a partial-line write (``line_tail``).
CACHE_LINE: Final = 64
_WRITES: Final = frozenset(("WRITE", "WRITE_IMM"))
#: The ``tclass`` feature of flows that set no traffic class (their host's default applies).
DEFAULT_TCLASS: Final = "default"
#: Categorical features at a value that gets no column of its own in :func:`encode` (the reference level: workloads
#: that never set the field encode as they did before it existed).
_REFERENCE: Final = {"tclass": DEFAULT_TCLASS}


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
    pattern: str
    ranks_per_host: int
    nics: int
    tclass: str

    def as_dict(self) -> dict[str, int | bool | str]:
        return asdict(self)


FEATURE_NAMES: Final = tuple(Features.__dataclass_fields__)


#: Features that are the largest value of one flow field over the flows (feature name, flow field).
_MAXIMA: Final = (("qps_flow", "qps"), ("batch", "batch"), ("sges", "sges"), ("wq_depth", "sq_depth"),
                  ("rq_depth", "rq_depth"), ("mr_size", "mr_size"), ("processes", "processes"),
                  ("inline", "inline"), ("signal_every", "signal_every"), ("recv_batch", "recv_batch"),
                  ("recv_sges", "recv_sges"), ("recv_delay_us", "recv_delay_us"), ("mr_churn", "mr_churn"),
                  ("qp_churn", "qp_churn"))
_maxima_of: Final = attrgetter(*(field for _, field in _MAXIMA))


def _recv_gap_ns(f: Flow) -> int:
    """``recv_gap_ns`` of one flow (see the module docstring): 0 unless its receiver is paced."""
    if f.recv_delay_us <= 0:
        return 0
    consuming = sum(o in RECV_CONSUMING for o in f.opcodes)
    if not consuming:
        return 0
    return max(1, round(f.recv_delay_us * 1000 * consuming / len(f.opcodes) / (f.qps * f.recv_batch)))


def features(workload: Workload) -> Features:
    """The features of ``workload``, computed once per instance (:meth:`Workload.derived`)."""
    return workload.derived(_features)


def _features(workload: Workload) -> Features:
    """Compute the features of ``workload`` (pure: called for every simulated experiment), in one pass over
    the flows."""
    every = workload.flows
    flows = [f for f in every if not f.victim] or every  # all victims: illegal, described
    found = _one_flow(flows[0], every) if len(flows) == 1 else _flows(flows, every)
    pattern = workload.pattern
    if pattern is None:
        return found
    return replace(found, pattern=pattern.kind.value, ranks_per_host=pattern.ranks_per_host)


def _flows(flows: Sequence[Flow], every: tuple[Flow, ...]) -> Features:
    """:func:`_features` of the workload of flows ``every`` whose aggressors (not victims) are ``flows``."""
    (qps_flow, batch, sges, wq_depth, rq_depth, mr_size, processes, inline, signal_every, recv_batch, recv_sges,
     recv_delay_us, mr_churn, qp_churn) = (_maxima_of(flows[0]) if len(flows) == 1  # in the order of _MAXIMA
                                           else tuple(map(max, *map(_maxima_of, flows))))
    qps_host: dict[str, int] = {}
    mrs_host: dict[str, int] = {}
    bytes_host: dict[str, int] = {}
    remote_pairs: set[tuple[str, str]] = set()
    loop_rx: set[str] = set()
    remote_rx: set[str] = set()
    transports: set[str] = set()
    opcodes: set[str] = set()
    memories: set[str] = set()
    all_sizes: list[int] = []
    tails: list[int] = []
    qps_total = sge_bytes = sizes = recv_gap_ns = 0
    mtu = flows[0].mtu
    burst = read_write_mix = atomics = False
    for f in flows:
        client_ep, server_ep = f.client, f.server
        client, server = client_ep.host, server_ep.host
        qps, mrs = f.qps, f.mrs
        # both ends count on their host, so a loopback flow's host holds 2 x qps QPs and 2 x mrs MRs
        footprint = mrs * f.mr_size
        for host in (client, server):
            qps_host[host] = qps_host.get(host, 0) + qps
            mrs_host[host] = mrs_host.get(host, 0) + mrs
            bytes_host[host] = bytes_host.get(host, 0) + footprint
        memories.add(client_ep.memory)
        memories.add(server_ep.memory)
        ops = f.opcodes
        opcode = ops[0] if ops.count(ops[0]) == len(ops) else MIXED  # Flow.opcode
        receiver = client if opcode == "READ" else server  # Flow.payload_receiver
        if client == server:
            loop_rx.add(receiver)
        else:
            remote_pairs.add((client, server))
            remote_rx.add(receiver)
        transports.add(f.transport)
        opcodes.add(opcode)
        qps_total += qps
        flow_mtu = f.mtu
        if flow_mtu < mtu:
            mtu = flow_mtu
        flow_sizes = f.sizes
        if len(flow_sizes) > sizes:
            sizes = len(flow_sizes)
        if f.recv_delay_us > 0:
            gap = _recv_gap_ns(f)
            recv_gap_ns = gap if gap > recv_gap_ns else recv_gap_ns
        burst = burst or f.burst
        read_write_mix = read_write_mix or ("READ" in ops and not _WRITES.isdisjoint(ops))
        atomics = atomics or not ATOMIC_OPCODES.isdisjoint(ops)  # Flow.atomic
        flow_max = max(flow_sizes)
        sge = -(-flow_max // f.sges)
        sge_bytes = sge if sge > sge_bytes else sge_bytes
        all_sizes += flow_sizes
        if flow_max > flow_mtu and f.transport != "UD":
            tails += [s - (s - 1) // flow_mtu * flow_mtu for s in flow_sizes if s > flow_mtu]
    max_msg = max(all_sizes)
    min_msg = min(all_sizes)
    line_tails = [t for s in all_sizes if (t := s % CACHE_LINE)]
    return built(Features, {
        "transport": transports.pop() if len(transports) == 1 else MIXED,
        "opcode": opcodes.pop() if len(opcodes) == 1 else MIXED,
        "flows": len(flows),
        "hosts": len(set(map(_host_of, qps_host))),
        "qps_total": qps_total,
        "qps_flow": qps_flow,
        "qps_host": max(qps_host.values()),
        "batch": batch,
        "sges": sges,
        "sge_bytes": sge_bytes,
        "wq_depth": wq_depth,
        "rq_depth": rq_depth,
        "mtu": mtu,
        "max_msg": max_msg,
        "min_msg": min_msg,
        "sizes": sizes,
        "size_mix": min_msg <= SMALL_MSG and max_msg >= LARGE_MSG,
        "bidirectional": len(remote_pairs) > 1 and any((b, a) in remote_pairs for a, b in remote_pairs),
        "loopback": bool(loop_rx),
        "incast": bool(loop_rx & remote_rx),
        "remote_numa": "remote" in memories,
        "gpu": "gpu" in memories,
        "mrs_host": max(mrs_host.values()),
        "mr_size": mr_size,
        "mr_footprint": max(bytes_host.values()),
        "processes": processes,
        "inline": inline,
        "signal_every": signal_every,
        "burst": burst,
        "read_write_mix": read_write_mix,
        "atomics": atomics,
        "line_tail": min(line_tails) if line_tails else 0,
        "tail_packet": min(tails) if tails else 0,
        "recv_batch": recv_batch,
        "recv_sges": recv_sges,
        "recv_delay_us": recv_delay_us,
        "mr_churn": mr_churn,
        "qp_churn": qp_churn,
        "victim": "+".join(sorted({f.victim for f in every if f.victim})) or "none",
        "recv_gap_ns": recv_gap_ns,
        "pattern": "none",
        "ranks_per_host": 1,
        "nics": _nics(qps_host),
        "tclass": _tclass({f.tclass for f in flows}),
    })


def _host_of(address: str) -> str:
    return split_address(address)[0]


def _nics(addresses: Iterable[str]) -> int:
    """The ``nics`` feature of the NICs at ``addresses`` (see the module docstring)."""
    return max(Counter(map(_host_of, set(addresses))).values())


def _tclass(classes: set[int | None]) -> str:
    """The ``tclass`` feature of flows of the traffic classes ``classes`` (see the module docstring)."""
    if len(classes) > 1:
        return MIXED
    (tclass,) = classes
    return DEFAULT_TCLASS if tclass is None else str(tclass)


def _one_flow(f: Flow, every: tuple[Flow, ...]) -> Features:
    """:func:`_features` of a workload whose flows but ``f`` (if any) are victims: the aggregation rules over one
    flow, written out (a test checks they agree)."""
    (qps_flow, batch, sges, wq_depth, rq_depth, mr_size, processes, inline, signal_every, recv_batch, recv_sges,
     recv_delay_us, mr_churn, qp_churn) = _maxima_of(f)  # in the order of _MAXIMA
    client, server = f.client, f.server
    loopback = client.host == server.host
    ends = 2 if loopback else 1  # a loopback flow's host holds both ends (2 x qps QPs, 2 x mrs MRs)
    ops = f.opcodes
    memories = (client.memory, server.memory)
    sizes = f.sizes
    mtu = f.mtu
    max_msg = max(sizes)
    min_msg = min(sizes)
    line_tails = [t for s in sizes if (t := s % CACHE_LINE)]
    tails = [s - (s - 1) // mtu * mtu for s in sizes if s > mtu] if max_msg > mtu and f.transport != "UD" else []
    return built(Features, {
        "transport": f.transport,
        "opcode": ops[0] if ops.count(ops[0]) == len(ops) else MIXED,  # Flow.opcode
        "flows": 1,
        "hosts": 1 if _host_of(client.host) == _host_of(server.host) else 2,
        "qps_total": qps_flow,
        "qps_flow": qps_flow,
        "qps_host": ends * qps_flow,
        "batch": batch,
        "sges": sges,
        "sge_bytes": -(-max_msg // sges),
        "wq_depth": wq_depth,
        "rq_depth": rq_depth,
        "mtu": mtu,
        "max_msg": max_msg,
        "min_msg": min_msg,
        "sizes": len(sizes),
        "size_mix": min_msg <= SMALL_MSG and max_msg >= LARGE_MSG,
        "bidirectional": False,
        "loopback": loopback,
        "incast": False,
        "remote_numa": "remote" in memories,
        "gpu": "gpu" in memories,
        "mrs_host": ends * f.mrs,
        "mr_size": mr_size,
        "mr_footprint": ends * (f.mrs * mr_size),
        "processes": processes,
        "inline": inline,
        "signal_every": signal_every,
        "burst": f.burst,
        "read_write_mix": "READ" in ops and not _WRITES.isdisjoint(ops),
        "atomics": not ATOMIC_OPCODES.isdisjoint(ops),  # Flow.atomic
        "line_tail": min(line_tails) if line_tails else 0,
        "tail_packet": min(tails) if tails else 0,
        "recv_batch": recv_batch,
        "recv_sges": recv_sges,
        "recv_delay_us": recv_delay_us,
        "mr_churn": mr_churn,
        "qp_churn": qp_churn,
        "victim": "+".join(sorted({g.victim for g in every if g.victim})) or "none" if len(every) > 1 or f.victim
                  else "none",
        "recv_gap_ns": _recv_gap_ns(f),
        "pattern": "none",
        "ranks_per_host": 1,
        "nics": _nics((client.host, server.host)),
        "tclass": _tclass({f.tclass}),
    })


def encode(feats: Features) -> dict[str, float]:
    """The regression columns of one feature vector: numeric features as ``log2(1 + x)``, flags as 0/1,
    categorical features one-hot (``name=value``; absent columns are 0; a ``tclass`` of ``default`` has none).

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
        elif _REFERENCE.get(name) != value:
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
