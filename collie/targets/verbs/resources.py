"""Verbs resources of one worker: PD, MRs, CQs, QPs (connected), and the reusable work requests.

Everything a worker creates hangs off one device ``Context``; :meth:`WorkerResources.close` closes that
context, which makes pyverbs destroy every QP, AH, MR, CQ and PD made from it (children first). It is safe
to call on every path (error, timeout, Ctrl-C) and more than once.

On a local device both ends of a flow live here (a share of side ``BOTH``): client QP ``i`` of a share is
connected to server QP ``i`` (RC/UC: INIT -> RTR -> RTS with each other's QPN, PSN and GID; UD: an address
handle and a Q_Key), with ACK timeout 14 (4.096 µs x 2^14 = 67 ms), retry_cnt 7 and rnr_retry 6 (7 would mean
"retry forever" in the IBTA spec; every wait of collie is bounded). The receiver's RNR timer (:func:`rnr_timer`)
is at least 10.24 ms and long enough that six of them outlast twice the flow's ``recv_delay_us`` plus a stall
of the engine: a receiver that is slow but alive makes its senders retry (RNR NAKs, counted by the NIC), never
fail. The engine is a Python poll loop, and a stall of a few ms (scheduling, the counter reads at an
interval's edge) must not end a SEND flow in IBV_WC_RNR_RETRY_EXC_ERR (at timer 12, 0.64 ms, about 4 ms in all, a
cross-host SEND on soft-RoCE did). ``max_rd_atomic``/``max_dest_rd_atomic`` are
:data:`~collie.targets.verbs.limits.ENGINE_RD_ATOMIC` or the device's ``max_qp_rd_atom`` when smaller: the
READs and atomics a QP has outstanding, whatever the other opcodes posted between them, stay within what the
NIC allows (the requester holds the next one back). The GRH of every QP (its RTR address vector) and UD address
handle carries the flow's ``tclass`` as its traffic class when the flow sets one (:meth:`WorkerResources._route`),
and pyverbs' default otherwise.

Every work request carries its own opcode (``Flow.request``, see ``plan``), within one post list too. Where each
opcode's data goes, and how it is checked, is ``verify``: data MRs for payload, a client buffer apart for the
READs of a flow that also pushes and for the atomics' fetched values, a server MR of two counters for the atomics.

A share of side ``CLIENT`` or ``SERVER`` (one host's ends of a cross-host flow) is built in two steps:
:meth:`WorkerResources.open` creates its MRs, CQs and QPs (UD QPs go to RTS, they need no peer) and draws its
PSNs; :meth:`WorkerResources.endpoints` tells what the peer host needs; :meth:`WorkerResources.connect` takes
the peer's endpoints, moves RC/UC QPs to RTS against them and builds the client's work requests (remote rkeys
and addresses, or UD address handle and remote QPNs). Both steps use the same transitions and WR builders as
the local case.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final

from collie.errors import TargetError
from collie.model.flow import ATOMIC_BYTES, ATOMIC_OPCODES, INLINE_OPCODES, Flow
from collie.targets.base import Unsupported
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.endpoints import EndpointData, Key, peer_of
from collie.targets.verbs.job import Share, Side, WorkerJob
from collie.targets.verbs.limits import ENGINE_RD_ATOMIC, GRH_BYTES, send_cqes_per_qp
from collie.targets.verbs.plan import (
    MAX_CYCLE_WRS,
    NO_REMOTE,
    CycleSums,
    RecvDesc,
    Remote,
    SendDesc,
    Sge,
    WrCycle,
    sge_layout,
)
from collie.targets.verbs.verify import (
    ADDEND,
    COUNTERS_BYTES,
    CS_OFFSET,
    FA_OFFSET,
    PULL_OPCODES,
    PUSH_OPCODES,
    UNFETCHED,
    check_compare_swap,
    check_fetch_add,
    check_pulled,
    check_pushed,
    longest,
    pull_pattern,
    pulls_land_apart,
    push_pattern,
)

ACK_TIMEOUT: Final = 14
RETRY_CNT: Final = 7
RNR_RETRY: Final = 6
#: Seconds of a stall of the engine's own (scheduling, counter reads) a receiver's RNR timer also covers.
RNR_STALL_S: Final = 0.06
#: The same for a paced receiver (``recv_delay_us`` > 0): starved by design, its queue is empty whenever the
#: engine stalls, and the counter reads at an interval's edge fork processes (hundreds of ms under emulation).
PACED_STALL_S: Final = 0.3
#: IBTA's RNR NAK timer codes 1..31 and 0 with the wait each stands for (seconds), ascending.
RNR_TIMERS: Final[tuple[tuple[int, float], ...]] = tuple((code, w * 1e-5) for code, w in zip(
    (*range(1, 32), 0),
    (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144,
     8192, 12288, 16384, 24576, 32768, 49152, 65536), strict=True))
#: The shortest RNR timer collie uses (code 20, 10.24 ms).
MIN_RNR_TIMER: Final = 20
#: Outstanding READs/atomics per QP, as requester and as responder (lowered to the device's max_qp_rd_atom).
#: wr_id of the READ that fetches an atomic flow's counters after the run.
READBACK_WR_ID: Final = (1 << 62) + 1
QKEY: Final = 0x11111111
IMM_DATA: Final = 0x1234
#: Chains are shared by a flow's QPs (RC/UC); UD needs them per QP (remote QPN), so its cycle is shorter.
UD_CYCLE_WRS: Final = 1024
MAX_CQ_BATCH: Final = 64

_OPCODE_WR: Final = {
    "WRITE": "IBV_WR_RDMA_WRITE", "WRITE_IMM": "IBV_WR_RDMA_WRITE_WITH_IMM", "READ": "IBV_WR_RDMA_READ",
    "SEND": "IBV_WR_SEND", "SEND_IMM": "IBV_WR_SEND_WITH_IMM", "ATOMIC_FA": "IBV_WR_ATOMIC_FETCH_AND_ADD",
    "ATOMIC_CS": "IBV_WR_ATOMIC_CMP_AND_SWP",
}
_MTU_ENUM: Final = {256: "IBV_MTU_256", 512: "IBV_MTU_512", 1024: "IBV_MTU_1024", 2048: "IBV_MTU_2048",
                    4096: "IBV_MTU_4096"}


@functools.cache
def rnr_timer(recv_delay_us: int) -> int:
    """The RNR timer code a receiver announces: the shortest at least :data:`MIN_RNR_TIMER` whose
    :data:`RNR_RETRY` waits outlast twice ``recv_delay_us`` plus a stall (:data:`RNR_STALL_S`, or
    :data:`PACED_STALL_S` for a paced receiver); the longest, 655 ms, if none does. Cached: every RC/UC QP's
    RTR asks (20,000 calls for 10,000 QP pairs cost seconds under emulation)."""
    stall = PACED_STALL_S if recv_delay_us else RNR_STALL_S
    need = (2 * recv_delay_us * 1e-6 + stall) / RNR_RETRY
    floor = dict(RNR_TIMERS)[MIN_RNR_TIMER]
    return next((code for code, wait in RNR_TIMERS if wait >= max(need, floor)), RNR_TIMERS[-1][0])


def cycle_cap(transport: str, qps: int) -> int:
    """The most slots of a share's WR cycle (``WrCycle.for_flow`` keeps at least one period whatever the cap).

    RC/UC chains are shared by the share's QPs: :data:`~collie.targets.verbs.plan.MAX_CYCLE_WRS`. UD chains are
    built per QP (each WR names its QP's remote QPN), so a UD share's QPs split that many WR objects among them, at
    most :data:`UD_CYCLE_WRS` each: the WR objects of a share stay bounded as QPs and MRs grow together (1,000 UD
    QPs over 1,000 MRs would otherwise build a million WRs, about 370 MiB and 80 s in the soft-RoCE guest).
    """
    if transport != "UD":
        return MAX_CYCLE_WRS
    return max(1, min(UD_CYCLE_WRS, MAX_CYCLE_WRS // max(1, qps)))


def trim_heap() -> None:
    """Hand the C heap's free pages back to the kernel (glibc's ``malloc_trim``; best effort, a no-op without it).

    pyverbs allocates every MR's buffer with ``posix_memalign`` and frees it when the MR is closed, but glibc keeps
    freed memory that lies below live allocations: after 100,000 MRs of 4 KiB were destroyed, the process kept
    about 780 MiB it no longer used (measured in the soft-RoCE guest), and one worker runs in the caller's process.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def node_cpus(node: int) -> set[int] | None:
    """CPUs of NUMA node ``node`` (``None`` when unknown)."""
    try:
        with open(f"/sys/devices/system/node/node{node}/cpulist", encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus or None


def _on_node(node: int | None) -> None:
    """Run (and first-touch new memory) on ``node``'s CPUs; no-op when unknown."""
    if node is None:
        return
    cpus = node_cpus(node)
    if cpus:
        os.sched_setaffinity(0, cpus)


@dataclass
class ShareRes:
    """The resources of one :class:`Share`. Lists are indexed by QP (``client_qps[i]`` talks to
    ``server_qps[i]``) or by MR."""

    share: Share
    cycle: WrCycle
    sums: CycleSums
    client_mrs: list[Any] = field(default_factory=list)
    server_mrs: list[Any] = field(default_factory=list)
    #: the client's buffer apart (``verify``): landing READs of a flow that also pushes, then one 8-byte fetch
    #: slot per atomic WR slot of the cycle, then the counters read back after the run; ``None`` when unused.
    aux: Any = None
    #: the server's MR of the atomics' two counters (``verify.FA_OFFSET``, ``verify.CS_OFFSET``).
    counters: Any = None
    send_cqs: list[Any] = field(default_factory=list)
    recv_cqs: list[Any] = field(default_factory=list)
    client_qps: list[Any] = field(default_factory=list)
    server_qps: list[Any] = field(default_factory=list)
    #: chain_descs[c] (shared by the QPs) or per-QP chains (UD): the WRs of each chain, described (``SendDesc``).
    chain_descs: list[list[SendDesc]] = field(default_factory=list)
    qp_chain_descs: list[list[list[SendDesc]]] = field(default_factory=list)
    #: the chain's last WR of every ``signal_every`` is signalled in the description already.
    static_signal: bool = False
    recv_descs: list[RecvDesc] = field(default_factory=list)
    ah: Any = None
    #: the READ of the counters into ``aux`` after the run (atomic flows).
    readback_desc: SendDesc | None = None
    #: the same as pyverbs work requests, linked head to tail (``WorkerResources.python_wrs``; the Python loop).
    chains: list[list[Any]] = field(default_factory=list)
    qp_chains: list[list[list[Any]]] = field(default_factory=list)
    recv_chain: list[Any] = field(default_factory=list)
    readback: Any = None
    #: QP access flags of the share's MRs and QPs.
    access: int = 0
    #: PSN of each of this host's QPs of a one-sided share (the first packet it sends); empty for ``BOTH``.
    psns: list[int] = field(default_factory=list)
    connected: bool = False
    #: the layout of ``aux`` (see :meth:`of`): READ landing bytes (0: READs land in the client's MRs), the
    #: atomic and the CMP_AND_SWP slots of the cycle, where the counters are read back to, its size.
    landing: int = 0
    atomic_slots: tuple[int, ...] = ()
    swap_slots: tuple[int, ...] = ()
    readback_offset: int = 0
    aux_bytes: int = 0
    #: atomic slot -> its fetch slot in ``aux``; CMP_AND_SWP slot -> its place on the chain (``verify``).
    fetch_slot: dict[int, int] = field(default_factory=dict)
    swap_index: dict[int, int] = field(default_factory=dict)

    def chains_of(self, qp_index: int) -> list[list[Any]]:
        return self.qp_chains[qp_index] if self.qp_chains else self.chains

    @classmethod
    def of(cls, share: Share, cycle: WrCycle) -> ShareRes:
        """The record of ``share`` before anything is created, with the layout of ``aux``."""
        f = share.flow
        res = cls(share=share, cycle=cycle, sums=CycleSums.of(cycle, f.mtu))
        res.landing = -(-longest(f, PULL_OPCODES) // 8) * 8 if pulls_land_apart(f) else 0
        res.atomic_slots = cycle.slots_of(ATOMIC_OPCODES)
        res.swap_slots = cycle.slots_of(frozenset(("ATOMIC_CS",)))
        res.fetch_slot = {j: k for k, j in enumerate(res.atomic_slots)}
        res.swap_index = {j: k for k, j in enumerate(res.swap_slots)}
        res.readback_offset = res.landing + ATOMIC_BYTES * len(res.atomic_slots)
        res.aux_bytes = res.readback_offset + (COUNTERS_BYTES if f.atomic else 0)
        return res


class WorkerResources:
    """Opens the device and builds every share of a :class:`WorkerJob` (see the module docstring)."""

    def __init__(self, pv: Pyverbs, job: WorkerJob) -> None:
        self.pv = pv
        self.job = job
        self.ctx: Any = None
        self.pd: Any = None
        self.gid: Any = None
        self.rd_atomic = ENGINE_RD_ATOMIC
        self.shares: list[ShareRes] = []
        self._rng = random.Random(job.seed)

    # ---- lifecycle -------------------------------------------------------------------------------------
    def open(self) -> None:
        pv, spec = self.pv, self.job.spec
        try:
            self.ctx = pv.device.Context(name=spec.device)
        except pv.error as exc:
            raise TargetError(f"cannot open RDMA device {spec.device}: {exc}") from None
        self.gid = self.ctx.query_gid(spec.port, spec.gid_index)
        self.pd = pv.pd.PD(self.ctx)
        attr = self.ctx.query_device()
        self.rd_atomic = max(1, min(ENGINE_RD_ATOMIC, int(attr.max_qp_rd_atom)))
        for share in self.job.shares:
            self.shares.append(self._build_share(share, int(attr.max_cqe)))

    def close(self) -> None:
        """Destroy everything (idempotent). pyverbs closes a context's children before the context; then the C
        heap's free pages go back to the kernel (:func:`trim_heap`)."""
        ctx, self.ctx = self.ctx, None
        self.shares = []
        if ctx is not None:
            with contextlib.suppress(*self.pv.error):
                ctx.close()
            trim_heap()

    # ---- building -------------------------------------------------------------------------------------
    def _build_share(self, share: Share, max_cqe: int) -> ShareRes:
        pv, e, f = self.pv, self.pv.e, share.flow
        ud = f.transport == "UD"
        cycle = WrCycle.for_flow(f.sizes, f.batch, share.mrs, cap=cycle_cap(f.transport, share.qps),
                                 opcodes=f.opcodes)
        res = ShareRes.of(share, cycle)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        if f.atomic:
            access |= e.IBV_ACCESS_REMOTE_ATOMIC
        res.access = access
        grh = GRH_BYTES if ud else 0
        side = share.side
        if side.client:
            _on_node(share.client_node)
            res.client_mrs = [pv.mr.MR(self.pd, f.mr_size, access) for _ in range(share.mrs)]
            if res.aux_bytes:
                res.aux = pv.mr.MR(self.pd, res.aux_bytes, access)
        if side.server:
            _on_node(share.server_node)
            res.server_mrs = [pv.mr.MR(self.pd, f.mr_size + grh, access) for _ in range(share.mrs)]
            if f.atomic:
                res.counters = pv.mr.MR(self.pd, COUNTERS_BYTES, access)
        _on_node(share.client_node if side.client else share.server_node)

        per_send = send_cqes_per_qp(f)
        per_recv = f.rq_depth if f.consumes_receives else 1
        recv_sges = f.recv_sges if f.consumes_receives else 1
        send_group = max(1, max_cqe // per_send)
        recv_group = max(1, max_cqe // (per_recv + 1))
        qp_type = {"RC": e.IBV_QPT_RC, "UC": e.IBV_QPT_UC, "UD": e.IBV_QPT_UD}[f.transport]
        inline = f.inline if INLINE_OPCODES.intersection(f.opcodes) else 0
        for i in range(share.qps):
            if side.client and i % send_group == 0:
                n = min(send_group, share.qps - i)
                res.send_cqs.append(pv.cq.CQ(self.ctx, n * per_send))
            if side.server and i % recv_group == 0:
                n = min(recv_group, share.qps - i)
                res.recv_cqs.append(pv.cq.CQ(self.ctx, n * (per_recv + 1)))
            try:
                if side.client:
                    scq = res.send_cqs[-1]
                    ccap = pv.qp.QPCap(max_send_wr=f.sq_depth, max_recv_wr=1, max_send_sge=f.sges,
                                       max_recv_sge=1, max_inline_data=inline)
                    res.client_qps.append(pv.qp.QP(self.pd, pv.qp.QPInitAttr(
                        qp_type=qp_type, scq=scq, rcq=scq, cap=ccap, sq_sig_all=0)))
                if side.server:
                    rcq = res.recv_cqs[-1]
                    scap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=per_recv, max_send_sge=1,
                                       max_recv_sge=recv_sges)
                    res.server_qps.append(pv.qp.QP(self.pd, pv.qp.QPInitAttr(
                        qp_type=qp_type, scq=rcq, rcq=rcq, cap=scap, sq_sig_all=0)))
            except pv.error as exc:
                if inline:
                    raise Unsupported(f"the device refused a QP with inline {inline} ({exc})") from None
                raise
        if side is Side.BOTH:
            self._connect_local(res)
            targets = [(mr.rkey, mr.buf) for mr in res.server_mrs]
            if res.counters is not None:
                targets.append((res.counters.rkey, res.counters.buf))
            self._build_chains(res, targets, [qp.qp_num for qp in res.server_qps], self.gid)
            res.connected = True
        else:
            mine = res.client_qps if side.client else res.server_qps
            res.psns = [self._rng.randrange(1 << 24) for _ in mine]
            if ud:
                for qp, psn in zip(mine, res.psns, strict=True):
                    self._ud_to_rts(qp, psn)
        self._build_recv(res)
        return res

    def _ud_to_rts(self, qp: Any, psn: int) -> None:
        attr = self.pv.qp.QPAttr()
        attr.qkey = QKEY
        attr.port_num = self.job.spec.port
        attr.pkey_index = 0
        attr.sq_psn = psn
        qp.to_rts(attr)

    def _rc_to_rts(self, res: ShareRes, qp: Any, dest_qpn: int, rq_psn: int, sq_psn: int, dgid: Any) -> None:
        """INIT -> RTR -> RTS of an RC/UC QP facing QP ``dest_qpn`` whose first PSN is ``rq_psn``."""
        pv, e, spec = self.pv, self.pv.e, self.job.spec
        attr = pv.qp.QPAttr()
        attr.qp_access_flags = res.access
        attr.port_num = spec.port
        attr.pkey_index = 0
        qp.to_init(attr)
        attr.path_mtu = getattr(e, _MTU_ENUM[res.share.flow.mtu])
        attr.dest_qp_num = dest_qpn
        attr.rq_psn = rq_psn
        attr.max_dest_rd_atomic = self.rd_atomic
        attr.min_rnr_timer = rnr_timer(res.share.flow.recv_delay_us)
        attr.ah_attr = pv.addr.AHAttr(port_num=spec.port, is_global=1, gr=self._route(res.share.flow, dgid))
        _to_rtr(qp, attr, pv.error)
        attr.sq_psn = sq_psn
        attr.timeout = ACK_TIMEOUT
        attr.retry_cnt = RETRY_CNT
        attr.rnr_retry = RNR_RETRY
        attr.max_rd_atomic = self.rd_atomic
        qp.to_rts(attr)

    def _connect_local(self, res: ShareRes) -> None:
        """Connect client QP ``i`` to server QP ``i`` of a ``BOTH`` share on this device."""
        if res.share.flow.transport == "UD":
            for qp in (*res.client_qps, *res.server_qps):
                self._ud_to_rts(qp, self._rng.randrange(1 << 24))
            return
        psn_c = [self._rng.randrange(1 << 24) for _ in res.client_qps]
        psn_s = [self._rng.randrange(1 << 24) for _ in res.server_qps]
        for i, (cqp, sqp) in enumerate(zip(res.client_qps, res.server_qps, strict=True)):
            self._rc_to_rts(res, cqp, sqp.qp_num, psn_s[i], psn_c[i], self.gid)
            self._rc_to_rts(res, sqp, cqp.qp_num, psn_c[i], psn_s[i], self.gid)

    # ---- cross-host ---------------------------------------------------------------------------------
    def endpoints(self) -> list[EndpointData]:
        """Connection data of every QP of this worker's one-sided shares (see ``endpoints``); a server share's
        MRs are its data MRs, then, for an atomic flow, its counters MR."""
        out: list[EndpointData] = []
        gid = str(self.gid)
        for res in self.shares:
            share = res.share
            if share.side is Side.BOTH:
                continue
            qps = res.client_qps if share.side.client else res.server_qps
            qkey = QKEY if share.flow.transport == "UD" else 0
            served = [*res.server_mrs, *([res.counters] if res.counters is not None else [])]
            for i, qp in enumerate(qps):
                mrs = tuple((int(mr.rkey), int(mr.buf)) for mr in served) if i == 0 else ()
                out.append(EndpointData(flow=share.flow_index, worker=share.worker, qp=i, side=share.side.value,
                                        qpn=int(qp.qp_num), psn=res.psns[i], gid=gid, qkey=qkey, mrs=mrs))
        return out

    def connect(self, peers: Mapping[Key, EndpointData]) -> None:
        """Connect every one-sided share to the peers' endpoints and build its client work requests.

        Raises:
            TargetError: a peer endpoint is missing or names a different number of MRs.
        """
        for res in self.shares:
            share = res.share
            if res.connected:
                continue
            side = share.side.value
            mine = res.client_qps if share.side.client else res.server_qps
            facing = [peer_of(peers, share.flow_index, share.worker, i, side) for i in range(len(mine))]
            ud = share.flow.transport == "UD"
            if not ud:
                for qp, psn, peer in zip(mine, res.psns, facing, strict=True):
                    self._rc_to_rts(res, qp, peer.qpn, peer.psn, psn, self._gid(peer.gid))
            if share.side.client and facing:
                targets = list(facing[0].mrs)
                planned = share.mrs + (1 if share.flow.atomic else 0)
                if not ud and len(targets) != planned:
                    raise TargetError(f"the server end of flow {share.flow_index} worker {share.worker} sent "
                                      f"{len(targets)} MRs; this host planned {planned}")
                self._build_chains(res, targets, [p.qpn for p in facing], self._gid(facing[0].gid))
            res.connected = True

    def _route(self, flow: Flow, dgid: Any) -> Any:
        """The ``GlobalRoute`` (GRH) of ``flow``'s packets toward ``dgid`` from this port's GID ``gid_index``.

        Args:
            flow: the flow whose QPs (RC/UC: their RTR address vector) or address handle (UD) it is for; its
                ``tclass``, when set, is the GRH's traffic class (RoCEv2: the IP header's DSCP and ECN byte).
            dgid: the destination GID, as ``GlobalRoute`` takes it.

        Returns:
            A ``GlobalRoute`` whose ``traffic_class`` is ``flow.tclass``; when the flow sets none, the argument
            is left out and pyverbs' default applies (0, what any application that sets no class passes).
        """
        extra = {} if flow.tclass is None else {"traffic_class": flow.tclass}
        return self.pv.addr.GlobalRoute(dgid=dgid, sgid_index=self.job.spec.gid_index, **extra)

    def _gid(self, text: str) -> Any:
        """A GID object from its text (what ``GlobalRoute`` takes)."""
        errors: tuple[type[BaseException], ...] = (*self.pv.error, ValueError, TypeError)
        try:
            return self.pv.addr.GID(text)
        except errors as exc:
            raise TargetError(f"peer GID {text!r} is not a GID ({exc})") from None

    def _make_chain(self, res: ShareRes, c: int, remote: Callable[[int, str, int], Remote]) -> list[SendDesc]:
        """The WRs of chain ``c``: slot ``j`` posts request ``j`` of the flow with its own opcode."""
        e, f = self.pv.e, res.share.flow
        every = f.signal_every
        res.static_signal = f.batch % every == 0
        cycle = res.cycle
        fetch = res.fetch_slot
        wrs: list[SendDesc] = []
        for p, j in enumerate(cycle.chain_slots(c)):
            op, size, m = cycle.slot_opcode(j), cycle.slot_size(j), cycle.slot_mr(j)
            if op in ATOMIC_OPCODES:  # one 8-byte SGE: the fetched value's slot
                sges: tuple[Sge, ...] = ((res.aux.buf + res.landing + ATOMIC_BYTES * fetch[j], ATOMIC_BYTES,
                                          res.aux.lkey),)
            else:  # the gather source (pushes) or the scatter target (READ)
                local = res.aux if op in PULL_OPCODES and res.landing else res.client_mrs[m]
                sges = tuple((local.buf + off, ln, local.lkey) for off, ln in sge_layout(size, f.sges))
            flags = 0
            if f.inline and size <= f.inline and op in INLINE_OPCODES:
                flags |= e.IBV_SEND_INLINE
            if res.static_signal and (p + 1) % every == 0:
                flags |= e.IBV_SEND_SIGNALED
            wrs.append(SendDesc(j, getattr(e, _OPCODE_WR[op]), flags, IMM_DATA if op.endswith("_IMM") else 0,
                                sges, *remote(m, op, j), op=op))
        return wrs

    def python_wrs(self) -> None:
        """Build every share's chains, receive post list and read-back READ as pyverbs work requests (the Python
        loop posts those; the native loop builds its own from the same descriptions). Idempotent."""
        for res in self.shares:
            if res.chain_descs and not res.chains:
                res.chains = [self._send_wrs(chain, res.ah) for chain in res.chain_descs]
            if res.qp_chain_descs and not res.qp_chains:
                res.qp_chains = [[self._send_wrs(chain, res.ah) for chain in chains] for chains in res.qp_chain_descs]
            if res.recv_descs and not res.recv_chain:
                pv = self.pv
                res.recv_chain = _linked([pv.wr.RecvWR(wr_id=d.wr_id, num_sge=len(d.sges),
                                                       sg=[pv.wr.SGE(*s) for s in d.sges]) for d in res.recv_descs])
            if res.readback_desc is not None and res.readback is None:
                res.readback = self._send_wrs([res.readback_desc], None)[0]

    def _send_wrs(self, descs: list[SendDesc], ah: Any) -> list[Any]:
        """pyverbs SendWRs of ``descs``, linked in order; UD WRs address ``ah``."""
        pv = self.pv
        wrs = []
        for d in descs:
            wr = pv.wr.SendWR(wr_id=d.wr_id, opcode=d.opcode, num_sge=len(d.sges),
                              sg=[pv.wr.SGE(*s) for s in d.sges], send_flags=d.flags)
            if d.imm_data:
                wr.imm_data = d.imm_data
            if ah is not None:
                wr.set_wr_ud(ah, d.remote_qpn, d.remote_qkey)
            elif d.op in ATOMIC_OPCODES:
                wr.set_wr_atomic(d.rkey, d.remote_addr, d.compare_add, d.swap)
            elif d.op in ("WRITE", "WRITE_IMM", "READ"):
                wr.set_wr_rdma(d.rkey, d.remote_addr)
            wrs.append(wr)
        return _linked(wrs)

    def _build_chains(self, res: ShareRes, targets: list[tuple[int, int]], ud_qpns: list[int],
                      dgid: Any) -> None:
        """The client's prebuilt chains: RDMA WRs of slot ``j`` target ``targets[j % mrs]`` (rkey, address),
        atomics the counters MR ``targets[mrs]``; UD WRs of client QP ``i`` go to QPN ``ud_qpns[i]`` at
        ``dgid``."""
        pv, f = self.pv, res.share.flow
        if not res.client_qps:
            return
        swaps = res.swap_index

        def rdma(m: int, op: str, j: int) -> Remote:
            if op == "ATOMIC_FA":
                rkey, addr = targets[res.share.mrs]
                return addr + FA_OFFSET, rkey, ADDEND, 0, 0, 0
            if op == "ATOMIC_CS":  # the chain 0 -> 1 -> ... -> c-1 -> 0 (see verify)
                rkey, addr = targets[res.share.mrs]
                k = swaps[j]
                return addr + CS_OFFSET, rkey, k, (k + 1) % len(swaps), 0, 0
            if op in ("WRITE", "WRITE_IMM", "READ"):
                rkey, addr = targets[m]
                return addr, rkey, 0, 0, 0, 0
            return NO_REMOTE

        if f.transport == "UD":
            ah_attr = pv.addr.AHAttr(port_num=self.job.spec.port, is_global=1, gr=self._route(f, dgid))
            res.ah = pv.addr.AH(self.pd, attr=ah_attr)
            for qpn in ud_qpns:

                def ud(m: int, op: str, j: int, qpn: int = qpn) -> Remote:
                    return 0, 0, 0, 0, qpn, QKEY

                res.qp_chain_descs.append([self._make_chain(res, c, ud) for c in range(res.cycle.chains)])
        else:
            res.chain_descs = [self._make_chain(res, c, rdma) for c in range(res.cycle.chains)]
        if f.atomic:
            rkey, addr = targets[res.share.mrs]
            res.readback_desc = SendDesc(READBACK_WR_ID, pv.e.IBV_WR_RDMA_READ, pv.e.IBV_SEND_SIGNALED, 0,
                                         ((res.aux.buf + res.readback_offset, COUNTERS_BYTES, res.aux.lkey),),
                                         addr, rkey, 0, 0, 0, 0, op="READ")

    def _build_recv(self, res: ShareRes) -> None:
        """One receive post list of ``recv_batch`` WQEs, each of ``recv_sges`` SGEs tiling the first
        ``max_size`` B (and the GRH on UD) of server MR ``k % mrs``."""
        f = res.share.flow
        if not f.consumes_receives or not res.server_qps:
            return
        grh = GRH_BYTES if f.transport == "UD" else 0
        for k in range(f.recv_batch):
            mr = res.server_mrs[k % len(res.server_mrs)]
            sges = tuple((mr.buf + off, ln, mr.lkey) for off, ln in sge_layout(f.max_size + grh, f.recv_sges))
            res.recv_descs.append(RecvDesc(k, sges))

    # ---- data verification ---------------------------------------------------------------------------
    def prepare_verify(self) -> None:
        """Lay out every buffer as ``verify`` expects it before the run: client MRs hold the push pattern,
        server MRs the pull pattern (zeros when the flow does not pull), every landing place zeros, every fetch
        slot :data:`~collie.targets.verbs.verify.UNFETCHED`, the counters zero."""
        for res in self.shares:
            f, fi = res.share.flow, res.share.flow_index
            n = f.max_size
            grh = GRH_BYTES if f.transport == "UD" else 0
            pulls = longest(f, PULL_OPCODES)
            for mr in res.client_mrs[: res.cycle.mrs_touched]:
                mr.write(push_pattern(n, fi) if longest(f, PUSH_OPCODES) else bytes(n), n, 0)
            for mr in res.server_mrs:
                mr.write(bytes(grh) + (pull_pattern(n, fi) if pulls else bytes(n)), n + grh, 0)
            if res.aux is not None:
                fetch = UNFETCHED.to_bytes(ATOMIC_BYTES, "little") * len(res.atomic_slots)
                res.aux.write(bytes(res.landing) + fetch + bytes(res.aux_bytes - res.readback_offset),
                              res.aux_bytes, 0)
            if res.counters is not None:
                res.counters.write(bytes(COUNTERS_BYTES), COUNTERS_BYTES, 0)

    def check_verify(self, res: ShareRes, seqs: list[int], received: int) -> list[str]:
        """Check every buffer this host holds of the share against ``verify``'s expectations.

        Args:
            seqs: WRs posted (all completed) on each client QP here; empty on a server end alone.
            received: receive completions here (a server end's only count of what arrived).
        """
        f = res.share.flow
        where = f"flow {res.share.flow_index}"
        n = f.max_size
        grh = GRH_BYTES if f.transport == "UD" else 0
        push_n, pull_n = longest(f, PUSH_OPCODES), longest(f, PULL_OPCODES)
        push = push_pattern(n, res.share.flow_index)
        pull = pull_pattern(n, res.share.flow_index)
        cycle = res.cycle
        errors: list[str] = []
        if res.server_mrs and push_n:
            most = 0
            for k, mr in enumerate(res.server_mrs[: cycle.mrs_touched]):
                problem, w = check_pushed(mr.read(n + grh, 0)[grh:], push, pull if pull_n else bytes(n))
                most = max(most, w)
                if problem:
                    errors.append(f"{where}: server MR {k} {problem}")
            pushed = sum(cycle.count(PUSH_OPCODES, s) for s in seqs) or received
            if not errors and f.transport == "RC" and pushed and most < push_n:
                errors.append(f"{where}: no {push_n} B message arrived intact at the server (longest {most} B)")
        if res.client_qps and pull_n:
            touched = res.client_mrs[: cycle.mrs_touched]
            places = [res.aux.read(pull_n, 0)] if res.landing else [mr.read(pull_n, 0) for mr in touched]
            most = 0
            for k, data in enumerate(places):
                problem, w = check_pulled(data, pull[:pull_n], push[:pull_n] if push_n else None)
                most = max(most, w)
                if problem:
                    errors.append(f"{where}: READ destination {k} {problem}")
            if not errors and any(cycle.count(PULL_OPCODES, s) for s in seqs) and most < pull_n:
                errors.append(f"{where}: no {pull_n} B READ arrived intact (longest {most} B)")
        if res.client_qps and f.atomic:
            errors.extend(f"{where}: {e}" for e in self._check_atomics(res, seqs))
        return errors[:3]

    def _check_atomics(self, res: ShareRes, seqs: list[int]) -> list[str]:
        """The counters read back after the run (``res.readback``) and the values every fetch slot fetched."""
        cycle, aux = res.cycle, res.aux
        raw = aux.read(res.aux_bytes, 0)
        counter = {off: int.from_bytes(raw[res.readback_offset + off:res.readback_offset + off + 8], "little")
                   for off in (FA_OFFSET, CS_OFFSET)}
        fetched = {j: int.from_bytes(raw[res.landing + 8 * k:res.landing + 8 * k + 8], "little")
                   for k, j in enumerate(res.atomic_slots)}
        one_qp = len(seqs) == 1
        # the latest pass of a single QP over the cycle begins at the slot after its last WR
        start = seqs[0] % cycle.length if one_qp else 0
        order = sorted(fetched, key=lambda j: (j - start) % cycle.length)
        out: list[str] = []
        fa, cs = frozenset(("ATOMIC_FA",)), frozenset(("ATOMIC_CS",))
        if "ATOMIC_FA" in res.share.flow.opcodes:
            problem = check_fetch_add(counter[FA_OFFSET], sum(cycle.count(fa, s) for s in seqs),
                                      [fetched[j] for j in order if cycle.slot_opcode(j) == "ATOMIC_FA"], one_qp)
            out += [problem] if problem else []
        if "ATOMIC_CS" in res.share.flow.opcodes:
            problem = check_compare_swap(counter[CS_OFFSET], sum(cycle.count(cs, s) for s in seqs),
                                         [fetched[j] for j in res.swap_slots], one_qp)
            out += [problem] if problem else []
        return out


def _linked(wrs: list[Any]) -> list[Any]:
    """``wrs`` with each one's ``next_wr`` the one after it (a post list)."""
    for a, b in pairwise(wrs):
        a.next_wr = b
    return wrs


RTR_ATTEMPTS: Final = 4
"""How often an RC/UC QP's move to RTR is tried when it times out (see ``_to_rtr``)."""


def _to_rtr(qp: Any, attr: Any, errors: tuple[type[BaseException], ...]) -> None:
    """Move ``qp`` to RTR, trying again when the kernel's resolution of the peer's address timed out.

    On RoCE, RTR resolves the destination GID's MAC (ARP or neighbour discovery) and gives up with ETIMEDOUT after
    about a second; a peer whose neighbour entry has expired on a busy host can miss that once. The QP stays in
    INIT after a failed RTR, so trying again is safe; any other error, or the last timeout, is raised as it came.

    Args:
        qp: a pyverbs QP in INIT.
        attr: its RTR attributes.
        errors: pyverbs' error classes (``Pyverbs.error``); a timeout is one whose ``error_code`` is ETIMEDOUT.
    """
    for attempt in range(1, RTR_ATTEMPTS + 1):
        try:
            qp.to_rtr(attr)
            return
        except errors as exc:
            if getattr(exc, "error_code", None) != errno.ETIMEDOUT or attempt == RTR_ATTEMPTS:
                raise
