"""The verbs engine's own ceiling: collie's real resources and traffic loop on a fake device whose verbs calls
do (almost) nothing, natively on this machine. No RDMA device or pyverbs needed.

    python bench/engine_ceiling.py

Prints WRs/s per worker process for single WRs and for post lists. The fake walks each chain in Python to
queue completions, which a real provider does in C, so these are lower bounds of what the engine can drive;
a run on a real device is engine-bound when the device could go faster than this.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs.engine import run_job
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from tests.unit.targets.verbs import fakeverbs


def ceiling(flow: Flow, seconds: float = 1.0) -> float:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    job = WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(0.2, seconds, 2.0),
                    verify=False, seed=1)
    (s,) = run_job(fakeverbs.fake(), job).stats
    return s.wrs / s.seconds


def main() -> int:
    fakeverbs.MOVE_DATA = False
    a, b = Endpoint("a"), Endpoint("b")
    cases = [
        ("single WRs, 1 completion per 100", Flow(a, b, sizes=(64,), sq_depth=128, signal_every=100)),
        ("single WRs, every WR signalled", Flow(a, b, sizes=(64,), sq_depth=128, signal_every=1)),
        ("post lists of 8", Flow(a, b, sizes=(64,), batch=8, sq_depth=128, signal_every=8)),
        ("post lists of 32", Flow(a, b, sizes=(64,), batch=32, sq_depth=128, signal_every=32)),
        ("post lists of 32, 64 QPs", Flow(a, b, sizes=(64,), qps=64, batch=32, sq_depth=128, signal_every=32)),
    ]
    for name, flow in cases:
        print(f"{name:<36} {ceiling(flow):>12,.0f} WRs/s per worker process", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
