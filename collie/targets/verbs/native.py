"""The native traffic loop (``_native``, a C extension) under the verbs engine, and when it is used.

The measured interval runs in C (``_native.c``): posting the prebuilt chains, polling completions in batches,
reposting receives, counting and sampling latencies, with the GIL released and no Python call per WR or per
completion. Everything else stays Python and is shared with the Python loop (:class:`~collie.targets.verbs.engine.
Engine`): resources are pyverbs objects, the interval's edges (every QP's ``done``, the counter reads) run between
the C phases, and the results go through the same ``stats``. The Python loop is the fallback and the reference the
native one is tested against.

**Which loop runs** (:func:`choose`): ``COLLIE_VERBS_LOOP`` = ``auto`` (default: native when it imports and the
handles check out), ``native`` (the same, but an unusable native loop is an error) or ``python``. A fallback under
``auto`` says why in one :class:`NativeLoopWarning`.

**Raw handles** (:class:`Handles`): pyverbs keeps each ``struct ibv_*`` pointer in a Cython ``cdef`` attribute
Python cannot read, and Debian's python3-pyverbs ships no ``.pxd`` to ``cimport``. In every rdma-core from v39 to
today the pointer is the first own field of ``Context``, ``PD``, ``CQ``, ``QP`` and ``AH``, laid out right after
their common base ``PyverbsCM``, whose ``__basicsize__`` Python can read; so it is read at ``id(obj) +
PyverbsCM.__basicsize__``. Every pointer is then checked against what pyverbs shows in Python and against the
others through libibverbs' public (frozen) structs, read by the C module compiled against verbs.h: ``ctx->cmd_fd``
and ``num_comp_vectors``; ``pd->context`` and ``handle``; ``cq->context`` and ``cqe``; ``qp->context``, ``pd``,
``qp_num`` and ``qp_type``; ``ah->context`` and ``pd``. A mismatch raises :class:`HandleError` and the worker uses
the Python loop. ``PD.pd`` and ``Context.context`` are never read as properties: before rdma-core 59/61 they hand
the raw struct to Python as if it were an object. Invariant: a pointer is used only while its pyverbs object lives
and is not closed; the engine holds them all until teardown, and no Python code polls or posts during a C phase.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import time
import warnings
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from collie.errors import CollieWarning, TargetError
from collie.model.flow import Flow
from collie.targets.verbs import measure
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.engine import SETTLE_NS, Engine
from collie.targets.verbs.job import WorkerJob
from collie.targets.verbs.limits import GRH_BYTES
from collie.targets.verbs.measure import MAX_LAT_SAMPLES, FlowSummary
from collie.targets.verbs.resources import WorkerResources

ENV: Final = "COLLIE_VERBS_LOOP"
#: A server end that lingers serves receives in slices this long between looks at its coordinator.
SERVE_SLICE_NS: Final = 10_000_000
_NOTE_KIND: Final = ("post_send", "post_recv", "poll_cq")


class NativeLoopWarning(CollieWarning):
    """The native traffic loop cannot be used here; the Python loop runs instead."""


class LoopMode(Enum):
    """What ``COLLIE_VERBS_LOOP`` asks for."""

    AUTO = "auto"
    NATIVE = "native"
    PYTHON = "python"


class HandleError(RuntimeError):
    """A pyverbs object's raw pointer could not be found or did not match what pyverbs shows."""


def mode() -> LoopMode:
    """The loop ``COLLIE_VERBS_LOOP`` asks for.

    Raises:
        TargetError: the variable names no loop (one sentence naming the values).
    """
    text = os.environ.get(ENV, "auto").strip().lower() or "auto"
    try:
        return LoopMode(text)
    except ValueError:
        raise TargetError(f"{ENV}={text!r} names no traffic loop; use auto, native or python") from None


