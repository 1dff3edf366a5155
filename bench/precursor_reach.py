"""How much a planted anomaly's diagnostic counters can tell a search, and how rare the anomaly is.

A diagnostic of the simulated subsystem beside ``chain_reach.py``: per planted anomaly of a profile, over
uniform random points of the default space,

* ``volume``: the share of points where it fires (what random search has to go on);
* ``1 away``: the share that break exactly one of its conditions;
* ``lift at 1 away``: the median relative rise of its first diagnostic counter, as the oracle reports it
  (per message or per packet), that its precursor adds at a point one condition away, measured against the
  same subsystem without it; the simulator's noise is 2 % of a counter, so a lift of a few percent is a signal
  a chain cannot follow;
* ``1 away in top 5 %``: the share of one-away points among the 5 % of points with the highest value of that
  counter (with every planted anomaly active), against ``1 away``: climbing the counter leads toward the
  anomaly only when this is well above it.

Ground truth is read here to score, never by a strategy. Asserts nothing.

    python bench/precursor_reach.py [--profile cx6-200g-amd] [--points 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np

from collie import calibrate
from collie.model.features import features
from collie.model.space import load_space
from collie.oracle import Oracle, Thresholds
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget
from collie.targets.sim.quirks import Quirk

#: one-away points per anomaly whose lift is measured (two more simulator runs each)
_LIFT_POINTS = 40


def _oracle(target: SimTarget) -> Oracle:
    info = target.describe()
    return calibrate.calibrated_oracle(lambda w: target.run(w, 5.0), calibrate.catalog_of(info), info,
                                       Thresholds())


def _metric(oracle: Oracle, target: SimTarget, workload: Any, counter: str) -> float:
    return float(oracle.judge(target.run(workload, 5.0), workload).metrics.get(f"diag:{counter}", 0.0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="cx6-200g-amd")
    ap.add_argument("--points", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    space = load_space()
    full = SimTarget(args.profile, seed=args.seed)
    quirks: tuple[Quirk, ...] = full.profile.active_quirks
    oracle = _oracle(full)
    bare = SimTarget(full.profile.with_quirks(()), seed=args.seed)
    alone = {q.id: SimTarget(full.profile.with_quirks((q,)), seed=args.seed) for q in quirks}
    rng = np.random.default_rng(args.seed)
    misses: dict[str, list[int]] = {q.id: [] for q in quirks}
    values: dict[str, list[float]] = {q.id: [] for q in quirks}
    lifts: dict[str, list[float]] = {q.id: [] for q in quirks}
    unsupported = 0
    for _ in range(args.points):
        workload = space.build(space.sample(rng))
        f = features(workload)
        try:
            metrics = oracle.judge(full.run(workload, 5.0), workload).metrics
        except Unsupported:  # the profile cannot run it (no GPU): a campaign records it so, and so do we
            unsupported += 1
            continue
        for q in quirks:
            k = sum(not c.holds(f) for c in q.when)
            counter = q.diagnostics[0]
            misses[q.id].append(k)
            values[q.id].append(float(metrics.get(f"diag:{counter}", 0.0)))
            if k == 1 and len(lifts[q.id]) < _LIFT_POINTS:
                base = _metric(oracle, bare, workload, counter)
                lifts[q.id].append(_metric(oracle, alone[q.id], workload, counter) / max(base, 1e-12) - 1.0)
    print(f"## sim:{args.profile}: {args.points} uniform random points of the default space, seed {args.seed}"
          f" ({unsupported} the profile cannot run left out)")
    print("| anomaly | counter | volume | 1 away | lift at 1 away (median) | 1 away in top 5 % of the counter |")
    print("|---|---|---|---|---|---|")
    for q in quirks:
        k = np.array(misses[q.id])
        v = np.array(values[q.id])
        top = k[v >= np.quantile(v, 0.95)]
        lift = f"{statistics.median(lifts[q.id]):+.0%}" if lifts[q.id] else "-"
        print(f"| #{q.anomaly} {q.id} | {q.diagnostics[0]} | {np.mean(k == 0):.5f} | {np.mean(k == 1):.4f} | "
              f"{lift} | {np.mean(top == 1):.4f} |", flush=True)


if __name__ == "__main__":
    main()
