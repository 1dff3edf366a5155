"""Control-path churn beside the data path: a worker process that registers/deregisters MRs and creates/destroys
QPs at a flow's ``mr_churn`` and ``qp_churn`` rates during the measured interval.

One :class:`ChurnJob` per churning end of a flow (a local run holds both ends of every flow: two jobs per
churning flow). The churn worker runs in a process of its own, spawned by ``workers.WorkerPool`` like the
data-path workers and through the same handshake; it opens the device itself (its own context, PD and CQ) and
touches nothing of the data path's.

* **MRs**: one buffer of ``mr_size`` bytes (anonymous ``mmap``, page aligned) is allocated before the interval
  and reused: each operation registers it (``ibv_reg_mr`` with local write and remote read/write access, the
  data path's) and deregisters it again.
* **QPs**: each operation creates an RC QP on the worker's PD and CQ (1 send and 1 receive WR, 1 SGE), moves
  it to INIT and destroys it. INIT is as far as a QP goes without a peer; RTR/RTS would need one.

Pacing: operation ``k`` of a kind is due ``k / rate`` seconds after the interval opened; the worker sleeps
until the earliest due operation of either kind and runs it. A device slower than asked makes the operations
run back to back (no catch-up burst beyond that): the achieved rate, operations done / interval seconds, then
falls short of the asked one, bounded by what the device manages. Every operation is timed from the call that
creates to the return of the call that destroys.

A verbs error during the interval (ENOMEM, the device gone) stops the churn and becomes one sentence of the
report's ``errors``, which fails the run; anything else fails the worker (``workers`` raises it).
"""

from __future__ import annotations

import ctypes
import mmap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from collie.model.flow import Flow
from collie.model.units import format_bytes
from collie.targets.base import ChurnStats, EndChurn
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.measure import MAX_LAT_SAMPLES, percentile
from collie.targets.verbs.spec import VerbsSpec

#: The kinds of churn: MR register+deregister, QP create+INIT+destroy.
KINDS: Final = ("mr", "qp")


@dataclass(frozen=True)
class ChurnJob:
    """One churning end of flow ``flow_index`` (``side``: ``client`` or ``server``), its device and timing.

    Attributes:
        mr_churn, qp_churn: operations per second asked (0: none of that kind).
        mr_size: bytes of each churned MR.
        warmup, duration: the run's timing; churn runs during the measured interval only.
    """

    flow_index: int
    side: str
    spec: VerbsSpec
    mr_churn: int
    mr_size: int
    qp_churn: int
    warmup: float
    duration: float

    @property
    def name(self) -> str:
        return f"flow {self.flow_index} {self.side} churn"


def churn_jobs(flows: Sequence[tuple[int, Flow, bool, bool]], spec: VerbsSpec, warmup: float,
               duration: float) -> list[ChurnJob]:
    """One job per churning end: ``flows`` lists ``(index, flow, client end here, server end here)``."""
    return [ChurnJob(flow_index=i, side=side, spec=spec, mr_churn=f.mr_churn, mr_size=f.mr_size,
                     qp_churn=f.qp_churn, warmup=warmup, duration=duration)
            for i, f, client, server in flows if f.mr_churn or f.qp_churn
            for side, here in (("client", client), ("server", server)) if here]


@dataclass(frozen=True)
class ChurnReport:
    """A churn worker's report: per kind (``mr``, ``qp``) its stats, and the verbs errors that stopped it."""

    flow_index: int
    side: str
    seconds: float
    mr: ChurnStats
    qp: ChurnStats
    errors: tuple[str, ...] = ()

    @property
    def end(self) -> EndChurn:
        """What this end churned, as a run's result carries it."""
        return EndChurn(self.flow_index, self.side, self.mr, self.qp)

    def line(self) -> str:
        """One line for people, e.g. ``flow 0 client churn: mr 1000/s asked, 998/s done, mean 512 µs ...``."""
        parts = [f"{k} {s.asked}/s asked, {s.rate:.0f}/s done, mean {s.mean_us:.0f} us, p99 {s.p99_us:.0f} us"
                 for k, s in (("mr", self.mr), ("qp", self.qp)) if s.asked]
        return f"flow {self.flow_index} {self.side} churn: " + "; ".join(parts)