@functools.cache
def module() -> tuple[ModuleType | None, str]:
    """The compiled ``_native`` module, or ``None`` and why it is missing or stale (one clause); decided once per
    process (an imported module cannot change, and every worker's run asks)."""
    from collie.targets.verbs import native_build  # not at import: ``python -m`` runs it as a script too

    try:
        mod = importlib.import_module("collie.targets.verbs._native")
    except ImportError as exc:
        return None, native_build.last_reason() or f"it does not import ({exc})"
    source = Path(str(mod.__file__)).with_name("_native.c")
    if source.is_file() and native_build.source_digest(source) != mod.SOURCE:
        return None, (f"it was built from another version of {source.name} than the one beside it; rebuild it: "
                      f"{native_build.REBUILD}")
    return mod, ""


@dataclass(frozen=True)
class LoopChoice:
    """Which loop a target's workers run: ``native`` with the module's name, or the Python loop and why."""

    native: bool
    reason: str = ""

    @property
    def name(self) -> str:
        return "native" if self.native else "python"

    def engine_bound(self, flows: tuple[Flow, ...], sums: list[FlowSummary]) -> bool:
        """The engine, not the device, limited one of the flows summarised in ``sums`` (indices into ``flows``): the
        loop's own signs (``measure.engine_bound``) or, on the native loop, a rate at its measured ceiling for the
        flow's shape (:func:`at_ceiling`)."""
        return measure.engine_bound(sums) or (self.native and at_ceiling([(flows[s.flow], s) for s in sums]))


def choose(pv: Pyverbs) -> LoopChoice:
    """Decide once per target which loop its workers run on ``pv`` (see the module docstring); warn on a fallback
    (a pure-Python fake of pyverbs, which has no pointers to hand over, runs the Python loop without a word).

    Raises:
        TargetError: ``COLLIE_VERBS_LOOP=native`` and the module is missing, or the variable is malformed.
    """
    wanted = mode()
    if wanted is LoopMode.PYTHON:
        return LoopChoice(False, f"{ENV}=python")
    if not pv.native:
        return LoopChoice(False, "a fake pyverbs without raw pointers")
    mod, why = module()
    if mod is not None:
        return LoopChoice(True)
    if wanted is LoopMode.NATIVE:
        raise TargetError(f"{ENV}=native but the native traffic loop is not available: {why}")
    warnings.warn(NativeLoopWarning(f"the native traffic loop is not available ({why}); using the Python loop, "
                                    "which drives far fewer small messages per second"), stacklevel=2)
    return LoopChoice(False, why)


# ---- the loop's own ceiling ----------------------------------------------------------------------------------
#: A worker that drives a flow at this share of the native loop's own ceiling for the flow's shape is the limit.
CEILING_SHARE: Final = 0.5
#: Seconds the ceiling of one shape is measured for (once per shape and process).
CEILING_S: Final = 0.05


@functools.lru_cache(maxsize=256)
def loop_ceiling(batch: int, signal_every: int, sq_depth: int, qps: int) -> float:
    """WRs/s one worker's native loop completes for a flow of this shape on the fake provider, which does no work
    (``_native.fake_*``): the most the loop itself can drive, measured on this machine once per shape (``inf``
    without the native module).

    Args:
        batch, signal_every, sq_depth: the flow's post lists, signalling and send queue.
        qps: the worker's QPs of the flow (at most 64 are measured; more add little per WR).
    """
    mod, _ = module()
    if mod is None:
        return float("inf")
    moved = mod.fake_set_move(False)
    made: list[tuple[str, int]] = []
    try:
        loop = mod.Loop(1, 0)
        static = batch % signal_every == 0
        loop.set_run(0, batch, signal_every, sq_depth, static, 1, 1, 0, 0)
        flags = [2 if static and (p + 1) % signal_every == 0 else 0 for p in range(batch)]  # IBV_SEND_SIGNALED
        chain = loop.add_chain(0, [(p, 0, flags[p], 0, (), 0, 0, 0, 0, 0, 0) for p in range(batch)])
        cq = mod.fake_cq(sq_depth * min(qps, 64))
        made.append(("cq", cq))
        loop.add_cq(0, False, cq)
        for i in range(min(qps, 64)):
            qp = mod.fake_qp(cq, cq, 0xF00000 + i, 2)
            made.append(("qp", qp))
            loop.add_send_qp(0, qp, 0xF00000 + i, chain, 1)
        loop.finish()
        start = time.monotonic_ns()
        loop.traffic(start + int(CEILING_S * 1e9), True)
        seconds = (time.monotonic_ns() - start) / 1e9
        loop.drain(time.monotonic_ns() + 1_000_000_000)
        return float(sum(done for _, done, _ in loop.qps(0)) / seconds)
    finally:
        for kind, ptr in reversed(made):
            (mod.fake_qp_free if kind == "qp" else mod.fake_cq_free)(ptr)
        mod.fake_set_move(moved)


