"""The traffic loop of one worker: post chains, poll completions in batches, keep receive queues full.

Per QP the engine keeps ``seq`` (WRs posted) and ``done`` (WRs known complete: every WR up to a signalled one
that completed). A chain of ``batch`` WRs is posted when ``seq - done + batch <= sq_depth``. Completions
arrive per QP in order (RC/UC/UD send queues complete in order), so a FIFO of the signalled WRs' sequence
numbers and post times gives both ``done`` and the completion latency; the WC's ``qp_num`` names the QP, so
WR ids are never rewritten. Only completions seen inside the measured interval count (see ``measure``).

Work request objects are never created here: chains come prebuilt from ``resources`` and only the
``send_flags`` of the few WRs that must be signalled are set before a post and reset after it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.counters import read_counters
from collie.targets.verbs.job import WorkerJob
from collie.targets.verbs.measure import MAX_LAT_SAMPLES, FlowStats
from collie.targets.verbs.plan import signal_positions
from collie.targets.verbs.resources import MAX_CQ_BATCH, ShareRes, WorkerResources


@dataclass(frozen=True)
class WorkerReport:
    """What a worker sends back: its per-flow stats, setup seconds, errors (one sentence each) and, from the
    worker that reads them, the device counters at the start and the end of the measured interval with the
    seconds between the two reads."""

    worker: int
    setup_s: float
    stats: tuple[FlowStats, ...]
    errors: tuple[str, ...]
    counters_before: dict[str, int] | None = None
    counters_after: dict[str, int] | None = None
    counter_seconds: float = 0.0


class _QP:
    __slots__ = ("chain", "chains", "dead", "done", "qp", "seq", "sig", "sig_last")

    def __init__(self, qp: Any, chains: list[list[Any]]) -> None:
        self.qp = qp
        self.chains = chains
        self.chain = 0
        self.seq = 0
        self.done = 0
        self.sig: deque[tuple[int, int]] = deque()
        self.sig_last = 0  # seq_end of the last signalled WR posted
        self.dead = False


class _RQ:
    __slots__ = ("dead", "outstanding", "qp")

    def __init__(self, qp: Any) -> None:
        self.qp = qp
        self.outstanding = 0
        self.dead = False


class _ShareRun:
    """Mutable counters of one share during the loop."""

    def __init__(self, res: ShareRes) -> None:
        self.res = res
        f = res.share.flow
        self.flow = f
        self.qps = [_QP(qp, res.chains_of(i)) for i, qp in enumerate(res.client_qps)]
        self.rqs = [_RQ(qp) for qp in res.server_qps]
        self.wrs = 0
        self.bytes = 0
        self.packets = 0
        self.rx_wrs = 0
        self.rx_bytes = 0
        self.lat: list[int] = []
        self.loops = 0
        self.full = 0
        self.errors: dict[str, int] = {}
        self.notes: list[str] = []


class Engine:
    """Runs one :class:`WorkerJob` on resources built by :class:`WorkerResources`."""

    def __init__(self, pv: Pyverbs, job: WorkerJob, resources: WorkerResources) -> None:
        self.pv = pv
        self.job = job
        self.res = resources
        self.runs = [_ShareRun(r) for r in resources.shares]
        self.signaled = pv.e.IBV_SEND_SIGNALED
        self.success = pv.e.IBV_WC_SUCCESS
        self.by_qpn: dict[int, tuple[_ShareRun, Any]] = {}
        for run in self.runs:
            for q in run.qps:
                self.by_qpn[q.qp.qp_num] = (run, q)
            for r in run.rqs:
                self.by_qpn[r.qp.qp_num] = (run, r)
        self.cqs = [(run, cq) for run in self.runs for cq in run.res.send_cqs]
        self.rcqs = [(run, cq) for run in self.runs for cq in run.res.recv_cqs if run.res.recv_chain]
        self.win = (0, 0)
        self.counters: list[tuple[int, dict[str, int]]] = []
        self.verbs_ns = 0  # time inside verbs calls (post_send, post_recv, poll) ...
        self.verbs_window_ns = 0  # ... of which inside the measured interval

    def _snap(self) -> None:
        if self.job.read_counters:
            spec = self.job.spec
            self.counters.append((time.monotonic_ns(), read_counters(spec.device, spec.port)))

    # ---- receive side -------------------------------------------------------------------------------
    def post_initial_recvs(self) -> None:
        for run in self.runs:
            chunk = run.res.recv_chunk
            if not chunk:
                continue
            for r in run.rqs:
                while r.outstanding + chunk <= run.flow.rq_depth:
                    r.qp.post_recv(run.res.recv_chain[0])
                    r.outstanding += chunk

    # ---- posting ----------------------------------------------------------------------------------------
    def _post(self, run: _ShareRun, q: _QP, now: int, force_last: bool = False) -> bool:
        f = run.flow
        chain = q.chains[q.chain]
        batch = f.batch
        if run.res.static_signal:  # the chain's last WR is signalled already (batch % signal_every == 0)
            positions: tuple[int, ...] = ()
            nsig = batch // f.signal_every
        else:
            positions = signal_positions(q.seq, batch, f.signal_every, f.sq_depth, q.sig_last)
            if force_last and (not positions or positions[-1] != batch - 1):
                positions = (*positions, batch - 1)
            nsig = len(positions)
            for p in positions:
                w = chain[p]
                w.send_flags = w.send_flags | self.signaled
        t1 = time.monotonic_ns()
        try:
            q.qp.post_send(chain[0])
        except self.pv.error as exc:
            q.dead = True
            run.notes.append(f"flow {run.res.share.flow_index}: post_send failed: {exc}")
            return False
        finally:
            self.verbs_ns += time.monotonic_ns() - t1
            for p in positions:
                w = chain[p]
                w.send_flags = w.send_flags & ~self.signaled
        seq0 = q.seq
        if positions:
            for p in positions:
                q.sig.append((seq0 + p + 1, now))
            q.sig_last = seq0 + positions[-1] + 1
        elif nsig:
            every = f.signal_every
            for k in range(1, nsig + 1):
                q.sig.append((seq0 + k * every, now))
            q.sig_last = seq0 + nsig * every
        q.seq = seq0 + batch
        q.chain = (q.chain + 1) % len(q.chains)
        return True

    # ---- polling ----------------------------------------------------------------------------------------
    def _poll_send(self, now: int) -> int:
        lo, hi = self.win
        got = 0
        for run, cq in self.cqs:
            t1 = time.monotonic_ns()
            n, wcs = cq.poll(MAX_CQ_BATCH)
            self.verbs_ns += time.monotonic_ns() - t1
            if not n:
                continue
            got += n
            sums = run.res.sums
            for wc in wcs:
                entry = self.by_qpn.get(wc.qp_num)
                if entry is None:
                    continue
                q = entry[1]
                if wc.status != self.success:
                    self._wc_error(run, wc)
                    q.dead = True
                    if q.sig:
                        q.sig.popleft()
                    continue
                if not q.sig:
                    continue
                seq_end, t_post = q.sig.popleft()
                if lo <= now < hi:
                    run.wrs += seq_end - q.done
                    run.bytes += sums.bytes(q.done, seq_end)
                    run.packets += sums.packets(q.done, seq_end)
                    if len(run.lat) < MAX_LAT_SAMPLES:
                        run.lat.append(now - t_post)
                q.done = seq_end
        return got

    def _poll_recv(self, now: int) -> int:
        lo, hi = self.win
        got = 0
        for run, cq in self.rcqs:
            t1 = time.monotonic_ns()
            n, wcs = cq.poll(MAX_CQ_BATCH)
            self.verbs_ns += time.monotonic_ns() - t1
            if not n:
                continue
            got += n
            chunk = run.res.recv_chunk
            depth = run.flow.rq_depth
            ud = run.flow.transport == "UD"
            for wc in wcs:
                entry = self.by_qpn.get(wc.qp_num)
                if entry is None:
                    continue
                r = entry[1]
                r.outstanding -= 1
                if wc.status != self.success:
                    self._wc_error(run, wc)
                    r.dead = True
                    continue
                if lo <= now < hi:
                    run.rx_wrs += 1
                    run.rx_bytes += wc.byte_len - (40 if ud else 0)
                if not r.dead and r.outstanding + chunk <= depth:
                    t1 = time.monotonic_ns()
                    try:
                        r.qp.post_recv(run.res.recv_chain[0])
                        r.outstanding += chunk
                    except self.pv.error as exc:
                        r.dead = True
                        run.notes.append(f"flow {run.res.share.flow_index}: post_recv failed: {exc}")
                    self.verbs_ns += time.monotonic_ns() - t1
        return got

    def _wc_error(self, run: _ShareRun, wc: Any) -> None:
        name = self.pv.e.status_name(int(wc.status))
        if name == "IBV_WC_WR_FLUSH_ERR":
            return  # the consequence of an earlier error on the same QP, not a cause
        key = f"{name} (vendor_err {int(wc.vendor_err):#x})"
        run.errors[key] = run.errors.get(key, 0) + 1

    # ---- the loop ---------------------------------------------------------------------------------------
    def run(self, start_ns: int) -> None:
        """Traffic from ``start_ns`` (monotonic): warm-up, the measured interval, then the drain."""
        t = self.job.timing
        lo = start_ns + int(t.warmup * 1e9)
        hi = lo + int(t.duration * 1e9)
        self.win = (lo, hi)
        clock = time.monotonic_ns
        while clock() < start_ns:
            time.sleep(0.0005)
        runs = self.runs
        snapped = False
        while True:
            now = clock()
            if now >= hi:
                break
            measuring = now >= lo
            if measuring and not snapped:
                self._snap()
                snapped = True
            for run in runs:
                f = run.flow
                room = f.sq_depth - f.batch
                posted = False
                for q in run.qps:
                    if not q.dead and q.seq - q.done <= room:
                        posted = self._post(run, q, now) or posted
                if measuring:
                    run.loops += 1
                    if not posted:
                        run.full += 1
            now = clock()
            self._poll_send(now)
            if self.rcqs:
                self._poll_recv(now)
            if measuring:
                self.verbs_window_ns += self.verbs_ns
            self.verbs_ns = 0
            if all(q.dead for run in runs for q in run.qps):
                break
        if not snapped:
            self._snap()
        self._snap()
        self._drain()

    def _drain(self) -> None:
        """Make the last WR of every QP signalled (one more chain if needed) and wait for all of them."""
        deadline = time.monotonic_ns() + int(self.job.timing.drain_timeout * 1e9)
        pending = [(run, q) for run in self.runs for q in run.qps if not q.dead]
        closing = [(run, q) for run, q in pending if q.seq > q.sig_last]
        while closing and time.monotonic_ns() < deadline:
            left = []
            for run, q in closing:
                if q.dead:
                    continue
                if q.seq - q.done + run.flow.batch <= run.flow.sq_depth:
                    self._post(run, q, time.monotonic_ns(), force_last=True)
                else:
                    left.append((run, q))
            closing = left
            now = time.monotonic_ns()
            self._poll_send(now)
            if self.rcqs:
                self._poll_recv(now)
        while time.monotonic_ns() < deadline:
            if all(q.dead or q.done >= q.seq for _, q in pending):
                break
            now = time.monotonic_ns()
            self._poll_send(now)
            if self.rcqs:
                self._poll_recv(now)
        stuck = [(run, q) for run, q in pending if not q.dead and q.done < q.seq]
        if stuck:
            run = stuck[0][0]
            n = sum(q.seq - q.done for _, q in stuck)
            run.notes.append(f"flow {run.res.share.flow_index}: {n} WRs on {len(stuck)} QPs did not complete "
                             f"within {self.job.timing.drain_timeout:g} s after the deadline")
        # Receives still arriving (UD/UC, SEND) are polled once more so verification sees settled buffers.
        if self.rcqs:
            end = time.monotonic_ns() + 50_000_000
            while time.monotonic_ns() < end:
                self._poll_recv(time.monotonic_ns())

    # ---- results ----------------------------------------------------------------------------------------
    def stats(self, verify: bool) -> tuple[tuple[FlowStats, ...], tuple[str, ...]]:
        out = []
        errors: list[str] = []
        seconds = self.job.timing.duration
        for run in self.runs:
            complete = all(not q.dead and q.done >= q.seq for q in run.qps)
            verify_errors: list[str] = []
            if verify:
                if complete:
                    verify_errors = self.res.check_verify(run.res, sum(q.seq for q in run.qps))
                else:
                    verify_errors = [f"flow {run.res.share.flow_index}: data not verified: WRs did not all "
                                     "complete"]
            ud = run.flow.transport == "UD"
            wrs = run.rx_wrs if ud else run.wrs
            nbytes = run.rx_bytes if ud else run.bytes
            packets = run.rx_wrs if ud else run.packets
            out.append(FlowStats(
                flow=run.res.share.flow_index, seconds=seconds, wrs=wrs, bytes=nbytes, packets=packets,
                lat_ns=tuple(run.lat), loops=run.loops, full_loops=run.full,
                verbs_s=self.verbs_window_ns / 1e9, wc_errors=dict(run.errors),
                verify_errors=tuple(verify_errors), verified=verify and complete and not verify_errors,
            ))
            errors.extend(run.notes)
        return tuple(out), tuple(errors)


def run_job(pv: Pyverbs, job: WorkerJob, sync: Any = None) -> WorkerReport:
    """Build, run, measure and tear down one worker's job.

    Args:
        sync: ``None`` to start at once, or an object with ``ready(setup_s) -> start_ns`` that tells the
            coordinator this worker is set up and returns the common start instant.
    """
    t0 = time.perf_counter()
    res = WorkerResources(pv, job)
    try:
        res.open()
        if job.verify:
            res.prepare_verify()
        engine = Engine(pv, job, res)
        engine.post_initial_recvs()
        setup_s = time.perf_counter() - t0
        start_ns = sync.ready(setup_s) if sync is not None else time.monotonic_ns()
        engine.run(start_ns)
        stats, errors = engine.stats(job.verify)
        report = WorkerReport(worker=job.worker, setup_s=setup_s, stats=stats, errors=errors)
        if len(engine.counters) == 2:
            (ta, a), (tb, b) = engine.counters
            report = replace(report, counters_before=a, counters_after=b, counter_seconds=(tb - ta) / 1e9)
        return report
    finally:
        res.close()
