from __future__ import annotations

import math

import numpy as np

from collie.features import features
from collie.space import load_space
from collie.strategies.surrogate import Surrogate, encode

SPACE = load_space()


def test_encoding_is_log2_for_counts_flags_as_01_and_categories_one_hot() -> None:
    point = {**SPACE.simplest(), "qps": 255, "op": "UD_SEND", "direction": "bidirectional"}
    row = encode(features(SPACE.build(point)))
    assert row["qps_total"] == math.log2(1 + 2 * 255)  # one flow of 255 QPs per direction
    assert row["bidirectional"] == 1.0 and row["loopback"] == 0.0
    assert row["transport=UD"] == 1.0 and "transport=RC" not in row


def test_surrogate_recovers_a_log_linear_relation_and_ranks_unseen_points() -> None:
    # metric = qps_total^1.5 / batch^0.5 (times noise): the model must rank unseen points by it
    rng = np.random.default_rng(0)
    s = Surrogate(SPACE, min_points=20)

    def metric(p: dict) -> float:  # type: ignore[type-arg]
        f = features(SPACE.build(p))
        return f.qps_total ** 1.5 / f.batch ** 0.5 * float(np.exp(rng.normal(0, 0.1)))

    for _ in range(80):
        p = SPACE.sample(rng)
        s.add(p, {"diag:m": metric(p)})
    fresh = [SPACE.sample(rng) for _ in range(40)]
    predicted = s.predict("diag:m", [s.row(p) for p in fresh])
    assert predicted is not None
    truth = np.log([metric(p) for p in fresh])
    assert float(np.corrcoef(predicted, truth)[0, 1]) > 0.9


def test_surrogate_predicts_nothing_until_it_has_enough_points() -> None:
    rng = np.random.default_rng(1)
    s = Surrogate(SPACE, min_points=20)
    for i in range(19):
        s.add(SPACE.sample(rng), {"throughput": 0.5 + i / 100})
    assert s.observations("throughput") == 19
    assert s.predict("throughput", [s.row(SPACE.simplest())]) is None
    assert s.predict("diag:never-told", [s.row(SPACE.simplest())]) is None
    s.add(SPACE.sample(rng), {"throughput": float("nan")})  # not finite: not an observation
    assert s.observations("throughput") == 19
    s.add(SPACE.sample(rng), {"throughput": 0.7})
    assert s.predict("throughput", [s.row(SPACE.simplest())]) is not None
