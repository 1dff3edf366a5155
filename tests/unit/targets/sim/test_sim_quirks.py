"""Quirk conditions compiled together (``Conditions``): the same proximities as each clause's own closeness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from collie.model.features import Features, features
from collie.model.space import load_space
from collie.targets.sim import builtin_names, load_profile
from collie.targets.sim.quirks import Conditions, Quirk, Symptom, parse_clause


def _reference(q: Quirk, feats: Features) -> float:
    """A quirk's proximity the slow way: every clause's :meth:`Clause.closeness`, multiplied in clause order."""
    p = 1.0
    for c in q.when:
        p *= c.closeness(feats)
    return p


def _space_features(n: int) -> list[Features]:
    space = load_space(None)
    rng = np.random.default_rng(7)
    out = []
    while len(out) < n:
        point = space.sample(rng)
        if space.is_valid(point):
            out.append(features(space.build(point)))
    return out


@pytest.mark.parametrize("profile", builtin_names())
def test_compiled_proximities_equal_each_clauses_closeness_multiplied_out(profile: str) -> None:
    quirks = load_profile(profile).active_quirks
    compiled = Conditions(quirks)
    for feats in _space_features(150):
        got = compiled.proximities(feats)
        assert got == [_reference(q, feats) for q in quirks]
        assert [p == 1.0 for p in got] == [q.fires(feats) for q in quirks]


def test_a_clause_shared_by_quirks_is_tested_once_and_counts_for_each() -> None:
    shared = parse_clause("batch >= 64", "t")
    a = Quirk("qa", 0, "", "", (shared, parse_clause("mtu <= 1K", "t")), Symptom(pause=0.1), ("sim_qpc_cache_miss",))
    b = Quirk("qb", 0, "", "", (parse_clause("transport == UD", "t"), shared), Symptom(pause=0.1),
              ("sim_qpc_cache_miss",))
    compiled = Conditions((a, b))
    assert len(compiled._clauses) == 3
    for feats in _space_features(60):
        pa, pb = compiled.proximities(feats)
        assert (pa, pb) == (_reference(a, feats), _reference(b, feats))
        assert pa == a.proximity(feats) and pb == b.proximity(feats)
        assert (pa == 1.0) == a.fires(feats) and 0.0 < pa <= 1.0 and not math.isnan(pb)
