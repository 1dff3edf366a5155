"""The homogeneity of collective patterns on a simulated fleet, and what one injected fault does to them.

For each pattern kind on a fleet of N hosts (``fleet8-cx6``'s hosts and NIC, N of them), runs the pattern on the
fault-free fleet and with one host's port at half speed, and prints per run: busbw, the links' median and
spread ((median - slowest) / median), the per-rank send figures' spread, and what the straggler verdict names.

    PYTHONPATH=. python bench/collective_homogeneity.py --hosts 16 --seeds 5

Seeds vary the simulator's noise (2 % on this profile) and the faulty host.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import replace

from collie import calibrate
from collie.model.collective import collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.oracle import Thresholds
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import Fault, FaultKind, host_names

KINDS = (PatternKind.RING_ALLREDUCE, PatternKind.ALL_TO_ALL, PatternKind.PERMUTATION, PatternKind.PAIRWISE)
FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--size", type=int, default=64 << 20, help="bytes per rank")
    args = ap.parse_args()
    base = replace(load_profile("fleet8-cx6"), hosts=host_names(args.hosts))
    clean = SimTarget(base, seed=0)
    info = clean.describe()
    oracle = calibrate.calibrated_oracle(lambda w: clean.run(w, 1.0), calibrate.catalog_of(info), info, Thresholds())
    print(f"fleet of {args.hosts} hosts ({base.nic.model}), {args.seeds} seeds, {args.size >> 20} MiB per rank")
    print(f"{'pattern':<15} {'fault':<18} {'busbw GB/s':>10} {'link med':>9} {'spread':>7} {'rank spread':>11} "
          f"{'named right':>11} {'false':>6} {'ms/run':>7}")
    for kind in KINDS:
        for faulty in (False, True):
            busbw, med, spread, rspread, right, false, took = [], [], [], [], 0, 0, []
            for seed in range(args.seeds):
                bad = random.Random(seed).choice(base.hosts)
                faults = (Fault(bad, FaultKind.PORT_SPEED, 0.5),) if faulty else ()
                target = SimTarget(replace(base, faults=faults), seed=seed)
                p = Pattern(kind, base.hosts, args.size, flow=FLOW)
                w = Workload.of_pattern(p)
                t0 = time.process_time()
                run = target.run(w, 1.0)
                took.append(time.process_time() - t0)
                c = collective(p, run.flows)
                busbw.append(c.busbw_gbs)
                med.append(c.median_link_gbs)
                spread.append(c.spread)
                sends = [r.send_gbs for r in c.ranks]
                rspread.append((max(sends) - min(sends)) / statistics.median(sends))
                named = {s.host for s in oracle.judge(run, w).symptoms if s.kind == "straggler"}
                right += faulty and bad in named
                false += len(named - {bad}) if faulty else len(named)
            label = "one port at 0.5" if faulty else "none"
            print(f"{kind.value:<15} {label:<18} {statistics.mean(busbw):>10.2f} {statistics.mean(med):>9.2f} "
                  f"{max(spread):>7.1%} {max(rspread):>11.1%} {f'{right}/{args.seeds}' if faulty else '-':>11} "
                  f"{false:>6} {1e3 * statistics.mean(took):>7.1f}")


if __name__ == "__main__":
    main()
