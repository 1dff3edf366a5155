"""Spreading a run over worker processes and gathering their reports.

One job runs in the calling process (the cheapest setup). Several jobs each get a process started with
``fork``: cheap, and safe because the coordinator holds no verbs resources when it forks (the target opens the
device only to query it and closes it again; every worker opens its own context after the fork). Every
worker builds its resources, reports ``ready`` with its setup time, and waits for the common start instant;
the coordinator sends it once all are ready. Every wait is bounded; on any error, timeout or Ctrl-C the
coordinator ends the workers it started (SIGTERM, which a worker turns into an orderly teardown, then SIGKILL
after a grace period) and re-raises.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Final

from collie.errors import TargetError
from collie.targets.base import Unsupported
from collie.targets.verbs.compat import load
from collie.targets.verbs.engine import WorkerReport, run_job
from collie.targets.verbs.job import WorkerJob

SETUP_TIMEOUT_S: Final = 600.0
START_MARGIN_S: Final = 0.05
GRACE_S: Final = 5.0


@dataclass(frozen=True)
class Gathered:
    """The reports of all workers and the run's setup time (until the last worker was ready)."""

    reports: tuple[WorkerReport, ...]
    setup_s: float


class _PipeSync:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def ready(self, setup_s: float) -> int:
        self.conn.send(("ready", setup_s))
        if not self.conn.poll(SETUP_TIMEOUT_S):
            raise TargetError("the coordinator never sent the start signal")
        kind, value = self.conn.recv()
        if kind != "start":
            raise SystemExit(0)
        return int(value)


def _on_term(signum: int, frame: Any) -> None:
    raise SystemExit(143)


def _child(job: WorkerJob, conn: Connection) -> None:
    signal.signal(signal.SIGTERM, _on_term)
    try:
        report = run_job(load(), job, _PipeSync(conn))
        conn.send(("done", report))
    except Unsupported as exc:
        conn.send(("unsupported", str(exc)))
    except TargetError as exc:
        conn.send(("target_error", str(exc)))
    except KeyboardInterrupt:
        conn.send(("error", "interrupted"))
    except Exception as exc:  # a worker must always report, never vanish silently
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _raise(kind: str, msg: str) -> None:
    if kind == "unsupported":
        raise Unsupported(msg)
    raise TargetError(f"a verbs worker failed: {msg}")


def run_jobs(jobs: list[WorkerJob], run_timeout_s: float) -> Gathered:
    """Run every job (see the module docstring) and return their reports in job order."""
    t0 = time.perf_counter()
    if len(jobs) == 1:
        class _Direct:
            setup = 0.0

            def ready(self, setup_s: float) -> int:
                _Direct.setup = time.perf_counter() - t0
                return time.monotonic_ns()

        report = run_job(load(), jobs[0], _Direct())
        return Gathered(reports=(report,), setup_s=_Direct.setup)

    ctx = mp.get_context("fork")
    procs: list[tuple[Any, Connection]] = []
    try:
        for job in jobs:
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_child, args=(job, child), daemon=True)
            p.start()
            child.close()
            procs.append((p, parent))
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        for p, conn in procs:
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                raise TargetError(f"a verbs worker did not finish its setup within {SETUP_TIMEOUT_S:g} s")
            try:
                kind, value = conn.recv()
            except EOFError:
                raise TargetError(f"a verbs worker exited during setup (exit code {p.exitcode})") from None
            if kind != "ready":
                _raise(kind, value)
        setup_s = time.perf_counter() - t0
        start = time.monotonic_ns() + int(START_MARGIN_S * 1e9)
        for _, conn in procs:
            conn.send(("start", start))
        reports = []
        deadline = time.monotonic() + run_timeout_s
        for p, conn in procs:
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                raise TargetError(f"a verbs worker did not report within {run_timeout_s:g} s")
            try:
                kind, value = conn.recv()
            except EOFError:
                raise TargetError(f"a verbs worker died during the run (exit code {p.exitcode})") from None
            if kind != "done":
                _raise(kind, value)
            reports.append(value)
        return Gathered(reports=tuple(reports), setup_s=setup_s)
    finally:
        _stop(procs)


def _stop(procs: list[tuple[Any, Connection]]) -> None:
    for _, conn in procs:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("stop", 0))
    end = time.monotonic() + GRACE_S
    for p, _ in procs:
        p.join(max(0.0, end - time.monotonic()))
    for p, _ in procs:
        if p.is_alive():
            p.terminate()
            p.join(GRACE_S)
        if p.is_alive():
            p.kill()
            p.join(1.0)
    for _, conn in procs:
        conn.close()
