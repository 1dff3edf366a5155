"""The base model of a simulated RDMA subsystem, and how fired quirks change it.

Base model (no quirk can be seen in it):
    * every flow moves messages at a rate r (messages/s); each message costs, on the resources it crosses,
      wire bytes (payload + RoCEv2 headers per packet: Ethernet 14 + FCS 4 + preamble/IFG 20 + IPv4 20 +
      UDP 8 + BTH 12 + ICRC 4 = 82 B, plus RETH/DETH/AETH/ImmDt/AtomicETH as the opcode needs), packets, and
      PCIe bytes (payload + one TLP header per max-payload-size chunk);
    * resources per host: wire TX and RX (line rate each way), loopback path (its own ceiling), NIC packet
      rate TX and RX (the message-rate limit), PCIe read and write direction (gen x width, encoding and
      DLLP overhead removed);
    * a flow's costs are averaged over one cycle of its opcode and size patterns (``Flow.requests()``): READ
      data flows server -> client, everything else client -> server; an atomic's 8 B result comes back;
    * limits of their own: a per-NIC atomic rate (``atomic_mops``), per QP at most ``max_rd_atomic`` READs and
      atomics in flight for a round trip, a paced receiver's refill (RC: RNR NAKs and the RNR timer; UC/UD:
      drops), and a partial cache-line write's read-modify-write on the receiver's PCIe write direction;
    * control-path churn (``collie.targets.sim.churn``): the misses that churned cache entries add to the data
      path's cost its packet pipeline; churn latencies come from the firmware command path's load;
    * rates are found by water-filling: every flow starts at what it would get alone, and each shared resource
      serves its flows round-robin, so it shares its capacity max-min in its own units
      (:func:`~collie.targets.sim.sharing.fair_shares`);
    * per-WQE/doorbell cost that batching amortises, SGE and memory-placement costs are mild efficiency
      factors (together never below ~0.93), so plain workloads stay at >= ~0.9 of their ceiling after noise;
      larger losses are quirks by construction;
    * the NIC-internal diagnostic counters (``sim_*``) follow cache working sets over capacities (receive
      WQEs, QP contexts, MTT/MPT translations), PCIe utilisation (descriptors and SGEs included, amplified by
      bidirectional traffic, remote NUMA, GPU memory, loopback, strict ordering) and packet-pipeline load,
      through the smooth saturating :func:`soft_fraction`; every active quirk adds its proximity precursor.

Invariants:
    * pure: the result depends only on (profile, workload, features, duration, noise draws);
    * no pause above the setup blip (< 0.01 % of the duration) and no loss unless a quirk fired, a flow
      crosses a host's lossy or flapping link or a port with a mis-set MTU smaller than its packets (faults of
      the profile), or a port of the profile's fabric is congested (:mod:`collie.targets.sim.fabric`);
    * ``Outcome.fired`` lists the fired quirks' ids, then a ``base:<limit>`` label for each base-model limit
      above that holds a flow below 0.9 of what it would get without it, then the ``fault:HOST:KIND`` of each
      fault of the profile that shaped the run, then the ``fabric:pause:PORT`` (``fabric:drop:PORT``) of each
      congested port of its fabric (tests and benchmarks only);
    * counters are consistent with the rates (bytes = rate x duration, packets likewise, both hosts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from collie.codec import built
from collie.model.features import CACHE_LINE, Features
from collie.model.flow import ATOMIC_BYTES, ATOMIC_OPCODES, RECV_CONSUMING, Flow, split_address
from collie.model.rocev2 import PRIORITIES, priority
from collie.model.workload import Workload
from collie.targets.base import FlowResult, HostResult, Unsupported
from collie.targets.sim.churn import HostChurn, flow_figures, host_churn, miss_slots, xlate_working_set
from collie.targets.sim.fabric import NONE, Congestion, Links, Path, Topology, congestion
from collie.targets.sim.noise import Draws
from collie.targets.sim.profile import Fault, FaultKind, Profile
from collie.targets.sim.quirks import Quirk, soft_fraction
from collie.targets.sim.sharing import fair_shares

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
#: The traffic class a simulated host gives a QP whose flow sets none (``Flow.tclass`` None): 106, DSCP 26 with
#: ECN, where NVIDIA's RoCE set-up puts RDMA traffic; its priority, 3, is the lossless one of Collie's testbed.
HOST_TCLASS: Final = 106
HOST_PRIORITY: Final = priority(HOST_TCLASS)

#: L2 bytes of a control packet (READ request, atomic response, RNR NAK) around its 16 B of header/payload.
_CTL_L2: Final = PACKET_OVERHEAD - L1_OVERHEAD + 16
#: What a base-model label in ``Outcome.fired`` starts with (quirk ids never do).
BASE_PREFIX: Final = "base:"
#: A base-model limit that holds a flow below this fraction of what it would get without it is labelled in
#: ``Outcome.fired`` (``base:<limit>``).
_HOLD: Final = 0.9
#: Each diagnostic counter's place in :func:`_diagnostics`' list (the order of the ``HostAcc.diag_*`` fields);
#: a quirk's precursor adds per message to the first two, per packet to the others.
_PRECURSOR: Final = {"sim_rx_wqe_cache_miss": 0, "sim_qpc_cache_miss": 1, "sim_mtt_cache_miss": 2,
                     "sim_pcie_backpressure": 3, "sim_pkt_pipeline_stall": 4}
#: The churn of a host without any.
_IDLE: Final = HostChurn(0.0, 1.0, 0.0, 0.0, 0.0)
_EXTRA_PER_MSG: Final = {"WRITE": 16, "WRITE_IMM": 20, "READ": 8, "SEND": 0, "SEND_IMM": 4,
                         "ATOMIC_FA": 28, "ATOMIC_CS": 28}


@dataclass(slots=True)
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
    pause_rx: float = 0.0  # ratio: this host was paused by its peer, or by its switch
    lost_rx: float = 0.0  # data packets lost on the way in (per second)
    lost_tx: float = 0.0  # data packets this host had to resend
    link_down: float = 0.0  # times its link went down (per second)
    pcie_stall: float = 0.0  # percent of time without PCIe credits
    rnr_naks_sent: float = 0.0  # responder: RNR NAKs it sent (its receive queue was empty)
    rnr_naks_received: float = 0.0  # requester: RNR NAKs it received (and resent after the RNR timer)
    rx_no_wqe: float = 0.0  # packets the responder dropped for want of a receive WQE (NAKed or, UC/UD, lost)
    diag_rx_wqe: float = 0.0
    diag_qpc: float = 0.0
    diag_mtt: float = 0.0
    diag_pcie: float = 0.0
    diag_pkt: float = 0.0
    # what the diagnostic counters above are computed from, at base-model (pre-quirk) rates
    base_pcie_rd: float = 0.0  # PCIe bytes read (payload, descriptors)
    base_pcie_wr: float = 0.0  # PCIe bytes written (payload, completions)
    base_qps: float = 0.0  # data-path QPs (both ends of every flow)
    base_msgs: float = 0.0  # messages sent plus received
    base_pkts: float = 0.0  # data packets sent plus received
    base_ws_wqe: float = 0.0  # receive-WQE working set (entries)
    base_wqe_msgs: float = 0.0  # messages consuming a receive WQE
    base_amp_pcie: float = 1.0  # the largest PCIe amplification of a flow sending or receiving here
    # per priority its traffic or pause is on, what the per-priority counters count (wire bytes, packets, pause);
    # when a run's flows share one priority, that priority's entry is the host's accumulator itself
    by_priority: dict[int, HostAcc] = field(default_factory=dict)


@dataclass(slots=True)
class FlowCalc:
    """One flow's costs per request, averaged over one cycle of its opcode and size patterns.

    ``fwd`` is the client -> server direction (WRITE, SEND, their ``_IMM`` forms, atomic requests), ``rev`` the
    server -> client one (READ responses, atomic results). Data packets are charged against the resources;
    control packets (READ requests, atomic responses) are counted, not charged.
    """

    index: int
    client: str
    server: str
    src: str  # host whose NIC sends the main payload (Flow.payload_sender)
    dst: str  # host whose NIC receives it
    loopback: bool
    qps: int
    msg_bytes: float  # payload bytes per request, as the workload states them
    fwd_bytes: float
    rev_bytes: float
    fwd_pkts: float  # data packets
    rev_pkts: float
    fwd_ctl: float  # control packets
    rev_ctl: float
    fwd_wire: float  # wire bytes of the data packets incl. L1
    rev_wire: float
    fwd_rd: float  # PCIe bytes read at the client / written at the server
    fwd_wr: float
    rev_rd: float  # PCIe bytes read at the server / written at the client
    rev_wr: float
    partial: float  # of fwd_wr + rev_wr, what partial cache-line writes cost
    n_write: float  # requests of each kind per request
    n_read: float
    n_atomic: float
    n_send: float
    n_recv: float  # requests that consume a receive WQE
    eff: float
    flow: Flow
    window: float = math.inf  # READ/atomic window: requests/s
    qp_cap: float = math.inf  # its QPs' own WR rate (per WR and per doorbell): requests/s
    refill: float = math.inf  # receive refill: requests/s
    starved: float = math.inf  # RC: requests/s of a QP that runs dry (rq_depth per RNR timer)
    free: float = 0.0  # requests/s alone, without the base limits above and partial-line costs
    unchurned: float = 1.0  # how much faster the flow alone would go without churn's slowdown
    rate: float = 0.0  # requests/s
    labels: tuple[str, ...] = ()
    uses: list[tuple[int, float]] = field(default_factory=list)  # (resource, usage per request): _allocate
    paths: list[Path] = field(default_factory=list)  # through a fabric, per direction with data: _allocate
    priority: int = HOST_PRIORITY  # the priority its packets are queued at (its traffic class's)

    @property
    def pkts(self) -> float:
        """Data packets per request, both directions."""
        return self.fwd_pkts + self.rev_pkts


CounterFunction = Callable[[HostAcc, float, float], dict[str, float]]


class Compiled:
    """A profile as :func:`simulate` runs it: what the model derives from the profile alone (resource capacities,
    unit conversions, the quirks' compiled conditions, which diagnostic counters the dialect reports), computed
    once; a :class:`~collie.targets.sim.target.SimTarget` holds one. Each number is the very expression the model
    would otherwise evaluate per experiment, so the results are the same to the last bit.

    Args:
        counters: turns one host's accumulator into counter deltas (``acc, duration, line_rate``; the dialect's
            :func:`~collie.targets.sim.counters.dialect_counters`).
    """

    def __init__(self, profile: Profile, counters: CounterFunction) -> None:
        nic, pcie, m = profile.nic, profile.pcie, profile.model
        self.profile: Final = profile
        self.counters: Final = counters
        self.quirks: Final = profile.active_quirks
        self.conditions: Final = profile.conditions
        #: the diagnostic counters the dialect reports, in the order the model applies their noise
        self.diagnostics: Final = tuple(k for k in _PRECURSOR if k in counters(HostAcc(), 1.0, 1.0))
        self.backpressure_quirks: Final = any("sim_pcie_backpressure" in q.diagnostics for q in self.quirks)
        #: per active quirk, its precursor and the places of its diagnostic counters in _PRECURSOR's order
        self.precursors: Final = tuple((q.precursor, tuple(_PRECURSOR[d] for d in q.diagnostics))
                                       for q in self.quirks)
        self.kind_caps: Final = _kind_caps(profile)
        #: per host with faults, its resources' offsets and the factors their capacities keep
        self.fault_caps: Final = _fault_caps(profile)
        #: per host with a lossy link, the fraction of packets it loses
        self.link_losses: Final = _shortfalls(profile, FaultKind.LOSSY_LINK)
        #: per host with a flapping link, the fraction of the time it is down
        self.link_down: Final = _shortfalls(profile, FaultKind.FLAPPING_LINK)
        #: per host with a mis-set MTU, the largest RoCE payload its port carries
        self.port_mtus: Final = {f.host: f.factor * MAX_MTU for f in profile.faults if f.kind is FaultKind.MTU}
        #: the switches under a fleet (None: an ideal non-blocking switch)
        self.topology: Final = Topology(profile.fabric, profile.hosts, profile.host.nics) if profile.fabric else None
        #: the priorities a NIC pauses its peer on (the fabric's lossless ones; every one without a fabric)
        self.lossless: Final = self.topology.lossless if self.topology else frozenset(range(PRIORITIES))
        #: the PCIe bandwidth each host's NICs share, each way (0: none shared)
        self.shared_pcie: Final = profile.host.shared_pcie_gbps * 1e9
        self.line: Final = nic.line_rate_gbps * 1e9
        self.line_mbps: Final = nic.line_rate_gbps * 1e3
        self.base_latency_us: Final = nic.base_latency_us
        self.max_rd_atomic: Final = nic.max_rd_atomic
        self.pps_cap: Final = nic.msg_rate_mpps * 1e6
        self.qp_wr_s: Final = nic.qp_wr_ns * 1e-9
        self.doorbell_s: Final = nic.doorbell_ns * 1e-9
        self.pcie_bytes: Final = pcie.gbps * 1e9 / 8
        self.mps: Final = pcie.mps
        self.partial_write_bytes: Final = pcie.partial_write_bytes
        self.strict_order: Final = 1.0 if pcie.relaxed_ordering else 1.4
        self.gpu_amp: Final = 6.0 if profile.host.gpu == "acs-misrouted" else 1.5
        self.rx_wqe_entries: Final = profile.cache.rx_wqe_entries
        self.qpc_entries: Final = profile.cache.qpc_entries
        self.noise: Final = m.noise
        self.wqe_overhead: Final = m.wqe_overhead
        self.recv_poll_us: Final = m.recv_poll_us
        self.rnr_timer_s: Final = m.rnr_timer_us * 1e-6
        self.setup_pin_bps: Final = m.setup_pin_gbps * 1e9
        self.setup_pause_us: Final = m.setup_pause_us


def check_supported(profile: Profile, workload: Workload) -> None:
    """Raise :class:`Unsupported` for what this simulated device cannot run."""
    nic = profile.nic
    qps: dict[str, int] = {}
    mrs: dict[str, int] = {}
    for f in workload.flows:
        for ep in (f.client, f.server):
            host, memory = ep.host, ep.memory
            if not profile.has_node(host):
                raise Unsupported(_not_a_node(profile, host))
            if memory == "gpu" and profile.host.gpu == "none":
                raise Unsupported(f"profile {profile.name} has no GPU for memory = 'gpu'")
            if memory == "remote" and profile.host.sockets < 2:
                raise Unsupported(f"profile {profile.name} has one socket, so memory = 'remote' "
                                  f"is impossible")
            qps[host] = qps.get(host, 0) + f.qps
            mrs[host] = mrs.get(host, 0) + f.mrs
        if f.sges > nic.max_sge:
            raise Unsupported(f"sges {f.sges} > device max_sge {nic.max_sge}")
        if f.inline > nic.max_inline:
            raise Unsupported(f"inline {f.inline} > device max_inline {nic.max_inline}")
        depth = f.rq_depth if f.rq_depth > f.sq_depth else f.sq_depth  # max(sq_depth, rq_depth)
        if depth > nic.max_qp_wr:
            raise Unsupported(f"queue depth {depth} > device max_qp_wr {nic.max_qp_wr}")
    for h, n in qps.items():
        if n > nic.max_qp:
            raise Unsupported(f"host {h}: {n} QPs > device max_qp {nic.max_qp}")
    for h, n in mrs.items():
        if n > nic.max_mr:
            raise Unsupported(f"host {h}: {n} MRs > device max_mr {nic.max_mr}")


def _not_a_node(profile: Profile, address: str) -> str:
    """Why ``address`` names no NIC of ``profile``, in one sentence (a NIC beyond its host's is
    :func:`~collie.model.flow.nic_problem`'s, said before placement)."""
    shown = ", ".join(profile.hosts[:8]) + (f", ... ({len(profile.hosts)} hosts)" if len(profile.hosts) > 8 else "")
    return f"host {address!r} is not in profile {profile.name} (hosts: {shown})"


# In the hot paths below, ``b if b < a else a`` is ``min(a, b)`` and ``b if b > a else a`` is ``max(a, b)``, exactly
# (the builtins keep the first of equals), without a call.


#: PCIe bytes of an atomic's 8 B operand: one TLP.
_ATOMIC_TLP: Final = ATOMIC_BYTES + TLP_HEADER


def _flow_calc(i: int, f: Flow, model: Compiled) -> FlowCalc:
    ops, sizes = f.opcodes, f.sizes
    # One cycle of Flow.requests() pairs opcode j with size k (indices) whenever j = k modulo g: each such pair
    # once, lcm(len(ops), len(sizes)) requests in all. Whole bytes and packets per cycle are integer sums, exact in
    # any order (divided by n once, at the end), so they are summed per class of sizes (index modulo g), then
    # added once per opcode of that class.
    g = math.gcd(len(ops), len(sizes))
    n = len(ops) * len(sizes) // g
    mtu = f.mtu
    ud = f.transport == "UD"
    per_pkt = PACKET_OVERHEAD + (8 if ud else 0)
    mps = model.mps
    partial_cost = model.partial_write_bytes
    # per class: requests, payload bytes, data packets, PCIe bytes (a DMA engine coalesces the SGEs of one
    # message: one TLP header per max-payload-size chunk), partial-cache-line write costs
    classes = []
    for r in range(g):
        group = sizes[r::g] if g > 1 else sizes
        total = pkts = tlps = partial = 0
        for size in group:
            total += size
            pkts += -(-size // mtu)
            tlp = -(-size // mps)
            tlps += tlp if tlp > 1 else 1
            if size % CACHE_LINE:
                partial += 1
        classes.append((len(group), total, len(group) if ud else pkts, total + tlps * TLP_HEADER,
                        partial_cost * partial))
    msg = fb = rb = fp = rp = fc = rc = fw = rw = frd = fwr = rrd = rwr = part = 0
    nw = nr = na = ns = nrecv = 0
    rd_bytes = 0
    for j, op in enumerate(ops):
        count, size, pk, tlp, line = classes[j % g]
        if op in ATOMIC_OPCODES:  # each on ATOMIC_BYTES, whatever the size
            na += count
            msg += count * ATOMIC_BYTES
            fb += count * ATOMIC_BYTES
            rb += count * ATOMIC_BYTES
            fp += count
            rc += count
            fw += count * (ATOMIC_BYTES + per_pkt + _EXTRA_PER_MSG[op])
            frd += count * _ATOMIC_TLP  # the operand, read at the client
            rrd += count * _ATOMIC_TLP  # the responder reads the target ...
            fwr += count * _ATOMIC_TLP  # ... and writes it back
            rwr += count * _ATOMIC_TLP  # the original value, written at the client
            rd_bytes += count * ATOMIC_BYTES
            continue
        msg += size
        wire = size + pk * per_pkt + count * _EXTRA_PER_MSG[op]
        part += line
        if op == "READ":
            nr += count
            rb += size
            rp += pk
            fc += count
            rw += wire
            rrd += tlp
            rwr += tlp + line
            rd_bytes += size
            continue
        fb += size
        fp += pk
        fw += wire
        frd += tlp
        fwr += tlp + line
        if op in RECV_CONSUMING:
            nrecv += count
        if op in ("WRITE", "WRITE_IMM"):
            nw += count
        else:
            ns += count
    # mild, bounded efficiency: doorbell/WQE cost amortised by batching, SGE gather, memory placement
    client, server = f.client, f.server
    eff = 1.0 - model.wqe_overhead / f.batch
    eff *= 1.0 - 0.01 * (f.sges - 1) / f.sges
    memories = (client.memory, server.memory)
    if "remote" in memories:
        eff *= 0.985
    if "gpu" in memories:
        eff *= 0.985
    if f.inline and msg / n <= f.inline:
        eff += 0.5 * model.wqe_overhead / f.batch
        eff = eff if eff < 1.0 else 1.0
    # Flow.payload_sender and payload_receiver: the client receives when READs are all it posts
    sender, receiver = (server, client) if ops.count("READ") == len(ops) else (client, server)
    c = FlowCalc(i, client.host, server.host, sender.host, receiver.host, client.host == server.host,
                 f.qps, msg / n, fb / n, rb / n, fp / n, rp / n, fc / n, rc / n, fw / n, rw / n, frd / n,
                 fwr / n, rrd / n, rwr / n, part / n, nw / n, nr / n, na / n, ns / n, nrecv / n, eff, f)
    if f.tclass is not None:
        c.priority = priority(f.tclass)
    if model.qp_wr_s or model.doorbell_s:
        # a QP's send queue is posted and processed in order: per WR its cost, per post list one doorbell
        c.qp_cap = f.qps / (model.qp_wr_s + model.doorbell_s / f.batch)
    if nr or na:
        # at most max_rd_atomic READs/atomics outstanding per QP, each for a round trip
        rtt = (model.base_latency_us + rd_bytes / (nr + na) * 8 / model.line_mbps) * 1e-6
        c.window = f.qps * model.max_rd_atomic / rtt / ((nr + na) / n)
    if nrecv and f.recv_delay_us > 0:
        # each QP reposts recv_batch WQEs per delay (+ the poll); an RC QP that runs dry is NAKed and its
        # requester waits an RNR timer, in which the receiver refills at most rq_depth WQEs
        share = nrecv / n
        c.refill = f.qps * f.recv_batch / ((f.recv_delay_us + model.recv_poll_us) * 1e-6) / share
        if f.transport == "RC":
            c.starved = f.qps * f.rq_depth / model.rnr_timer_s / share
    return c


#: The resources of one host, each an offset in the host's block of :data:`_KINDS` resource ids (host ``i``'s
#: resource ``k`` is ``i * _KINDS + k``): wire TX and RX, the loopback path, NIC packet rate TX (to the peer, to
#: itself) and RX, PCIe read (for the peer, for itself) and write, the atomic unit.
WIRE_TX, WIRE_RX, LOOP, PPS_TX, LOOP_PPS_TX, PPS_RX, PCIE_RD, LOOP_PCIE_RD, PCIE_WR, ATOMIC = range(10)
_KINDS: Final = 10


def _kind_caps(profile: Profile) -> list[float]:
    """Each host resource's capacity (bits/s, packets/s, atomics/s) by its offset; a loopback path or atomic
    rate the profile leaves at 0 is bounded by the PCIe bandwidth instead."""
    nic = profile.nic
    line = nic.line_rate_gbps * 1e9
    pps = nic.msg_rate_mpps * 1e6
    pcie = profile.pcie.gbps * 1e9
    return [line or pcie, line or pcie, nic.loopback_gbps * 1e9 or pcie, pps, pps, pps, pcie, pcie, pcie,
            nic.atomic_mops * 1e6 or pcie]


#: The host resources each kind of fault scales (a lossy link scales none: it loses packets, see
#: :data:`GO_BACK_N_PACKETS`).
_FAULT_RESOURCES: Final = {FaultKind.PORT_SPEED: (WIRE_TX, WIRE_RX),
                           FaultKind.PCIE: (PCIE_RD, LOOP_PCIE_RD, PCIE_WR),
                           FaultKind.FAR_NUMA: (PCIE_RD, LOOP_PCIE_RD, PCIE_WR)}
#: Packets an RC requester resends per packet lost on a lossy link (go-back-N from the lost PSN: what was in
#: flight behind it). A flow through a link losing a fraction ``p`` keeps ``(1 - p) / (1 + p x this)`` of its
#: rate: 1 % loss costs about a quarter.
GO_BACK_N_PACKETS: Final = 32


def _fault_caps(profile: Profile) -> dict[str, tuple[tuple[Fault, tuple[int, ...]], ...]]:
    """Per host with faults that scale capacities, each fault with the resource offsets it scales."""
    out: dict[str, list[tuple[Fault, tuple[int, ...]]]] = {}
    for fault in profile.faults:
        if fault.kind in _FAULT_RESOURCES:
            out.setdefault(fault.host, []).append((fault, _FAULT_RESOURCES[fault.kind]))
    return {h: tuple(v) for h, v in out.items()}


#: How long one outage of a flapping link lasts (the link retrains): its outages per second are the fraction of
#: the time it is down over this.
FLAP_DOWN_S: Final = 0.1
#: What an RC flow across a flapping link waits after each outage before it resends: its QPs' retransmission
#: timeout (4.096 us x 2^14, the ``timeout`` of 14 that perftest and NCCL set), during which the link is up and
#: idle for it.
RC_TIMEOUT_S: Final = 4.096e-6 * 2 ** 14


def _flapping(c: FlowCalc, f: Flow, down: Mapping[str, float]) -> tuple[float, float]:
    """The fraction of the time flow ``c`` moves nothing across its hosts' flapping links (down, and for RC the
    retransmission timeout after each outage), and the outages per second it meets."""
    at_src, at_dst = down.get(c.src, 0.0), down.get(c.dst, 0.0)
    outages = (at_src + at_dst) / FLAP_DOWN_S
    idle = 1.0 - (1.0 - at_src) * (1.0 - at_dst) + (outages * RC_TIMEOUT_S if f.transport == "RC" else 0.0)
    return (idle if idle < 1.0 else 1.0), outages


#: At most this fraction of a flow's packets is lost: one that loses them all still resends (and counts the
#: loss), at a rate that rounds to nothing.
_ALL_LOST: Final = 1.0 - 1e-9
#: The largest RoCE MTU: a mis-set MTU fault's ``factor`` is a fraction of it.
MAX_MTU: Final = 4096


def _oversize(c: FlowCalc, port_mtu: float) -> float:
    """The fraction of flow ``c``'s data packets whose payload is larger than ``port_mtu`` (a port that drops
    them); 0 when its MTU fits."""
    f = c.flow
    mtu = f.mtu
    if mtu <= port_mtu:
        return 0.0
    big = total = 0
    for size in f.sizes:
        full, last = divmod(size, mtu)
        big += full + (last > port_mtu)
        total += full + (last > 0)
    return big / total if total else 0.0


def _shortfalls(profile: Profile, kind: FaultKind) -> dict[str, float]:
    """Per host with a fault of ``kind``, ``1 - factor``: the packets a lossy link loses, the time a flapping
    link is down."""
    return {f.host: 1.0 - f.factor for f in profile.faults if f.kind is kind}


def _allocate(calcs: list[FlowCalc], hosts: list[str], model: Compiled, slots: dict[str, tuple[float, float]]
              ) -> tuple[list[float], list[float], Congestion]:
    """Water-filling of request rates over the hosts' resources and each flow's own limits (see
    the module docstring); labels each flow with the base-model limits that hold it well below its ceiling, and
    leaves in its ``uses`` the resources it uses.

    Args:
        hosts: the workload's hosts; host ``i`` owns resource ids ``i * _KINDS`` on (flows' own limits follow).
        slots: per churning host, the packet-pipeline slots churn's extra cache misses add per packet and per
            message (:func:`collie.targets.sim.churn.miss_slots`).

    Returns:
        each resource's load at the flows' rates (before their efficiency factors) and its capacity, by resource
        id (both empty for a flow alone without a fabric: it shares nothing), and what the fabric's congestion
        did (:mod:`collie.targets.sim.fabric`).
    """
    first = {h: i * _KINDS for i, h in enumerate(hosts)}
    caps = model.kind_caps * len(hosts)  # resource id -> capacity
    if model.fault_caps:
        for h in hosts:
            for fault, offsets in model.fault_caps.get(h, ()):
                for k in offsets:
                    caps[first[h] + k] *= fault.factor
    churning: dict[int, tuple[float, float]] = {first[h]: s for h, s in slots.items()} if slots else {}
    topology = model.topology
    links = Links(topology, caps) if topology is not None else None
    shared = SharedPcie(model.shared_pcie, caps, calcs) if model.shared_pcie else None
    inf = math.inf
    for c in calcs:
        a, b = first[c.client], first[c.server]
        # Control packets (READ requests, atomic responses) are counted, not charged: the message-rate limit
        # is on data. The sending side of the loopback path has its own packet and DMA budget, so a host that
        # sends to itself and to its peer serves both at full rate; receivers share theirs (in-NIC incast
        # shares the receiver's PCIe write direction). Contention beyond that is the business of quirks (#13).
        plain_use: tuple[tuple[int, float], ...]  # every resource but the PCIe write direction and atomics
        wr_use: tuple[tuple[int, float], ...]  # the PCIe write direction (where partial-line writes cost)
        if c.loopback:  # both directions on one host
            plain_use = ((a + LOOP, (c.fwd_wire + c.rev_wire) * 8), (a + LOOP_PPS_TX, c.fwd_pkts + c.rev_pkts),
                         (a + PPS_RX, c.fwd_pkts + c.rev_pkts), (a + LOOP_PCIE_RD, c.fwd_rd * 8 + c.rev_rd * 8))
            wr_use = ((a + PCIE_WR, c.fwd_wr * 8 + c.rev_wr * 8),)
        else:
            plain_use = ((a + WIRE_TX, c.fwd_wire * 8), (b + WIRE_RX, c.fwd_wire * 8),
                         (b + WIRE_TX, c.rev_wire * 8), (a + WIRE_RX, c.rev_wire * 8),
                         (a + PPS_TX, c.fwd_pkts), (b + PPS_RX, c.fwd_pkts),
                         (b + PPS_TX, c.rev_pkts), (a + PPS_RX, c.rev_pkts),
                         (a + PCIE_RD, c.fwd_rd * 8), (b + PCIE_RD, c.rev_rd * 8))
            wr_use = ((b + PCIE_WR, c.fwd_wr * 8), (a + PCIE_WR, c.rev_wr * 8))
            if links is not None:
                plain_use = _routed(c, links, a, b, plain_use)
        if shared is not None:
            plain_use, wr_use = shared.crossed(c, plain_use, wr_use)
        # the resources it uses, and what the flow would get alone on each (the least of which it gets alone;
        # every capacity and usage is positive and finite, so no minimum here meets a NaN)
        u = c.uses
        plain = inf
        for kv in plain_use:
            if kv[1] > 0:
                u.append(kv)
                x = caps[kv[0]] / kv[1]
                if x < plain:
                    plain = x
        wr = [kv for kv in wr_use if kv[1] > 0]
        full_wr = inf
        for k, v in wr:
            x = caps[k] / v
            if x < full_wr:
                full_wr = x
        u += wr
        atomic = inf
        if c.n_atomic > 0:
            u.append((b + ATOMIC, c.n_atomic))
            atomic = caps[b + ATOMIC] / c.n_atomic
        # what the flow would get alone without its base-model limits (and partial-line costs)
        if c.partial and wr:
            extra = c.partial * 8 / len(wr)
            plain_wr = min([caps[k] / max(v - extra, 1e-12) for k, v in wr])
        else:
            plain_wr = full_wr
        free = c.free = plain_wr if plain_wr < plain else plain
        churned = inf
        rate = full_wr if full_wr < plain else plain
        plain_alone = rate = atomic if atomic < rate else rate
        if churning:  # churn's extra misses make its host's packet pipeline costlier per packet
            alone = {k: caps[k] / v for k, v in u}
            for j, (k, v) in enumerate(u):
                kind = k % _KINDS
                host = k - kind
                if kind in (PPS_TX, LOOP_PPS_TX, PPS_RX) and host in churning:
                    per_pkt, per_msg = churning[host]
                    v = v * (1.0 + per_pkt + per_msg / c.pkts)
                    u[j] = (k, v)
                    alone[k] = caps[k] / v
                    churned = min(churned, alone[k])
            rate = min(alone.values())
        refill = c.refill
        if free > refill:
            starved = c.starved
            refill = c.refill = starved if starved < refill else refill
        window = c.window
        qp_cap = c.qp_cap
        for cap in (window, refill, qp_cap):
            if cap < inf:  # a limit of the flow's own: a resource it alone uses, once per request
                u.append((len(caps), 1.0))
                caps.append(cap)
                if cap < rate:
                    rate = cap
        c.rate = rate
        if churned < inf:
            c.unchurned = min(plain_alone, window, refill, qp_cap) / rate
        # a limit is labelled when it binds (within 1/_HOLD of the flow's rate alone) well below the ceiling;
        # a starved receiver whatever the shortfall, since its RNR NAKs or drops show in the counters (either
        # way below the ceiling: none is when every limit is at or above it)
        if full_wr < free or atomic < free or window < free or refill < free or churned < free or qp_cap < free:
            base = (("base:partial_line", full_wr), ("base:atomic_rate", atomic), ("base:read_window", window),
                    ("base:qp_rate", qp_cap), ("base:rnr", refill), ("base:churn", churned))
            c.labels = tuple([lb for lb, r in base
                              if (r < _HOLD * free and r * _HOLD <= rate) or (lb == "base:rnr" and r < free)])
    cong = NONE
    if topology is not None:
        names = {first[h] + k: name for h in hosts for k, name in
                 ((WIRE_RX, f"leaf{topology.leaf[h]}->{h}"), (PCIE_WR, f"{h}:nic"))}
        switches = {first[h] + WIRE_RX: f"leaf{topology.leaf[h]}" for h in hosts}
        if links is not None:
            names.update(links.names)
            switches.update(links.switches)
        load, cong = congestion(calcs, caps, topology, names, {first[h] + WIRE_TX: first[h] for h in hosts},
                                {first[h] + WIRE_RX: first[h] for h in hosts}, switches)
        if links is not None and links.faults:
            cong = replace(cong, faults=tuple(sorted(links.faults)))
    elif len(calcs) < 2:  # nothing to share: a flow alone never over-subscribes what it gets alone
        load, caps = [], []
    else:
        load = fair_shares(calcs, caps)
    if shared is not None:
        cong = replace(cong, faults=cong.faults + shared.saturated(calcs))
    for c in calcs:
        c.rate *= c.eff
    return load, caps, cong


class SharedPcie:
    """The PCIe bandwidth the NICs of each host share (``[host] shared_pcie_gbps``): two resources (reads,
    writes) per host whose NICs the run uses two or more of, appended to the run's capacities when first
    crossed.

    Every byte such a host's NICs read from or write to its memory crosses the shared link as well as their own
    (:data:`PCIE_RD`, :data:`PCIE_WR`), so two NICs of a host at line rate get what the shared link carries. A NIC
    alone on its host meets its own link first (its loopback path keeps its own DMA budget, as without sharing).
    """

    def __init__(self, bps: float, caps: list[float], calcs: list[FlowCalc]) -> None:
        self.bps = bps
        self.caps = caps
        nics: dict[str, set[str]] = {}
        for c in calcs:
            for address in (c.client, c.server):
                nics.setdefault(split_address(address)[0], set()).add(address)
        self.sharing = {h for h, used in nics.items() if len(used) > 1}
        self.ids: dict[str, tuple[int, int]] = {}  # host -> (read, write) resource ids

    def _of(self, address: str) -> tuple[int, int] | None:
        host = split_address(address)[0]
        if host not in self.sharing:
            return None
        ids = self.ids.get(host)
        if ids is None:
            ids = self.ids[host] = (len(self.caps), len(self.caps) + 1)
            self.caps += [self.bps, self.bps]
        return ids

    def crossed(self, c: FlowCalc, plain_use: tuple[tuple[int, float], ...], wr_use: tuple[tuple[int, float], ...]
                ) -> tuple[tuple[tuple[int, float], ...], tuple[tuple[int, float], ...]]:
        """``plain_use`` with the reads and ``wr_use`` with the writes flow ``c`` puts on shared links."""
        ends = ((c.client, c.fwd_rd + c.rev_rd, c.fwd_wr + c.rev_wr),) if c.loopback else \
            ((c.client, c.fwd_rd, c.rev_wr), (c.server, c.rev_rd, c.fwd_wr))  # (NIC, bytes it reads, writes)
        shared = [(ids, rd, wr) for address, rd, wr in ends if (ids := self._of(address)) is not None]
        return (plain_use + tuple((ids[0], rd * 8) for ids, rd, _ in shared),
                wr_use + tuple((ids[1], wr * 8) for ids, _, wr in shared))

    def saturated(self, calcs: list[FlowCalc]) -> tuple[str, ...]:
        """``base:shared_pcie`` when a shared link carries at least :data:`_SATURATED` of what it can at the
        flows' rates (it held them back), else nothing."""
        used = dict.fromkeys((k for ids in self.ids.values() for k in ids), 0.0)
        for c in calcs:
            for k, v in c.uses:
                if k in used:
                    used[k] += c.rate * v
        return ("base:shared_pcie",) if any(x >= _SATURATED * self.bps for x in used.values()) else ()


#: A shared link carrying this fraction of its capacity holds its flows back.
_SATURATED: Final = 0.97


def _routed(c: FlowCalc, links: Links, a: int, b: int, plain_use: tuple[tuple[int, float], ...]
            ) -> tuple[tuple[int, float], ...]:
    """``plain_use`` with the switch-to-switch links flow ``c`` crosses (client at resource block ``a``, server
    at ``b``); records its paths, one per direction that carries data."""
    extra: list[tuple[int, float]] = []
    for src, dst, s, d, wire, wr in ((c.client, c.server, a, b, c.fwd_wire, c.fwd_wr),
                                     (c.server, c.client, b, a, c.rev_wire, c.rev_wr)):
        if wire > 0:
            uses, ups, downs = links.cross(src, dst, wire * 8, c.qps)
            extra += uses
            c.paths.append(((s + WIRE_TX,), ups, downs, (d + WIRE_RX,), (d + PCIE_WR,) if wr > 0 else ()))
    return plain_use + tuple(extra)


#: Flows up to which :func:`_shared_waits` sums every pair in flow order; more (a pattern's connections) are
#: summed per group of alike flows.
_EXACT_WAITS: Final = 64


@dataclass(frozen=True)
class Outcome:
    """What :func:`simulate` returns to the target."""

    flows: tuple[FlowResult, ...]
    hosts: tuple[HostResult, ...]
    setup_s: float
    fired: tuple[str, ...]


def simulate(model: Compiled, workload: Workload, feats: Features, duration: float, draw: Draws) -> Outcome:
    """Run the model once.

    Args:
        model: the profile, compiled (:class:`Compiled`).
        draw: the run's noise source; each call returns a number in [0, 1) (a pure function of the seed), and
            ``take(n)`` the next ``n`` at once.
    """
    profile = model.profile
    flows = workload.flows
    calcs = [_flow_calc(i, f, model) for i, f in enumerate(flows)]
    churn = host_churn(profile, workload)
    slots = miss_slots(profile, churn, xlate_working_set(profile, feats.mrs_host, feats.mr_footprint),
                       _qpc_working_sets(profile, workload)) if churn else {}
    hosts: dict[str, HostAcc] = {h: HostAcc() for h in workload.hosts}
    load, caps, cong = _allocate(calcs, list(hosts), model, slots)
    host_list = list(hosts)
    # per host, per priority: the share of time the fabric paused its TX link
    switch_paused = {host_list[k // _KINDS]: r for k, r in cong.pause_rx.items()}
    # flows of several priorities: each host counts each priority's traffic apart; of one: its accumulator does
    split = len({c.priority for c in calcs}) > 1
    if not split:
        for acc in hosts.values():
            acc.by_priority[calcs[0].priority] = acc

    prox = list(zip(model.quirks, model.conditions.proximities(feats), strict=True)) if model.quirks else []
    fired: list[Quirk] = [q for q, p in prox if p == 1.0]
    thr = 1.0
    loss = 0.0
    lossy = model.link_losses
    mtus = model.port_mtus
    flapping = model.link_down
    for q in fired:
        thr *= q.symptom.throughput
        loss = 1.0 - (1.0 - loss) * (1.0 - q.symptom.loss)
    pause_host = _pause_hosts(fired, workload)

    noise = model.noise
    amp = 1.5 * noise

    def tri() -> float:  # triangular in [0, 1)
        return (draw() + draw()) * 0.5

    # triangular draws: the whole workload's, then each flow's
    draws = draw.take(2 + 2 * len(calcs))
    global_noise = 1.0 - amp * 0.5 * ((draws[0] + draws[1]) * 0.5)
    gpu_amp = model.gpu_amp
    i = 2
    for c in calcs:
        f = c.flow
        s, d = hosts[c.src], hosts[c.dst]
        cl, sv = hosts[c.client], hosts[c.server]
        pkts = c.fwd_pkts + c.rev_pkts  # c.pkts
        # the diagnostics' inputs count at the rate the flow would get without churn's slowdown and quirks
        r = c.rate * c.unchurned
        cqe = CQE_BYTES / f.signal_every
        cl.base_pcie_rd += r * c.fwd_rd
        sv.base_pcie_rd += r * c.rev_rd
        s.base_pcie_rd += r * ((WQE_BYTES + SGE_BYTES * f.sges) / 1.0 + cqe)  # descriptors
        sv.base_pcie_wr += r * c.fwd_wr
        cl.base_pcie_wr += r * c.rev_wr
        d.base_pcie_wr += r * cqe
        cl.base_qps += f.qps
        sv.base_qps += f.qps
        s.base_msgs += r
        d.base_msgs += r
        s.base_pkts += r * pkts
        d.base_pkts += r * pkts
        if c.n_recv:
            sv.base_ws_wqe += f.qps * f.rq_depth * (1.0 + f.batch / 32.0) * f.sges ** 0.5
            sv.base_wqe_msgs += r * c.n_recv
        a = 1.0 + 0.15 * (f.sges - 1)
        for memory in (f.client.memory, f.server.memory):
            if memory == "remote":
                a *= 1.6
            elif memory == "gpu":
                a *= gpu_amp
        if c.loopback:
            a *= 1.3
        if a > s.base_amp_pcie:
            s.base_amp_pcie = a
        if a > d.base_amp_pcie:
            d.base_amp_pcie = a

        # a paused receiver takes at most (1 - pause) of what it could; the quirk's factor is the other bound
        factor = 1.0 - pause_host[c.dst] if c.dst in pause_host else 1.0
        flow_loss = loss
        dropped = cong.loss.get(c.index, 0.0)
        if mtus and not c.loopback and (c.src in mtus or c.dst in mtus):
            oversize = _oversize(c, min(mtus.get(c.src, MAX_MTU), mtus.get(c.dst, MAX_MTU)))
            dropped = 1.0 - (1.0 - dropped) * (1.0 - oversize)
        if dropped or (lossy and not c.loopback and (c.src in lossy or c.dst in lossy)):
            link = 1.0 - (1.0 - lossy.get(c.src, 0.0)) * (1.0 - lossy.get(c.dst, 0.0)) * (1.0 - dropped)
            flow_loss = 1.0 - (1.0 - loss) * (1.0 - link * (1.0 + GO_BACK_N_PACKETS) / (1.0 + link * GO_BACK_N_PACKETS))
            flow_loss = flow_loss if flow_loss < _ALL_LOST else _ALL_LOST  # every packet lost: resent in vain
        factor = (factor if factor < thr else thr) * (1.0 - flow_loss)
        idle = outages = 0.0
        if flapping and not c.loopback and (c.src in flapping or c.dst in flapping):
            idle, outages = _flapping(c, f, flapping)
            factor *= 1.0 - idle
        c.rate *= factor * global_noise * (1.0 - amp * 0.5 * ((draws[i] + draws[i + 1]) * 0.5))
        i += 2
        r = c.rate
        fwd, rev = r * c.fwd_bytes, r * c.rev_bytes
        cl.tx_payload += fwd
        sv.rx_payload += fwd
        sv.tx_payload += rev
        cl.rx_payload += rev
        fwd = r * (c.fwd_wire - L1_OVERHEAD * c.fwd_pkts + c.fwd_ctl * _CTL_L2)
        rev = r * (c.rev_wire - L1_OVERHEAD * c.rev_pkts + c.rev_ctl * _CTL_L2)
        cl.tx_wire += fwd
        sv.rx_wire += fwd
        sv.tx_wire += rev
        cl.rx_wire += rev
        fwd_pkts, rev_pkts = r * (c.fwd_pkts + c.fwd_ctl), r * (c.rev_pkts + c.rev_ctl)
        cl.tx_pkts += fwd_pkts
        sv.rx_pkts += fwd_pkts
        sv.tx_pkts += rev_pkts
        cl.rx_pkts += rev_pkts
        if split:
            cp, sp = _at(cl, c.priority), _at(sv, c.priority)
            cp.tx_wire += fwd
            sp.rx_wire += fwd
            sp.tx_wire += rev
            cp.rx_wire += rev
            cp.tx_pkts += fwd_pkts
            sp.rx_pkts += fwd_pkts
            sp.tx_pkts += rev_pkts
            cp.rx_pkts += rev_pkts
        s.tx_msgs += r
        d.rx_msgs += r
        sv.rx_write += r * c.n_write
        sv.rx_read += r * c.n_read
        sv.rx_atomic += r * c.n_atomic
        sv.rx_send += r * c.n_send
        cl.tx_send += r * c.n_send
        if c.n_recv:
            demand = c.free * c.n_recv
            supply = c.refill * c.n_recv
            if demand > supply:
                _starve(c, f, model, demand, supply, cl, sv)
        if flow_loss:
            lost = r * pkts * flow_loss / (1.0 - flow_loss)
            d.lost_rx += lost
            s.lost_tx += lost
        if outages:  # each outage loses what each QP had in flight (at most what the flow sends in a timeout)
            window = f.qps * f.sq_depth * pkts
            per_outage = r / (1.0 - idle) * pkts * RC_TIMEOUT_S if idle < 1.0 else window
            lost = outages * (window if window < per_outage else per_outage)
            d.lost_rx += lost
            s.lost_tx += lost

    _diagnostics(model, feats, hosts, prox, churn)

    # pause: a fired quirk's host asks its remote peers to pause; every receiver shows the setup blip
    setup_us = model.setup_pause_us * (0.5 + draw())
    cap_us = SETUP_PAUSE_CAP * duration * 1e6
    setup_ratio = (cap_us if cap_us < setup_us else setup_us) / (duration * 1e6)
    # the priorities each host receives on: its NIC pauses the lossless ones among them
    receiving: dict[str, set[int]] = {}
    for c in calcs:
        receiving.setdefault(c.dst, set()).add(c.priority)
    lossless = model.lossless
    stall = model.backpressure_quirks and any("sim_pcie_backpressure" in q.diagnostics for q in fired)
    # per host, per priority: the share of time its NIC paused its RX link
    nic_paused = {host_list[k // _KINDS]: r for k, r in cong.pause_tx.items()}
    for h, acc in hosts.items():
        asked = pause_host.get(h, 0.0)
        fabric = nic_paused.get(h, {})
        ratios = {p: 1.0 - (1.0 - asked) * (1.0 - fabric[p]) if p in fabric else asked
                  for p in sorted(receiving.get(h, {HOST_PRIORITY})) if p in lossless}
        if any(ratios.values()):
            scale = 1.0 - amp * tri()
            ratios = {p: max(ratio * scale, 0.0) for p, ratio in ratios.items()}
        if h in receiving:
            ratios = {p: 1.0 - (1.0 - ratio) * (1.0 - setup_ratio) for p, ratio in ratios.items()}
        for p, ratio in ratios.items():
            _at(acc, p).pause_tx = ratio
        acc.pause_tx = max(ratios.values(), default=0.0)
        if stall and h in pause_host:
            acc.pcie_stall = min(100.0, acc.pcie_stall + 150.0 * acc.pause_tx)
    for c in calcs:
        if not c.loopback:
            paused = hosts[c.dst].by_priority.get(c.priority)
            if paused is not None:
                _paused(hosts[c.src], c.priority, paused.pause_tx)
    for h, by_priority in switch_paused.items():  # the switch paused the host's link
        scale = 1.0 - amp * tri()
        for p, ratio in by_priority.items():
            _paused(hosts[h], p, ratio * scale)

    for h, down in flapping.items():
        if h in hosts:
            hosts[h].link_down = down / FLAP_DOWN_S
    line = model.line
    counters_of = model.counters
    diagnostics = model.diagnostics
    out_hosts: list[HostResult] = []
    host_draws = draw.take(len(hosts))
    for (h, acc), host_draw in zip(hosts.items(), host_draws, strict=True):  # the workload's hosts, sorted
        counters = counters_of(acc, duration, line)
        cn = 1.0 + noise * (host_draw - 0.5)
        for k in diagnostics:
            counters[k] = float(round(counters[k] * cn))
        out_hosts.append(built(HostResult, {"host": h, "tx_bps": acc.tx_payload * 8, "rx_bps": acc.rx_payload * 8,
                                            "tx_pps": acc.tx_pkts, "rx_pps": acc.rx_pkts, "counters": counters,
                                            "sources": {}, "unreadable": {}}))

    out_flows: list[FlowResult] = []
    base_lat = model.base_latency_us
    waits = _shared_waits(calcs, load, caps, len(hosts) * _KINDS, line)
    # each flow's latency takes two draws (then its churn figures theirs: without churn all are drawn at once)
    flow_draws = [] if churn else draw.take(2 * len(calcs))
    for i, (c, wait) in enumerate(zip(calcs, waits, strict=True)):
        f = c.flow
        pair = draw.take(2) if churn else flow_draws[2 * i:2 * i + 2]
        rate = c.rate
        latency = base_lat + c.msg_bytes * 8 / line * 1e6  # + serialisation
        depth = 2 * f.batch
        depth = depth if depth < f.sq_depth else f.sq_depth
        queue = f.qps * (depth if depth > 1 else 1) / rate * 1e6 if rate > 0 else 0.0  # outstanding / rate
        p50 = (queue if queue > latency else latency) * (1.0 + 0.02 * ((pair[0] + pair[1]) * 0.5))
        pz = pause_host.get(c.dst, 0.0)
        if switch_paused:
            pz = max(pz, switch_paused.get(c.src, {}).get(c.priority, 0.0))
        queued = cong.delay_us.get(c.index, 0.0)
        p99 = p50 * (1.6 + 40.0 * pz) + wait + queued
        p999 = p50 * (2.5 + 120.0 * pz) + 1.5 * wait + queued
        p50 += 0.5 * wait + queued
        result = {"flow": c.index, "client": c.client, "server": c.server, "bps": rate * c.msg_bytes * 8,
                  "pps": rate * (c.fwd_pkts + c.rev_pkts), "msg_rate": rate, "lat_p50_us": p50, "lat_p99_us": p99,
                  "lat_p999_us": p999, "mr_churn_us": 0.0, "mr_churn_per_s": 0.0, "mr_churn_p99_us": 0.0,
                  "qp_churn_us": 0.0, "qp_churn_per_s": 0.0, "qp_churn_p99_us": 0.0, "qp_min_share": 0.0}
        if churn:
            result.update(flow_figures(profile, f, churn, lambda: 1.0 + 0.02 * tri()))
        out_flows.append(built(FlowResult, result))

    m = profile.model
    qps_sides = mrs_sides = pinned = 0
    for f in flows:
        qps_sides += 2 * f.qps
        mrs_sides += 2 * f.mrs
        pinned += 2 * f.mrs * f.mr_size
    setup = (m.setup_base_s + qps_sides * m.setup_qp_us * 1e-6 + mrs_sides * m.setup_mr_us * 1e-6
             + pinned * 8 / model.setup_pin_bps) * (1.0 + 0.05 * (draw() - 0.5))
    labels = [lb for c in calcs for lb in c.labels]
    faults = _faults_felt(model, calcs, list(hosts)) if model.fault_caps or lossy or mtus or flapping else ()
    return built(Outcome, {"flows": tuple(out_flows), "hosts": tuple(out_hosts), "setup_s": setup,
                           "fired": tuple([q.id for q in fired]) + (tuple(dict.fromkeys(labels)) if labels else ())
                           + faults + cong.faults + cong.ports})


#: The faults a flow meets by crossing the host's link at all.
_LINK_FAULTS: Final = frozenset((FaultKind.LOSSY_LINK, FaultKind.FLAPPING_LINK))


def _faults_felt(model: Compiled, calcs: list[FlowCalc], hosts: list[str]) -> tuple[str, ...]:
    """The ids of the faults on resources some flow of the run used, or on links it crossed (a port with a mis-set
    MTU: with packets larger than it) (the run's ground truth)."""
    used = {k for c in calcs for k, _ in c.uses}
    crossed = {h for c in calcs if not c.loopback for h in (c.src, c.dst)}
    mtus = model.port_mtus
    oversized = {h for c in calcs if not c.loopback for h in (c.src, c.dst) if h in mtus and _oversize(c, mtus[h])}
    return tuple(fault.id for i, h in enumerate(hosts) for fault in model.profile.faults if fault.host == h
                 and (h in crossed if fault.kind in _LINK_FAULTS else h in oversized
                      if fault.kind is FaultKind.MTU
                      else any(i * _KINDS + k in used for k in _FAULT_RESOURCES[fault.kind])))


def _shared_waits(calcs: list[FlowCalc], load: list[float], caps: list[float], n_host: int, line: float
                  ) -> list[float]:
    """Per flow, the microseconds its requests wait behind the other flows at the resources they share (one
    flow's waits are 0): a shared resource serves the flows round-robin, a packet each, as :func:`_allocate`
    shares it between flows (not between QPs), so a request waits up to one packet of every other flow, weighted
    by how busy (load over capacity, at most 1) the busiest host resource the two flows share is (a saturated one
    always has theirs queued; an idle one never)."""
    waits = [0.0] * len(calcs)
    if len(calcs) < 2:
        return waits
    # flows that use the same host resources share alike: the busy fraction is computed once per pair of such
    # groups (a pattern's thousand connections use a few dozen sets of resources)
    groups: dict[frozenset[int], int] = {}
    group = [groups.setdefault(frozenset(k for k, _ in c.uses if k < n_host), len(groups)) for c in calcs]
    sets = list(groups)
    busy: dict[tuple[int, int], float] = {}  # per pair of groups (the lower index first)
    for a, mine in enumerate(sets):
        for b in range(a, len(sets)):
            most = 0.0  # max(..., default=0.0): loads are never negative
            for k in mine & sets[b]:
                x = load[k] / caps[k]
                x = x if x < 1.0 else 1.0
                if x > most:
                    most = x
            busy[a, b] = most
    if len(calcs) > _EXACT_WAITS:
        return _grouped_waits(calcs, group, busy, len(sets), line)
    for i in range(len(calcs)):
        for j, o in enumerate(calcs):
            if j == i or not o.pkts:
                continue
            gi, gj = group[i], group[j]
            most = busy[(gi, gj) if gi <= gj else (gj, gi)]
            if most:
                waits[i] += most * (o.fwd_wire + o.rev_wire) / o.pkts * 8 / line * 1e6
    return waits


def _grouped_waits(calcs: list[FlowCalc], group: list[int], busy: Mapping[tuple[int, int], float], n_groups: int,
                   line: float) -> list[float]:
    """:func:`_shared_waits` of many flows in O(flows + groups²): a flow of group ``a`` waits ``busy(a, b)`` x
    the packet time of every flow of each group ``b``, less its own packet time at ``busy(a, a)`` (equal to the
    pairwise sum up to rounding)."""
    packet_us = [(o.fwd_wire + o.rev_wire) / o.pkts * 8 / line * 1e6 if o.pkts else 0.0 for o in calcs]
    per_group = [0.0] * n_groups
    for g, t in zip(group, packet_us, strict=True):
        per_group[g] += t
    behind = [sum(busy[(a, b) if a <= b else (b, a)] * per_group[b] for b in range(n_groups))
              for a in range(n_groups)]  # what a flow of group a waits behind every flow, itself included
    return [behind[g] - busy[g, g] * own for g, own in zip(group, packet_us, strict=True)]


def _starve(c: FlowCalc, f: Flow, model: Compiled, demand: float, supply: float, cl: HostAcc,
            sv: HostAcc) -> None:
    """Receive starvation of one flow: its sender wants ``demand`` receive-consuming requests/s, its responder
    reposts ``supply``. RC: each starved QP is NAKed about once per RNR timer (in proportion to how short the
    supply falls) and resends the NAKed request; UC/UD: the requests beyond the supply are dropped."""
    if f.transport == "RC":
        naks = f.qps / model.rnr_timer_s * (1.0 - supply / demand)
        sv.rnr_naks_sent += naks
        cl.rnr_naks_received += naks
        sv.rx_no_wqe += naks
        for h in (cl, sv):
            h.tx_pkts += naks  # the resent request; the NAK
            h.rx_pkts += naks
            h.tx_wire += naks * _CTL_L2
            h.rx_wire += naks * _CTL_L2
    else:
        dropped = (demand - supply) * c.fwd_pkts / c.n_recv
        sv.rx_no_wqe += dropped
        cl.tx_pkts += dropped
        sv.rx_pkts += dropped


def _at(acc: HostAcc, p: int) -> HostAcc:
    """What host ``acc`` counts on priority ``p`` (:attr:`HostAcc.by_priority`), made when first used."""
    found = acc.by_priority.get(p)
    if found is None:
        found = acc.by_priority[p] = HostAcc()
    return found


def _paused(acc: HostAcc, p: int, ratio: float) -> None:
    """Host ``acc`` was paused ``ratio`` of the time on priority ``p``: that priority's pause and the host's
    (the most of any priority) are at least that."""
    at = _at(acc, p)
    if ratio > at.pause_rx:
        at.pause_rx = ratio
    if ratio > acc.pause_rx:
        acc.pause_rx = ratio


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


def _qpc_working_sets(profile: Profile, workload: Workload) -> dict[str, float]:
    """Per host, the data path's QPs (both ends of every flow) over ``qpc_entries``."""
    qps: dict[str, float] = {}
    for f in workload.flows:
        for h in (f.client.host, f.server.host):
            qps[h] = qps.get(h, 0.0) + f.qps / profile.cache.qpc_entries
    return qps


def _diagnostics(model: Compiled, feats: Features, hosts: dict[str, HostAcc], prox: list[tuple[Quirk, float]],
                 churn: dict[str, HostChurn]) -> None:
    """Fill the ``sim_*`` diagnostic counters (per second) of every host from its ``base_*`` inputs (base-model,
    pre-quirk rates); a churning host's caches hold its churned entries too."""
    pcie_cap = model.pcie_bytes
    pps_cap = model.pps_cap
    bidir = 1.3 if feats.bidirectional else 1.0
    strict_order = model.strict_order
    mr_ws = xlate_working_set(model.profile, feats.mrs_host, feats.mr_footprint)
    read_f = 1.3 if feats.opcode == "READ" else 1.0
    mtu_f = (4096.0 / feats.mtu) ** 0.25
    # every active quirk adds its precursor, per message or per packet, to its diagnostic counters
    boosts = [(boost, counters) for (precursor, counters), (_, closeness) in zip(model.precursors, prox, strict=True)
              if (boost := precursor * closeness * (3.0 if closeness == 1.0 else 1.0)) >= 1e-9]
    for h, acc in hosts.items():
        m = acc.base_msgs * 0.5
        p = acc.base_pkts * 0.5
        ch = churn.get(h, _IDLE)
        rd, wr = acc.base_pcie_rd, acc.base_pcie_wr
        util = (wr if wr > rd else rd) / pcie_cap  # max(rd, wr)
        bp = soft_fraction(util * acc.base_amp_pcie * bidir * strict_order)
        acc.pcie_stall = 20.0 * bp if p > 0 else 0.0
        # in the order of _PRECURSOR: the base model's miss and stall rates, then each quirk's precursor
        diag = [soft_fraction(acc.base_ws_wqe / model.rx_wqe_entries) * acc.base_wqe_msgs,
                soft_fraction(acc.base_qps / model.qpc_entries + ch.qpc) * m,
                soft_fraction(mr_ws + ch.xlate) * p,
                0.2 * bp * p,
                0.1 * soft_fraction(p * 2 / pps_cap * read_f * bidir * mtu_f) * p]
        if boosts:
            per = (m, m, p, p, p)
            for boost, counters in boosts:
                for i in counters:
                    diag[i] += boost * per[i]
        acc.diag_rx_wqe, acc.diag_qpc, acc.diag_mtt, acc.diag_pcie, acc.diag_pkt = diag
