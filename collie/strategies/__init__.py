"""Search strategies (ask/tell): ``anneal`` (the paper's, done right), ``random``, ``bayes`` (scikit-optimize)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collie.errors import InputError
from collie.space import SearchSpace
from collie.strategies.anneal import Anneal
from collie.strategies.base import Outcome, Strategy
from collie.strategies.bayes import BayesSearch
from collie.strategies.random_search import RandomSearch

STRATEGIES: Final = ("anneal", "random", "bayes")

__all__ = ["STRATEGIES", "Anneal", "BayesSearch", "Outcome", "RandomSearch", "Strategy", "make_strategy"]


def make_strategy(name: str, space: SearchSpace, seed: int, options: Mapping[str, Any] | None = None) -> Strategy:
    """Build a strategy by name with preset options.

    Raises:
        InputError: unknown strategy or option (one sentence with what is allowed).
    """
    opts = dict(options or {})
    try:
        if name == "anneal":
            return Anneal(space, seed, **opts)
        if name == "random":
            return RandomSearch(space, seed, **opts)
        if name == "bayes":
            return BayesSearch(space, seed, **opts)
    except (TypeError, ValueError) as exc:
        raise InputError(f"strategy {name!r}: bad option ({exc})") from None
    raise InputError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}")
