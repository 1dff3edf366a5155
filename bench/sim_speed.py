"""Simulated experiments per second on one core, per built-in profile (target: >= 5,000/s).

Workloads are sampled from a search space (default: workloads/default.toml; ``--space`` another, such as
workloads/paper.toml, to set two spaces side by side) before timing, so the number is the simulator's own cost
(features, model, counters of both hosts), the way a campaign calls it. Time is this process's CPU time, so a
busy shared machine slows the wall clock but not the figure. Prints a table; it asserts nothing.

    PYTHONPATH=. python bench/sim_speed.py [--n 20000] [--seed 0] [--space workloads/paper.toml]
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import numpy as np

from collie.model.space import load_space
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget, builtin_names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="experiments per profile")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--space", default=None, help="space file to sample (default: workloads/default.toml)")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    space = load_space(args.space)
    rng = np.random.default_rng(args.seed)
    workloads = []
    while len(workloads) < args.n:
        point = space.sample(rng)
        if space.is_valid(point):
            workloads.append(space.build(point))
    print(f"{'profile':14s} {'runs':>7s} {'pruned':>7s} {'fired':>7s} {'exp/s':>9s} {'us/exp':>8s}")
    for name in builtin_names():
        target = SimTarget(name, seed=args.seed)
        fresh = copy.deepcopy(workloads)  # no workload's key or features computed for another profile
        done = pruned = fired = 0
        t0 = time.process_time()
        for w in fresh:
            try:
                r = target.run(w, 10.0)
            except Unsupported:
                pruned += 1
                continue
            done += 1
            fired += bool(r.truth)
        dt = time.process_time() - t0
        total = done + pruned
        print(f"{name:14s} {done:7d} {pruned:7d} {fired:7d} {total / dt:9.0f} {dt / total * 1e6:8.1f}")


if __name__ == "__main__":
    main()
