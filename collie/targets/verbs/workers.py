"""Spreading a run over worker processes and gathering their reports.

One job of a local run runs in the calling process (the cheapest setup). Otherwise every job gets a process
started with ``fork`` (a :class:`WorkerPool`): cheap, and safe because the coordinator holds no verbs resources
when it forks (the target opens the device only to query it and closes it again; every worker opens its own
context after the fork).

The handshake over each worker's pipe has two phases. **prepare**: the worker builds its resources and sends
``("prepared", endpoints)`` (the connection data of its one-sided shares; ``[]`` on a local run); **connect**:
the coordinator sends ``("connect", peers)`` (the other host's endpoints; ``[]`` locally), the worker connects
and sends ``("ready", setup_s)``; **go**: the coordinator sends ``("start", monotonic_ns)``, the worker runs and
sends ``("done", report)`` (a worker holding server ends of cross-host flows sends it as soon as its interval
is over, then keeps those ends alive until ``("stop", 0)``, so the other host's clients can drain). A local
run goes through the same steps with no endpoints; a cross-host session (``session``) lets the peers' data in
between. Every wait is bounded; on any error, timeout or Ctrl-C the
coordinator ends the workers it started (SIGTERM, which a worker turns into an orderly teardown, then SIGKILL
after a grace period) and re-raises. A worker also gets SIGTERM when its coordinator process dies, so a lost
coordinator leaves no traffic running.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Final

from collie.errors import TargetError
from collie.targets.base import Unsupported
from collie.targets.verbs.churn import ChurnJob, ChurnReport, run_churn
from collie.targets.verbs.compat import Pyverbs, load
from collie.targets.verbs.engine import WorkerReport
from collie.targets.verbs.job import WorkerJob
from collie.targets.verbs.worker import run_job

#: What a worker process runs: a data-path job, or a control-path churn job (``churn``).
Job = WorkerJob | ChurnJob

SETUP_TIMEOUT_S: Final = 600.0
START_MARGIN_S: Final = 0.05
GRACE_S: Final = 5.0


@dataclass(frozen=True)
class Gathered:
    """The reports of all data-path workers, the run's setup time (until the last worker was ready) and the
    reports of the churn workers."""

    reports: tuple[WorkerReport, ...]
    setup_s: float
    churn: tuple[ChurnReport, ...] = ()


class _PipeSync:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.sent = False

    def _await(self, want: str) -> Any:
        if not self.conn.poll(SETUP_TIMEOUT_S):
            raise TargetError(f"the coordinator never sent {want} within {SETUP_TIMEOUT_S:g} s")
        kind, value = self.conn.recv()
        if kind != want:
            raise SystemExit(0)
        return value

    def prepared(self, endpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.conn.send(("prepared", endpoints))
        peers: list[dict[str, Any]] = self._await("connect")
        return peers

    def ready(self, setup_s: float) -> int:
        self.conn.send(("ready", setup_s))
        return int(self._await("start"))

    def report(self, report: WorkerReport) -> None:
        """Hand the report over before the worker's teardown (server ends stay alive until ``stop``)."""
        self.conn.send(("done", report))
        self.sent = True

    def stopped(self) -> bool:
        """The coordinator said stop (or went away)."""
        return self.conn.poll(0)


def _on_term(signum: int, frame: Any) -> None:
    raise SystemExit(143)


