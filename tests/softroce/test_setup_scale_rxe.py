"""Setup at scale on a real rxe device (#33, inside the soft-RoCE guest): 2,000 QPs and 20,000 MRs created,
connected, driven for a moment and destroyed by collie's worker code (``run_job``, as a one-process run calls it).

No wall-clock assertion (the guest is emulated and the machine shared): the run completes without errors, every
verbs object is gone afterwards, the process grows by a generous bound per QP and per MR (measured: about 53 KiB a
QP of send-queue depth 128, mostly rxe's queue mapped into the process, and 8.5 KiB an MR of 4 KiB; see
``bench/engine_setup_scale.py``), and gives most of it back after the teardown. It takes about 12 s in the guest.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs.compat import load
from collie.targets.verbs.job import Timing
from collie.targets.verbs.spec import parse_spec
from collie.targets.verbs.target import plan_jobs
from collie.targets.verbs.worker import run_job
from tests.softroce.conftest import rdma_resources

A, B = Endpoint("a"), Endpoint("b")
QPS, MRS = 1000, 10_000  # per side: 2,000 QPs and 20,000 MRs on the device
KIB_PER_QP, KIB_PER_MR = 160, 32  # three to four times what was measured


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def test_2000_qps_and_20000_mrs_are_set_up_driven_and_destroyed_in_bounded_memory(device: str) -> None:
    flow = Flow(A, B, sizes=(64,), qps=QPS, mrs=MRS, mr_size=4096)
    (job,) = plan_jobs(Workload(flows=(flow,)), parse_spec(device), Timing(warmup=0.0, duration=0.1), False, 1,
                       None, [0])
    job = replace(job, collector=None)
    seen: dict[str, float] = {}

    class Sync:
        def prepared(self, endpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return []

        def ready(self, setup_s: float) -> int:
            seen["setup_s"], seen["rss"] = setup_s, rss_kib()
            seen["objects"] = rdma_resources(device).get("qp", 0)
            return time.monotonic_ns()

    pv = load()
    base = rdma_resources(device)
    rss0 = rss_kib()
    report = run_job(pv, job, Sync())
    rss_after = rss_kib()
    grown = seen["rss"] - rss0
    print(f"\n2,000 QPs + 20,000 MRs: setup {seen['setup_s']:.1f} s, RSS +{grown / 1024:.0f} MiB "
          f"(after teardown +{(rss_after - rss0) / 1024:.0f} MiB)")
    assert report.errors == (), report.errors
    assert sum(s.wrs for s in report.stats) > 0
    assert seen["objects"] >= base.get("qp", 0) + 2 * QPS
    assert grown < 2 * QPS * KIB_PER_QP + 2 * MRS * KIB_PER_MR, grown
    assert rss_after - rss0 < grown / 2, (rss_after - rss0, grown)  # trim_heap gave the MR buffers back
    after = rdma_resources(device)
    assert {k: after.get(k) for k in ("qp", "cq", "mr", "pd")} == {k: base.get(k) for k in ("qp", "cq", "mr", "pd")}