class _Kind:
    """Pacing and timing of one kind of churn."""

    def __init__(self, what: str, rate: int, op: Callable[[], None], lo: int) -> None:
        self.what = what
        self.rate = rate
        self.op = op
        self.lo = lo
        self.done = 0
        self.total_ns = 0
        self.lat: list[int] = []

    def due(self) -> int:
        return self.lo + self.done * 1_000_000_000 // self.rate

    def run(self) -> None:
        t0 = time.monotonic_ns()
        self.op()
        dt = time.monotonic_ns() - t0
        self.done += 1
        self.total_ns += dt
        if len(self.lat) < MAX_LAT_SAMPLES:
            self.lat.append(dt)

    def stats(self, seconds: float) -> ChurnStats:
        mean = self.total_ns / self.done / 1e3 if self.done else 0.0
        p99 = percentile(sorted(self.lat), 99) / 1e3 if self.lat else 0.0
        return ChurnStats(asked=self.rate, ops=self.done, rate=self.done / seconds, mean_us=mean, p99_us=p99)


class _Device:
    """The churn worker's own verbs objects: context, PD, CQ and the reused MR buffer."""

    def __init__(self, pv: Pyverbs, job: ChurnJob) -> None:
        self.pv = pv
        self.job = job
        self.ctx: Any = None
        self.pd: Any = None
        self.cq: Any = None
        self.buf: mmap.mmap | None = None
        self.view: Any = None
        self.addr = 0

    def open(self) -> None:
        pv, job = self.pv, self.job
        self.ctx = pv.device.Context(name=job.spec.device)
        self.pd = pv.pd.PD(self.ctx)
        self.cq = pv.cq.CQ(self.ctx, 2)
        if job.mr_churn:
            self.buf = mmap.mmap(-1, job.mr_size)
            self.view = ctypes.c_char.from_buffer(self.buf)
            self.addr = ctypes.addressof(self.view)

    def churn_mr(self) -> None:
        e = self.pv.e
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        self.pv.mr.MR(self.pd, self.job.mr_size, access, address=self.addr).close()

    def churn_qp(self) -> None:
        pv = self.pv
        cap = pv.qp.QPCap(max_send_wr=1, max_recv_wr=1, max_send_sge=1, max_recv_sge=1)
        qp = pv.qp.QP(self.pd, pv.qp.QPInitAttr(qp_type=pv.e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap,
                                                 sq_sig_all=0))
        try:
            attr = pv.qp.QPAttr()
            attr.port_num = self.job.spec.port
            attr.pkey_index = 0
            attr.qp_access_flags = 0
            qp.to_init(attr)
        finally:
            qp.close()

    def close(self) -> None:
        """Free everything (idempotent): closing the context closes what was made on it."""
        if self.ctx is not None:
            self.ctx.close()
        self.cq = self.pd = self.ctx = None
        self.view = None  # releases the buffer export, so the mmap can close
        if self.buf is not None:
            self.buf.close()
            self.buf = None


def run_churn(pv: Pyverbs, job: ChurnJob, sync: Any) -> ChurnReport:
    """Open the device, take part in the workers' handshake (no endpoints), churn during the measured interval
    (see the module docstring) and report; every verbs object is freed on every way out."""
    t0 = time.perf_counter()
    dev = _Device(pv, job)
    try:
        dev.open()
        sync.prepared([])
        start_ns = sync.ready(time.perf_counter() - t0)
        lo = start_ns + int(job.warmup * 1e9)
        hi = lo + int(job.duration * 1e9)
        mr = _Kind(f"registering a {format_bytes(job.mr_size)} MR", job.mr_churn, dev.churn_mr, lo)
        qp = _Kind("creating an RC QP", job.qp_churn, dev.churn_qp, lo)
        kinds = [k for k in (mr, qp) if k.rate]
        errors: list[str] = []
        while kinds and not errors:
            k = min(kinds, key=_Kind.due)
            due = k.due()
            now = time.monotonic_ns()
            if due >= hi or now >= hi:
                break
            if due > now:
                time.sleep((due - now) / 1e9)
            try:
                k.run()
            except pv.error as exc:
                errors.append(f"{job.name}: {k.what} failed after {k.done} operations: {exc}")
        if errors:  # stopped early: the rates are over the interval's time until then
            hi = max(lo + 1, min(hi, time.monotonic_ns()))
        seconds = (hi - lo) / 1e9
        return ChurnReport(flow_index=job.flow_index, side=job.side, seconds=seconds, mr=mr.stats(seconds),
                           qp=qp.stats(seconds), errors=tuple(errors))
    finally:
        dev.close()
