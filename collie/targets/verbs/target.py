"""The verbs target: real traffic on a local RDMA device (a NIC or soft-RoCE) through pyverbs.

``--target verbs:DEVICE[:PORT[:GID_INDEX]]``. Every host name of a workload maps onto the one local device:
each flow's client QPs are connected to its server QPs on the same device (loopback through the NIC), and the
device's counters are reported under every host of the workload (they are the same device).

A run: check the workload against the device's limits (:class:`Unsupported` with the first reason), plan the
worker processes (worker ``w`` drives its share of every flow with ``processes > w``: ``qps`` and ``mrs``
split evenly), build and connect resources in each worker, start all workers at one instant, warm up, measure
for ``duration`` seconds, drain, verify data if asked, tear down, and combine the workers' measurements. A flow
with control-path churn (``mr_churn``, ``qp_churn``) gets a churn worker per end besides (see ``churn``);
its ``FlowResult`` carries per kind the achieved rate and the mean and p99 latency of one operation, over both
ends (:func:`~collie.targets.base.with_churn`), and ``last_details.churn`` each end's own.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from collie.collectors.host import HostCollector
from collie.errors import InputError, TargetError
from collie.model.workload import Workload
from collie.targets.base import HostResult, RunResult, TargetInfo, Unsupported, with_churn
from collie.targets.verbs.churn import ChurnReport, churn_jobs
from collie.targets.verbs.compat import Pyverbs, load
from collie.targets.verbs.counters import port_collector
from collie.targets.verbs.device import DeviceFacts, kernel_release, numa_nodes, query
from collie.targets.verbs.job import Share, Timing, WorkerJob, side_of
from collie.targets.verbs.limits import check_workload, rd_atomic_window
from collie.targets.verbs.measure import FlowSummary
from collie.targets.verbs.native import LoopChoice, choose
from collie.targets.verbs.plan import split_qps
from collie.targets.verbs.results import flow_result, host_rates, port_counters, run_errors, summaries
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.workers import Gathered, Job, run_jobs

DEFAULT_HOSTS = ("a", "b")


def default_warmup(duration: float) -> float:
    """Warm-up before the measured interval: a quarter of it, at most one second."""
    return min(1.0, 0.25 * duration)


def plan_jobs(workload: Workload, spec: VerbsSpec, timing: Timing, verify: bool, seed: int,
              nic_node: int | None, nodes: list[int], collector: HostCollector | None = None,
              roles: tuple[str, ...] | None = None, native: bool = False) -> list[WorkerJob]:
    """One :class:`WorkerJob` per worker process (see the module docstring); worker 0 reads the counters with
    ``collector`` (default: every source of the spec's port).

    ``roles``: the workload hosts this host plays in a cross-host run (``None``: all of them, a local run).
    A flow with both ends on ``roles`` gets ``BOTH`` shares as on a local run, one with one end there gets
    ``CLIENT`` or ``SERVER`` shares, one with no end there none. Worker ``w`` holds share ``w`` of every flow
    it touches, so both hosts of a flow split it the same way. With no flow here there is still one (empty)
    job: it reads the counters at the edges of the interval. ``native``: the workers run the native loop.
    """
    reader = collector if collector is not None else port_collector(spec.device, spec.port)
    here = [(i, f, side) for i, f in enumerate(workload.flows) if (side := side_of(f, roles)) is not None]
    workers = max((f.processes for _, f, _ in here), default=1)
    per_worker: list[list[Share]] = [[] for _ in range(workers)]

    def node(memory: str) -> int | None:
        if nic_node is None and memory == "local":
            return None
        local = nic_node if nic_node is not None else nodes[0]
        if memory == "local":
            return local
        others = [n for n in nodes if n != local]
        return others[0] if others else None

    for i, f, side in here:
        qps = split_qps(f.qps, f.processes)
        mrs = split_qps(f.mrs, f.processes) if f.mrs >= f.processes else (1,) * f.processes
        for w in range(f.processes):
            per_worker[w].append(Share(flow_index=i, flow=f, qps=qps[w], mrs=mrs[w], worker=w,
                                       client_node=node(f.client.memory), server_node=node(f.server.memory),
                                       side=side))
    rng = random.Random(seed)
    return [WorkerJob(worker=w, spec=spec, shares=tuple(s), timing=timing, verify=verify,
                      seed=rng.randrange(1 << 30), collector=reader if w == 0 else None, native=native)
            for w, s in enumerate(per_worker)]


@dataclass(frozen=True)
class RunDetails:
    """What a run measured beyond :class:`RunResult` (for tests, benchmarks and the docs)."""

    summaries: tuple[FlowSummary, ...]
    worker_setup_s: tuple[float, ...]
    workers: int
    churn: tuple[ChurnReport, ...] = ()


class VerbsTarget:
    """A local RDMA device driven through pyverbs (see the module docstring).

    Args:
        spec: the device, port and GID index.
        verify: check the data every flow moved (pattern in, pattern out) after each run.
        warmup: seconds of unmeasured traffic before each measured interval (default: ``default_warmup``).
        seed: seeds the PSNs (runs are not otherwise random).
        pyverbs: an already loaded :class:`Pyverbs` (tests); default: import it on ``__enter__``.
        collector: reads the port's counters (tests); default: sysfs, ethtool and netlink of the port.
    """

    def __init__(self, spec: VerbsSpec, *, verify: bool = False, warmup: float | None = None, seed: int = 0,
                 pyverbs: Pyverbs | None = None, collector: HostCollector | None = None, **_: Any) -> None:
        self.spec = spec
        self.collector = collector
        self.verify = verify
        self.warmup = warmup
        self.seed = seed
        self._pv = pyverbs
        self._facts: DeviceFacts | None = None
        self._loop = LoopChoice(False)
        self._runs = 0
        self.last_details: RunDetails | None = None

    def __enter__(self) -> Self:
        if self._pv is None:
            self._pv = load()
        self._facts = query(self._pv, self.spec)
        self._loop = choose(self._pv)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._facts = None

    @property
    def facts(self) -> DeviceFacts:
        if self._facts is None:
            raise TargetError("the verbs target must be entered (used in a with block) before use")
        return self._facts

    def describe(self) -> TargetInfo:
        f = self.facts
        lim = f.limits
        model = "soft-RoCE (rxe)" if f.driver == "rxe" else \
            f"{f.driver or 'RDMA'} NIC vendor {f.vendor_id:#x} part {f.vendor_part_id}"
        details = {
            "device": self.spec.device, "port": str(self.spec.port), "gid_index": str(self.spec.gid_index),
            "gid": f.gid, "numa_node": "" if f.numa_node is None else str(f.numa_node),
            "active_mtu": str(lim.active_mtu), "max_qp": str(lim.max_qp), "max_qp_wr": str(lim.max_qp_wr),
            "max_sge": str(lim.max_sge), "max_cqe": str(lim.max_cqe), "max_mr": str(lim.max_mr),
            "max_inline_data": str(lim.max_inline_data),
            "hosts_share_device": "true",
            "traffic_loop": self._loop.name,
        }
        return TargetInfo(
            name=self.spec.name, kind="verbs", nic_model=model, firmware=f.fw_version, driver=f.driver,
            kernel=kernel_release(), counter_dialect=f.driver, line_rate_bps=f.line_rate_bps,
            msg_rate_pps=0.0,
            hosts=DEFAULT_HOSTS, details=details, max_rd_atomic=rd_atomic_window(lim), atomics=lim.atomics,
        )

    def check(self, workload: Workload) -> None:
        """Raise :class:`Unsupported` with the first reason the device cannot run ``workload``."""
        problems = check_workload(workload, self.facts.limits)
        if problems:
            raise Unsupported(problems[0])

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        """Run ``workload`` on the device; ``repetition`` is ignored (real measurements are not drawn from a seed)."""
        if not duration > 0:
            raise InputError(f"duration {duration} is not a positive number of seconds")
        self.check(workload)
        facts = self.facts
        warmup = default_warmup(duration) if self.warmup is None else self.warmup
        timing = Timing(warmup=warmup, duration=duration)
        self._runs += 1
        jobs: list[Job] = [*plan_jobs(workload, self.spec, timing, self.verify, self.seed * 1_000_003 + self._runs,
                                      facts.numa_node, numa_nodes(), self.collector, native=self._loop.native)]
        jobs += churn_jobs([(i, f, True, True) for i, f in enumerate(workload.flows)], self.spec, warmup, duration)
        gathered = run_jobs(jobs, run_timeout_s=warmup + duration + timing.drain_timeout + 120, pyverbs=self._pv)
        return self._result(workload, duration, gathered)

    def _result(self, workload: Workload, duration: float, g: Gathered) -> RunResult:
        sums = summaries(g.reports, range(len(workload.flows)))
        errors = run_errors(g.reports, sums, self.verify) + [e for c in g.churn for e in c.errors]
        port = port_counters(g.reports, self.facts.driver)
        rates = host_rates(workload, sums, workload.hosts)
        flows = tuple(with_churn(flow_result(f, s), [c.end for c in g.churn if c.flow_index == s.flow])
                      for f, s in zip(workload.flows, sums, strict=True))
        hosts = tuple(HostResult(host=h, tx_bps=rates[h][0], rx_bps=rates[h][1], tx_pps=rates[h][2],
                                 rx_pps=rates[h][3], counters=dict(port.counters), sources=dict(port.sources),
                                 unreadable=dict(port.unreadable))
                      for h in workload.hosts)
        self.last_details = RunDetails(summaries=sums,
                                       worker_setup_s=tuple(r.setup_s for r in g.reports),
                                       workers=len(g.reports), churn=g.churn)
        return RunResult(workload_key=workload.key(), target=self.spec.name, duration_s=duration,
                         setup_s=g.setup_s, flows=flows, hosts=hosts, errors=tuple(errors),
                         engine_bound=self._loop.engine_bound(workload.flows, list(sums)))
