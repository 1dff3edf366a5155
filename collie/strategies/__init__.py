"""Search strategies (ask/tell): ``anneal`` (the paper's, done right), ``random``, ``bayes`` (scikit-optimize)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collie.errors import InputError
from collie.strategies.anneal import Anneal
from collie.strategies.base import Encoder, Outcome, Space, Strategy
from collie.strategies.bayes import BayesSearch
from collie.strategies.random_search import RandomSearch

STRATEGIES: Final = ("anneal", "random", "bayes")

__all__ = ["STRATEGIES", "Anneal", "BayesSearch", "Encoder", "Outcome", "RandomSearch", "Space", "Strategy",
           "make_strategy"]


def make_strategy(name: str, space: Space, seed: int, options: Mapping[str, Any] | None = None, *,
                  encoder: Encoder | None = None) -> Strategy:
    """Build a strategy by name with preset options.

    Args:
        name: one of :data:`STRATEGIES`.
        space: the space searched.
        seed: the random stream's seed.
        options: the strategy's keyword options (a preset's ``[strategy_options]``).
        encoder: a point's regression columns, for a strategy that models its objectives (``anneal`` with
            ``screen``); for workloads, :func:`collie.model.features.point_encoder`.

    Raises:
        InputError: unknown strategy or option (one sentence with what is allowed).
    """
    opts = dict(options or {})
    try:
        if name == "anneal":
            return Anneal(space, seed, encoder=encoder, **opts)
        if name == "random":
            return RandomSearch(space, seed, **opts)
        if name == "bayes":
            return BayesSearch(space, seed, **opts)
    except (TypeError, ValueError) as exc:
        raise InputError(f"strategy {name!r}: bad option ({exc})") from None
    raise InputError(f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}")
