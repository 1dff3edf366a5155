"""The traffic loop of one worker: post chains, poll completions in batches, keep receive queues full.

Per QP the engine keeps ``seq`` (WRs posted) and ``done`` (WRs known complete: every WR up to a signalled one
that completed). A chain of ``batch`` WRs is posted when ``seq - done + batch <= sq_depth``. Completions
arrive per QP in order (RC/UC/UD send queues complete in order), so a FIFO of the signalled WRs' sequence
numbers and post times gives both ``done`` and the completion latency; the WC's ``qp_num`` names the QP, so
WR ids are never rewritten. Only completions seen inside the measured interval count (see ``measure``).

Work request objects are never created here: chains come prebuilt from ``resources`` and only the
``send_flags`` of the few WRs that must be signalled are set before a post and reset after it.

A worker of a cross-host run may hold only server ends (``Side.SERVER``): it has nothing to post, so it only
keeps its receive queues full (sleeping briefly when nothing arrived, not to steal the CPU from the traffic),
reads the counters at the edges and, after the deadline and its report, keeps its QPs alive (receives
reposted) until its coordinator says stop, at most ``timing.linger`` seconds, so the clients on the other host
can drain. Data is verified where the destination buffers are (see ``verify``): at the server for WRITE/SEND,
at the client for READ and for atomics, whose counters the client reads back with one RDMA READ after the drain,
so atomics are checked across hosts too.

Receive side: a server QP keeps up to ``rq_depth`` receive WQEs posted, in post lists of ``recv_batch``. Once a
post list's worth has been consumed, the QP reposts at once (``recv_delay_us`` 0) or ``recv_delay_us`` after it
noticed the room (one post list per delay and QP): a receiver slower than its sender runs out of WQEs and the
sender's NIC retries on RNR NAKs (the receiver's RNR timer is long enough for the delay, see ``resources``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from collie.collectors.snapshot import Snapshot
from collie.model.flow import ATOMIC_OPCODES
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.job import Share, Side, WorkerJob
from collie.targets.verbs.measure import MAX_LAT_SAMPLES, FlowStats
from collie.targets.verbs.plan import signal_positions
from collie.targets.verbs.resources import MAX_CQ_BATCH, READBACK_WR_ID, ShareRes, WorkerResources
from collie.targets.verbs.verify import PULL_OPCODES, PUSH_OPCODES

#: One loop iteration in this many is timed (clock reads cost, and under emulation they cost a lot).
TIMED_EVERY = 16
#: Seconds a worker with nothing to post sleeps after a poll that found nothing.
IDLE_SLEEP_S = 0.0005
#: After the drain, receives are polled this many ns more (UD/UC, SEND), so verification sees settled buffers.
SETTLE_NS = 50_000_000


def checks_data(share: Share) -> bool:
    """This share holds buffers where some of its flow's data is verified (see the module docstring): the
    server's for pushes, the client's for READs and atomics."""
    if share.side is Side.BOTH:
        return True
    ops = set(share.flow.opcodes)
    if share.side.client:
        return bool(ops & (PULL_OPCODES | ATOMIC_OPCODES))
    return bool(ops & PUSH_OPCODES)


@dataclass(frozen=True)
class WorkerReport:
    """What a worker sends back: its per-flow stats, setup seconds, errors (one sentence each) and, from the
    worker that reads them, the device counters at the start and the end of the measured interval with the
    seconds between the two reads."""

    worker: int
    setup_s: float
    stats: tuple[FlowStats, ...]
    errors: tuple[str, ...]
    counters_before: Snapshot | None = None
    counters_after: Snapshot | None = None
    counter_seconds: float = 0.0
    interval_ns: tuple[int, int] = (0, 0)


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
    __slots__ = ("dead", "due", "outstanding", "qp")

    def __init__(self, qp: Any) -> None:
        self.qp = qp
        self.outstanding = 0
        self.dead = False
        self.due = 0  # monotonic ns when the next post list may go (0: none waiting)


class _ShareRun:
    """Mutable counters of one share during the loop."""

    def __init__(self, res: ShareRes) -> None:
        self.res = res
        f = res.share.flow
        self.flow = f
        self.qps = [_QP(qp, res.chains_of(i)) for i, qp in enumerate(res.client_qps)]
        self.rqs = [_RQ(qp) for qp in res.server_qps]
        self.edges: list[list[int]] = []
        self.rx_wrs = 0
        self.rx_bytes = 0
        self.rx_total = 0
        self.lat: list[int] = []
        self.loops = 0
        self.full = 0
        self.errors: dict[str, int] = {}
        self.notes: list[str] = []
        self.read_back = False  # the atomic counters were read back after the drain


class Engine:
    """Runs one :class:`WorkerJob` on resources built by :class:`WorkerResources`: the Python loop, and the
    measured interval's orchestration the native loop (``native.NativeEngine``) shares."""

    #: this loop posts pyverbs work requests (built from the resources' descriptions on construction).
    posts_pyverbs_wrs = True

    def __init__(self, pv: Pyverbs, job: WorkerJob, resources: WorkerResources) -> None:
        self.pv = pv
        self.job = job
        self.res = resources
        if self.posts_pyverbs_wrs:
            resources.python_wrs()
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
        self.rcqs = [(run, cq) for run in self.runs for cq in run.res.recv_cqs if run.res.recv_descs]
        self.paced = [(run, r) for run in self.runs if run.flow.recv_delay_us and run.res.recv_descs
                      for r in run.rqs]
        self.counters: list[tuple[int, Snapshot]] = []
        self._readers: list[threading.Thread] = []
        self._reader_errors: list[BaseException] = []
        self.dead = 0
        self.measuring = False
        self.t_lo = self.t_hi = 0
        self.verbs_fraction = 0.0

    def _snap(self) -> None:
        """Read the counters at an edge of the interval: sysfs at once, in this thread (file reads); ``ethtool``
        and ``rdma`` in a thread of their own, since they are processes that take milliseconds (far more under
        emulation) and the traffic loop must not stall while they run. A reading keeps the instant it started."""
        collector = self.job.collector
        if collector is None:
            return
        started = time.monotonic_ns()
        sysfs = collector.read_sysfs()
        slot = len(self.counters)
        self.counters.append((started, sysfs))

        def read() -> None:
            try:
                self.counters[slot] = (started, collector.merge(sysfs, collector.read_tools()))
            except BaseException as exc:  # handed to the worker's thread by wait_for_counters
                self._reader_errors.append(exc)

        reader = threading.Thread(target=read, name=f"counters-{slot}", daemon=True)
        reader.start()
        self._readers.append(reader)

    def wait_for_counters(self) -> None:
        """Wait until every counter reading started at an edge has finished; raise the first one's error.

        A worker that :attr:`holds` server ends keeps reposting receives meanwhile: the clients on the other
        host are draining, and a SEND of theirs that finds no receive for longer than the RNR timer allows
        (``ethtool`` and ``rdma`` take hundreds of ms under emulation) would end in IBV_WC_RNR_RETRY_EXC_ERR.
        """
        if self.holds:
            self._serve_until(lambda: not any(reader.is_alive() for reader in self._readers))
        for reader in self._readers:
            reader.join()
        if self._reader_errors:
            raise self._reader_errors[0]

    # ---- receive side -------------------------------------------------------------------------------
    def post_initial_recvs(self) -> None:
        """Fill every receive queue with as many post lists as fit."""
        for run in self.runs:
            if not run.res.recv_chain:
                continue
            chunk = run.flow.recv_batch
            for r in run.rqs:
                while r.outstanding + chunk <= run.flow.rq_depth:
                    r.qp.post_recv(run.res.recv_chain[0])
                    r.outstanding += chunk

    def _repost(self, run: _ShareRun, r: _RQ, now: int) -> None:
        """Repost a receive post list on ``r`` if it has room for one, at once or ``recv_delay_us`` after
        the room was first seen."""
        chunk = run.flow.recv_batch
        delay = run.flow.recv_delay_us * 1000
        while not r.dead and r.outstanding + chunk <= run.flow.rq_depth:
            if delay:
                if not r.due:
                    r.due = now + delay
                if now < r.due:
                    return
                r.due = 0
            try:
                r.qp.post_recv(run.res.recv_chain[0])
                r.outstanding += chunk
            except self.pv.error as exc:
                r.dead = True
                run.notes.append(f"flow {run.res.share.flow_index}: post_recv failed: {exc}")
            if delay:
                return

    def _paced_reposts(self) -> None:
        """The reposts of paced receivers whose delay has run out (no completion need arrive to trigger them)."""
        now = time.monotonic_ns()
        for run, r in self.paced:
            if r.due and now >= r.due:
                self._repost(run, r, now)

    # ---- posting ----------------------------------------------------------------------------------------
    def _post(self, run: _ShareRun, q: _QP, now: int, force_last: bool = False) -> bool:
        f = run.flow
        chain = q.chains[q.chain]
        batch = f.batch
        seq0 = q.seq
        every = f.signal_every
        if run.res.static_signal:  # the chain's last WR is signalled already (batch % signal_every == 0)
            positions: tuple[int, ...] = ()
            nsig = batch // every
        elif batch == 1:  # the common single-WR case, without the general function's allocations
            sig = (seq0 + 1) % every == 0 or force_last or seq0 + 2 - q.sig_last > f.sq_depth
            positions = (0,) if sig else ()
            nsig = len(positions)
        else:
            positions = signal_positions(seq0, batch, every, f.sq_depth, q.sig_last)
            if force_last and (not positions or positions[-1] != batch - 1):
                positions = (*positions, batch - 1)
            nsig = len(positions)
        signaled = self.signaled
        for p in positions:
            w = chain[p]
            w.send_flags = w.send_flags | signaled
        try:
            q.qp.post_send(chain[0])
        except self.pv.error as exc:
            q.dead = True
            self.dead += 1
            run.notes.append(f"flow {run.res.share.flow_index}: post_send failed: {exc}")
            return False
        finally:
            for p in positions:
                w = chain[p]
                w.send_flags = w.send_flags & ~signaled
        if positions:
            for p in positions:
                q.sig.append((seq0 + p + 1, now))
            q.sig_last = seq0 + positions[-1] + 1
        elif nsig:
            for k in range(1, nsig + 1):
                q.sig.append((seq0 + k * every, now))
            q.sig_last = seq0 + nsig * every
        q.seq = seq0 + batch
        q.chain = (q.chain + 1) % len(q.chains)
        return True

    # ---- polling ----------------------------------------------------------------------------------------
    def _poll_send(self) -> int:
        """Poll every send CQ once; advance ``done`` of the QPs that completed; sample latencies."""
        got = 0
        lat_on = self.measuring
        for run, cq in self.cqs:
            n, wcs = cq.poll(MAX_CQ_BATCH)
            if not n:
                continue
            got += n
            now = time.monotonic_ns()
            lat = run.lat
            for wc in wcs:
                entry = self.by_qpn.get(wc.qp_num)
                if entry is None:
                    continue
                q = entry[1]
                if wc.status != self.success:
                    self._wc_error(run, wc)
                    if not q.dead:
                        q.dead = True
                        self.dead += 1
                    if q.sig:
                        q.sig.popleft()
                    continue
                if not q.sig:
                    continue
                seq_end, t_post = q.sig.popleft()
                if lat_on and len(lat) < MAX_LAT_SAMPLES:
                    lat.append(now - t_post)
                q.done = seq_end
        return got

    def _poll_recv(self) -> int:
        got = 0
        measuring = self.measuring
        for run, cq in self.rcqs:
            n, wcs = cq.poll(MAX_CQ_BATCH)
            if not n:
                continue
            got += n
            now = time.monotonic_ns()
            grh = 40 if run.flow.transport == "UD" else 0
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
                run.rx_total += 1
                if measuring:
                    run.rx_wrs += 1
                    run.rx_bytes += wc.byte_len - grh
                self._repost(run, r, now)
        if self.paced:
            self._paced_reposts()
        return got

    def _wc_error(self, run: _ShareRun, wc: Any) -> None:
        name = self.pv.e.status_name(int(wc.status))
        if name == "IBV_WC_WR_FLUSH_ERR":
            return  # the consequence of an earlier error on the same QP, not a cause
        key = f"{name} (vendor_err {int(wc.vendor_err):#x})"
        run.errors[key] = run.errors.get(key, 0) + 1

    # ---- the loop ---------------------------------------------------------------------------------------
    def _edge(self) -> None:
        """At an edge of the measured interval: note every QP's ``done`` and read the counters."""
        for run in self.runs:
            run.edges.append([q.done for q in run.qps])
        self._snap()

    def _open(self) -> None:
        """Open the measured interval (its first edge)."""
        self.measuring = True
        self._edge()
        self.t_lo = time.monotonic_ns()

    def _close(self) -> None:
        """Close the measured interval (opening it first if the loop ended before it began)."""
        if not self.measuring:
            self._open()
        self.measuring = False
        self._edge()
        self.t_hi = time.monotonic_ns()

    def run(self, start_ns: int) -> None:
        """Traffic from ``start_ns`` (monotonic): warm-up, the measured interval, then the drain.

        Completions count when ``done`` advanced inside the interval: every QP's ``done`` is noted at both
        edges, and bytes/packets of the WRs between follow from the cycle's prefix sums. One iteration in
        :data:`TIMED_EVERY` is timed end to end and inside its verbs calls, for ``verbs_s``.
        """
        t = self.job.timing
        lo = start_ns + int(t.warmup * 1e9)
        hi = lo + int(t.duration * 1e9)
        clock = time.monotonic_ns
        while clock() < start_ns:
            time.sleep(0.0005)
        runs = self.runs
        nqps = sum(len(run.qps) for run in runs)
        if not nqps:
            self._serve(lo, hi)
            return
        has_recv = bool(self.rcqs)
        it = 0
        timed_total = timed_verbs = 0
        self.measuring = False
        while True:
            now = clock()
            if now >= hi:
                break
            if not self.measuring and now >= lo:
                self._open()
            measuring = self.measuring
            timed = measuring and it % TIMED_EVERY == 0
            it += 1
            verbs = 0
            for run in runs:
                f = run.flow
                room = f.sq_depth - f.batch
                posted = False
                for q in run.qps:
                    if not q.dead and q.seq - q.done <= room:
                        if timed:
                            t1 = clock()
                            posted = self._post(run, q, now) or posted
                            verbs += clock() - t1
                        else:
                            posted = self._post(run, q, now) or posted
                if measuring:
                    run.loops += 1
                    if not posted:
                        run.full += 1
            if timed:
                t1 = clock()
                self._poll_send()
                if has_recv:
                    self._poll_recv()
                t2 = clock()
                timed_verbs += verbs + t2 - t1
                timed_total += t2 - now
            else:
                self._poll_send()
                if has_recv:
                    self._poll_recv()
            if self.dead >= nqps:
                break
        self._close()
        self.verbs_fraction = timed_verbs / timed_total if timed_total else 0.0
        self._drain()

    def _serve(self, lo: int, hi: int) -> None:
        """The loop of a worker with nothing to post: receives and the edges only."""
        clock = time.monotonic_ns
        has_recv = bool(self.rcqs)
        while True:
            now = clock()
            if now >= hi:
                break
            if not self.measuring and now >= lo:
                self._open()
            if not has_recv:  # nothing to do until the next edge
                wake = hi if self.measuring else lo
                time.sleep(min(0.05, max(IDLE_SLEEP_S, (wake - now) / 1e9)))
            elif not self._poll_recv():
                time.sleep(IDLE_SLEEP_S)
        self._close()

    @property
    def holds(self) -> bool:
        """This worker has server ends of cross-host flows to keep alive after the run (see ``linger``)."""
        return bool(self.job.timing.linger) and any(run.res.share.side is Side.SERVER for run in self.runs)

    def linger(self, stop: Callable[[], bool]) -> None:
        """Keep the server ends alive (receives reposted) until ``stop()`` or ``timing.linger`` s after the end."""
        self._serve_until(stop)

    def _serve_until(self, stop: Callable[[], bool]) -> None:
        """Repost receives until ``stop()`` or ``timing.linger`` s after the measured interval's end."""
        end = self.t_hi + int(self.job.timing.linger * 1e9)
        while time.monotonic_ns() < end and not stop():
            if not (self.rcqs and self._poll_recv()):
                time.sleep(IDLE_SLEEP_S)

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
            self._poll_send()
            if self.rcqs:
                self._poll_recv()
        while time.monotonic_ns() < deadline:
            if all(q.dead or q.done >= q.seq for _, q in pending):
                break
            self._poll_send()
            if self.rcqs:
                self._poll_recv()
        self._note_stuck()
        # Receives still arriving (UD/UC, SEND) are polled once more so verification sees settled buffers.
        if self.rcqs:
            end = time.monotonic_ns() + SETTLE_NS
            while time.monotonic_ns() < end:
                self._poll_recv()

    def _note_stuck(self) -> None:
        """One note for the WRs of live QPs that did not complete in the drain."""
        stuck = [(run, q) for run in self.runs for q in run.qps if not q.dead and q.done < q.seq]
        if stuck:
            run = stuck[0][0]
            n = sum(q.seq - q.done for _, q in stuck)
            run.notes.append(f"flow {run.res.share.flow_index}: {n} WRs on {len(stuck)} QPs did not complete "
                             f"within {self.job.timing.drain_timeout:g} s after the deadline")

    def read_back(self) -> None:
        """Read the atomic counters of every share that posted atomics and completed them all: one signalled
        RDMA READ on its first QP (after the drain nothing else completes there), within ``drain_timeout``."""
        for run in self.runs:
            wr = run.res.readback
            if wr is None or not run.qps or any(q.dead or q.done < q.seq for q in run.qps):
                continue
            where = f"flow {run.res.share.flow_index}"
            try:
                run.qps[0].qp.post_send(wr)
            except self.pv.error as exc:
                run.notes.append(f"{where}: posting the READ of the atomic counters failed: {exc}")
                continue
            cq = run.res.send_cqs[0]
            deadline = time.monotonic_ns() + int(self.job.timing.drain_timeout * 1e9)
            while not run.read_back and time.monotonic_ns() < deadline:
                for wc in cq.poll(MAX_CQ_BATCH)[1]:
                    if wc.wr_id != READBACK_WR_ID:
                        continue
                    if wc.status != self.success:
                        self._wc_error(run, wc)
                        deadline = 0
                    else:
                        run.read_back = True
            if not run.read_back:
                run.notes.append(f"{where}: the READ of the atomic counters did not complete")

    # ---- results ----------------------------------------------------------------------------------------
    def stats(self, verify: bool) -> tuple[tuple[FlowStats, ...], tuple[str, ...]]:
        out = []
        errors: list[str] = []
        seconds = max(1e-9, (self.t_hi - self.t_lo) / 1e9)
        verbs_s = self.verbs_fraction * seconds
        for run in self.runs:
            share = run.res.share
            complete = all(not q.dead and q.done >= q.seq for q in run.qps)
            verify_errors: list[str] = []
            checks = verify and checks_data(share)
            if checks:
                if not complete:
                    verify_errors = [f"flow {run.res.share.flow_index}: data not verified: WRs did not all "
                                     "complete"]
                elif run.res.readback_desc is not None and not run.read_back:
                    verify_errors = [f"flow {run.res.share.flow_index}: atomics not verified: their counters "
                                     "were not read back"]
                else:
                    verify_errors = self.res.check_verify(run.res, [q.seq for q in run.qps], run.rx_total)
            ud = run.flow.transport == "UD"
            sums = run.res.sums
            a, b = run.edges[0], run.edges[-1]
            qp_wrs = tuple(y - x for x, y in zip(a, b, strict=True))
            wrs = sum(qp_wrs)
            nbytes = sum(sums.bytes(x, y) for x, y in zip(a, b, strict=True))
            packets = sum(sums.packets(x, y) for x, y in zip(a, b, strict=True))
            if run.rqs and (ud or not share.side.client):  # what arrived (UD drops; a server end alone)
                wrs, nbytes, packets = run.rx_wrs, run.rx_bytes, run.rx_wrs
            out.append(FlowStats(
                flow=run.res.share.flow_index, seconds=seconds, wrs=wrs, bytes=nbytes, packets=packets,
                lat_ns=tuple(run.lat), loops=run.loops, full_loops=run.full,
                verbs_s=verbs_s, wc_errors=dict(run.errors),
                verify_errors=tuple(verify_errors), verified=checks and complete and not verify_errors,
                measures=share.side.client or ud, checks=checks_data(share),
                qp_wrs=qp_wrs if share.side.client else (),
            ))
            errors.extend(run.notes)
        return tuple(out), tuple(errors)
