"""The base model of a simulated RDMA subsystem, and how fired quirks change it.

Base model (no quirk can be seen in it):
    * every flow moves messages at a rate r (messages/s); each message costs, on the resources it crosses,
      wire bytes (payload + RoCEv2 headers per packet: Ethernet 14 + FCS 4 + preamble/IFG 20 + IPv4 20 +
      UDP 8 + BTH 12 + ICRC 4 = 82 B, plus RETH/DETH/AETH/ImmDt/AtomicETH as the opcode needs), packets, and
      PCIe bytes (payload + one TLP header per max-payload-size chunk);
    * resources per host: wire TX and RX (line rate each way), loopback path (its own ceiling), NIC packet
      rate TX and RX (the message-rate limit), PCIe read and write direction (gen x width, encoding and
      DLLP overhead removed);
    * rates are found by proportional water-filling: start every flow at what it would get alone, scale the
      flows of any over-subscribed resource down to its capacity, repeat;
    * per-WQE/doorbell cost that batching amortises, SGE and memory-placement costs are mild efficiency
      factors (together never below ~0.93), so plain workloads stay at >= ~0.9 of their ceiling after noise;
      larger losses are quirks by construction;
    * the NIC-internal diagnostic counters (``sim_*``) follow cache working sets over capacities (receive
      WQEs, QP contexts, MTT/MPT translations), PCIe utilisation (descriptors and SGEs included, amplified by
      bidirectional traffic, remote NUMA, GPU memory, loopback, strict ordering) and packet-pipeline load,
      through the smooth saturating :func:`soft_fraction`; every active quirk adds its proximity precursor.

Invariants:
    * pure: the result depends only on (profile, workload, features, duration, noise draws);
    * no pause above the setup blip (< 0.01 % of the duration) and no loss unless a quirk fired;
    * counters are consistent with the rates (bytes = rate x duration, packets likewise, both hosts).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from collie.model.features import Features
from collie.model.flow import Flow
from collie.model.workload import Workload
from collie.targets.base import FlowResult, HostResult, Unsupported
from collie.targets.sim.profile import Profile
from collie.targets.sim.quirks import Quirk, soft_fraction

#: RoCEv2 bytes on the wire per packet around the payload (L1 + L2 + IPv4 + UDP + BTH + ICRC).
PACKET_OVERHEAD: Final = 82
#: Of those, the preamble, SFD and inter-frame gap, which byte counters do not see.
L1_OVERHEAD: Final = 20
TLP_HEADER: Final = 24
WQE_BYTES: Final = 64
SGE_BYTES: Final = 16
CQE_BYTES: Final = 64
#: Setup-time pause never exceeds this fraction of the measured interval (well below the 0.1 % threshold).
SETUP_PAUSE_CAP: Final = 1e-4

_RECV_CONSUMING: Final = frozenset(("SEND", "SEND_IMM", "WRITE_IMM"))
_EXTRA_PER_MSG: Final = {"WRITE": 16, "WRITE_IMM": 20, "READ": 8, "SEND": 0, "SEND_IMM": 4,
                         "ATOMIC_FA": 28, "ATOMIC_CS": 28}


@dataclass
class HostAcc:
    """Mutable per-host accumulator of one simulated run (per second unless noted)."""

    tx_payload: float = 0.0
    rx_payload: float = 0.0
    tx_wire: float = 0.0  # L2 bytes (what byte counters count)
    rx_wire: float = 0.0
    tx_pkts: float = 0.0
    rx_pkts: float = 0.0
    tx_msgs: float = 0.0
    rx_msgs: float = 0.0
    rx_write: float = 0.0
    rx_read: float = 0.0
    rx_atomic: float = 0.0
    rx_send: float = 0.0
    tx_send: float = 0.0
    pause_tx: float = 0.0  # ratio: this host pauses its peer (its RX cannot keep up)
    pause_rx: float = 0.0  # ratio: this host was paused by its peer
    lost_rx: float = 0.0  # data packets lost on the way in (per second)
    lost_tx: float = 0.0  # data packets this host had to resend
    pcie_stall: float = 0.0  # percent of time without PCIe credits
    diag_rx_wqe: float = 0.0
    diag_qpc: float = 0.0
    diag_mtt: float = 0.0
    diag_pcie: float = 0.0
    diag_pkt: float = 0.0


@dataclass
class FlowCalc:
    index: int
    src: str  # host whose NIC sends the data
    dst: str  # host whose NIC receives the data
    loopback: bool
    msg_bytes: float
    pkts: float  # data packets per message
    wire: float  # wire bytes per message incl. L1
    pcie: float  # PCIe bytes per message, data only
    req_pkts: float  # packets per message in the other direction (READ requests, atomic responses)
    eff: float
    rate: float = 0.0  # messages/s


_FLOW_FIELDS: Final = tuple(Flow.__dataclass_fields__)
_DEFAULTS: Final = {n: f.default for n, f in Flow.__dataclass_fields__.items()}
_OMITTED_AT_DEFAULT: Final = frozenset(("recv_batch", "recv_sges", "recv_delay_us", "mr_churn", "qp_churn"))


def workload_key(workload: Workload) -> str:
    """``workload.key()`` computed without ``dataclasses.asdict`` (the hot path; a test checks they agree)."""
    canon = []
    for f in workload.flows:
        d: dict[str, object] = {}
        for name in _FLOW_FIELDS:
            v = getattr(f, name)
            if name in ("client", "server"):
                v = {"host": v.host, "memory": v.memory}
            elif name == "sizes":
                v = list(v)
            elif name == "opcodes":
                d["opcode"] = v[0] if len(v) == 1 else list(v)
                continue
            elif name in _OMITTED_AT_DEFAULT and v == _DEFAULTS[name]:
                continue
            d[name] = v
        canon.append(json.dumps(d, sort_keys=True))
    canon.sort()
    return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]


def check_supported(profile: Profile, workload: Workload) -> None:
    """Raise :class:`Unsupported` for what this simulated device cannot run."""
    nic = profile.nic
    qps: dict[str, int] = {}
    mrs: dict[str, int] = {}
    for f in workload.flows:
        for ep in (f.client, f.server):
            if ep.host not in profile.hosts:
                raise Unsupported(f"host {ep.host!r} is not in profile {profile.name} "
                                  f"(hosts: {', '.join(profile.hosts)})")
            if ep.memory == "gpu" and profile.host.gpu == "none":
                raise Unsupported(f"profile {profile.name} has no GPU for memory = 'gpu'")
            if ep.memory == "remote" and profile.host.sockets < 2:
                raise Unsupported(f"profile {profile.name} has one socket, so memory = 'remote' "
                                  f"is impossible")
            qps[ep.host] = qps.get(ep.host, 0) + f.qps
            mrs[ep.host] = mrs.get(ep.host, 0) + f.mrs
        if f.sges > nic.max_sge:
            raise Unsupported(f"sges {f.sges} > device max_sge {nic.max_sge}")
        depth = max(f.sq_depth, f.rq_depth)
        if depth > nic.max_qp_wr:
            raise Unsupported(f"queue depth {depth} > device max_qp_wr {nic.max_qp_wr}")
    for h, n in qps.items():
        if n > nic.max_qp:
            raise Unsupported(f"host {h}: {n} QPs > device max_qp {nic.max_qp}")
    for h, n in mrs.items():
        if n > nic.max_mr:
            raise Unsupported(f"host {h}: {n} MRs > device max_mr {nic.max_mr}")


def _flow_calc(i: int, f: Flow, profile: Profile) -> FlowCalc:
    sizes = f.sizes
    n = len(sizes)
    mtu = f.mtu
    msg = sum(sizes) / n
    pkts = 1.0 if f.transport == "UD" else sum(-(-s // mtu) for s in sizes) / n
    per_pkt = PACKET_OVERHEAD + (8 if f.transport == "UD" else 0)
    extra = _EXTRA_PER_MSG.get(f.opcode, 0)
    wire = msg + pkts * per_pkt + extra
    mps = profile.pcie.mps
    # data TLPs (a DMA engine coalesces the SGEs of one message); per-SGE and descriptor costs only feed
    # the back-pressure diagnostic, so that the base model stays anomaly-free
    tlps = max(1.0, math.ceil(msg / mps))
    pcie = msg + tlps * TLP_HEADER
    read = f.opcode == "READ"
    atomic = f.opcode.startswith("ATOMIC")
    src = f.payload_sender.host
    dst = f.payload_receiver.host
    # mild, bounded efficiency: doorbell/WQE cost amortised by batching, SGE gather, memory placement
    m = profile.model
    eff = 1.0 - m.wqe_overhead / f.batch
    eff *= 1.0 - 0.01 * (f.sges - 1) / f.sges
    if "remote" in (f.client.memory, f.server.memory):
        eff *= 0.985
    if "gpu" in (f.client.memory, f.server.memory):
        eff *= 0.985
    if f.inline and msg <= f.inline:
        eff = min(1.0, eff + 0.5 * m.wqe_overhead / f.batch)
    req = 1.0 if (read or atomic) else 0.0
    return FlowCalc(i, src, dst, f.loopback, msg, pkts, wire, pcie, req, eff)


def _allocate(calcs: list[FlowCalc], profile: Profile) -> None:
    """Proportional water-filling of message rates over the hosts' resources (see the module docstring)."""
    nic = profile.nic
    line = nic.line_rate_gbps * 1e9
    loop = nic.loopback_gbps * 1e9
    pps = nic.msg_rate_mpps * 1e6
    pcie = profile.pcie.gbps * 1e9
    # resource key -> capacity; per flow: list of (resource, usage per message)
    uses: list[list[tuple[tuple[str, str], float]]] = []
    caps: dict[tuple[str, str], float] = {}
    for c in calcs:
        u: list[tuple[tuple[str, str], float]] = []
        if c.loopback:
            u.append(((c.src, "loop"), c.wire * 8))
        else:
            u.append(((c.src, "wire_tx"), c.wire * 8))
            u.append(((c.dst, "wire_rx"), c.wire * 8))
        # READ requests and atomic responses are counted, not charged: the message-rate limit is on data.
        # The sending side of the loopback path has its own packet and DMA budget, so a host that sends to
        # itself and to its peer serves both at full rate; receivers share theirs (in-NIC incast shares the
        # receiver's PCIe write direction). Contention beyond that is the business of quirks (#13).
        side = "loop_" if c.loopback else ""
        u.append(((c.src, side + "pps_tx"), c.pkts))
        u.append(((c.dst, "pps_rx"), c.pkts))
        u.append(((c.src, side + "pcie_rd"), c.pcie * 8))
        u.append(((c.dst, "pcie_wr"), c.pcie * 8))
        # merge duplicate keys (loopback: src == dst)
        merged: dict[tuple[str, str], float] = {}
        for k, v in u:
            merged[k] = merged.get(k, 0.0) + v
        uses.append(list(merged.items()))
        for k, _ in u:
            kind = k[1]
            caps[k] = (loop if kind == "loop" else line if kind.startswith("wire") else
                       pps if "pps" in kind else pcie)
    for c, u in zip(calcs, uses, strict=True):
        c.rate = min(caps[k] / v for k, v in u if v > 0)
    for _ in range(4):
        load: dict[tuple[str, str], float] = {}
        for c, u in zip(calcs, uses, strict=True):
            for k, v in u:
                load[k] = load.get(k, 0.0) + v * c.rate
        scale = {k: caps[k] / ld for k, ld in load.items() if ld > caps[k] * 1.000001}
        if not scale:
            break
        for c, u in zip(calcs, uses, strict=True):
            s = min((scale.get(k, 1.0) for k, _ in u), default=1.0)
            c.rate *= s
    for c in calcs:
        c.rate *= c.eff


