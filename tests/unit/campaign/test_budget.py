"""The campaign's budget: spent never exceeds the total, reserves for open edges, extension, BudgetSpent."""

from __future__ import annotations

import pytest

from collie.campaign import Budget, BudgetSpent


class Edges:
    """A reservation whose open cost the test sets."""

    def __init__(self, cost: int) -> None:
        self.cost = cost

    def open_cost(self) -> int:
        return self.cost


def test_trials_in_flight_count_as_spent_and_a_pruned_one_is_given_back() -> None:
    budget = Budget([5], chains=2)
    budget.start()
    budget.start()
    assert (budget.spent, budget.experiments, budget.in_flight, budget.left) == (2, 0, 2, 3)
    budget.finish(counts=True)
    budget.finish(counts=False)  # pruned
    assert (budget.spent, budget.experiments, budget.in_flight) == (1, 1, 0)


def test_spent_never_exceeds_the_total() -> None:
    budget = Budget([3])
    for _ in range(3):
        budget.start()
    with pytest.raises(BudgetSpent):
        budget.start()
    assert budget.spent == budget.total == 3
    budget.finish(counts=False)
    budget.start()  # a pruned trial gave its experiment back
    assert budget.spent == 3


def test_a_chain_keeps_its_reserve_for_open_edges_and_spends_it_finishing_them() -> None:
    budget = Budget([10], chains=2)
    edges = Edges(4)
    budget.reserve(0, edges)
    assert budget.reserved(0) == 4 and budget.free(0) == 6
    assert budget.reserved(1) == 0 and budget.free(1) == 10  # a reserve is its own chain's
    edges.cost = 3  # read when asked: a partly finished minimizer keeps back less
    assert budget.free(0) == 7
    budget.keep_reserve(0)  # recording a find: probes stop where the reserve begins
    for _ in range(7):
        budget.charge(0)
        budget.start()
        budget.finish(counts=True)
    with pytest.raises(BudgetSpent) as spent:
        budget.charge(0)
    assert spent.value.kept == 3
    budget.charge(1)  # chain 1's limit is still the total
    budget.open_reserve(0)  # finishing the edges may spend the reserve
    budget.charge(0)
    budget.release(0, edges)
    assert budget.reserved(0) == 0 and budget.free(0) == 10


def test_budget_spent_is_raised_at_the_limit_and_not_before() -> None:
    budget = Budget([2])
    budget.charge(0)
    budget.start()
    budget.charge(0)
    budget.start()
    with pytest.raises(BudgetSpent) as spent:
        budget.charge(0)
    assert spent.value.kept == 0


def test_an_extended_budget_runs_to_each_total_in_turn() -> None:
    budget = Budget([4, 9])
    assert budget.totals == (4, 9) and budget.total == 4
    for _ in range(4):
        budget.start()
        budget.finish(counts=True)
    with pytest.raises(BudgetSpent):
        budget.charge(0)
    budget.keep_reserve(0)
    budget.extend_to(9)  # every limit is the new total
    assert budget.left == 5
    budget.charge(0)
    budget.start()
    assert budget.spent == 5


def test_a_budget_needs_a_total() -> None:
    with pytest.raises(ValueError):
        Budget([])


def test_a_symptom_is_over_its_share_past_a_third_of_the_total() -> None:
    budget = Budget([300, 600])
    budget.spend_on("rnr", 100)
    assert not budget.over_share("rnr")
    budget.spend_on("rnr", 1)
    assert budget.over_share("rnr") and not budget.over_share("pause")
    budget.extend_to(600)  # a share is of the total the search runs to now
    assert not budget.over_share("rnr")
