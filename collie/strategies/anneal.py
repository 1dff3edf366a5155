"""Simulated annealing over the search space, as the Collie paper describes it and its public code did not do.

One chain per objective. Each step mutates one dimension of a chain's current point; a candidate is accepted
with the Metropolis rule ``p = min(1, exp(-dE / T))``; the temperature cools geometrically and is reheated when
it gets cold (a *relaxed* schedule: the goal is every anomaly, not one optimum). After an anomaly the chain that
met it restarts from a fresh random point.

Energies follow the paper, normalised by the current value so no counter range must be known:
    * the performance objective ``throughput`` (lower is better): ``dE = (B - A) / A``;
    * a diagnostic objective ``diag:<counter>`` (higher is better): ``dE = (A - B) / B``.

With ``diagnostic=True`` the annealer first samples ``warmup`` random points and ranks the diagnostic metrics by
their coefficient of variation over them (counters that move most first); ``throughput`` and the top
``max_diagnostic`` counters then each get a chain of their own. The chains persist side by side: a bandit
(discounted Thompson sampling) picks which chain takes the next step, rewarding a chain whose step improved its
best by 1 % or met an anomaly, so the counters that are still rising get the experiments and a chain climbing
toward a rare anomaly keeps its place while others run. A chain restarts after an anomaly, after ``patience``
steps without a 1 % improvement, after ``max_chain_steps`` steps, or when a new minimal feature set covers its
point. Points inside a known minimal feature set (the exclusion predicate) are never asked.

Two options make a chain more than a random walk on the plateaus around rare anomalies: ``repair`` (a move
that breaks a constraint or enters a known anomaly's region is completed by up to two other changes rather than
redrawn; see the space's ``mutate``) and ``screen`` (a log-linear surrogate per objective, fitted on every
measured point as the injected ``encoder`` encodes it, picks the most promising of ``screen`` candidate moves,
each of 1 to ``screen_moves`` one-dimension mutations, so a confident model can take a few dimensions in one
step; Metropolis still decides on the measured energy).

Anomalies of one subsystem share causes, so their regions sit side by side (the paper's #7 and #8 are the same
unbatched small RC WRITEs, one over many MRs, the other over many QPs). With ``shell`` > 0 that share of the
independent samples is drawn just outside a known anomaly's region: a crossover of its case and a random point
(each dimension from the random point with a probability drawn from 0.2..0.8) that breaks one or two of the
region's conditions and lies in no known region. Its counters may show nothing of what lies there (a precursor
often rises only one condition away), so the chains could not climb to it.

Invariant: a chain's current point only changes on acceptance (the public code overwrote it before deciding,
which made its annealer a random walk); a step is told to the chain that asked it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from collie.metrics import DIAG_PREFIX, THROUGHPUT
from collie.model.points import point_key
from collie.strategies.base import Encoder, Exclusion, Outcome, Point, Region, Regions, Space
from collie.strategies.surrogate import Surrogate

_EPS = 1e-9
#: crossovers tried for one sample beside a known region before a uniform sample is taken instead
_SHELL_TRIES = 200


@dataclass
class _Chain:
    """The walking state of one objective's chain (mutable by design: it is the walk).

    ``wins`` and ``losses`` are the bandit's discounted counts of this chain's rewarded and unrewarded steps.
    """

    temperature: float
    current: Point | None = None
    metrics: Mapping[str, float] | None = None
    best: float | None = None
    since_best: int = 0
    steps: int = 0
    wins: float = 0.0
    losses: float = 0.0

    def restart(self, t0: float) -> None:
        self.current, self.metrics, self.best = None, None, None
        self.temperature, self.since_best, self.steps = t0, 0, 0


class Anneal:
    """Metropolis simulated annealing with restarts and diagnostic-counter objectives.

    Args:
        space: the space searched.
        seed: the random stream's seed.
        encoder: a point's regression columns, for the surrogate; needed with ``screen`` > 1.

    Raises:
        ValueError: a share outside 0..1, or ``screen`` > 1 without an ``encoder``.
    """

    name = "anneal"

    def __init__(
        self,
        space: Space,
        seed: int = 0,
        *,
        encoder: Encoder | None = None,
        diagnostic: bool = True,
        warmup: int = 10,
        t0: float = 0.3,
        cooling: float = 0.95,
        t_min: float = 0.01,
        max_chain_steps: int = 150,
        max_diagnostic: int = 4,
        discount: float = 0.98,
        patience: int = 0,
        adaptive: bool = True,
        elite: float = 0.5,
        explore: float = 0.0,
        screen: int = 0,
        screen_greedy: float = 0.8,
        screen_moves: int = 1,
        repair: float = 0.0,
        shell: float = 0.0,
    ) -> None:
        for name, share in (("elite", elite), ("explore", explore), ("screen_greedy", screen_greedy),
                            ("repair", repair), ("shell", shell)):
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"{name} is a probability, between 0 and 1, not {share}")
        if screen > 1 and encoder is None:
            raise ValueError(f"screen = {screen} needs an encoder of points for its surrogate")
        self.space = space
        self.rng = np.random.default_rng(seed)
        self.diagnostic = diagnostic
        self.warmup = warmup if diagnostic else 0
        self.t0, self.cooling, self.t_min = t0, cooling, t_min
        self.max_chain_steps = max_chain_steps
        self.max_diagnostic = max_diagnostic
        self.discount = discount
        self.patience = patience
        self.adaptive = adaptive
        self.elite = elite
        self.explore = explore
        self.screen = screen
        self.screen_greedy = screen_greedy
        self.screen_moves = max(1, screen_moves)
        self.repair = repair
        self.shell = shell
        self._regions: Regions | None = None
        self._surrogate = Surrogate(encoder) if screen > 1 and encoder is not None else None
        self._measured: set[str] = set()
        self._probe_key: str | None = None
        self._told_probe = False  # the last point told was an independent sample, no chain's step
        # every clean point told so far, to restart chains from the best one for their objective
        self._archive: list[tuple[Point, Mapping[str, float]]] = []
        self._starts: set[str] = set()
        # per objective, how often mutating each dimension lowered the energy (adaptive operator selection)
        self._credit: dict[str, dict[str, float]] = {}
        self._last_dim: str | None = None
        self._exclude: Exclusion | None = None
        self._warm: list[Mapping[str, float]] = []
        self.objectives: list[str] = [THROUGHPUT]
        self.objective = THROUGHPUT
        self.chains: dict[str, _Chain] = {THROUGHPUT: _Chain(t0)}
        self.accepted = 0
        self.rejected = 0

    @property
    def chain(self) -> _Chain:
        """The chain of the current objective."""
        return self.chains.setdefault(self.objective, _Chain(self.t0))

    @property
    def current(self) -> Point | None:
        return self.chain.current

    @property
    def current_metrics(self) -> Mapping[str, float] | None:
        return self.chain.metrics

    @property
    def temperature(self) -> float:
        return self.chain.temperature

    def set_exclusion(self, exclude: Exclusion | None) -> None:
        self._exclude = exclude

    def set_regions(self, regions: Regions | None) -> None:
        self._regions = regions

    def _excluded(self, point: Point) -> bool:
        return self._exclude is not None and self._exclude(point) > 0

    def _independent(self) -> Point:
        """An independent sample: beside a known region with probability ``shell`` (while there is one), else
        uniform. Without a known region the random stream is the one a strategy without ``shell`` draws."""
        regions = self._regions() if self.shell and self._regions is not None else ()
        if regions and self.rng.random() < self.shell:
            point = self._beside(regions[int(self.rng.integers(len(regions)))])
            if point is not None:
                return point
        return self._fresh()

    def _beside(self, region: Region) -> Point | None:
        """A point that breaks one or two conditions of ``region`` and lies in no known region (None: none found
        in :data:`_SHELL_TRIES` crossovers of the region's case and a random point)."""
        for _ in range(_SHELL_TRIES):
            other = self.space.sample(self.rng)
            mix = self.rng.uniform(0.2, 0.8)
            point = {n: other[n] if self.rng.random() < mix else region.point[n] for n in self.space.names}
            if self.space.is_valid(point) and 1 <= region.misses(point) <= 2 and not self._excluded(point):
                return point
        return None

    def _fresh(self) -> Point:
        point = self.space.sample(self.rng)
        for _ in range(100):
            if not self._excluded(point):
                return point
            point = self.space.sample(self.rng)
        return point

    def ask(self) -> Point:
        if len(self._warm) < self.warmup:
            return self._fresh()
        if self._started() and self.explore and self.rng.random() < self.explore:
            # an independent sample between chain steps: it feeds the archive, not the chains
            point = self._independent()
            self._probe_key = point_key(point)
            return point
        self._choose_objective()
        if self.current is not None and self._excluded(self.current):
            self.chain.restart(self.t0)  # a minimal feature set found since covers this chain's point
        current = self.current
        if current is None:
            start = self._elite_start() if self.rng.random() < self.elite else None
            if start is None:
                return self._screened_start()
            self._adopt(*start)
            current = start[0]
        if self._surrogate is not None and self.rng.random() < self.screen_greedy \
                and self._surrogate.observations(self.objective) >= self._surrogate.min_points:
            screened = self._screened(current)
            if screened is not None:
                candidate, self._last_dim = screened
                return candidate
        candidate, self._last_dim = self._mutation(current)
        if candidate != current:
            return candidate
        self.chain.restart(self.t0)
        return self._fresh()

    def _started(self) -> bool:
        return any(c.current is not None for c in self.chains.values())

    def _choose_objective(self) -> None:
        """Discounted Thompson sampling: the chain with the highest draw from Beta(1 + wins, 1 + losses)."""
        if len(self.objectives) == 1:
            self.objective = self.objectives[0]
            return
        chains = [self.chains.setdefault(o, _Chain(self.t0)) for o in self.objectives]
        draws = [self.rng.beta(1.0 + c.wins, 1.0 + c.losses) for c in chains]
        self.objective = self.objectives[int(np.argmax(draws))]

    def _reward_chain(self, won: bool) -> None:
        """Discount every chain's counts (old evidence fades), then count this step for the current chain."""
        for c in self.chains.values():
            c.wins *= self.discount
            c.losses *= self.discount
        if won:
            self.chain.wins += 1.0
        else:
            self.chain.losses += 1.0

    def _mutation(self, current: Point) -> tuple[Point, str]:
        """A legal, not excluded one-dimension neighbour of ``current`` (repaired when ``repair`` says so);
        ``current`` itself when ten dimension draws found none."""
        for _ in range(10):
            candidate, dim = self.space.mutate(current, self.rng, self._pick_dimension(), self.repair,
                                               self._exclude)
            if candidate != current:
                return candidate, dim
        return dict(current), dim

    def _screened_start(self) -> Point:
        """A fresh chain start: of ``screen`` random points, the one predicted best for the objective."""
        candidates = [self._fresh() for _ in range(max(self.screen, 1))]
        best = self._predicted_best(candidates)
        return candidates[0 if best is None else best]

    def _screened(self, current: Point) -> tuple[Point, str] | None:
        """Of ``screen`` fresh one-dimension mutations of ``current``, the one the surrogate predicts best.

        Candidates already measured (or equal to ``current``) are skipped; None while the surrogate cannot
        predict the current objective (too few observations) or no candidate is left.
        """
        candidates: list[tuple[Point, str]] = []
        keys: set[str] = set()
        for _ in range(3 * self.screen):
            candidate, dim = self._mutation(current)
            extra = int(self.rng.integers(self.screen_moves)) if self.screen_moves > 1 else 0
            for _ in range(extra):
                candidate, _ = self._mutation(candidate)
            key = point_key(candidate)
            if candidate == current or key in keys or key in self._measured:
                continue
            keys.add(key)
            candidates.append((candidate, dim))
            if len(candidates) == self.screen:
                break
        best = self._predicted_best([c for c, _ in candidates]) if candidates else None
        return None if best is None else candidates[best]

    def _predicted_best(self, points: list[Point]) -> int | None:
        """Index of the point the surrogate ranks best for the current objective (None: it cannot yet)."""
        if self._surrogate is None or self._surrogate.observations(self.objective) < self._surrogate.min_points:
            return None
        predicted = self._surrogate.predict(self.objective, [self._surrogate.row(p) for p in points])
        if predicted is None:
            return None
        return int(np.argmin(predicted) if self.objective == THROUGHPUT else np.argmax(predicted))

    def _elite_start(self) -> tuple[Point, Mapping[str, float]] | None:
        """The best archived point for the current objective not yet used as a start nor excluded."""
        name = self.objective
        sign = 1.0 if name == THROUGHPUT else -1.0
        ranked = sorted((sign * m[name], i) for i, (_, m) in enumerate(self._archive) if name in m)
        for _, i in ranked[:50]:
            point, metrics = self._archive[i]
            key = point_key(point)
            if key in self._starts or self._excluded(point):
                continue
            self._starts.add(key)
            return point, metrics
        return None

    def _pick_dimension(self) -> str | None:
        """A dimension to mutate: uniform, or in proportion to its credit under the current objective."""
        if not self.adaptive:
            return None
        credit = self._credit.get(self.objective)
        if not credit:
            return None
        names = self.space.names
        weights = np.array([1.0 + credit.get(n, 0.0) for n in names])
        return names[int(self.rng.choice(len(names), p=weights / weights.sum()))]

    def _reward(self, delta: float | None) -> None:
        if not self.adaptive or self._last_dim is None or delta is None:
            return
        credit = self._credit.setdefault(self.objective, {})
        if delta < 0:
            credit[self._last_dim] = min(credit.get(self._last_dim, 0.0) + 1.0, 8.0)
        else:
            credit[self._last_dim] = credit.get(self._last_dim, 0.0) * 0.9

    def energy_delta(self, old: Mapping[str, float], new: Mapping[str, float]) -> float | None:
        """``dE`` of moving from metrics ``old`` to ``new`` under the current objective (None: not measurable)."""
        name = self.objective
        if name not in old or name not in new:
            return None
        a, b = old[name], new[name]
        if name == THROUGHPUT:
            return (b - a) / max(abs(a), _EPS)
        return (a - b) / max(abs(b), _EPS)

    def tell(self, point: Point, outcome: Outcome | None) -> None:
        if outcome is None:
            return
        if self._surrogate is not None:
            self._surrogate.add(point, outcome.metrics)
            self._measured.add(point_key(point))
        if not outcome.anomalous:
            self._archive.append((dict(point), dict(outcome.metrics)))
        self._told_probe = self._probe_key is not None and self._probe_key == point_key(point)
        if self._told_probe:
            self._probe_key = None
            return
        if len(self._warm) < self.warmup:
            self._warm.append(dict(outcome.metrics))
            if len(self._warm) == self.warmup:
                self._rank_diagnostics()
            self._adopt(point, outcome.metrics)
            return
        if self.current is None or self.current_metrics is None:
            self._adopt(point, outcome.metrics)
            return
        chain = self.chain
        delta = self.energy_delta(self.current_metrics, outcome.metrics)
        self._reward(delta)
        if delta is None:
            accept = False
        elif delta <= 0:
            accept = True
        else:
            accept = bool(self.rng.random() < math.exp(-delta / max(self.temperature, _EPS)))
        if accept:
            self._adopt(point, outcome.metrics)
            self.accepted += 1
        else:
            self.rejected += 1
        improved = self._improved(outcome.metrics)
        self._reward_chain(improved or outcome.anomalous)
        chain.temperature *= self.cooling
        if chain.temperature < self.t_min:
            chain.temperature = self.t0
        chain.steps += 1
        if chain.steps >= self.max_chain_steps or (self.patience and chain.since_best >= self.patience):
            chain.restart(self.t0)

    def _improved(self, metrics: Mapping[str, float]) -> bool:
        """Whether ``metrics`` beat the current chain's best energy by 1 % (it then becomes the best)."""
        chain = self.chain
        if self.objective not in metrics:
            return False
        value = metrics[self.objective]
        # energy: throughput is minimised, diagnostic counters are maximised
        energy = value if self.objective == THROUGHPUT else -value
        if chain.best is None or energy < chain.best - 0.01 * abs(chain.best):
            chain.best = energy
            chain.since_best = 0
            return True
        chain.since_best += 1
        return False

    def _adopt(self, point: Point, metrics: Mapping[str, float]) -> None:
        self.chain.current = dict(point)
        self.chain.metrics = dict(metrics)

    def _rank_diagnostics(self) -> None:
        """Order diagnostic metrics by coefficient of variation over the warm-up points, highest first."""
        names = sorted({k for m in self._warm for k in m if k.startswith(DIAG_PREFIX)})
        scored: list[tuple[float, str]] = []
        for n in names:
            values = np.array([m.get(n, 0.0) for m in self._warm], dtype=float)
            mean = float(values.mean())
            cv = float(values.std() / mean) if mean > _EPS else 0.0
            if cv > 0:
                scored.append((cv, n))
        scored.sort(key=lambda s: (-s[0], s[1]))
        self.objectives = [THROUGHPUT] + [n for _, n in scored[: self.max_diagnostic]]

    def restart(self) -> None:
        """Leave the region of a find: the chain whose step it was starts afresh at its next step (a find by
        an independent sample restarts no chain)."""
        if not self._told_probe:
            self.chain.restart(self.t0)
