"""One host's side of a cross-host verbs run: :class:`VerbsSession` (a ``HostSession``, see docs/remote.md).

Two agents on two hosts run one workload together: each plays some of its roles (``RunPlan.roles``). A host
holds, for every flow, the ends on its roles (``plan_jobs`` with ``roles``): a flow with both ends here runs as
on a local verbs target (client QP ``i`` connected to server QP ``i`` on this device), a flow with one end here
gets one-sided shares whose QPs are connected to the other host's.

Steps (the handshake with the worker processes follows them, see ``workers``):

* ``prepare``: check the workload against the device, fork the workers, which build their QPs, MRs and CQs
  and return their endpoints (``endpoints.EndpointData`` as dicts: flow, worker share, QP index, side, QPN,
  PSN, GID, the server MRs' rkey/address, the UD Q_Key);
* ``connect``: hand every worker the peers' endpoints; RC/UC QPs go INIT -> RTR -> RTS against the remote
  QPN/PSN/GID, clients build their work requests (remote rkeys and addresses, UD address handles);
* ``start(at)``: the wall-clock instant ``at`` becomes a ``CLOCK_MONOTONIC`` instant of this host; every worker
  starts its warm-up then, so the hosts' measured intervals line up as well as their clocks do;
* ``finish``: gather the reports. The client end measures a flow (its FlowResult); a server end keeps its
  QPs alive (receive queues full for SEND): its worker reports as soon as the interval is over and keeps
  them alive until ``abort`` (at most :data:`LINGER_S`), so the client on the other host can drain. Worker 0
  reads the port's counters (``HostCollector`` of the spec's device and port, ``netdev`` for ``ethtool -S``) at
  the edges of this host's measured interval. Data is verified where it lands (``verify``): pushes at the
  server, READs and atomics (their counters read back over the QP) at the client.
* control-path churn: every churning flow end on this host gets a churn worker (see ``churn``), started with
  the data-path workers; ``finish`` reports each end's churn in ``HostPart.churn``, and its errors.
* ``abort``: end every worker process (SIGTERM: an orderly teardown that frees every verbs object; SIGKILL
  after a grace period), idempotent; the agent calls it on stdin EOF, so a lost controller leaves no traffic.

A UD flow (which may drop) is measured by what arrived: across hosts the server's host reports it too, from its
receive completions, and the controller takes the rates from that report and the latencies from the client's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from collie.collectors.host import HostCollector
from collie.errors import TargetError
from collie.targets.base import HostResult, Unsupported
from collie.targets.session import HostPart, RunPlan
from collie.targets.verbs.churn import ChurnReport, churn_jobs
from collie.targets.verbs.compat import Pyverbs, load
from collie.targets.verbs.device import DeviceFacts, numa_nodes, query
from collie.targets.verbs.engine import WorkerReport, checks_data
from collie.targets.verbs.job import Timing, WorkerJob
from collie.targets.verbs.limits import check_workload
from collie.targets.verbs.measure import FlowSummary
from collie.targets.verbs.native import LoopChoice, choose
from collie.targets.verbs.results import flow_result, host_rates, port_counters, run_errors, summaries
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.target import plan_jobs
from collie.targets.verbs.workers import WorkerPool, split

#: Most seconds a worker holding server ends keeps them alive after the deadline, waiting for ``abort`` (the
#: client on the other host drains meanwhile): the drain's own bound.
LINGER_S: Final = 10.0
#: Seconds of grace for workers to leave on their own when aborted (those holding server ends do at once; those
#: in the middle of traffic read no pipe), before SIGTERM.
ABORT_GRACE_S: Final = 1.0
#: Seconds added to the expected run time before ``finish`` gives up on a worker.
FINISH_SLACK_S: Final = 60.0


class Phase(Enum):
    """Where a session is in its run."""

    IDLE = "idle"
    PREPARED = "prepared"
    CONNECTED = "connected"
    STARTED = "started"
    FINISHED = "finished"


@dataclass(frozen=True)
class SessionDetails:
    """What a session's last run measured beyond :class:`HostPart` (tests, benchmarks).

    Attributes:
        summaries: one per flow with an end on this host (client ends' rates; every end's errors and
            verification: ``verified`` is True when this host checked the flow's data and found it intact).
        checked: indices of the flows whose data this host verifies.
        workers: worker processes of this host (data path).
        churn: the churn workers' reports, one per churning flow end on this host.
    """

    summaries: tuple[FlowSummary, ...]
    checked: tuple[int, ...]
    workers: int
    churn: tuple[ChurnReport, ...] = ()


class VerbsSession:
    """One host's side of a cross-host verbs run (see the module docstring).

    Args:
        spec: the device, port and GID index.
        netdev: the netdev whose ``ethtool -S`` counters belong to the port (``None``: found from sysfs).
        seed: seeds the PSNs.
        verify: check the data every flow moved.
        pyverbs: an already loaded :class:`Pyverbs` handed to the workers (tests); default: load it.
        collector: reads the port's counters (tests); default: the spec's device and port with ``netdev``.
    """

    def __init__(self, spec: VerbsSpec, *, netdev: str | None = None, seed: int = 0, verify: bool = False,
                 pyverbs: Pyverbs | None = None, collector: HostCollector | None = None) -> None:
        self.spec = spec
        self.netdev = netdev
        self.seed = seed
        self.verify = verify
        self._pv = pyverbs
        self.collector = collector if collector is not None else \
            HostCollector(self.spec.device, self.spec.port, netdev=netdev)
        self._facts: DeviceFacts | None = None
        self._loop = LoopChoice(False)
        self._phase = Phase.IDLE
        self._pool: WorkerPool | None = None
        self._plan: RunPlan | None = None
        self._jobs: list[WorkerJob] = []
        self._setup_s = 0.0
        self._start_ns = 0
        self._wall_minus_mono = 0.0
        self.last_details: SessionDetails | None = None

    # ---- the HostSession protocol ------------------------------------------------------------------
    def prepare(self, plan: RunPlan) -> list[dict[str, Any]]:
        """Build this host's ends of the workload and return their endpoints (see the module docstring).

        Raises:
            Unsupported: the device cannot run the workload (the first reason).
            TargetError: a role is not a host of the workload, timing is not positive, the device cannot be
                opened, or a worker failed.
        """
        self.abort()
        t0 = time.perf_counter()
        w = plan.workload
        unknown = [r for r in plan.roles if r not in w.hosts]
        if not plan.roles or unknown:
            raise TargetError(f"roles {list(plan.roles)} must name hosts of the workload ({', '.join(w.hosts)})")
        if not plan.duration > 0 or not plan.warmup >= 0:
            raise TargetError(f"warmup {plan.warmup} and duration {plan.duration} must be >= 0 and > 0 seconds")
        if self._facts is None:
            if self._pv is None:
                self._pv = load()
            self._facts = query(self._pv, self.spec)
            self._loop = choose(self._pv)
        problems = check_workload(w, self._facts.limits, plan.roles)
        if problems:
            raise Unsupported(problems[0])
        one_sided = any((f.client.host in plan.roles) != (f.server.host in plan.roles) for f in w.flows)
        timing = Timing(warmup=plan.warmup, duration=plan.duration, linger=LINGER_S if one_sided else 0.0)
        self._jobs = plan_jobs(w, self.spec, timing, self.verify, self.seed * 1_000_003 + plan.run,
                               self._facts.numa_node, numa_nodes(), self.collector, roles=plan.roles,
                               native=self._loop.native)
        churn = churn_jobs([(i, f, f.client.host in plan.roles, f.server.host in plan.roles)
                            for i, f in enumerate(w.flows)], self.spec, plan.warmup, plan.duration)
        self._plan = plan
        self._pool = WorkerPool([*self._jobs, *churn], pyverbs=self._pv)
        try:
            self._pool.launch()
            endpoints = [e for per_worker in self._pool.prepared() for e in per_worker]
        except BaseException:
            self.abort()
            raise
        self._setup_s = time.perf_counter() - t0
        self._phase = Phase.PREPARED
        return endpoints

    def connect(self, peers: Sequence[Mapping[str, Any]]) -> None:
        """Connect this host's ends to the peers' (entries this host does not face are ignored)."""
        pool = self._expect(Phase.PREPARED, "connect")
        t0 = time.perf_counter()
        try:
            pool.connect([dict(p) for p in peers])
        except BaseException:
            self.abort()
            raise
        self._setup_s += time.perf_counter() - t0
        self._phase = Phase.CONNECTED

    def start(self, at: float) -> None:
        """Start every worker's warm-up at wall-clock ``at`` (converted to this host's monotonic clock)."""
        pool = self._expect(Phase.CONNECTED, "start")
        mono, wall = time.monotonic_ns(), time.time()
        self._wall_minus_mono = wall - mono / 1e9
        self._start_ns = mono + round((at - wall) * 1e9)
        pool.go(self._start_ns)
        self._phase = Phase.STARTED

    def finish(self) -> HostPart:
        """Wait for the workers' reports and return what this host measured."""
        pool = self._expect(Phase.STARTED, "finish")
        plan = self._plan
        assert plan is not None
        wait = max(0.0, (self._start_ns - time.monotonic_ns()) / 1e9)
        t = self._jobs[0].timing
        try:
            reports, churn = split(pool.gather(wait + t.warmup + t.duration + t.drain_timeout + FINISH_SLACK_S))
        except BaseException:
            self.abort()
            raise
        if t.linger:  # server ends stay up until abort, for the other host's clients
            self._phase = Phase.FINISHED
        else:
            self.abort()
        return self._part(plan, reports, churn)

    def abort(self) -> None:
        """Stop every worker process of this session and free everything (idempotent)."""
        pool, self._pool = self._pool, None
        self._phase = Phase.IDLE
        if pool is not None:
            pool.stop(grace_s=ABORT_GRACE_S)

    # ---- helpers -----------------------------------------------------------------------------------
    def _expect(self, phase: Phase, step: str) -> WorkerPool:
        if self._phase is not phase or self._pool is None:
            raise TargetError(f"verbs session: {step} needs a session that is {phase.value}, this one is "
                              f"{self._phase.value}")
        return self._pool

    def _part(self, plan: RunPlan, reports: list[WorkerReport], churn: list[ChurnReport]) -> HostPart:
        w, roles = plan.workload, plan.roles
        shares = [s for job in self._jobs for s in job.shares]
        here = sorted({s.flow_index for s in shares})
        checked = sorted({s.flow_index for s in shares if checks_data(s)})
        sums = summaries(reports, here)
        clients = [s for s in sums if w.flows[s.flow].client.host in roles]
        measured = [s for s in sums if s in clients or w.flows[s.flow].transport == "UD"]  # UD: what arrived
        errors = run_errors(reports, sums, self.verify, checked) + [e for c in churn for e in c.errors]
        port = port_counters(reports, self._facts.driver if self._facts else "")
        rates = host_rates(w, measured, roles)
        hosts = tuple(HostResult(host=r, tx_bps=rates[r][0], rx_bps=rates[r][1], tx_pps=rates[r][2],
                                 rx_pps=rates[r][3], counters=dict(port.counters), sources=dict(port.sources),
                                 unreadable=dict(port.unreadable))
                      for r in roles)
        lo, hi = reports[0].interval_ns if reports else (0, 0)
        self.last_details = SessionDetails(summaries=sums, checked=tuple(checked), workers=len(reports),
                                           churn=tuple(churn))
        return HostPart(
            hosts=hosts, flows=tuple(flow_result(w.flows[s.flow], s) for s in measured),
            setup_s=self._setup_s,
            errors=tuple(errors), engine_bound=self._loop.engine_bound(w.flows, clients),
            interval=(lo / 1e9 + self._wall_minus_mono, hi / 1e9 + self._wall_minus_mono),
            churn=tuple(c.end for c in churn),
        )
