"""The minimizer's RDMA policy as data: the space's shrink order, and the features each parameter drives."""

from __future__ import annotations

import dataclasses
from typing import Any

from collie.minimize import DRIVES, VERB_PARTS, Minimizer, MinimizeSettings, moved_to
from collie.minimize.policy import other_cause
from collie.model.features import Features, features
from collie.model.space import PATTERN_PARAMETERS, load_space
from collie.oracle import Verdict
from collie.shrink import ladder
from tests.conftest import ROOT

SPACE = load_space()
COLLECTIVE = load_space(ROOT / "workloads" / "collective.toml")
PAPER = load_space("workloads/paper.toml")
PAUSE = Verdict(True, (), 5.0, "pause@receiver")
CLEAN = Verdict(False, (), 0.0, "")


def batch_and_qps(point: Any) -> Verdict:
    """Pause with a post list of 16 or more on 8 QPs or more."""
    f = features(SPACE.build(point))
    return PAUSE if f.batch >= 16 and f.qps_total >= 8 else CLEAN


START = {**SPACE.simplest(), "batch": 64, "qps": 64, "mrs": 300, "signal_every": 8, "direction": "bidirectional"}


def test_the_features_each_parameter_drives_are_the_ones_it_moves() -> None:
    named = {n for driven in DRIVES.values() for n in driven} | set(VERB_PARTS)
    assert named <= set(Features.__dataclass_fields__)
    # a receive-consuming verb, so the receive side applies
    base = {**SPACE.simplest(), "op": "RC_SEND"}
    ring = {**COLLECTIVE.simplest(), "op": "RC_SEND", "pattern": "ring_allreduce", "ranks_per_host": 2}
    for name, driven in DRIVES.items():
        if name == "sizes":
            continue
        space, start = (COLLECTIVE, ring) if name in PATTERN_PARAMETERS else (SPACE, base)
        before = features(space.build(start))
        d = space.dimension(name)
        # the farthest legal value (a nearer one may be clamped: an MR holds the largest message)
        other = next(v for v in reversed(ladder(d))  # type: ignore[arg-type]
                     if v != d.simplest() and space.is_valid({**start, name: v}))
        after = features(space.build({**start, name: other}))
        # processes splits a flow's QPs rather than adding to them: it travels with them (moved_to), that is all
        moved = [f for f in driven if (name, f) != ("processes", "qps_total")]
        assert all(getattr(after, f) != getattr(before, f) for f in moved), name
    moved = moved_to(SPACE, base, {**base, "processes": 4, "qps": 2}, ["qps_total"])
    assert moved is not None and (moved["qps"], moved["processes"]) == (2, 4)


def test_a_dimension_the_order_names_after_the_rest_is_shrunk_last_and_kept_until_then() -> None:
    space = dataclasses.replace(SPACE, shrink_order=(*SPACE.shrink_order, "qps"))
    result = Minimizer(space, batch_and_qps, MinimizeSettings()).run(START, PAUSE)
    first = next(i for i, s in enumerate(result.steps) if s["why"].startswith("qps -> 1"))
    # every probe before it kept the aggressor's qps as found, after the sizes and the grouped rest
    assert all(s["point"]["qps"] == 64 for s in result.steps[:first])
    assert any(s["why"].startswith("mrs -> 1") for s in result.steps[:first])
    assert next(c.feature for c in result.mfs.conditions if c.feature in ("batch", "qps_total")) == "batch"
    # by default qps is grouped with the rest
    default = Minimizer(SPACE, batch_and_qps, MinimizeSettings()).run(START, PAUSE)
    assert any("qps -> 1, " in s["why"] or ", qps -> 1" in s["why"] for s in default.steps)
    assert {str(c) for c in result.mfs.conditions} == {str(c) for c in default.mfs.conditions}


def test_names_the_space_lacks_are_ignored() -> None:
    start = {**PAPER.simplest(), "batch": 64, "qps": 64, "direction": "bidirectional"}

    def probe(point: Any) -> Verdict:
        f = features(PAPER.build(point))
        return PAUSE if f.batch >= 16 and f.qps_total >= 8 else CLEAN

    assert "mix" in PAPER.shrink_order and "mix" not in PAPER.names
    plain = Minimizer(PAPER, probe, MinimizeSettings()).run(start, PAUSE)
    more = dataclasses.replace(PAPER, shrink_order=("recv_batch", *PAPER.shrink_order, "qp_churn"))
    other = Minimizer(more, probe, MinimizeSettings()).run(start, PAUSE)
    assert other.steps == plain.steps and other.mfs == plain.mfs


def test_diagnostic_counters_point_at_another_cause_only_when_they_move_apart() -> None:
    case = {"throughput": 0.9, "diag:pkt_stall": 0.47, "diag:qpc_miss": 1.37, "diag:rx_wqe_miss": 0.11}
    # p2100g-100g's #16 (RC READ) moved to RC SEND, where #17 fires: stalls fell, receive-WQE misses rose
    assert other_cause(case, {"diag:pkt_stall": 0.16, "diag:qpc_miss": 0.59, "diag:rx_wqe_miss": 2.01})
    # the verb's own effect moves them one way only: SEND adds receive-WQE misses, READ's stalls ease a little
    assert not other_cause(case, {"diag:pkt_stall": 0.36, "diag:qpc_miss": 1.3, "diag:rx_wqe_miss": 2.01})
    assert not other_cause(case, {"diag:pkt_stall": 0.1, "diag:qpc_miss": 0.5, "diag:rx_wqe_miss": 0.11})
    # counters near zero compare as equal; one missing from a side says nothing; throughput is not a counter
    assert not other_cause({"diag:a": 0.001, "diag:b": 0.5}, {"diag:a": 0.004, "diag:b": 0.2})
    assert not other_cause(case, {"diag:rx_wqe_miss": 2.01, "throughput": 0.1})
    assert not other_cause({}, {"diag:a": 1.0})
