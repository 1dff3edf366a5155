"""Verbs resources of one worker: PD, MRs, CQs, QPs (connected), and the reusable work requests.

Everything a worker creates hangs off one device ``Context``; :meth:`WorkerResources.close` closes that
context, which makes pyverbs destroy every QP, AH, MR, CQ and PD made from it (children first). It is safe
to call on every path (error, timeout, Ctrl-C) and more than once.

On a local device both ends of a flow live here (a share of side ``BOTH``): client QP ``i`` of a share is
connected to server QP ``i`` (RC/UC: INIT -> RTR -> RTS with each other's QPN, PSN and GID; UD: an address
handle and a Q_Key), with ACK timeout 14 (4.096 µs x 2^14 = 67 ms), retry_cnt 7 and rnr_retry 6 (7 would mean
"retry forever" in the IBTA spec; every wait of collie is bounded). The receiver's RNR timer is 20 (10.24 ms), so a
sender tolerates about 60 ms of a receiver that has run out of receives: the engine is a Python poll loop, and a
stall of a few ms (scheduling, the counter reads at an interval's edge) must not end a SEND flow in
IBV_WC_RNR_RETRY_EXC_ERR. At timer 12 (0.64 ms, about 4 ms in all) a cross-host SEND on soft-RoCE did.

A share of side ``CLIENT`` or ``SERVER`` (one host's ends of a cross-host flow) is built in two steps:
:meth:`WorkerResources.open` creates its MRs, CQs and QPs (UD QPs go to RTS, they need no peer) and draws its
PSNs; :meth:`WorkerResources.endpoints` tells what the peer host needs; :meth:`WorkerResources.connect` takes
the peer's endpoints, moves RC/UC QPs to RTS against them and builds the client's work requests (remote rkeys
and addresses, or UD address handle and remote QPNs). Both steps use the same transitions and WR builders as
the local case.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from collie.errors import TargetError
from collie.targets.base import Unsupported
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.endpoints import EndpointData, Key, peer_of
from collie.targets.verbs.job import Share, Side, WorkerJob
from collie.targets.verbs.limits import GRH_BYTES, send_cqes_per_qp, uses_recv
from collie.targets.verbs.plan import (
    MAX_CYCLE_WRS,
    CycleSums,
    WrCycle,
    recv_chunk,
    sge_layout,
)

ACK_TIMEOUT: Final = 14
RETRY_CNT: Final = 7
RNR_RETRY: Final = 6
MIN_RNR_TIMER: Final = 20
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


def pattern(n: int, flow_index: int) -> bytes:
    """The verification pattern of a flow: ``n`` bytes, none of them zero (a zero marks "not written")."""
    return bytes(1 + (i * 7 + flow_index * 13) % 251 for i in range(n))


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
    send_cqs: list[Any] = field(default_factory=list)
    recv_cqs: list[Any] = field(default_factory=list)
    client_qps: list[Any] = field(default_factory=list)
    server_qps: list[Any] = field(default_factory=list)
    #: chains[c] (shared) or per-QP chains (UD): lists of SendWR, linked head to tail.
    chains: list[list[Any]] = field(default_factory=list)
    qp_chains: list[list[list[Any]]] = field(default_factory=list)
    #: base send_flags of every WR of every chain (same shape as chains), to undo per-post signalling.
    static_signal: bool = False
    recv_chain: list[Any] = field(default_factory=list)
    recv_chunk: int = 0
    ah: Any = None
    keep: list[Any] = field(default_factory=list)
    #: QP access flags of the share's MRs and QPs.
    access: int = 0
    #: PSN of each of this host's QPs of a one-sided share (the first packet it sends); empty for ``BOTH``.
    psns: list[int] = field(default_factory=list)
    connected: bool = False

    def chains_of(self, qp_index: int) -> list[list[Any]]:
        return self.qp_chains[qp_index] if self.qp_chains else self.chains


class WorkerResources:
    """Opens the device and builds every share of a :class:`WorkerJob` (see the module docstring)."""

    def __init__(self, pv: Pyverbs, job: WorkerJob) -> None:
        self.pv = pv
        self.job = job
        self.ctx: Any = None
        self.pd: Any = None
        self.gid: Any = None
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
        max_cqe = int(self.ctx.query_device().max_cqe)
        for share in self.job.shares:
            self.shares.append(self._build_share(share, max_cqe))

    def close(self) -> None:
        """Destroy everything (idempotent). pyverbs closes a context's children before the context."""
        ctx, self.ctx = self.ctx, None
        self.shares = []
        if ctx is not None:
            with contextlib.suppress(*self.pv.error):
                ctx.close()

    # ---- building -------------------------------------------------------------------------------------
    def _build_share(self, share: Share, max_cqe: int) -> ShareRes:
        pv, e, f = self.pv, self.pv.e, share.flow
        ud = f.transport == "UD"
        cap = UD_CYCLE_WRS if ud else MAX_CYCLE_WRS
        cycle = WrCycle.for_flow(f.sizes, f.batch, share.mrs, cap=cap)
        res = ShareRes(share=share, cycle=cycle, sums=CycleSums.of(cycle, f.mtu))
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        if f.opcode.startswith("ATOMIC"):
            access |= e.IBV_ACCESS_REMOTE_ATOMIC
        res.access = access
        grh = GRH_BYTES if ud else 0
        side = share.side
        if side.client:
            _on_node(share.client_node)
            res.client_mrs = [pv.mr.MR(self.pd, f.mr_size, access) for _ in range(share.mrs)]
        if side.server:
            _on_node(share.server_node)
            res.server_mrs = [pv.mr.MR(self.pd, f.mr_size + grh, access) for _ in range(share.mrs)]
        _on_node(share.client_node if side.client else share.server_node)

        per_send = send_cqes_per_qp(f)
        per_recv = f.rq_depth if uses_recv(f) else 1
        send_group = max(1, max_cqe // per_send)
        recv_group = max(1, max_cqe // (per_recv + 1))
        qp_type = {"RC": e.IBV_QPT_RC, "UC": e.IBV_QPT_UC, "UD": e.IBV_QPT_UD}[f.transport]
        for i in range(share.qps):
            if side.client and i % send_group == 0:
                n = min(send_group, share.qps - i)
                res.send_cqs.append(pv.cq.CQ(self.ctx, n * per_send))
            if side.server and i % recv_group == 0:
                n = min(recv_group, share.qps - i)
                res.recv_cqs.append(pv.cq.CQ(self.ctx, n * (per_recv + 1)))
            inline = f.inline if f.opcode in ("WRITE", "WRITE_IMM", "SEND", "SEND_IMM") else 0
            try:
                if side.client:
                    scq = res.send_cqs[-1]
                    ccap = pv.qp.QPCap(max_send_wr=f.sq_depth, max_recv_wr=1, max_send_sge=f.sges,
                                       max_recv_sge=1, max_inline_data=inline)
                    res.client_qps.append(pv.qp.QP(self.pd, pv.qp.QPInitAttr(
                        qp_type=qp_type, scq=scq, rcq=scq, cap=ccap, sq_sig_all=0)))
                if side.server:
                    rcq = res.recv_cqs[-1]
                    scap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=per_recv, max_send_sge=1, max_recv_sge=1)
                    res.server_qps.append(pv.qp.QP(self.pd, pv.qp.QPInitAttr(
                        qp_type=qp_type, scq=rcq, rcq=rcq, cap=scap, sq_sig_all=0)))
            except pv.error as exc:
                if inline:
                    raise Unsupported(f"the device refused a QP with inline {inline} ({exc})") from None
                raise
        if side is Side.BOTH:
            self._connect_local(res)
            self._build_chains(res, [(mr.rkey, mr.buf) for mr in res.server_mrs],
                               [qp.qp_num for qp in res.server_qps], self.gid)
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
        rd = 16
        attr = pv.qp.QPAttr()
        attr.qp_access_flags = res.access
        attr.port_num = spec.port
        attr.pkey_index = 0
        qp.to_init(attr)
        attr.path_mtu = getattr(e, _MTU_ENUM[res.share.flow.mtu])
        attr.dest_qp_num = dest_qpn
        attr.rq_psn = rq_psn
        attr.max_dest_rd_atomic = rd
        attr.min_rnr_timer = MIN_RNR_TIMER
        gr = pv.addr.GlobalRoute(dgid=dgid, sgid_index=spec.gid_index)
        attr.ah_attr = pv.addr.AHAttr(port_num=spec.port, is_global=1, gr=gr)
        qp.to_rtr(attr)
        attr.sq_psn = sq_psn
        attr.timeout = ACK_TIMEOUT
        attr.retry_cnt = RETRY_CNT
        attr.rnr_retry = RNR_RETRY
        attr.max_rd_atomic = rd
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
        """Connection data of every QP of this worker's one-sided shares (see ``endpoints``)."""
        out: list[EndpointData] = []
        gid = str(self.gid)
        for res in self.shares:
            share = res.share
            if share.side is Side.BOTH:
                continue
            qps = res.client_qps if share.side.client else res.server_qps
            qkey = QKEY if share.flow.transport == "UD" else 0
            for i, qp in enumerate(qps):
                mrs = tuple((int(mr.rkey), int(mr.buf)) for mr in res.server_mrs) if i == 0 else ()
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
                if not ud and len(targets) != share.mrs:
                    raise TargetError(f"the server end of flow {share.flow_index} worker {share.worker} sent "
                                      f"{len(targets)} MRs; this host planned {share.mrs}")
                self._build_chains(res, targets, [p.qpn for p in facing], self._gid(facing[0].gid))
            res.connected = True

    def _gid(self, text: str) -> Any:
        """A GID object from its text (what ``GlobalRoute`` takes)."""
        errors: tuple[type[BaseException], ...] = (*self.pv.error, ValueError, TypeError)
        try:
            return self.pv.addr.GID(text)
        except errors as exc:
            raise TargetError(f"peer GID {text!r} is not a GID ({exc})") from None

    def _make_chain(self, res: ShareRes, c: int, set_remote: Callable[[Any, int], None]) -> list[Any]:
        pv, e, f = self.pv, self.pv.e, res.share.flow
        op = getattr(e, _OPCODE_WR[f.opcode])
        every = f.signal_every
        res.static_signal = f.batch % every == 0
        wrs: list[Any] = []
        for p, j in enumerate(res.cycle.chain_slots(c)):
            size = res.cycle.slot_size(j)
            m = res.cycle.slot_mr(j)
            local = res.client_mrs[m]  # the gather source (WRITE/SEND) or the scatter target (READ, atomics)
            sges = [pv.wr.SGE(local.buf + off, ln, local.lkey) for off, ln in sge_layout(size, f.sges)]
            flags = 0
            if f.inline and size <= f.inline and f.opcode in ("WRITE", "WRITE_IMM", "SEND", "SEND_IMM"):
                flags |= e.IBV_SEND_INLINE
            if res.static_signal and (p + 1) % every == 0:
                flags |= e.IBV_SEND_SIGNALED
            wr = pv.wr.SendWR(wr_id=j, opcode=op, num_sge=len(sges), sg=sges, send_flags=flags)
            if f.opcode.endswith("_IMM"):
                wr.imm_data = IMM_DATA
            set_remote(wr, m)
            if wrs:
                wrs[-1].next_wr = wr
            wrs.append(wr)
        return wrs

    def _build_chains(self, res: ShareRes, targets: list[tuple[int, int]], ud_qpns: list[int],
                      dgid: Any) -> None:
        """The client's prebuilt chains: RDMA/atomic WRs of slot ``j`` target ``targets[j % mrs]`` (rkey,
        address); UD WRs of client QP ``i`` go to QPN ``ud_qpns[i]`` at ``dgid``."""
        f = res.share.flow
        if not res.client_qps:
            return

        def rdma(wr: Any, m: int) -> None:
            rkey, addr = targets[m]
            if f.opcode == "ATOMIC_FA":
                wr.set_wr_atomic(rkey, addr, 1, 0)
            elif f.opcode == "ATOMIC_CS":
                wr.set_wr_atomic(rkey, addr, 0, 0)
            elif f.opcode in ("WRITE", "WRITE_IMM", "READ"):
                wr.set_wr_rdma(rkey, addr)

        if f.transport == "UD":
            pv, spec = self.pv, self.job.spec
            gr = pv.addr.GlobalRoute(dgid=dgid, sgid_index=spec.gid_index)
            res.ah = pv.addr.AH(self.pd, attr=pv.addr.AHAttr(port_num=spec.port, is_global=1, gr=gr))
            for qpn in ud_qpns:

                def ud(wr: Any, m: int, qpn: int = qpn) -> None:
                    wr.set_wr_ud(res.ah, qpn, QKEY)

                res.qp_chains.append([self._make_chain(res, c, ud) for c in range(res.cycle.chains)])
        else:
            res.chains = [self._make_chain(res, c, rdma) for c in range(res.cycle.chains)]

    def _build_recv(self, res: ShareRes) -> None:
        pv, f = self.pv, res.share.flow
        if not uses_recv(f) or not res.server_qps:
            return
        grh = GRH_BYTES if f.transport == "UD" else 0
        res.recv_chunk = recv_chunk(f.rq_depth)
        wrs: list[Any] = []
        for k in range(res.recv_chunk):
            mr = res.server_mrs[k % len(res.server_mrs)]
            sge = pv.wr.SGE(mr.buf, f.max_size + grh, mr.lkey)
            wr = pv.wr.RecvWR(wr_id=k, num_sge=1, sg=[sge])
            if wrs:
                wrs[-1].next_wr = wr
            wrs.append(wr)
        res.recv_chain = wrs

    # ---- data verification ---------------------------------------------------------------------------
    def prepare_verify(self) -> None:
        """Fill source buffers with the flow's pattern and zero destination buffers (first ``max_size`` B)."""
        for res in self.shares:
            f = res.share.flow
            src, dst = self._src_dst(res)
            if f.opcode.startswith("ATOMIC"):
                for mr in res.server_mrs:
                    mr.write(bytes(8), 8, 0)
                continue
            n = f.max_size
            pat = pattern(n, res.share.flow_index)
            grh = GRH_BYTES if f.transport == "UD" else 0
            zero = bytes(n + grh)
            for mr in src[: res.cycle.mrs_touched]:
                mr.write(pat, n, 0)
            for mr in dst:
                mr.write(zero, n + grh, 0)

    def _src_dst(self, res: ShareRes) -> tuple[list[Any], list[Any]]:
        if res.share.flow.opcode == "READ":
            return res.server_mrs, res.client_mrs
        return res.client_mrs, res.server_mrs

    def check_verify(self, res: ShareRes, posted_wrs: int) -> list[str]:
        """Compare destination buffers with the pattern (see ``plan``: every message is the prefix
        ``mr[0:size]``); atomics: FETCH_AND_ADD counters sum to the WRs posted, CMP_AND_SWP leaves 0."""
        f = res.share.flow
        where = f"flow {res.share.flow_index}"
        if f.opcode.startswith("ATOMIC"):
            total = sum(int.from_bytes(mr.read(8, 0), "little") for mr in res.server_mrs)
            want = posted_wrs if f.opcode == "ATOMIC_FA" else 0
            if total != want:
                return [f"{where}: atomic targets hold {total}, expected {want}"]
            return []
        _, dst = self._src_dst(res)
        n = f.max_size
        grh = GRH_BYTES if f.transport == "UD" else 0
        pat = pattern(n, res.share.flow_index)
        errors: list[str] = []
        longest = 0
        for k, mr in enumerate(dst):
            data = mr.read(n + grh, 0)[grh:]
            w = data.find(b"\x00")
            w = n if w < 0 else w
            longest = max(longest, w)
            if data[:w] != pat[:w]:
                bad = next(i for i in range(w) if data[i] != pat[i])
                errors.append(f"{where}: MR {k} byte {bad} is {data[bad]}, expected {pat[bad]}")
            elif data[w:].count(0) != n - w:
                errors.append(f"{where}: MR {k} has a gap at byte {w}: data after it was written")
            if len(errors) >= 3:
                break
        if not errors and f.transport == "RC" and posted_wrs and longest != n:
            errors.append(f"{where}: no {n} B message arrived intact (longest {longest} B)")
        return errors
