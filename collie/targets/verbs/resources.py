"""Verbs resources of one worker: PD, MRs, CQs, QPs (connected), and the reusable work requests.

Everything a worker creates hangs off one device ``Context``; :meth:`WorkerResources.close` closes that
context, which makes pyverbs destroy every QP, AH, MR, CQ and PD made from it (children first). It is safe
to call on every path (error, timeout, Ctrl-C) and more than once.

On a local device both ends of a flow live here: client QP ``i`` of a share is connected to server QP ``i``
(RC/UC: INIT -> RTR -> RTS with each other's QPN, PSN and GID; UD: an address handle and a Q_Key), with ACK
timeout 14 (4.096 µs x 2^14 = 67 ms), retry_cnt 7 and rnr_retry 6 (7 would mean "retry forever" in the IBTA
spec; every wait of collie is bounded).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from collie.errors import TargetError
from collie.targets.base import Unsupported
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.job import Share, WorkerJob
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
MIN_RNR_TIMER: Final = 12
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
        grh = GRH_BYTES if ud else 0
        _on_node(share.client_node)
        res.client_mrs = [pv.mr.MR(self.pd, f.mr_size, access) for _ in range(share.mrs)]
        _on_node(share.server_node)
        res.server_mrs = [pv.mr.MR(self.pd, f.mr_size + grh, access) for _ in range(share.mrs)]
        _on_node(share.client_node)

        per_send = send_cqes_per_qp(f)
        per_recv = f.rq_depth if uses_recv(f) else 1
        send_group = max(1, max_cqe // per_send)
        recv_group = max(1, max_cqe // (per_recv + 1))
        qp_type = {"RC": e.IBV_QPT_RC, "UC": e.IBV_QPT_UC, "UD": e.IBV_QPT_UD}[f.transport]
        for i in range(share.qps):
            if i % send_group == 0:
                n = min(send_group, share.qps - i)
                res.send_cqs.append(pv.cq.CQ(self.ctx, n * per_send))
            if i % recv_group == 0:
                n = min(recv_group, share.qps - i)
                res.recv_cqs.append(pv.cq.CQ(self.ctx, n * (per_recv + 1)))
            scq, rcq = res.send_cqs[-1], res.recv_cqs[-1]
            inline = f.inline if f.opcode in ("WRITE", "WRITE_IMM", "SEND", "SEND_IMM") else 0
            ccap = pv.qp.QPCap(max_send_wr=f.sq_depth, max_recv_wr=1, max_send_sge=f.sges, max_recv_sge=1,
                               max_inline_data=inline)
            scap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=per_recv, max_send_sge=1, max_recv_sge=1)
            try:
                cqp = pv.qp.QP(self.pd, pv.qp.QPInitAttr(qp_type=qp_type, scq=scq, rcq=scq, cap=ccap,
                                                         sq_sig_all=0))
                sqp = pv.qp.QP(self.pd, pv.qp.QPInitAttr(qp_type=qp_type, scq=rcq, rcq=rcq, cap=scap,
                                                         sq_sig_all=0))
            except pv.error as exc:
                if inline:
                    raise Unsupported(f"the device refused a QP with inline {inline} ({exc})") from None
                raise
            res.client_qps.append(cqp)
            res.server_qps.append(sqp)
        self._connect(res, access)
        self._build_chains(res)
        self._build_recv(res)
        return res

    def _connect(self, res: ShareRes, access: int) -> None:
        pv, e, spec, f = self.pv, self.pv.e, self.job.spec, res.share.flow
        if f.transport == "UD":
            for qp in (*res.client_qps, *res.server_qps):
                attr = pv.qp.QPAttr()
                attr.qkey = QKEY
                attr.port_num = spec.port
                attr.pkey_index = 0
                attr.sq_psn = self._rng.randrange(1 << 24)
                qp.to_rts(attr)
            gr = pv.addr.GlobalRoute(dgid=self.gid, sgid_index=spec.gid_index)
            res.ah = pv.addr.AH(self.pd, attr=pv.addr.AHAttr(port_num=spec.port, is_global=1, gr=gr))
            return
        rd = 16
        mtu = getattr(e, _MTU_ENUM[f.mtu])
        psn_c = [self._rng.randrange(1 << 24) for _ in res.client_qps]
        psn_s = [self._rng.randrange(1 << 24) for _ in res.server_qps]
        for i, (cqp, sqp) in enumerate(zip(res.client_qps, res.server_qps, strict=True)):
            ends = ((cqp, sqp, psn_c[i], psn_s[i]), (sqp, cqp, psn_s[i], psn_c[i]))
            for qp, peer, my_psn, peer_psn in ends:
                attr = pv.qp.QPAttr()
                attr.qp_access_flags = access
                attr.port_num = spec.port
                attr.pkey_index = 0
                qp.to_init(attr)
                attr.path_mtu = mtu
                attr.dest_qp_num = peer.qp_num
                attr.rq_psn = peer_psn
                attr.max_dest_rd_atomic = rd
                attr.min_rnr_timer = MIN_RNR_TIMER
                gr = pv.addr.GlobalRoute(dgid=self.gid, sgid_index=spec.gid_index)
                attr.ah_attr = pv.addr.AHAttr(port_num=spec.port, is_global=1, gr=gr)
                qp.to_rtr(attr)
                attr.sq_psn = my_psn
                attr.timeout = ACK_TIMEOUT
                attr.retry_cnt = RETRY_CNT
                attr.rnr_retry = RNR_RETRY
                attr.max_rd_atomic = rd
                qp.to_rts(attr)

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

    def _build_chains(self, res: ShareRes) -> None:
        f = res.share.flow

        def rdma(wr: Any, m: int) -> None:
            mr = res.server_mrs[m]
            if f.opcode == "ATOMIC_FA":
                wr.set_wr_atomic(mr.rkey, mr.buf, 1, 0)
            elif f.opcode == "ATOMIC_CS":
                wr.set_wr_atomic(mr.rkey, mr.buf, 0, 0)
            elif f.opcode in ("WRITE", "WRITE_IMM", "READ"):
                wr.set_wr_rdma(mr.rkey, mr.buf)

        if f.transport == "UD":
            for sqp in res.server_qps:
                qpn = sqp.qp_num

                def ud(wr: Any, m: int, qpn: int = qpn) -> None:
                    wr.set_wr_ud(res.ah, qpn, QKEY)

                res.qp_chains.append([self._make_chain(res, c, ud) for c in range(res.cycle.chains)])
        else:
            res.chains = [self._make_chain(res, c, rdma) for c in range(res.cycle.chains)]

    def _build_recv(self, res: ShareRes) -> None:
        pv, f = self.pv, res.share.flow
        if not uses_recv(f):
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