def at_ceiling(pairs: list[tuple[Flow, FlowSummary]]) -> bool:
    """Some flow ran at :data:`CEILING_SHARE` or more of what its workers' native loops can drive at all
    (:func:`loop_ceiling` per worker): the engine, not the device, may have set its rate."""
    for flow, s in pairs:
        per_worker_qps = max(1, flow.qps // flow.processes)
        ceiling = loop_ceiling(flow.batch, flow.signal_every, flow.sq_depth, per_worker_qps)
        if s.msg_rate / flow.processes >= CEILING_SHARE * ceiling:
            return True
    return False


# ---- raw handles ---------------------------------------------------------------------------------------------
def _read_ptr(addr: int) -> int:
    return ctypes.c_void_p.from_address(addr).value or 0


class Handles:
    """Raw pointers of one worker's pyverbs objects, each validated (see the module docstring).

    Args:
        pv: the pyverbs in use; a fake with ``raw`` set hands its pointers out itself (tests).
        mod: the ``_native`` module (reads the structs for the checks).
        ctx, pd: the worker's device context and protection domain.
    """

    def __init__(self, pv: Pyverbs, mod: ModuleType, ctx: Any, pd: Any) -> None:
        self.mod = mod
        self.raw = pv.raw
        if self.raw is not None:
            self.ctx = self.pd = 0
            return
        try:
            from pyverbs.base import PyverbsCM
        except ImportError as exc:
            raise HandleError(f"pyverbs.base does not import ({exc})") from None
        self.base = int(PyverbsCM.__basicsize__)
        if self.base % ctypes.sizeof(ctypes.c_void_p):
            raise HandleError(f"PyverbsCM.__basicsize__ {self.base} is not pointer-aligned")
        self.ctx = self._layout(ctx)
        c = mod.struct_fields("context", self.ctx)
        _same("ctx->cmd_fd", c["cmd_fd"], int(ctx.cmd_fd))
        _same("ctx->num_comp_vectors", c["num_comp_vectors"], int(ctx.num_comp_vectors))
        self.pd = self._layout(pd)
        p = mod.struct_fields("pd", self.pd)
        _same("pd->context", p["context"], self.ctx)
        _same("pd->handle", p["handle"], int(pd.handle))

    def _layout(self, obj: Any) -> int:
        ptr = _read_ptr(id(obj) + self.base)
        if not ptr or ptr % 8:
            raise HandleError(f"{type(obj).__name__}: no pointer where pyverbs keeps it (closed, or another layout)")
        return ptr

    def _official(self, obj: Any, name: str, ptr: int) -> None:
        """rdma-core >= 61 has ``QP.qp`` and ``CQ.cq`` as ints: they must equal the layout's pointer."""
        if getattr(type(obj), name, None) is not None:
            value = getattr(obj, name)
            if isinstance(value, int):
                _same(f"{type(obj).__name__}.{name}", value, ptr)

    def qp(self, qp: Any) -> int:
        if self.raw is not None:
            return int(self.raw(qp))
        ptr = self._layout(qp)
        self._official(qp, "qp", ptr)
        f = self.mod.struct_fields("qp", ptr)
        _same("qp->context", f["context"], self.ctx)
        _same("qp->pd", f["pd"], self.pd)
        _same("qp->qp_num", f["qp_num"], int(qp.qp_num))
        _same("qp->qp_type", f["qp_type"], int(qp.qp_type))
        return ptr

    def cq(self, cq: Any) -> int:
        if self.raw is not None:
            return int(self.raw(cq))
        ptr = self._layout(cq)
        self._official(cq, "cq", ptr)
        f = self.mod.struct_fields("cq", ptr)
        _same("cq->context", f["context"], self.ctx)
        _same("cq->cqe", f["cqe"], int(cq.cqe))
        return ptr

    def ah(self, ah: Any) -> int:
        if self.raw is not None:
            return int(self.raw(ah))
        ptr = self._layout(ah)
        f = self.mod.struct_fields("ah", ptr)
        _same("ah->context", f["context"], self.ctx)
        _same("ah->pd", f["pd"], self.pd)
        return ptr


def _same(what: str, got: int, want: int) -> None:
    if got != want:
        raise HandleError(f"{what}: {got:#x} where pyverbs shows {want:#x}")


# ---- the engine on the native loop ---------------------------------------------------------------------------
class NativeEngine(Engine):
    """The :class:`Engine` whose traffic, drain, serving and read-back run in the native loop.

    The phases: traffic until the warm-up ends, the interval's first edge (Python), traffic until the deadline,
    the last edge, the drain. Between phases every QP's ``seq``, ``done`` and ``dead`` are copied from C into the
    same records the Python loop keeps, so the edges, the stuck-WR note and ``stats`` are the shared code.

    Raises:
        HandleError: a pointer did not check out (the caller falls back to :class:`Engine`).
    """

    posts_pyverbs_wrs = False

    def __init__(self, pv: Pyverbs, job: WorkerJob, resources: WorkerResources, mod: ModuleType) -> None:
        super().__init__(pv, job, resources)
        handles = Handles(pv, mod, resources.ctx, resources.pd)
        loop = mod.Loop(len(self.runs), MAX_LAT_SAMPLES)
        self.first_qp: list[int] = []
        added = 0
        for ri, run in enumerate(self.runs):
            f, res = run.flow, run.res
            grh = GRH_BYTES if f.transport == "UD" else 0
            loop.set_run(ri, f.batch, f.signal_every, f.sq_depth, res.static_signal, f.recv_batch, f.rq_depth,
                         f.recv_delay_us * 1000, grh)
            ah = handles.ah(res.ah) if res.ah is not None else 0
            shared = [loop.add_chain(ah, [d.native() for d in chain]) for chain in res.chain_descs]
            self.first_qp.append(added)
            for i, qp in enumerate(res.client_qps):
                ids = shared or [loop.add_chain(ah, [d.native() for d in chain]) for chain in res.qp_chain_descs[i]]
                loop.add_send_qp(ri, handles.qp(qp), int(qp.qp_num), ids[0], len(ids))
                added += 1
            for cq in res.send_cqs:
                loop.add_cq(ri, False, handles.cq(cq))
            if res.recv_descs:
                loop.set_recv_chain(ri, [(d.wr_id, d.sges) for d in res.recv_descs])
                for cq in res.recv_cqs:
                    loop.add_cq(ri, True, handles.cq(cq))
            for qp in res.server_qps:
                loop.add_recv_qp(ri, handles.qp(qp), int(qp.qp_num))
        loop.finish()
        self.loop = loop

    def _sync(self) -> None:
        """Copy every send QP's ``seq``, ``done`` and ``dead`` from the loop; count the dead."""
        dead = 0
        for ri, run in enumerate(self.runs):
            for q, (seq, done, is_dead) in zip(run.qps, self.loop.qps(ri), strict=True):
                q.seq, q.done, q.dead = seq, done, is_dead
                dead += is_dead
        self.dead = dead

    def post_initial_recvs(self) -> None:
        self.loop.post_initial_recvs()

    def run(self, start_ns: int) -> None:
        t = self.job.timing
        lo = start_ns + int(t.warmup * 1e9)
        hi = lo + int(t.duration * 1e9)
        while time.monotonic_ns() < start_ns:
            time.sleep(0.0005)
        self.measuring = False
        if not any(run.qps for run in self.runs):
            self.loop.serve(lo)
            self._open()
            self.loop.set_measuring(True)
            self.loop.serve(hi)
            self._close()
            self.loop.set_measuring(False)
            return
        all_dead = self.loop.traffic(lo, False)
        self._sync()
        if not all_dead:
            self._open()
            self.loop.traffic(hi, True)
            self._sync()
        self._close()
        self.verbs_fraction = float(self.loop.verbs_fraction)
        self.loop.drain(time.monotonic_ns() + int(t.drain_timeout * 1e9))
        self._sync()
        self._note_stuck()
        if self.rcqs:
            self.loop.poll_recv_until(time.monotonic_ns() + SETTLE_NS)

    def _serve_until(self, stop: Any) -> None:
        end = self.t_hi + int(self.job.timing.linger * 1e9)
        while (now := time.monotonic_ns()) < end and not stop():
            self.loop.serve(min(end, now + SERVE_SLICE_NS))

    def read_back(self) -> None:
        for ri, run in enumerate(self.runs):
            desc = run.res.readback_desc
            if desc is None or not run.qps or any(q.dead or q.done < q.seq for q in run.qps):
                continue
            deadline = time.monotonic_ns() + int(self.job.timing.drain_timeout * 1e9)
            got = self.loop.read_back(self.first_qp[ri], desc.native(), deadline)
            run.read_back = got == 0
            if got == -2:
                run.notes.append(f"flow {run.res.share.flow_index}: posting the READ of the atomic counters failed")
            elif got:
                run.notes.append(f"flow {run.res.share.flow_index}: the READ of the atomic counters did not "
                                 "complete")

    def stats(self, verify: bool) -> Any:
        self._collect()
        return super().stats(verify)

    def _collect(self) -> None:
        """The loop's counters into the records ``stats`` reads (once, after the run)."""
        self._sync()
        status_name = self.pv.e.status_name
        for ri, run in enumerate(self.runs):
            s = self.loop.stats(ri)
            run.loops, run.full = s["loops"], s["full"]
            run.rx_wrs, run.rx_bytes, run.rx_total = s["rx_wrs"], s["rx_bytes"], s["rx_total"]
            run.lat = list(s["lat"])
            run.errors = {}
            for status, vendor_err, n in s["errors"]:
                key = f"{status_name(int(status))} (vendor_err {vendor_err:#x})"
                run.errors[key] = run.errors.get(key, 0) + n
            where = f"flow {run.res.share.flow_index}"
            for kind, err in s["notes"]:
                code = abs(int(err))
                run.notes.append(f"{where}: {_NOTE_KIND[kind]} failed: {os.strerror(code)} (errno {code})")
            if s["dropped_notes"]:
                run.notes.append(f"{where}: {s['dropped_notes']} more verbs calls failed")


def make_engine(pv: Pyverbs, job: WorkerJob, resources: WorkerResources) -> Engine:
    """The engine a worker runs: native when its job asks for it and the handles check out, else the Python loop
    (a handle that does not check out is a :class:`NativeLoopWarning`, once per worker)."""
    if not job.native:
        return Engine(pv, job, resources)
    mod, why = module()
    if mod is None:
        warnings.warn(NativeLoopWarning(f"the native traffic loop is not available ({why}); using the Python "
                                        "loop"), stacklevel=2)
        return Engine(pv, job, resources)
    try:
        return NativeEngine(pv, job, resources, mod)
    except HandleError as exc:
        warnings.warn(NativeLoopWarning(f"the native traffic loop cannot use this pyverbs ({exc}); using the "
                                        "Python loop"), stacklevel=2)
        return Engine(pv, job, resources)
