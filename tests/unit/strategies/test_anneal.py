from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from simhelpers import paper_space

from collie.model.features import point_encoder
from collie.model.space import load_space
from collie.strategies import Anneal, BayesSearch, Outcome, RandomSearch, make_strategy
from collie.strategies.base import Region

SPACE = load_space()
ENCODER = point_encoder(SPACE.build)


def _energy(point: dict) -> dict[str, float]:  # type: ignore[type-arg]
    # a smooth made-up landscape: throughput falls with QPs, a diagnostic counter rises with queue depth
    return {"throughput": 1.0 / (1.0 + point["qps"] / 1000), "diag:x": float(point["wq_depth"]),
            "diag:flat": 5.0}


def test_current_point_changes_only_on_acceptance() -> None:
    a = Anneal(SPACE, 1, warmup=0, explore=0.0, elite=0.0, patience=0, max_chain_steps=10**6)
    p = a.ask()
    a.tell(p, Outcome(_energy(p)))
    for _ in range(300):
        before = a.current
        q = a.ask()
        accepted = a.accepted
        a.tell(q, Outcome(_energy(q)))
        if a.accepted == accepted:
            assert a.current == before  # rejected: the chain stays where it was
        else:
            assert a.current == q


def test_metropolis_rule() -> None:
    a = Anneal(SPACE, 2)
    assert a.energy_delta({"throughput": 0.5}, {"throughput": 0.25}) == -0.5  # (B - A) / A
    a.objectives, a.objective = ["throughput", "diag:x"], "diag:x"
    assert a.energy_delta({"diag:x": 10.0}, {"diag:x": 20.0}) == -0.5  # (A - B) / B
    assert a.energy_delta({}, {"diag:x": 1.0}) is None


def test_throughput_chain_descends_and_diagnostics_are_ranked_by_spread() -> None:
    # the paper's space: the landscape moves with qps alone, and in the whole default space's 22 dimensions a
    # 300-step chain may mutate qps only a couple of times (the walk, not the space, is what is checked here)
    a = Anneal(paper_space(), 3, warmup=10, explore=0.0, elite=0.0, max_chain_steps=10**6, patience=0)
    for _ in range(10):
        p = a.ask()
        a.tell(p, Outcome(_energy(p)))
    assert a.objectives == ["throughput", "diag:x"]  # diag:flat has no spread, so no chain
    start = a.current_metrics["throughput"]  # type: ignore[index]
    for _ in range(300):
        p = a.ask()
        a.tell(p, Outcome(_energy(p)))
    assert a.chains["throughput"].metrics["throughput"] < start  # type: ignore[index]
    # both chains walked, each from its own point
    assert a.chains["diag:x"].steps > 0 and a.chains["throughput"].steps > 0


def test_exclusion_is_honoured_and_runs_are_deterministic() -> None:
    def run(seed: int) -> list[dict]:  # type: ignore[type-arg]
        a = Anneal(SPACE, seed, warmup=5)
        a.set_exclusion(lambda p: p["direction"] == "incast")
        out = []
        for _ in range(200):
            p = a.ask()
            out.append(p)
            a.tell(p, Outcome(_energy(p), anomalous=p["qps"] > 15000))
            if p["qps"] > 15000:
                a.restart()
        return out

    points = run(4)
    assert all(p["direction"] != "incast" for p in points)
    assert points == run(4) and points != run(5)


def test_random_and_bayes_ask_legal_points() -> None:
    for strategy in (RandomSearch(SPACE, 1), BayesSearch(SPACE, 1, initial=5, trees=8, points=100)):
        for _ in range(15):
            p = strategy.ask()
            assert SPACE.is_valid(p)
            strategy.tell(p, Outcome(_energy(p)))
    assert len(BayesSearch(SPACE, 1).optimizer.space.dimensions) > len(SPACE.dimensions)


def test_make_strategy_errors() -> None:
    import pytest

    from collie.errors import InputError

    with pytest.raises(InputError, match="unknown strategy 'genetic'"):
        make_strategy("genetic", SPACE, 0)
    with pytest.raises(InputError, match="bad option"):
        make_strategy("anneal", SPACE, 0, {"temperature": 3})
    with pytest.raises(InputError, match=r"shell is a probability, between 0 and 1, not 1\.5"):
        make_strategy("anneal", SPACE, 0, {"shell": 1.5})
    with pytest.raises(InputError, match="screen = 8 needs an encoder"):
        make_strategy("anneal", SPACE, 0, {"screen": 8})
    assert isinstance(make_strategy("random", SPACE, 0), RandomSearch)
    assert isinstance(make_strategy("anneal", SPACE, 0, {"screen": 8}, encoder=ENCODER), Anneal)
    assert np.isfinite(Anneal(SPACE, 0).t0)


