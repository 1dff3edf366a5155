"""One worker's job from start to end: build, connect, run, measure and tear down (either traffic loop).

The worker's engine is the native loop's when its job asks for it and the handles check out, else the Python loop
(``native.make_engine``); everything else here is the same for both.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from collie.errors import TargetError
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.endpoints import index
from collie.targets.verbs.engine import WorkerReport
from collie.targets.verbs.job import WorkerJob
from collie.targets.verbs.native import make_engine
from collie.targets.verbs.resources import WorkerResources


def run_job(pv: Pyverbs, job: WorkerJob, sync: Any = None) -> WorkerReport:
    """Build, connect, run, measure and tear down one worker's job.

    The handshake with the coordinator has two phases: ``sync.prepared(endpoints) -> peers`` hands over the
    connection data of this worker's one-sided shares (JSON-ready dicts, see ``endpoints``) and returns the
    peers' (the coordinator's wait for them is not setup time); ``sync.ready(setup_s) -> start_ns`` says this
    worker is connected and returns the common start instant (``CLOCK_MONOTONIC`` ns). A worker holding
    server ends of cross-host flows hands its report over early (``sync.report(report)``, when the sync has
    it) and keeps those ends alive until ``sync.stopped()`` (or ``timing.linger`` s) before tearing down.

    Args:
        sync: ``None`` to start at once (only for jobs with no one-sided shares), or the coordinator's object
            with ``prepared`` and ``ready`` as above.

    Raises:
        TargetError: a job with one-sided shares has no coordinator, or a peer endpoint is missing or malformed.
    """
    t0 = time.perf_counter()
    res = WorkerResources(pv, job)
    try:
        res.open()
        mine = [e.to_dict() for e in res.endpoints()]
        built_s = time.perf_counter() - t0
        if sync is not None:
            peers = sync.prepared(mine)
        elif mine:
            raise TargetError("a verbs job with one-sided shares needs a coordinator to exchange endpoints")
        else:
            peers = []
        t1 = time.perf_counter()
        res.connect(index(peers))
        if job.verify:
            res.prepare_verify()
        engine = make_engine(pv, job, res)
        engine.post_initial_recvs()
        setup_s = built_s + time.perf_counter() - t1
        start_ns = sync.ready(setup_s) if sync is not None else time.monotonic_ns()
        engine.run(start_ns)
        if job.verify:
            engine.read_back()
        engine.wait_for_counters()
        stats, errors = engine.stats(job.verify)
        report = WorkerReport(worker=job.worker, setup_s=setup_s, stats=stats, errors=errors,
                              interval_ns=(engine.t_lo, engine.t_hi))
        if len(engine.counters) == 2:
            (ta, a), (tb, b) = engine.counters
            report = replace(report, counters_before=a, counters_after=b, counter_seconds=(tb - ta) / 1e9)
        if engine.holds:
            early = getattr(sync, "report", None)
            if early is not None:
                early(report)
            engine.linger(getattr(sync, "stopped", lambda: False))
        return report
    finally:
        res.close()
