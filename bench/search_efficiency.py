"""Search efficiency on the simulator: distinct planted anomalies found versus experiments, per strategy.

Scored outside the search from the simulator's ground truth (``RunResult.truth`` of runs the oracle called
anomalous), which no strategy, oracle or minimizer reads. Anomalies of the base model's own limits (``base:*``
labels) are counted apart ("base-model finds") and left out of the MFS precision and recall. Prints one table
per profile; asserts nothing.

    python bench/search_efficiency.py [--profile sim:cx6-200g-amd] [--budget 1500] [--seeds 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from collie.campaign import Campaign
from collie.events import AnomalyFound, Event, MfsFinished, TrialFinished
from collie.model.features import features
from collie.model.space import load_space
from collie.preset import Preset, load_preset
from collie.storage.campaign import CampaignConfig, CampaignStore
from collie.targets.registry import open_target, parse_target
from collie.targets.sim import SimTarget
from collie.targets.sim.model import BASE_PREFIX


def variants() -> dict[str, Preset]:
    full = load_preset("collie")
    return {
        "random": load_preset("random"),
        "bayes": load_preset("bayes"),
        "anneal-throughput": replace(full, strategy_options={**full.strategy_options, "diagnostic": False},
                                     minimize=None, exclude_known=False),
        "anneal+diag": replace(full, minimize=None, exclude_known=False),
        "anneal+diag+MFS": full,
        # the same without the surrogate's screening and repaired moves: what those two add
        "anneal+diag+MFS, plain moves": replace(full, strategy_options={**full.strategy_options, "screen": 0,
                                                                         "repair": 0.0}),
    }


def run_one(profile: str, preset: Preset, seed: int, budget: int,
            watch: Callable[[Campaign], None] | None = None) -> dict[str, Any]:
    """One campaign; ``first`` maps each planted anomaly found to the experiment count it was found at.
    ``watch`` is called with the campaign before it runs (diagnostics may wrap its strategy or listener)."""
    first: dict[str, int] = {}
    base: set[str] = set()  # saved anomalies whose last probe showed a base-model limit and no planted one
    base_cost = [0]  # experiments that confirmed, minimized and finished those

    last_probe: list[tuple[str, ...]] = [()]

    def listen(e: Event) -> None:
        # A planted anomaly counts as found when a run the oracle called anomalous fired it alone (when two
        # fire at once, one hides the other): a search trial, or the final confirmation of a minimized case,
        # credited when the campaign records that anomaly. Other minimizer probes do not count. The base
        # model's own limits (``base:*`` labels: READ window, atomic rate, RNR, partial lines) are physics,
        # not planted: they are counted apart.
        if isinstance(e, TrialFinished) and e.result is not None and e.verdict is not None \
                and e.verdict.anomalous:
            planted = _planted(e.result.truth)
            if e.phase in ("explore", "confirm") and len(planted) == 1:
                first.setdefault(planted[0], e.experiments)
            # what an anomaly saved next showed: its last minimizer probe, or its find (presets that do not
            # minimize save what they found)
            last_probe[0] = e.result.truth
        if isinstance(e, AnomalyFound):
            planted = _planted(last_probe[0])
            if len(planted) == 1:
                first.setdefault(planted[0], e.experiments)
            elif not planted and last_probe[0]:
                base.add(e.anomaly_id)
                base_cost[0] += e.minimize_experiments
        if isinstance(e, MfsFinished) and e.anomaly_id in base:
            base_cost[0] += e.experiments

    with tempfile.TemporaryDirectory() as d:
        store = CampaignStore.create(Path(d) / "c", CampaignConfig(target=profile, seed=seed, budget=budget,
                                                                   preset=preset.name, strategy=preset.strategy))
        c = Campaign(targets=[open_target(parse_target(profile), seed=seed)], space=load_space(), preset=preset,
                     store=store, seed=seed, budget=budget, listener=listen)
        if watch is not None:
            watch(c)
        summary = c.run()
    return {"first": first, "summary": summary, "base": len(base), "base_cost": base_cost[0],
            "mfs": [a.mfs for a in summary.anomalies if a.mfs and a.anomaly_id not in base]}


def _planted(truth: tuple[str, ...]) -> list[str]:
    """The planted quirks of a run's ground truth (the base model's ``base:*`` limits left out)."""
    return [t for t in truth if not t.startswith(BASE_PREFIX)]


def mfs_precision_recall(profile: str, mfs_list: list[Any], samples: int = 3000) -> tuple[float, float]:
    """Agreement of each MFS with the quirk it was found for, over random points plus points inside the MFS.

    Precision: among points the MFS matches, the share where its quirk fires. Recall: among points where the
    quirk fires, the share the MFS matches. Each MFS is paired with the quirk that fires most often on points
    it matches.
    """
    space = load_space()
    rng = np.random.default_rng(1234)
    quirks = SimTarget(profile.split(":", 1)[1]).profile.active_quirks
    points = [space.sample(rng) for _ in range(samples)]
    for mfs in mfs_list:  # add points inside each MFS, so rare regions are represented
        added = 0
        for _ in range(samples * 20):
            p = space.sample(rng)
            if mfs.matches(space.build(p)):
                points.append(p)
                added += 1
                if added >= 200:
                    break
    fired = []
    for p in points:
        f = features(space.build(p))
        fired.append({q.id for q in quirks if q.fires(f)})
    precisions, recalls = [], []
    for mfs in mfs_list:
        inside = [i for i, p in enumerate(points) if mfs.matches(space.build(p))]
        if not inside:
            continue
        counts: dict[str, int] = {}
        for i in inside:
            for q in fired[i]:
                counts[q] = counts.get(q, 0) + 1
        if not counts:
            precisions.append(0.0)
            continue
        quirk = max(counts, key=lambda q: counts[q])
        precisions.append(counts[quirk] / len(inside))
        positives = [i for i, f in enumerate(fired) if quirk in f]
        recalls.append(sum(1 for i in positives if i in set(inside)) / len(positives) if positives else 0.0)
    return (statistics.mean(precisions) if precisions else float("nan"),
            statistics.mean(recalls) if recalls else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="append", default=None)
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--bayes-seeds", type=int, default=3, help="bayes is slow (a model fit per ask)")
    ap.add_argument("--only", action="append", default=None, help="run only these variants")
    args = ap.parse_args()
    for profile in args.profile or ["sim:cx6-200g-amd", "sim:p2100g-100g"]:
        planted = len(SimTarget(profile.split(":", 1)[1]).describe().details["quirks"].split(", "))
        print(f"\n## {profile}: {planted} planted anomalies, budget {args.budget}")
        print("| strategy | seeds | found (median) | found @600 (median) | experiments to all (median) "
              "| minimize exp. | of which base-model | MFS precision | MFS recall | base-model finds | s/run |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        rows: dict[str, float] = {}
        for name, preset in variants().items():
            if args.only and name not in args.only:
                continue
            seeds = args.bayes_seeds if name == "bayes" else args.seeds
            found, at600, to_all, minimize, prec, rec, secs, base, base_cost = [], [], [], [], [], [], [], [], []
            for seed in range(seeds):
                t0 = time.time()
                r = run_one(profile, preset, seed, args.budget)
                secs.append(time.time() - t0)
                first = r["first"]
                found.append(len(first))
                at600.append(sum(1 for v in first.values() if v <= 600))
                to_all.append(max(first.values()) if len(first) == planted else float("inf"))
                minimize.append(r["summary"].minimize_experiments)
                base.append(r["base"])
                base_cost.append(r["base_cost"])
                if r["mfs"]:
                    p, q = mfs_precision_recall(profile, r["mfs"])
                    prec.append(p)
                    rec.append(q)
            med_all = statistics.median(to_all)
            rows[name] = statistics.median(at600)
            quality = f"{statistics.mean(prec):.2f} | {statistics.mean(rec):.2f}" if prec else "- | -"
            print(f"| {name} | {seeds} | {statistics.median(found)} | {statistics.median(at600)} | "
                  f"{'never' if med_all == float('inf') else int(med_all)} | {int(statistics.median(minimize))} | "
                  f"{int(statistics.median(base_cost))} | {quality} | {statistics.median(base)} | "
                  f"{statistics.mean(secs):.1f} |")
        if "random" in rows and "anneal+diag+MFS" in rows and rows["random"]:
            print(f"\nfound at 600, anneal+diag+MFS / random = {rows['anneal+diag+MFS'] / rows['random']:.2f}x")


if __name__ == "__main__":
    main()