@dataclass(frozen=True)
class Outcome:
    """What :func:`simulate` returns to the target."""

    flows: tuple[FlowResult, ...]
    hosts: tuple[HostResult, ...]
    setup_s: float
    fired: tuple[str, ...]


def simulate(profile: Profile, workload: Workload, feats: Features, duration: float,
             draw: Callable[[], float], dialect_counters: Callable[[HostAcc, float, float], dict[str, float]]
             ) -> Outcome:
    """Run the model once.

    Args:
        draw: the run's noise source; each call returns a number in [0, 1) (a pure function of the seed).
        dialect_counters: turns one host's accumulator into counter deltas (``acc, duration, line_rate``).
    """
    flows = workload.flows
    calcs = [_flow_calc(i, f, profile) for i, f in enumerate(flows)]
    _allocate(calcs, profile)
    base_rates = [c.rate for c in calcs]

    prox = [(q, q.proximity(feats)) for q in profile.active_quirks]
    fired: list[Quirk] = [q for q, p in prox if p == 1.0]
    thr = 1.0
    loss = 0.0
    for q in fired:
        thr *= q.symptom.throughput
        loss = 1.0 - (1.0 - loss) * (1.0 - q.symptom.loss)
    pause_host = _pause_hosts(fired, workload)

    noise = profile.model.noise
    amp = 1.5 * noise

    def tri() -> float:  # triangular in [0, 1)
        return (draw() + draw()) * 0.5

    global_noise = 1.0 - amp * 0.5 * tri()
    hosts: dict[str, HostAcc] = {h: HostAcc() for h in workload.hosts}
    for c, f in zip(calcs, flows, strict=True):
        # a paused receiver takes at most (1 - pause) of what it could; the quirk's factor is the other bound
        factor = min(thr, 1.0 - pause_host.get(c.dst, 0.0)) * (1.0 - loss)
        c.rate *= factor * global_noise * (1.0 - amp * 0.5 * tri())
        s, d = hosts[c.src], hosts[c.dst]
        r = c.rate
        payload = r * c.msg_bytes
        l2 = r * (c.wire - L1_OVERHEAD * c.pkts)
        pk = r * c.pkts
        s.tx_payload += payload
        d.rx_payload += payload
        s.tx_wire += l2
        d.rx_wire += l2
        s.tx_pkts += pk
        d.rx_pkts += pk
        if c.req_pkts:
            d.tx_pkts += r * c.req_pkts
            s.rx_pkts += r * c.req_pkts
            d.tx_wire += r * c.req_pkts * (PACKET_OVERHEAD - L1_OVERHEAD + 16)
            s.rx_wire += r * c.req_pkts * (PACKET_OVERHEAD - L1_OVERHEAD + 16)
        s.tx_msgs += r
        d.rx_msgs += r
        server = hosts[f.server.host]
        if f.opcode in ("WRITE", "WRITE_IMM"):
            server.rx_write += r
        elif f.opcode == "READ":
            server.rx_read += r
        elif f.opcode.startswith("ATOMIC"):
            server.rx_atomic += r
        else:
            server.rx_send += r
            hosts[f.client.host].tx_send += r
        if loss:
            lost = pk * loss / (1.0 - loss)
            d.lost_rx += lost
            s.lost_tx += lost

    _diagnostics(profile, workload, feats, calcs, base_rates, hosts, prox)

    # pause: a fired quirk's host asks its remote peers to pause; every receiver shows the setup blip
    setup_us = min(profile.model.setup_pause_us * (0.5 + draw()), SETUP_PAUSE_CAP * duration * 1e6)
    setup_ratio = setup_us / (duration * 1e6)
    receivers = {c.dst for c in calcs}
    for h, acc in hosts.items():
        ratio = pause_host.get(h, 0.0)
        if ratio:
            ratio *= 1.0 - amp * tri()
            ratio = max(ratio, 0.0)
        if h in receivers:
            ratio = 1.0 - (1.0 - ratio) * (1.0 - setup_ratio)
        acc.pause_tx = ratio
        if h in pause_host and any("sim_pcie_backpressure" in q.diagnostics for q in fired):
            acc.pcie_stall = min(100.0, acc.pcie_stall + 150.0 * ratio)
    for c in calcs:
        if not c.loopback:
            peer = hosts[c.src]
            peer.pause_rx = max(peer.pause_rx, hosts[c.dst].pause_tx)

    line = profile.nic.line_rate_gbps * 1e9
    out_hosts: list[HostResult] = []
    for h in workload.hosts:
        acc = hosts[h]
        counters = dialect_counters(acc, duration, line)
        cn = 1.0 + noise * (draw() - 0.5)
        for k in ("sim_rx_wqe_cache_miss", "sim_qpc_cache_miss", "sim_mtt_cache_miss",
                  "sim_pcie_backpressure", "sim_pkt_pipeline_stall"):
            if k in counters:
                counters[k] = float(round(counters[k] * cn))
        out_hosts.append(HostResult(host=h, tx_bps=acc.tx_payload * 8, rx_bps=acc.rx_payload * 8,
                                    tx_pps=acc.tx_pkts, rx_pps=acc.rx_pkts, counters=counters))

    out_flows: list[FlowResult] = []
    base_lat = profile.nic.base_latency_us
    for c, f in zip(calcs, flows, strict=True):
        ser = c.msg_bytes * 8 / line * 1e6
        outstanding = f.qps * max(1, min(f.sq_depth, 2 * f.batch))
        queue = outstanding / c.rate * 1e6 if c.rate > 0 else 0.0
        p50 = max(base_lat + ser, queue) * (1.0 + 0.02 * tri())
        pz = pause_host.get(c.dst, 0.0)
        p99 = p50 * (1.6 + 40.0 * pz)
        p999 = p50 * (2.5 + 120.0 * pz)
        out_flows.append(FlowResult(flow=c.index, client=f.client.host, server=f.server.host,
                                    bps=c.rate * c.msg_bytes * 8, pps=c.rate * c.pkts, msg_rate=c.rate,
                                    lat_p50_us=p50, lat_p99_us=p99, lat_p999_us=p999))

    m = profile.model
    qps_sides = sum(2 * f.qps for f in flows)
    mrs_sides = sum(2 * f.mrs for f in flows)
    pinned = sum(2 * f.mrs * f.mr_size for f in flows)
    setup = (m.setup_base_s + qps_sides * m.setup_qp_us * 1e-6 + mrs_sides * m.setup_mr_us * 1e-6
             + pinned * 8 / (m.setup_pin_gbps * 1e9)) * (1.0 + 0.05 * (draw() - 0.5))
    return Outcome(flows=tuple(out_flows), hosts=tuple(out_hosts), setup_s=setup,
                   fired=tuple(q.id for q in fired))


