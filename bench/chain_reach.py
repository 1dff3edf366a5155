"""How many experiments one isolated annealing chain needs to reach each rare planted anomaly.

A diagnostic for the annealer's proposal and acceptance, apart from the campaign: one chain climbs one
diagnostic counter, with every *other* planted anomaly excluded (as if its minimal feature set were known),
and the bench records the experiment at which the target anomaly first fires. Ground truth is read here only
to score and to exclude, never by the strategy's decisions beyond the exclusion predicate. Asserts nothing.

    python bench/chain_reach.py [--profile cx6-200g-amd] [--seeds 8] [--cap 600] [--screen 24] [--repair 0.9]
                                [--screen-moves 2]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from collie import calibrate
from collie.model.features import features, point_encoder
from collie.model.space import load_space
from collie.oracle import Thresholds
from collie.strategies.anneal import Anneal
from collie.strategies.base import Outcome
from collie.targets.sim import SimTarget

#: Rare anomalies of the AMD-host profile and the diagnostic counter their precursor feeds.
TARGETS = {
    "f04-bi-read-sge": "diag:sim_pkt_pipeline_stall",
    "f05-rc-send-batch": "diag:sim_rx_wqe_cache_miss",
    "f06-rc-send-sge": "diag:sim_rx_wqe_cache_miss",
    "f07-write-many-mr": "diag:sim_mtt_cache_miss",
    "f08-write-many-qp": "diag:sim_qpc_cache_miss",
    "f10-bi-write-mix": "diag:sim_pkt_pipeline_stall",
}


def reach(profile: str, quirk: str, objective: str, seed: int, cap: int, options: dict[str, Any]) -> int | None:
    space = load_space()
    target = SimTarget(profile, seed=seed)
    info = target.describe()
    oracle = calibrate.calibrated_oracle(lambda w: target.run(w, 5.0), calibrate.catalog_of(info), info,
                                         Thresholds())
    chain = Anneal(space, seed, encoder=point_encoder(space.build), diagnostic=False, warmup=0, **options)
    chain.objectives = [objective]
    others = [q for q in target.profile.active_quirks if q.id != quirk]

    def excluded(point: dict[str, Any]) -> bool:
        f = features(space.build(point))
        return any(q.fires(f) for q in others)

    chain.set_exclusion(excluded)
    for i in range(cap):
        point = chain.ask()
        workload = space.build(point)
        result = target.run(workload, 5.0)
        if quirk in result.truth:
            return i + 1
        verdict = oracle.judge(result, workload)
        chain.tell(point, Outcome(verdict.metrics, verdict.anomalous))
        if verdict.anomalous:
            chain.restart()
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="cx6-200g-amd")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--cap", type=int, default=600)
    ap.add_argument("--screen", type=int, default=24, help="candidates the screened chain ranks per step")
    ap.add_argument("--repair", type=float, default=0.9, help="chance an illegal mutation is repaired")
    ap.add_argument("--screen-moves", type=int, default=2, help="most dimensions a screened candidate changes")
    args = ap.parse_args()
    repaired = {"patience": 40, "screen": args.screen, "repair": args.repair}
    variants = {"plain": {"patience": 40}, f"screened {args.screen}": {"patience": 40, "screen": args.screen},
                f"screened {args.screen} + repair {args.repair}": repaired,
                f"... + {args.screen_moves} moves": {**repaired, "screen_moves": args.screen_moves}}
    active = {q.id for q in SimTarget(args.profile).profile.active_quirks}
    if not active & TARGETS.keys():
        raise SystemExit(f"sim:{args.profile} has none of the rare anomalies this bench chases ({', '.join(TARGETS)})")
    print(f"## one chain per anomaly on sim:{args.profile}, others excluded, cap {args.cap}, {args.seeds} seeds")
    print("| anomaly | objective | " + " | ".join(f"{v}: reached, median experiments" for v in variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for quirk, objective in TARGETS.items():
        if quirk not in active:
            continue
        cells = []
        for options in variants.values():
            hits = [r for s in range(args.seeds) if (r := reach(args.profile, quirk, objective, s, args.cap, options))]
            cells.append(f"{len(hits)}/{args.seeds}, {int(statistics.median(hits)) if hits else '-'}")
        print(f"| {quirk} | {objective} | " + " | ".join(cells) + " |", flush=True)

if __name__ == "__main__":
    main()
