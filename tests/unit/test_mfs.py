from __future__ import annotations

from collie.mfs import MFS, Condition
from collie.model.features import features
from collie.model.space import load_space

SPACE = load_space()
MFS_QPS = MFS("low_throughput@receiver", (Condition("transport", "==", "RC"), Condition("qps_total", ">=", 724),
                                          Condition("mtu", "<=", 1024)))


def _f(**point):  # type: ignore[no-untyped-def]
    return features(SPACE.build({**SPACE.simplest(), **point}))


def test_widening_moves_an_edge_just_far_enough() -> None:
    wider = MFS_QPS.widened_to(_f(qps=650, mtu=1024))
    assert wider is not None
    assert wider.describe() == "transport == RC and qps_total >= 650 and mtu <= 1024"
    assert wider.holds(_f(qps=650, mtu=512)) and not wider.holds(_f(qps=600, mtu=512))


def test_widening_refuses_far_points_other_categories_and_points_already_inside() -> None:
    assert MFS_QPS.widened_to(_f(qps=300, mtu=1024)) is None  # more than a factor of 2 below the edge
    assert MFS_QPS.widened_to(_f(op="UC_WRITE", qps=700, mtu=1024)) is None  # a categorical condition fails
    assert MFS_QPS.widened_to(_f(qps=800, mtu=1024)) is None  # already inside: nothing to widen
    upper = MFS("pause@sender", (Condition("max_msg", "<=", 1024),))
    assert upper.widened_to(_f(sizes=[2048])) == MFS("pause@sender", (Condition("max_msg", "<=", 2048),))
    assert upper.widened_to(_f(sizes=[4096])) is None


def test_broken_lists_the_conditions_a_point_breaks() -> None:
    assert MFS_QPS.broken(_f(qps=800, mtu=1024)) == []
    assert MFS_QPS.broken(_f(qps=100, mtu=1024)) == [Condition("qps_total", ">=", 724)]
    assert [c.feature for c in MFS_QPS.broken(_f(op="UC_WRITE", qps=100))] == ["transport", "qps_total", "mtu"]