def _pause_hosts(fired: list[Quirk], workload: Workload) -> dict[str, float]:
    """Pause ratio per host asking for pause, combining the fired quirks."""
    out: dict[str, float] = {}
    if not fired:
        return out
    receivers: set[str] = set()
    loop_rx: set[str] = set()
    remote_rx: set[str] = set()
    numa_rx: set[str] = set()
    gpu_rx: set[str] = set()
    for f in workload.flows:
        rx_ep = f.payload_receiver
        receivers.add(rx_ep.host)
        (loop_rx if f.loopback else remote_rx).add(rx_ep.host)
        if rx_ep.memory == "remote":
            numa_rx.add(rx_ep.host)
        if rx_ep.memory == "gpu":
            gpu_rx.add(rx_ep.host)
    for q in fired:
        p = q.symptom.pause
        if p <= 0:
            continue
        where = q.symptom.pause_at
        chosen = (loop_rx & remote_rx if where == "incast" else numa_rx if where == "remote_numa"
                  else gpu_rx if where == "gpu" else receivers) or receivers
        for h in chosen:
            out[h] = 1.0 - (1.0 - out.get(h, 0.0)) * (1.0 - p)
    return out


def _diagnostics(profile: Profile, workload: Workload, feats: Features, calcs: list[FlowCalc],
                 base_rates: list[float], hosts: dict[str, HostAcc], prox: list[tuple[Quirk, float]]) -> None:
    """Fill the ``sim_*`` diagnostic counters (per second) of every host from base-model (pre-quirk) rates."""
    cache = profile.cache
    pcie_cap = profile.pcie.gbps * 1e9 / 8
    pps_cap = profile.nic.msg_rate_mpps * 1e6
    ws_wqe: dict[str, float] = {}
    wqe_msgs: dict[str, float] = {}
    qps: dict[str, float] = {}
    msgs: dict[str, float] = {}
    pkts: dict[str, float] = {}
    pcie_rd: dict[str, float] = {}
    pcie_wr: dict[str, float] = {}
    amp_pcie: dict[str, float] = {}
    for c, r, f in zip(calcs, base_rates, workload.flows, strict=True):
        desc = (WQE_BYTES + SGE_BYTES * f.sges) / 1.0 + CQE_BYTES / f.signal_every
        pcie_rd[c.src] = pcie_rd.get(c.src, 0.0) + r * (c.pcie + desc)
        pcie_wr[c.dst] = pcie_wr.get(c.dst, 0.0) + r * (c.pcie + CQE_BYTES / f.signal_every)
        for h in (f.client.host, f.server.host):
            qps[h] = qps.get(h, 0.0) + f.qps
        msgs[c.src] = msgs.get(c.src, 0.0) + r
        msgs[c.dst] = msgs.get(c.dst, 0.0) + r
        pkts[c.src] = pkts.get(c.src, 0.0) + r * c.pkts
        pkts[c.dst] = pkts.get(c.dst, 0.0) + r * c.pkts
        if f.opcode in _RECV_CONSUMING:
            depth = max(f.sq_depth, f.rq_depth)
            ws_wqe[c.dst] = ws_wqe.get(c.dst, 0.0) + f.qps * depth * (1.0 + f.batch / 32.0) * f.sges ** 0.5
            wqe_msgs[c.dst] = wqe_msgs.get(c.dst, 0.0) + r
        a = 1.0 + 0.15 * (f.sges - 1)
        for ep in (f.client, f.server):
            if ep.memory == "remote":
                a *= 1.6
            elif ep.memory == "gpu":
                a *= 6.0 if profile.host.gpu == "acs-misrouted" else 1.5
        if c.loopback:
            a *= 1.3
        for h in (c.src, c.dst):
            amp_pcie[h] = max(amp_pcie.get(h, 1.0), a)
    bidir = 1.3 if feats.bidirectional else 1.0
    strict_order = 1.0 if profile.pcie.relaxed_ordering else 1.4
    mr_ws = feats.mrs_host / cache.mpt_entries + feats.mr_footprint / (cache.mtt_entries * 65536.0)
    read_f = 1.3 if feats.opcode == "READ" else 1.0
    mtu_f = (4096.0 / feats.mtu) ** 0.25
    for h, acc in hosts.items():
        m = msgs.get(h, 0.0) * 0.5
        p = pkts.get(h, 0.0) * 0.5
        acc.diag_rx_wqe = soft_fraction(ws_wqe.get(h, 0.0) / cache.rx_wqe_entries) * wqe_msgs.get(h, 0.0)
        acc.diag_qpc = soft_fraction(qps.get(h, 0.0) / cache.qpc_entries) * m
        acc.diag_mtt = soft_fraction(mr_ws) * p
        util = max(pcie_rd.get(h, 0.0), pcie_wr.get(h, 0.0)) / pcie_cap
        bp = soft_fraction(util * amp_pcie.get(h, 1.0) * bidir * strict_order)
        acc.diag_pcie = 0.2 * bp * p
        acc.pcie_stall = 20.0 * bp if p > 0 else 0.0
        acc.diag_pkt = 0.1 * soft_fraction(p * 2 / pps_cap * read_f * bidir * mtu_f) * p
    for q, closeness in prox:
        boost = q.precursor * closeness * (3.0 if closeness == 1.0 else 1.0)
        if boost < 1e-9:
            continue
        for h, acc in hosts.items():
            m = msgs.get(h, 0.0) * 0.5
            p = pkts.get(h, 0.0) * 0.5
            for d in q.diagnostics:
                if d == "sim_rx_wqe_cache_miss":
                    acc.diag_rx_wqe += boost * m
                elif d == "sim_qpc_cache_miss":
                    acc.diag_qpc += boost * m
                elif d == "sim_mtt_cache_miss":
                    acc.diag_mtt += boost * p
                elif d == "sim_pcie_backpressure":
                    acc.diag_pcie += boost * p
                else:
                    acc.diag_pkt += boost * p
