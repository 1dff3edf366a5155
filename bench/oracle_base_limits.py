"""How often the oracle calls the simulator's base-model limits anomalous, with and without the per-flow bounds.

Samples points of the default search space (workloads/default.toml) on each planted profile, keeps the runs whose
ground truth names no planted quirk, and judges each twice: with the oracle's full ceilings and with the
WRITE-made ceilings alone (a QP's own rate, the READ round trip, window and atomic rate left out, as in a campaign
calibrated before they were kept). Prints the share judged anomalous per base-model label of the ground truth
(``base:*``; a run counts under each of its labels, ``none`` without any); it asserts nothing.

    PYTHONPATH=. python bench/oracle_base_limits.py [--n 2000] [--seed 7]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter

import numpy as np

from collie.calibrate import calibrate_target
from collie.model.space import load_space
from collie.oracle import Oracle, Thresholds
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget
from collie.targets.sim.model import BASE_PREFIX

PROFILES = ("cx6-200g", "p2100g-100g")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="runs outside planted quirks per profile")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    space = load_space()
    print(f"{'profile':16s} {'label':18s} {'runs':>6s} {'WRITE ceilings':>15s} {'with flow bounds':>17s}")
    for profile in PROFILES:
        target = SimTarget(profile, seed=args.seed)
        now = calibrate_target(target, Thresholds(), seconds=1.0).oracle
        c = now.ceilings
        bare = dataclasses.replace(c, read_rtt_us={}, max_rd_atomic=0, atomic_ops=0.0, qp_wr_us=0.0, qp_doorbell_us=0.0)
        before = Oracle(now.catalog, bare, now.thresholds, now.baseline)
        rng = np.random.default_rng(args.seed)
        runs: Counter[str] = Counter()
        old: Counter[str] = Counter()
        new: Counter[str] = Counter()
        while runs["all"] < args.n:
            workload = space.build(space.sample(rng))
            try:
                result = target.run(workload, 1.0)
            except Unsupported:
                continue
            if any(not t.startswith(BASE_PREFIX) for t in result.truth):
                continue  # a planted quirk fired: not what this measures
            for label in ("all", *(sorted(set(result.truth)) or ["none"])):
                runs[label] += 1
                old[label] += before.judge(result, workload).anomalous
                new[label] += now.judge(result, workload).anomalous
        for label in sorted(runs, key=lambda k: (k == "all", k)):
            print(f"{'sim:' + profile:16s} {label:18s} {runs[label]:6d} {old[label] / runs[label]:15.1%} "
                  f"{new[label] / runs[label]:17.1%}")


if __name__ == "__main__":
    main()
