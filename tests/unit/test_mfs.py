from __future__ import annotations

import itertools

import numpy as np

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


READ_SMALL_MTU = MFS("pause@receiver", (Condition("opcode", "==", "READ"), Condition("mtu", "<=", 1024),
                                        Condition("max_msg", ">=", 16384)))


def test_a_region_lies_within_another_when_each_of_its_conditions_follows() -> None:
    tighter = MFS("pause@receiver", (Condition("opcode", "==", "READ"), Condition("mtu", "<=", 512),
                                     Condition("max_msg", ">=", 65536), Condition("sges", ">=", 4)))
    assert tighter.within(READ_SMALL_MTU) and not READ_SMALL_MTU.within(tighter)
    assert READ_SMALL_MTU.nests(tighter) and tighter.nests(READ_SMALL_MTU)
    # equal regions lie within each other, whatever the order of their conditions
    shuffled = MFS("pause@sender", tuple(reversed(READ_SMALL_MTU.conditions)))
    assert shuffled.within(READ_SMALL_MTU) and READ_SMALL_MTU.within(shuffled)
    # a set of opcodes follows from one of them, not the other way round
    either = MFS("pause@receiver", (Condition("opcode", "in", ("READ", "WRITE")), Condition("mtu", "<=", 1024)))
    assert READ_SMALL_MTU.within(either) and not either.within(READ_SMALL_MTU)
    # an empty MFS holds everywhere: every region lies within it
    assert READ_SMALL_MTU.within(MFS("pause@receiver", ()))


def test_regions_that_only_overlap_do_not_nest() -> None:
    batch = MFS("low_throughput@receiver", (Condition("opcode", "==", "READ"), Condition("qps_total", ">=", 64),
                                            Condition("batch", ">=", 32)))
    many = MFS("low_throughput@receiver", (Condition("opcode", "==", "READ"), Condition("qps_total", ">=", 108)))
    assert not batch.nests(many)  # each holds workloads the other does not
    write = MFS("pause@receiver", (Condition("opcode", "==", "WRITE"), Condition("mtu", "<=", 1024),
                                   Condition("max_msg", ">=", 16384)))
    assert not write.nests(READ_SMALL_MTU)
    looser_edge = MFS("pause@receiver", (Condition("opcode", "==", "READ"), Condition("mtu", "<=", 2048),
                                         Condition("max_msg", ">=", 8192)))
    assert READ_SMALL_MTU.within(looser_edge) and not looser_edge.within(READ_SMALL_MTU)


_POOL = (Condition("opcode", "==", "READ"), Condition("opcode", "in", ("READ", "WRITE")),
         Condition("transport", "==", "RC"), Condition("qps_total", ">=", 64), Condition("qps_total", ">=", 512),
         Condition("qps_total", "<=", 2048), Condition("mtu", "<=", 1024), Condition("mtu", "<=", 4096),
         Condition("mtu", "==", 1024), Condition("bidirectional", "==", True), Condition("max_msg", ">=", 4096),
         Condition("batch", ">=", 8), Condition("batch", "in", (1, 2, 4)))


def test_within_is_never_wrong_on_sampled_workloads() -> None:
    # soundness: whenever a.within(b), every sampled workload that a holds for, b holds for too
    rng = np.random.default_rng(7)
    samples = [features(SPACE.build(SPACE.sample(rng))) for _ in range(400)]
    samples += [_f(op="RC_READ", qps=q, mtu=m, batch=b, sizes=[8192], direction="bidirectional")
                for q, m, b in itertools.product((64, 600, 4096), (256, 1024, 4096), (1, 4, 16))]
    regions = [MFS("x", tuple(c for i, c in enumerate(_POOL) if mask >> i & 1))
               for mask in rng.integers(0, 1 << len(_POOL), size=150)]
    checked = 0
    for a, b in itertools.product(regions, regions):
        if a.within(b):
            checked += 1
            assert all(b.holds(f) for f in samples if a.holds(f)), (a.describe(), b.describe())
    assert checked > len(regions)  # more pairs nest than each region with itself
