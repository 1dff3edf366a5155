"""A fake pyverbs in pure Python: enough of the API for collie's resources and engine to run on the host.

Work requests complete at once: ``post_send`` walks the chain, moves the data of RDMA WRITE and READ between
the fake MRs (so data verification can be exercised), executes atomics on the 8 bytes at their remote address
(the old value lands in the WR's one SGE), and queues a completion for every signalled WR on the QP's send CQ;
SEND-type and WRITE_IMM WRs consume a posted receive of the peer QP (SENDs scatter over its SGEs) and complete it
on the peer's CQ. When the peer has no receive posted, the WR and every later one of its QP wait (an RNR NAK,
counted in :data:`RNR_NAKS`) until the peer posts one, as RC's RNR retries would. Its verbs calls cost almost
nothing, so an engine running on it shows the engine's own ceiling. State is per process: both ends of a flow
must live in one process (threads may share it: the cross-host tests run each host's worker in a thread of its
own). A QP asking for more than :data:`MAX_INLINE` inline bytes is refused.

Control path: creating or registering an MR and creating a QP each cost :data:`CONTROL_COST_S` seconds (slept
on :data:`CLOCK`, which a test may replace with its own clock), and after :data:`MR_BUDGET` more MRs
registrations fail with ENOMEM (``None``: never).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from types import SimpleNamespace
from typing import Any

from collie.targets.verbs import compat

E = SimpleNamespace(
    IBV_QPT_RC=2, IBV_QPT_UC=3, IBV_QPT_UD=4,
    IBV_ACCESS_LOCAL_WRITE=1, IBV_ACCESS_REMOTE_WRITE=2, IBV_ACCESS_REMOTE_READ=4, IBV_ACCESS_REMOTE_ATOMIC=8,
    IBV_WR_RDMA_WRITE=0, IBV_WR_RDMA_WRITE_WITH_IMM=1, IBV_WR_SEND=2, IBV_WR_SEND_WITH_IMM=3, IBV_WR_RDMA_READ=4,
    IBV_WR_ATOMIC_CMP_AND_SWP=5, IBV_WR_ATOMIC_FETCH_AND_ADD=6,
    IBV_SEND_SIGNALED=2, IBV_SEND_INLINE=8, IBV_WC_SUCCESS=0, IBV_ATOMIC_NONE=0, IBV_PORT_ACTIVE=4,
    IBV_MTU_256=1, IBV_MTU_512=2, IBV_MTU_1024=3, IBV_MTU_2048=4, IBV_MTU_4096=5,
)
E.status_name = lambda s: "IBV_WC_SUCCESS" if s == 0 else f"status {s}"


class FakeError(Exception):
    pass


_addr = itertools.count(1 << 20, 1 << 32)
_qpn = itertools.count(17)
MEMORY: dict[int, bytearray] = {}
#: False: completions only, no data moved (for measuring the engine's own ceiling).
MOVE_DATA = True
QPS: dict[int, FakeQP] = {}
#: Receiver-not-ready NAKs so far: WRs that found no receive posted at their peer.
RNR_NAKS = [0]
#: The most inline data a fake QP accepts.
MAX_INLINE = 512
#: Seconds an MR registration and a QP creation cost, slept on ``CLOCK[0]`` (a module with ``sleep``).
CONTROL_COST_S = [0.0]
CLOCK: list[Any] = [time]
#: Registrations that still succeed (``None``: every one); at 0 the next one fails with ENOMEM.
MR_BUDGET: list[int | None] = [None]


def _control_cost() -> None:
    if CONTROL_COST_S[0]:
        CLOCK[0].sleep(CONTROL_COST_S[0])


class FakeMR:
    def __init__(self, pd: Any, length: int, access: int, address: int | None = None) -> None:
        _control_cost()
        if MR_BUDGET[0] is not None:
            if MR_BUDGET[0] <= 0:
                raise FakeError("ibv_reg_mr failed: errno 12 (ENOMEM)")
            MR_BUDGET[0] -= 1
        self.buf = next(_addr)
        self.lkey = self.rkey = self.buf >> 32
        self.mem = bytearray(length)
        MEMORY[self.buf] = self.mem

    def write(self, data: bytes, length: int, offset: int) -> None:
        self.mem[offset:offset + length] = data[:length]

    def read(self, length: int, offset: int) -> bytes:
        return bytes(self.mem[offset:offset + length])

    def close(self) -> None:
        MEMORY.pop(self.buf, None)


def _slice(addr: int, length: int) -> tuple[bytearray, int]:
    base = max(b for b in MEMORY if b <= addr)
    return MEMORY[base], addr - base


def _gather(sg: list[tuple[int, int]]) -> bytes:
    out = b""
    for a, n in sg:
        mem, off = _slice(a, n)
        out += bytes(mem[off:off + n])
    return out


def _scatter(sg: list[tuple[int, int]], data: bytes) -> None:
    pos = 0
    for a, n in sg:
        mem, off = _slice(a, n)
        chunk = data[pos:pos + n]
        mem[off:off + len(chunk)] = chunk
        pos += n


def _wc(qp_num: int, wr_id: int = 0, byte_len: int = 0) -> SimpleNamespace:
    return SimpleNamespace(qp_num=qp_num, wr_id=wr_id, status=0, byte_len=byte_len, vendor_err=0)


class FakeCQ:
    def __init__(self, ctx: Any, cqe: int) -> None:
        self.q: deque[Any] = deque()
        self.cqe = cqe

    def poll(self, n: int) -> tuple[int, list[Any]]:
        out = []
        while self.q and len(out) < n:
            out.append(self.q.popleft())
        return len(out), out


class FakeSGE:
    def __init__(self, addr: int, length: int, lkey: int) -> None:
        self.addr, self.length, self.lkey = addr, length, lkey


class FakeSendWR:
    def __init__(self, wr_id: int = 0, opcode: int = 0, num_sge: int = 0, sg: Any = None, send_flags: int = 0):
        self.wr_id, self.opcode, self.num_sge, self.send_flags = wr_id, opcode, num_sge, send_flags
        self.sg = [(s.addr, s.length) for s in sg]
        self.next_wr: FakeSendWR | None = None
        self.imm_data = 0
        self.remote: tuple[int, int] = (0, 0)
        self.ud_qpn = 0

    def set_wr_rdma(self, rkey: int, addr: int) -> None:
        self.remote = (rkey, addr)

    def set_wr_atomic(self, rkey: int, addr: int, compare_add: int, swap: int = 0) -> None:
        self.remote = (rkey, addr)
        self.atomic = (compare_add, swap)

    def set_wr_ud(self, ah: Any, qpn: int, qkey: int) -> None:
        self.ud_qpn = qpn


class FakeRecvWR:
    def __init__(self, wr_id: int = 0, num_sge: int = 0, sg: Any = None) -> None:
        self.sg = [(s.addr, s.length) for s in sg]
        self.next_wr: FakeRecvWR | None = None


RECV_OPCODES = (E.IBV_WR_SEND, E.IBV_WR_SEND_WITH_IMM, E.IBV_WR_RDMA_WRITE_WITH_IMM)


class FakeQP:
    def __init__(self, pd: Any, init: Any) -> None:
        if getattr(init.cap, "max_inline_data", 0) > MAX_INLINE:
            raise FakeError(f"inline {init.cap.max_inline_data} > {MAX_INLINE}")
        _control_cost()
        self.qp_num = next(_qpn)
        self.scq, self.rcq, self.qp_type = init.scq, init.rcq, init.qp_type
        self.peer = 0
        self.recvs: deque[Any] = deque()
        self.waiting: deque[tuple[Any, int]] = deque()  # (WR, send_flags at post) held back by an RNR NAK
        QPS[self.qp_num] = self

    def close(self) -> None:
        QPS.pop(self.qp_num, None)

    def to_init(self, attr: Any) -> None:
        pass

    def to_rtr(self, attr: Any) -> None:
        self.peer = attr.dest_qp_num

    def to_rts(self, attr: Any) -> None:
        pass

    def post_recv(self, wr: FakeRecvWR) -> None:
        while wr is not None:
            self.recvs.append(wr)
            wr = wr.next_wr  # type: ignore[assignment]
        for qp in list(QPS.values()):
            if qp.waiting:
                qp._resume()

    def _resume(self) -> None:
        while self.waiting:
            wr, flags = self.waiting[0]
            if not self._execute(wr, flags):
                return
            self.waiting.popleft()

    def post_send(self, wr: FakeSendWR) -> None:
        if not MOVE_DATA:
            q = self.scq.q
            while wr is not None:
                if wr.send_flags & 2:
                    q.append(_wc(self.qp_num, wr.wr_id))
                wr = wr.next_wr  # type: ignore[assignment]
            return
        while wr is not None:
            # the chain's WRs are reused by the engine: keep each one's flags as they were at post time
            if self.waiting or not self._execute(wr, wr.send_flags):
                self.waiting.append((wr, wr.send_flags))
            wr = wr.next_wr  # type: ignore[assignment]

    def _execute(self, wr: FakeSendWR, flags: int) -> bool:
        """Run one WR; False (an RNR NAK) when it needs a receive its peer has not posted."""
        peer = QPS.get(wr.ud_qpn or self.peer)
        if wr.opcode in RECV_OPCODES and (peer is None or not peer.recvs):
            RNR_NAKS[0] += 1
            return False
        data = _gather(wr.sg) if wr.opcode in (*RECV_OPCODES, E.IBV_WR_RDMA_WRITE) else b""
        if wr.opcode in (E.IBV_WR_RDMA_WRITE, E.IBV_WR_RDMA_WRITE_WITH_IMM):
            _scatter([(wr.remote[1], len(data))], data)
        elif wr.opcode == E.IBV_WR_RDMA_READ:
            _scatter(wr.sg, _gather([(wr.remote[1], sum(n for _, n in wr.sg))]))
        elif wr.opcode in (E.IBV_WR_ATOMIC_FETCH_AND_ADD, E.IBV_WR_ATOMIC_CMP_AND_SWP):
            mem, off = _slice(wr.remote[1], 8)
            old = int.from_bytes(mem[off:off + 8], "little")
            if wr.opcode == E.IBV_WR_ATOMIC_FETCH_AND_ADD:
                new = (old + wr.atomic[0]) % (1 << 64)
            else:
                new = wr.atomic[1] if old == wr.atomic[0] else old
            mem[off:off + 8] = new.to_bytes(8, "little")
            _scatter(wr.sg, old.to_bytes(8, "little"))
        if wr.opcode in RECV_OPCODES:
            assert peer is not None
            rwr = peer.recvs.popleft()
            grh = 40 if peer.qp_type == E.IBV_QPT_UD else 0
            if wr.opcode != E.IBV_WR_RDMA_WRITE_WITH_IMM:
                _scatter(rwr.sg, bytes(grh) + data)
            peer.rcq.q.append(_wc(peer.qp_num, byte_len=len(data) + grh))
        if flags & E.IBV_SEND_SIGNALED:
            self.scq.q.append(_wc(self.qp_num, wr.wr_id))
        return True


class FakeContext:
    def __init__(self, name: str) -> None:
        self.name = name

    def query_gid(self, port: int, index: int) -> str:
        return "0000:0000:0000:0000:0000:ffff:0a09:0901"

    def query_device(self) -> Any:
        return SimpleNamespace(max_qp=1 << 20, max_qp_wr=1 << 20, max_sge=32, max_sge_rd=32, max_cq=1 << 16,
                               max_cqe=32767, max_mr=1 << 19, max_pd=1 << 16, max_mr_size=1 << 40,
                               max_qp_rd_atom=128, atomic_caps=1, phys_port_cnt=1, fw_version="fake",
                               vendor_id=0xFFFFFF, vendor_part_id=0)

    def query_port(self, port: int) -> Any:
        return SimpleNamespace(state=E.IBV_PORT_ACTIVE, gid_tbl_len=2, active_mtu=5, max_mtu=5)

    def close(self) -> None:
        pass


def fake() -> compat.Pyverbs:
    ns = SimpleNamespace
    return compat.Pyverbs(
        device=ns(Context=lambda name: FakeContext(name),  # type: ignore[arg-type]
                  get_device_list=lambda: [ns(name=b"rxe0"), ns(name=b"fake0")]),
        pd=ns(PD=lambda ctx: object()),  # type: ignore[arg-type]
        mr=ns(MR=FakeMR),  # type: ignore[arg-type]
        cq=ns(CQ=FakeCQ),  # type: ignore[arg-type]
        qp=ns(QP=FakeQP, QPInitAttr=lambda **kw: ns(**kw), QPCap=lambda **kw: ns(**kw),  # type: ignore[arg-type]
              QPAttr=lambda: ns()),
        wr=ns(SGE=FakeSGE, SendWR=FakeSendWR, RecvWR=FakeRecvWR),  # type: ignore[arg-type]
        addr=ns(GlobalRoute=lambda **kw: ns(**kw), AHAttr=lambda **kw: ns(**kw),  # type: ignore[arg-type]
                AH=lambda pd, attr: ns(attr=attr), GID=str),
        e=E, error=(FakeError,), version="fake", native=False,
    )
