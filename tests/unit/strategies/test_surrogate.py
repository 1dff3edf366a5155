from __future__ import annotations

import math

import numpy as np

from collie.model.features import features, point_encoder
from collie.model.space import load_space
from collie.strategies.surrogate import Surrogate

SPACE = load_space()
ENCODER = point_encoder(SPACE.build)


def test_surrogate_recovers_a_log_linear_relation_and_ranks_unseen_points() -> None:
    # metric = qps_total^1.5 / batch^0.5 (times noise): the model must rank unseen points by it
    rng = np.random.default_rng(0)
    s = Surrogate(ENCODER, min_points=20)

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
    s = Surrogate(ENCODER, min_points=20)
    for i in range(19):
        s.add(SPACE.sample(rng), {"throughput": 0.5 + i / 100})
    assert s.observations("throughput") == 19
    assert s.predict("throughput", [s.row(SPACE.simplest())]) is None
    assert s.predict("diag:never-told", [s.row(SPACE.simplest())]) is None
    s.add(SPACE.sample(rng), {"throughput": float("nan")})  # not finite: not an observation
    assert s.observations("throughput") == 19
    s.add(SPACE.sample(rng), {"throughput": 0.7})
    assert s.predict("throughput", [s.row(SPACE.simplest())]) is not None


def test_surrogate_rows_are_what_its_encoder_makes_of_a_point() -> None:
    # the surrogate knows nothing of what a point means: any encoder will do
    s = Surrogate(lambda p: {"x": math.log2(p["x"]), f"colour={p['colour']}": 1.0}, min_points=5)
    assert s.row({"x": 8, "colour": "red"}) == {"x": 3.0, "colour=red": 1.0}
    for x in (1, 2, 4, 8, 16, 32):
        s.add({"x": x, "colour": "red"}, {"diag:m": float(x) ** 2})
    predicted = s.predict("diag:m", [s.row({"x": 2, "colour": "red"}), s.row({"x": 64, "colour": "red"})])
    assert predicted is not None and predicted[1] > predicted[0]
