"""A fake pyverbs whose QPs and CQs are the native module's fake provider (``_native.fake_*``), for the native loop.

Its verbs calls are C: ``post_send`` completes every WR at once and, unless :func:`move_data` turned it off, moves the
data within this process (RDMA WRITE and READ, atomics on their 8 bytes, SEND-type WRs into a posted receive of
the peer QP, UD by remote QPN; a WR that finds no receive posted waits, an RNR NAK, until one is). MRs are real
memory (``ctypes`` buffers), so the engine's data verification reads what the fake moved. The raw pointers are
handed out through ``Pyverbs.raw``. Only the native loop posts and polls here: the Python loop runs on
:mod:`fakeverbs`, whose work requests are Python objects.
"""

from __future__ import annotations

import ctypes
import itertools
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from collie.targets.verbs import compat
from tests.system_components import require
from tests.unit.targets.verbs import fakeverbs

_qpn = itertools.count(0x100)
_key = itertools.count(1)


def native_module() -> ModuleType:
    """The compiled ``_native`` module, or skip (under CI: fail) naming how to build it."""
    require("native-loop")
    from collie.targets.verbs import _native

    return _native


class CMR:
    """An MR of real memory."""

    def __init__(self, pd: Any, length: int, access: int, address: int | None = None) -> None:
        self.mem = ctypes.create_string_buffer(max(1, length))
        self.buf = ctypes.addressof(self.mem)
        self.length = length
        self.lkey = self.rkey = next(_key)

    def write(self, data: bytes, length: int, offset: int) -> None:
        ctypes.memmove(self.buf + offset, bytes(data[:length]), min(length, len(data)))

    def read(self, length: int, offset: int) -> bytes:
        return ctypes.string_at(self.buf + offset, length)

    def close(self) -> None:
        pass


class CContext(fakeverbs.FakeContext):
    """A device context that destroys the fake QPs and CQs made on it when closed."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.qps: list[int] = []
        self.cqs: list[int] = []

    def close(self) -> None:
        mod = native_module()
        for qp in self.qps:
            mod.fake_qp_free(qp)
        for cq in self.cqs:
            mod.fake_cq_free(cq)
        self.qps, self.cqs = [], []


class CPD:
    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx


class CCQ:
    def __init__(self, ctx: CContext, cqe: int) -> None:
        self.cqe = cqe
        self.ctx = ctx
        self.native = native_module().fake_cq(cqe)
        ctx.cqs.append(self.native)

    def close(self) -> None:
        if self.native in self.ctx.cqs:
            self.ctx.cqs.remove(self.native)
            native_module().fake_cq_free(self.native)


class CQP:
    def __init__(self, pd: CPD, init: Any) -> None:
        if getattr(init.cap, "max_inline_data", 0) > fakeverbs.MAX_INLINE:
            raise fakeverbs.FakeError(f"inline {init.cap.max_inline_data} > {fakeverbs.MAX_INLINE}")
        self.qp_num = next(_qpn)
        self.qp_type = init.qp_type
        self.ctx = pd.ctx
        self.native = native_module().fake_qp(init.scq.native, init.rcq.native, self.qp_num, init.qp_type)
        pd.ctx.qps.append(self.native)

    def close(self) -> None:
        if self.native in self.ctx.qps:
            self.ctx.qps.remove(self.native)
            native_module().fake_qp_free(self.native)

    def to_init(self, attr: Any) -> None:
        pass

    def to_rtr(self, attr: Any) -> None:
        native_module().fake_connect(self.native, attr.dest_qp_num)

    def to_rts(self, attr: Any) -> None:
        pass


class CAH:
    """An address handle: the fake provider never reads it, but a UD WR must name one (a non-zero pointer)."""

    def __init__(self, pd: Any, attr: Any) -> None:
        self.attr = attr
        self.native = id(self)


def move_data(on: bool) -> None:
    """Move data (default) or complete WRs only (the loop's own ceiling)."""
    native_module().fake_set_move(on)


def rnr_naks() -> int:
    """WRs that found no receive posted at their peer so far (this process)."""
    return int(native_module().fake_rnr_naks())


def cfake() -> compat.Pyverbs:
    """The fake pyverbs of this module (the native loop's pointers through ``raw``)."""
    native_module()
    ns = SimpleNamespace
    base = fakeverbs.fake()
    return compat.Pyverbs(
        device=ns(Context=lambda name: CContext(name),  # type: ignore[arg-type]
                  get_device_list=base.device.get_device_list),
        pd=ns(PD=CPD),  # type: ignore[arg-type]
        mr=ns(MR=CMR),  # type: ignore[arg-type]
        cq=ns(CQ=CCQ),  # type: ignore[arg-type]
        qp=ns(QP=CQP, QPInitAttr=base.qp.QPInitAttr, QPCap=base.qp.QPCap,  # type: ignore[arg-type]
              QPAttr=base.qp.QPAttr),
        wr=base.wr, addr=ns(GlobalRoute=base.addr.GlobalRoute, AHAttr=base.addr.AHAttr, AH=CAH,  # type: ignore[arg-type]
                            GID=str),
        e=base.e, error=base.error, version="cfake", raw=lambda obj: int(obj.native), native=True,
    )


@pytest.fixture
def moving() -> Any:
    """Data moves during the test, whatever an earlier test set."""
    move_data(True)
    yield
    move_data(True)
