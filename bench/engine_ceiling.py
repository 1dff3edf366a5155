"""The verbs engine's own ceiling, the Python loop and the native loop side by side: collie's real resources and
engine on a fake device whose verbs calls do almost nothing, on this machine. No RDMA device or pyverbs needed.

    python bench/engine_ceiling.py [--seconds S]

Prints WRs/s per worker process for single WRs and for post lists, each loop on its own fake: the Python loop on
``fakeverbs`` (a Python fake: its ``post_send`` walks each chain in Python to queue completions), the native loop
on the native module's fake provider (``cfakeverbs``: the same walk in C, through ``qp->context->ops`` as a real
provider is called). Both fakes move no data here. Each is the closest honest equivalent of a device that costs
nothing: what remains is the loop's own work per WR (posting, signalling, polling, latency samples, the clock
reads), in Python or in C. A run on a real device is engine-bound when the device could go faster than this.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs.compat import Pyverbs
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from collie.targets.verbs.worker import run_job
from tests.unit.targets.verbs import cfakeverbs, fakeverbs


def ceiling(pv: Pyverbs, flow: Flow, native: bool, seconds: float) -> float:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    job = WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(0.2, seconds, 2.0),
                    verify=False, seed=1, native=native)
    (s,) = run_job(pv, job).stats
    return s.wrs / s.seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="measured seconds per case and loop (default 1)")
    args = ap.parse_args()
    fakeverbs.MOVE_DATA = False
    cfakeverbs.move_data(False)
    a, b = Endpoint("a"), Endpoint("b")
    cases = [
        ("single WRs, 1 completion per 100", Flow(a, b, sizes=(64,), sq_depth=128, signal_every=100)),
        ("single WRs, every WR signalled", Flow(a, b, sizes=(64,), sq_depth=128, signal_every=1)),
        ("post lists of 8", Flow(a, b, sizes=(64,), batch=8, sq_depth=128, signal_every=8)),
        ("post lists of 32", Flow(a, b, sizes=(64,), batch=32, sq_depth=128, signal_every=32)),
        ("post lists of 32, 64 QPs", Flow(a, b, sizes=(64,), qps=64, batch=32, sq_depth=128, signal_every=32)),
    ]
    print(f"{'WRs/s per worker process':<36} {'Python loop':>14} {'native loop':>16} {'native / Python':>16}")
    for name, flow in cases:
        py = ceiling(fakeverbs.fake(), flow, False, args.seconds)
        nat = ceiling(cfakeverbs.cfake(), flow, True, args.seconds)
        print(f"{name:<36} {py:>14,.0f} {nat:>16,.0f} {nat / py:>15.0f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