def _die_with_parent() -> None:
    """Ask Linux to send SIGTERM to this process when its parent dies (best effort; no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _child(job: Job, conn: Connection, pv: Pyverbs | None) -> None:
    signal.signal(signal.SIGTERM, _on_term)
    _die_with_parent()
    sync = _PipeSync(conn)
    try:
        verbs = pv if pv is not None else load()
        report = run_churn(verbs, job, sync) if isinstance(job, ChurnJob) else run_job(verbs, job, sync)
        if not sync.sent:
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


class WorkerPool:
    """One process per job and the coordinator's side of the handshake (see the module docstring).

    Use: :meth:`launch`, :meth:`prepared`, :meth:`connect`, :meth:`go`, :meth:`gather`; :meth:`stop` at any
    time (idempotent) ends every process still running.

    Args:
        jobs: one per worker (a churn job's worker goes through the same handshake, with no endpoints).
        pyverbs: handed to the forked workers (tests); default: each worker loads pyverbs.
    """

    def __init__(self, jobs: Sequence[Job], pyverbs: Pyverbs | None = None) -> None:
        self.jobs = jobs
        self._pv = pyverbs
        self._procs: list[tuple[Any, Connection]] = []

    def launch(self) -> None:
        ctx = mp.get_context("fork")
        for job in self.jobs:
            parent, child = ctx.Pipe()
            name = f"churn-{job.flow_index}-{job.side}" if isinstance(job, ChurnJob) else f"worker-{job.worker}"
            p = ctx.Process(target=_child, args=(job, child, self._pv), daemon=True, name=f"collie-verbs-{name}")
            p.start()
            child.close()
            self._procs.append((p, parent))

    def _collect(self, want: str, timeout_s: float, phase: str) -> list[Any]:
        out = []
        deadline = time.monotonic() + timeout_s
        for p, conn in self._procs:
            if not conn.poll(max(0.0, deadline - time.monotonic())):
                raise TargetError(f"a verbs worker did not finish its {phase} within {timeout_s:g} s")
            try:
                kind, value = conn.recv()
            except EOFError:
                raise TargetError(f"a verbs worker exited during its {phase} (exit code {p.exitcode})") from None
            if kind != want:
                _raise(kind, value)
            out.append(value)
        return out

    def prepared(self, timeout_s: float = SETUP_TIMEOUT_S) -> list[list[dict[str, Any]]]:
        """Every worker's endpoints once all have built their resources."""
        return self._collect("prepared", timeout_s, "setup")

    def connect(self, peers: list[dict[str, Any]], timeout_s: float = SETUP_TIMEOUT_S) -> list[float]:
        """Hand ``peers`` to every worker and wait until all are connected; returns their setup seconds."""
        for _, conn in self._procs:
            conn.send(("connect", peers))
        return [float(v) for v in self._collect("ready", timeout_s, "connection")]

    def go(self, start_ns: int) -> None:
        """Start every worker's warm-up at ``start_ns`` (``CLOCK_MONOTONIC``)."""
        for _, conn in self._procs:
            conn.send(("start", start_ns))

    def gather(self, timeout_s: float) -> list[WorkerReport | ChurnReport]:
        """Every worker's report, in job order."""
        reports: list[WorkerReport | ChurnReport] = self._collect("done", timeout_s, "run")
        return reports

    def stop(self, grace_s: float = GRACE_S) -> None:
        """End every worker (idempotent): ``stop`` to those waiting, SIGTERM after ``grace_s``, then SIGKILL."""
        procs, self._procs = self._procs, []
        for _, conn in procs:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop", 0))
        end = time.monotonic() + grace_s
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


def split(reports: list[WorkerReport | ChurnReport]) -> tuple[list[WorkerReport], list[ChurnReport]]:
    """The data-path workers' reports and the churn workers', each in job order."""
    return ([r for r in reports if isinstance(r, WorkerReport)], [r for r in reports if isinstance(r, ChurnReport)])


def run_jobs(jobs: list[Job], run_timeout_s: float, pyverbs: Pyverbs | None = None) -> Gathered:
    """Run every job of a local run (see the module docstring) and return their reports in job order
    (``pyverbs``: handed to the workers, tests)."""
    t0 = time.perf_counter()
    if len(jobs) == 1 and isinstance(jobs[0], WorkerJob):
        class _Direct:
            setup = 0.0

            def prepared(self, endpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
                return []

            def ready(self, setup_s: float) -> int:
                _Direct.setup = time.perf_counter() - t0
                return time.monotonic_ns()

        report = run_job(pyverbs if pyverbs is not None else load(), jobs[0], _Direct())
        return Gathered(reports=(report,), setup_s=_Direct.setup)

    pool = WorkerPool(jobs, pyverbs)
    try:
        pool.launch()
        pool.prepared()
        pool.connect([])
        setup_s = time.perf_counter() - t0
        pool.go(time.monotonic_ns() + int(START_MARGIN_S * 1e9))
        reports, churn = split(pool.gather(run_timeout_s))
        return Gathered(reports=tuple(reports), setup_s=setup_s, churn=tuple(churn))
    finally:
        pool.stop()
