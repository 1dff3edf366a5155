"""Raw ``struct ibv_*`` pointers of pyverbs objects, for a native loop (spike for issue #33).

pyverbs keeps each pointer in a ``cdef`` attribute of its Cython extension type (``Context.context``,
``PD.pd``, ``CQ.cq``, ``QP.qp``, ``MR.mr``), invisible to Python, and Debian's python3-pyverbs ships no .pxd
files to ``cimport`` them. Two routes, tried in this order:

* rdma-core >= 61 has Python properties returning the pointers as ints for QP (``qp.qp``) and CQ (``cq.cq``)
  (and PD >= 59, Context >= 61). Only ``QP.qp``/``CQ.cq`` are used: on rdma-core 44-58 ``PD.pd`` and
  ``Context.context`` exist but return ``<object>ptr`` (the raw struct taken for a PyObject: touching it
  increfs/decrefs the struct's first word), so they are NEVER read here.
* The layout: in every rdma-core from v39 to master the pointer is the FIRST own field of Context, PD, CQ and
  QP (the third of MR, after two object fields), and their common base ``PyverbsCM`` is a Cython type whose
  ``__basicsize__`` Python can read; Cython lays fields out in declaration order after the base struct. So
  the pointer sits at ``id(obj) + PyverbsCM.__basicsize__`` (MR: ``+ 16``).

Either way every pointer is validated against what pyverbs shows in Python and against the others (the
ibv_* struct layouts are libibverbs' frozen public ABI): ctx->cmd_fd, pd->context/handle, cq->context/cqe,
qp->context/pd/send_cq/qp_num/qp_type, mr->context/pd/addr/lkey/rkey. Any mismatch raises ``HandleError``:
the caller then uses the pure-Python loop. A wrong offset reads the inside of a Python object (valid memory),
never a wild address, except through a pointer that already passed the previous checks.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

# offsets in libibverbs' public structs (verbs.h; ABI-stable since libibverbs 1.1, checked with offsetof on 44.0)
CTX_CMD_FD, CTX_NUM_COMP_VECTORS = 264, 272
PD_CONTEXT, PD_HANDLE = 0, 8
CQ_CONTEXT, CQ_HANDLE, CQ_CQE = 0, 24, 28
QP_CONTEXT, QP_PD, QP_SEND_CQ, QP_RECV_CQ, QP_HANDLE, QP_NUM, QP_STATE, QP_TYPE = 0, 16, 24, 32, 48, 52, 56, 60
MR_CONTEXT, MR_PD, MR_ADDR, MR_LENGTH, MR_HANDLE, MR_LKEY, MR_RKEY = 0, 8, 16, 24, 32, 36, 40


class HandleError(RuntimeError):
    """A pointer could not be found or did not match what pyverbs shows."""


def _ptr(addr: int) -> int:
    return ctypes.c_void_p.from_address(addr).value or 0


def _u32(addr: int) -> int:
    return ctypes.c_uint32.from_address(addr).value


def _i32(addr: int) -> int:
    return ctypes.c_int32.from_address(addr).value


def _base() -> int:
    from pyverbs.base import PyverbsCM

    size = PyverbsCM.__basicsize__
    if size % ctypes.sizeof(ctypes.c_void_p):
        raise HandleError(f"PyverbsCM.__basicsize__ {size} is not pointer-aligned")
    return size


def _layout(obj: Any, extra: int = 0) -> int:
    p = _ptr(id(obj) + _base() + extra)
    if not p:
        raise HandleError(f"{type(obj).__name__}: NULL at the expected field (closed, or another layout)")
    return p


def _official(obj: Any, name: str) -> int | None:
    """``obj.<name>`` when the type has it and it returns an int (rdma-core >= 61 for QP.qp and CQ.cq)."""
    if getattr(type(obj), name, None) is None:
        return None
    value = getattr(obj, name)
    return value if isinstance(value, int) else None


def _check(what: str, got: int, want: int) -> None:
    if got != want:
        raise HandleError(f"{what}: {got:#x} != {want:#x}")


@dataclass(frozen=True)
class Handles:
    context: int
    pd: int
    cq: int
    qp: int
    mr: int
    route: str  # "accessor" (rdma-core >= 61) or "layout"


def raw_handles(ctx: Any, pd: Any, cq: Any, qp: Any, mr: Any) -> Handles:
    """The raw pointers of a QP whose send CQ is ``cq``, on ``pd`` of ``ctx``, and of an MR on ``pd``."""
    c = _layout(ctx)
    _check("ctx->cmd_fd", _i32(c + CTX_CMD_FD), ctx.cmd_fd)
    _check("ctx->num_comp_vectors", _i32(c + CTX_NUM_COMP_VECTORS), ctx.num_comp_vectors)
    p = _layout(pd)
    _check("pd->context", _ptr(p + PD_CONTEXT), c)
    _check("pd->handle", _u32(p + PD_HANDLE), pd.handle)
    qp_off, cq_off = _official(qp, "qp"), _official(cq, "cq")
    q = _layout(qp)
    k = _layout(cq)
    route = "layout"
    if qp_off is not None and cq_off is not None:
        _check("QP.qp accessor vs layout", qp_off, q)
        _check("CQ.cq accessor vs layout", cq_off, k)
        route = "accessor"
    _check("cq->context", _ptr(k + CQ_CONTEXT), c)
    _check("cq->cqe", _i32(k + CQ_CQE), cq.cqe)
    _check("qp->context", _ptr(q + QP_CONTEXT), c)
    _check("qp->pd", _ptr(q + QP_PD), p)
    _check("qp->send_cq", _ptr(q + QP_SEND_CQ), k)
    _check("qp->qp_num", _u32(q + QP_NUM), qp.qp_num)
    _check("qp->qp_type", _i32(q + QP_TYPE), int(qp.qp_type))
    m = _layout(mr, extra=16)  # MR: object pd, object cmid, then ibv_mr *mr
    _check("mr->context", _ptr(m + MR_CONTEXT), c)
    _check("mr->pd", _ptr(m + MR_PD), p)
    _check("mr->addr", _ptr(m + MR_ADDR), mr.buf)
    _check("mr->lkey", _u32(m + MR_LKEY), mr.lkey)
    _check("mr->rkey", _u32(m + MR_RKEY), mr.rkey)
    return Handles(context=c, pd=p, cq=k, qp=q, mr=m, route=route)
