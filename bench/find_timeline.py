"""When each planted anomaly was first found, by which chain, and what minimizing cost: per seed, then means.

A diagnostic beside ``search_efficiency.py`` (same scoring from the simulator's ground truth, which no strategy
reads). It answers "which objective finds the rare anomalies, and when?" and compares option changes on many
seeds quickly (no MFS precision/recall). "area" is the sum over planted anomalies of the mean experiments to
first find, a seed that does not find one counting the budget: lower is better, and it moves with every find.

    python bench/find_timeline.py --profile sim:cx6-200g-amd --seeds 0-19 --budget 1000 \\
        [--variant anneal+diag+MFS] [--opt explore=0.1] [--mopt recheck_margin=0]
"""

from __future__ import annotations

import argparse
import ast
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from search_efficiency import run_one, variants

from collie.campaign import Campaign
from collie.events import Event, TrialFinished
from collie.metrics import DIAG_PREFIX
from collie.targets.sim import SimTarget


def _settings(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        out[key] = ast.literal_eval(value)
    return out


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(s) for s in lo.split(",")]


def _attribute(askers: dict[int, str]) -> Callable[[Campaign], None]:
    """A ``watch`` that records, per explore experiment count, which objective's chain asked it ("random": an
    independent sample between chain steps, "warmup": one of the random points that rank the counters)."""
    def watch(c: Campaign) -> None:
        strategy, listener = c.strategies[0], c.listener
        asked: list[str] = ["?"]
        ask = strategy.ask

        def wrapped_ask() -> Any:
            point = ask()
            warming = len(getattr(strategy, "_warm", ())) < getattr(strategy, "warmup", 0)
            independent = getattr(strategy, "_probe_key", None) is not None
            asked[0] = "warmup" if warming else "random" if independent \
                else str(getattr(strategy, "objective", strategy.name))
            return point

        def wrapped_listener(e: Event) -> None:
            if isinstance(e, TrialFinished) and e.phase == "explore":
                askers[e.experiments] = asked[0].removeprefix(DIAG_PREFIX).removeprefix("sim_")
            if listener is not None:
                listener(e)
        strategy.ask = wrapped_ask  # type: ignore[method-assign]
        c.listener = wrapped_listener
    return watch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="sim:cx6-200g-amd")
    ap.add_argument("--seeds", default="0-9", help="a range (0-19) or a list (0,3,7)")
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--variant", default="anneal+diag+MFS", choices=sorted(variants()))
    ap.add_argument("--opt", action="append", default=[], help="a strategy option, key=value")
    ap.add_argument("--mopt", action="append", default=[], help="a [minimize] setting, key=value")
    args = ap.parse_args()
    preset = variants()[args.variant]
    preset = replace(preset, strategy_options={**preset.strategy_options, **_settings(args.opt)})
    if args.mopt and preset.minimize is not None:
        preset = replace(preset, minimize=replace(preset.minimize, **_settings(args.mopt)))
    times: dict[str, list[int]] = {}
    found, at600, minimizing, anomalies = [], [], 0, 0
    seeds = _seeds(args.seeds)
    for seed in seeds:
        askers: dict[int, str] = {}
        r = run_one(args.profile, preset, seed, args.budget, _attribute(askers))
        first = r["first"]
        s = r["summary"]
        found.append(len(first))
        at600.append(sum(v <= 600 for v in first.values()))
        minimizing += s.minimize_experiments
        anomalies += len(s.anomalies)
        for quirk, n in first.items():
            times.setdefault(quirk, []).append(n)
        order = sorted(first.items(), key=lambda kv: kv[1])
        print(f"seed {seed}: found {len(first)} (@600 {at600[-1]}), minimizing {s.minimize_experiments} for "
              f"{len(s.anomalies)} anomalies")
        print("   ", " ".join(f"{q[:3]}@{n}:{askers.get(n, 'min')}" for q, n in order))
    n = len(seeds)
    planted = [q.id for q in SimTarget(args.profile.split(":", 1)[1]).profile.active_quirks]
    mean_time = {q: (sum(times.get(q, [])) + args.budget * (n - len(times.get(q, [])))) / n for q in planted}
    print(f"\n{args.variant} {args.profile} seeds {args.seeds} budget {args.budget} opt {args.opt} mopt {args.mopt}")
    print(f"found mean {statistics.mean(found):.2f}, @600 mean {statistics.mean(at600):.2f}, "
          f"minimizing per anomaly {minimizing / max(anomalies, 1):.1f}, area {sum(mean_time.values()):.0f}")
    print("mean experiments to first find:", " ".join(f"{q[:3]}:{t:.0f}" for q, t in mean_time.items()))


if __name__ == "__main__":
    main()
