"""How a run is spread over worker processes and NUMA nodes."""

from __future__ import annotations

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs.job import Timing
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.target import default_warmup, plan_jobs

SPEC = VerbsSpec("rxe0")
T = Timing(warmup=0.1, duration=1.0)


def test_one_worker_drives_every_flow_with_one_process() -> None:
    w = Workload(flows=(Flow(Endpoint("a"), Endpoint("b"), qps=4), Flow(Endpoint("b"), Endpoint("a"), qps=2)))
    jobs = plan_jobs(w, SPEC, T, False, 1, None, [0])
    assert len(jobs) == 1
    assert [(s.flow_index, s.qps) for s in jobs[0].shares] == [(0, 4), (1, 2)]
    assert jobs[0].collector is not None and jobs[0].collector.label == "rxe0/1"


def test_qps_and_mrs_split_over_processes() -> None:
    w = Workload(flows=(Flow(Endpoint("a"), Endpoint("b"), qps=5, mrs=2, processes=3),
                        Flow(Endpoint("a"), Endpoint("b"), qps=2, mrs=4, processes=1)))
    jobs = plan_jobs(w, SPEC, T, True, 1, None, [0])
    assert len(jobs) == 3
    assert [[(s.flow_index, s.qps, s.mrs) for s in j.shares] for j in jobs] == [
        [(0, 2, 1), (1, 2, 4)], [(0, 2, 1)], [(0, 1, 1)]]
    assert [j.collector is not None for j in jobs] == [True, False, False]
    assert len({j.seed for j in jobs}) == 3 and all(j.verify for j in jobs)


def test_numa_placement() -> None:
    w = Workload(flows=(Flow(Endpoint("a", "local"), Endpoint("b", "remote")),))
    share = plan_jobs(w, SPEC, T, False, 1, 1, [0, 1])[0].shares[0]
    assert (share.client_node, share.server_node) == (1, 0)
    # NIC node unknown: local memory is left to the kernel, remote goes away from node 0
    share = plan_jobs(w, SPEC, T, False, 1, None, [0, 1])[0].shares[0]
    assert (share.client_node, share.server_node) == (None, 1)


def test_warmup() -> None:
    assert default_warmup(2.0) == 0.5 and default_warmup(60.0) == 1.0