def test_screening_proposes_the_predicted_best_unmeasured_neighbour() -> None:
    # the diagnostic counter grows with queue depth: once the surrogate has data, a screened step that
    # changes wq_depth goes up, and no screened proposal repeats a measured point
    a = Anneal(SPACE, 6, encoder=ENCODER, warmup=0, explore=0.0, elite=0.0, patience=0, screen=24,
               screen_greedy=1.0, adaptive=False)
    a.objectives = ["diag:x"]
    measured = []
    for _ in range(120):
        p = a.ask()
        measured.append(p)
        a.tell(p, Outcome(_energy(p)))
    assert a._surrogate is not None and a._surrogate.observations("diag:x") == 120
    current = dict(a.current)  # type: ignore[arg-type]
    screened = a._screened(current)
    assert screened is not None
    candidate, dim = screened
    assert candidate not in measured
    assert sum(candidate[k] != current[k] for k in current) >= 1
    if dim == "wq_depth":
        assert candidate["wq_depth"] > current["wq_depth"]
    # the chain climbed: its counter ends far above the median of random points
    random_depths = [SPACE.sample(np.random.default_rng(i))["wq_depth"] for i in range(50)]
    assert a.current_metrics["diag:x"] > float(np.median(random_depths))  # type: ignore[index]


def test_screened_and_repaired_runs_are_deterministic_per_seed() -> None:
    def run(seed: int) -> list[dict]:  # type: ignore[type-arg]
        a = Anneal(SPACE, seed, encoder=ENCODER, warmup=5, screen=8, repair=0.5)
        out = []
        for _ in range(60):
            p = a.ask()
            assert SPACE.is_valid(p)
            out.append(p)
            a.tell(p, Outcome(_energy(p)))
        return out

    assert run(2) == run(2) and run(2) != run(3)


def test_screened_candidates_change_up_to_screen_moves_dimensions() -> None:
    def changed(moves: int) -> list[int]:
        a = Anneal(SPACE, 4, encoder=ENCODER, warmup=0, explore=0.0, elite=0.0, patience=0, screen=24,
                   screen_greedy=1.0, screen_moves=moves, adaptive=False)
        a.objectives = ["diag:x"]
        for _ in range(40):
            p = a.ask()
            a.tell(p, Outcome(_energy(p)))
        current = dict(a.current)  # type: ignore[arg-type]
        out = []
        for _ in range(20):
            screened = a._screened(current)
            assert screened is not None and SPACE.is_valid(screened[0])
            out.append(sum(screened[0][k] != current[k] for k in current))
        return out

    assert set(changed(1)) == {1}  # no repair: one dimension per move
    several = changed(3)
    assert max(several) >= 2 and max(several) <= 3


def test_a_find_restarts_only_the_chain_whose_step_it_was() -> None:
    a = Anneal(SPACE, 7, warmup=0, explore=0.0, elite=0.0, patience=0)
    a.objectives = ["throughput", "diag:x"]
    for _ in range(40):  # both chains get under way
        p = a.ask()
        a.tell(p, Outcome(_energy(p)))
    assert all(a.chains[o].current is not None for o in a.objectives)
    walking = {o: a.chains[o].current for o in a.objectives}
    a.explore = 1.0  # an independent sample finds something: no chain was there, none restarts
    p = a.ask()
    a.tell(p, Outcome(_energy(p), anomalous=True))
    a.restart()
    assert {o: a.chains[o].current for o in a.objectives} == walking
    a.explore = 0.0  # a chain's step finds something: that chain restarts, the other keeps walking
    p = a.ask()
    stepped, other = a.objective, next(o for o in a.objectives if o != a.objective)
    a.tell(p, Outcome(_energy(p), anomalous=True))
    a.restart()
    assert a.chains[stepped].current is None and a.chains[other].current == walking[other]


def test_a_chain_whose_point_a_new_exclusion_covers_starts_afresh() -> None:
    a = Anneal(SPACE, 8, warmup=0, explore=0.0, elite=0.0, patience=0)
    for _ in range(10):
        p = a.ask()
        a.tell(p, Outcome(_energy(p)))
    here = dict(a.current)  # type: ignore[arg-type]
    a.set_exclusion(lambda q: q["op"] == here["op"])  # a minimal feature set now covers the chain's point
    p = a.ask()
    assert p["op"] != here["op"]
    assert a.current is None  # a fresh start, not a step from the covered point


def _misses(point: Mapping[str, Any]) -> int:
    """Conditions of a made-up known region (RC WRITE, unbatched, 450+ QPs) that ``point`` breaks."""
    return (point["op"] != "RC_WRITE") + (point["batch"] > 1) + (point["qps"] < 450)


def test_independent_samples_beside_a_known_region_break_one_or_two_of_its_conditions() -> None:
    case = {**SPACE.simplest(), "qps": 500}
    inside = Region(case, _misses)
    a = Anneal(SPACE, 4, warmup=0, explore=1.0, shell=1.0)
    a.set_exclusion(lambda p: _misses(p) == 0)
    a.set_regions(lambda: [inside])
    asked = []
    for _ in range(200):
        p = a.ask()
        a.tell(p, Outcome(_energy(p)))
        asked.append(p)
    assert all(SPACE.is_valid(p) and 1 <= _misses(p) <= 2 for p in asked[1:])
    # the region's case is crossed with random points: the free dimensions spread, the region's are kept often
    assert len({p["mrs"] for p in asked}) > 50
    assert sum(p["op"] == "RC_WRITE" for p in asked) > len(asked) / 3


def test_without_a_known_region_independent_samples_are_uniform() -> None:
    uniform = Anneal(SPACE, 5, warmup=0, explore=1.0)
    beside = Anneal(SPACE, 5, warmup=0, explore=1.0, shell=1.0)
    beside.set_regions(lambda: [])
    for _ in range(50):
        p, q = uniform.ask(), beside.ask()
        assert p == q
        uniform.tell(p, Outcome(_energy(p)))
        beside.tell(q, Outcome(_energy(q)))
