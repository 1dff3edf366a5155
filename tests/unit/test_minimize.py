"""The minimizer against a made-up anomaly whose conditions are known (no simulator)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from collie.mfs import MFS, Condition
from collie.minimize import Minimizer, MinimizeSettings, off_edges
from collie.model.features import features
from collie.model.space import load_space
from collie.oracle import Verdict

SPACE = load_space()
PAUSE = Verdict(True, (), 5.0, "pause@receiver")
CLEAN = Verdict(False, (), 0.0, "")


def planted(point: Any) -> Verdict:
    """Pause when UD SEND with batch >= 64 and wq_depth >= 256 (the shape of the paper's #1)."""
    f = features(SPACE.build(point))
    hit = f.transport == "UD" and f.opcode == "SEND" and f.batch >= 64 and f.wq_depth >= 256
    return PAUSE if hit else CLEAN


def test_minimal_feature_set_and_simplest_case() -> None:
    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000, "qps": 77, "mtu": 2048,
             "sizes": [512, 1024], "direction": "bidirectional", "mrs": 900, "signal_every": 9}
    m = Minimizer(SPACE, planted, MinimizeSettings(runs=3, required=2))
    result = m.run(start, PAUSE)
    text = result.mfs.describe()
    assert "transport == UD" in text and "opcode == SEND" in text
    conds = {c.feature: c for c in result.mfs.conditions}
    assert conds["batch"].op == ">=" and 45 <= conds["batch"].value <= 64
    assert conds["wq_depth"].op == ">=" and 181 <= conds["wq_depth"].value <= 256
    assert not {"qps_total", "mrs_host", "bidirectional", "signal_every"} & set(conds)
    assert result.confirmed
    # the simplest case: everything irrelevant at its simplest, necessary values at the region's edge
    case = result.point
    assert case["direction"] == "oneway" and case["qps"] == 1 and case["mrs"] == 1
    assert planted(case).anomalous
    assert result.experiments == sum(s["runs"] for s in result.steps)
    # far sides are probed in groups and bisection does not recheck: 31 runs here, one of them refining the
    # batch edge between 45 and 64, two testing the opcode half on UD SEND_IMM, two grouped probes of the far
    # sides (a dimension at its simplest value is checked at both ends of its ladder, one end per group)
    assert result.experiments <= 31


def upper_edge(point: Any) -> Verdict:
    """Pause when RC READ runs on at most 64 QPs and at most 8 SGEs: edges on the far side of the simplest."""
    f = features(SPACE.build(point))
    return PAUSE if f.opcode == "READ" and f.qps_total <= 64 and f.sges <= 8 else CLEAN


def test_far_side_edges_are_found_through_grouped_probes() -> None:
    start = {**SPACE.simplest(), "op": "RC_READ", "qps": 8, "sges": 2, "mrs": 50, "processes": 4}
    result = Minimizer(SPACE, upper_edge, MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert conds["qps_total"].op == "<=" and 45 <= conds["qps_total"].value <= 64
    assert conds["sges"].op == "<=" and 6 <= conds["sges"].value <= 8
    assert set(conds) == {"opcode", "qps_total", "sges"}
    grouped = [s for s in result.steps if s["why"].endswith("(far side)") and "," in s["why"]]
    assert grouped and all(s["kept"] is not None for s in grouped)  # an illegal group is split untested
    assert result.confirmed and upper_edge(result.point).anomalous


def test_invariant_the_case_stays_anomalous_under_noise() -> None:
    rng = np.random.default_rng(0)

    def noisy(point: Any) -> Verdict:
        v = planted(point)
        return CLEAN if v.anomalous and rng.random() < 0.1 else v  # 10 % of anomalous runs look clean

    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 128, "wq_depth": 1024}
    result = Minimizer(SPACE, noisy, MinimizeSettings()).run(start, PAUSE)
    assert planted(result.point).anomalous


def test_a_mix_of_sizes_is_found_necessary() -> None:
    def mix(point: Any) -> Verdict:
        return PAUSE if features(SPACE.build(point)).size_mix else CLEAN

    start = {**SPACE.simplest(), "sizes": [128, 65536, 256]}
    result = Minimizer(SPACE, mix, MinimizeSettings()).run(start, PAUSE)
    assert [str(c) for c in result.mfs.conditions] == ["size_mix == True"]
    assert sorted(result.point["sizes"]) == [128, 65536]


def test_a_pattern_of_middling_sizes_that_needs_them_all_says_so_and_its_case_matches() -> None:
    """Sizes of 32 KiB and 4.7 MB are not a mix of small and large (``size_mix`` is false for them): the MFS
    says the anomaly needs more than one size, and the case lies inside it."""
    def several(point: Any) -> Verdict:
        return PAUSE if len(set(SPACE.build(point).flows[0].sizes)) > 1 else CLEAN

    start = {**SPACE.simplest(), "sizes": [31769, 4891646], "mr_size": 4891646}
    result = Minimizer(SPACE, several, MinimizeSettings()).run(start, PAUSE)
    assert "sizes >= 2" in [str(c) for c in result.mfs.conditions]
    assert result.mfs.matches(SPACE.build(result.point))


def test_untestable_probes_add_no_conditions() -> None:
    def unsupported_big(point: Any) -> Verdict | None:
        return None if point["qps"] > 1000 else PAUSE

    result = Minimizer(SPACE, unsupported_big, MinimizeSettings()).run({**SPACE.simplest(), "qps": 8}, PAUSE)
    assert result.mfs.conditions == ()


def two_verbs(point: Any) -> Verdict:
    """Bidirectional RC WRITE pauses; so does any RC READ (another anomaly with the same symptom)."""
    f = features(SPACE.build(point))
    hit = (f.bidirectional and f.transport == "RC" and f.opcode == "WRITE") or f.opcode == "READ"
    return PAUSE if hit else CLEAN


def test_the_verb_is_tested_by_transport_and_opcode_apart() -> None:
    # RC_WRITE is the simplest verb; switching to RC_READ keeps a pause, but only through the other anomaly:
    # the minimizer tests the opcode (RC_SEND) and the transport (UC_WRITE) separately and needs both
    start = {**SPACE.simplest(), "direction": "bidirectional", "qps": 4}
    result = Minimizer(SPACE, two_verbs, MinimizeSettings()).run(start, PAUSE)
    text = result.mfs.describe()
    assert "transport == RC" in text and "opcode == WRITE" in text and "bidirectional == True" in text
    probed = {s["point"]["op"] for s in result.steps}
    assert {"RC_SEND", "UC_WRITE"} <= probed and "RC_READ" not in probed


LOW = Verdict(True, (), 2.0, "low_throughput@receiver")
LOW_BEHIND_PAUSE = Verdict(True, (), 3.0, "pause@receiver+low_throughput@receiver")


def any_rc_verb(point: Any) -> Verdict:
    """Low throughput with any RC verb on 64 QPs or more; RC SEND adds a stronger pause (another anomaly) on top
    (the shape of p2100g-100g's #14 beside its #17)."""
    f = features(SPACE.build(point))
    if f.transport != "RC" or f.qps_total < 64:
        return CLEAN
    return LOW_BEHIND_PAUSE if f.opcode == "SEND" else LOW


def test_a_verb_whose_run_is_masked_by_another_anomaly_tries_the_next_alternative() -> None:
    start = {**SPACE.simplest(), "qps": 100}
    result = Minimizer(SPACE, any_rc_verb, MinimizeSettings()).run(start, LOW)
    conds = {c.feature: c for c in result.mfs.conditions}
    # RC SEND shows the low throughput behind a pause: masked, not lost; RC READ keeps it, so no opcode
    assert set(conds) == {"transport", "qps_total"} and conds["transport"].value == "RC"
    probed = [s["point"]["op"] for s in result.steps]
    assert "RC_SEND" in probed and "RC_READ" in probed
    # a verb that is necessary stops at its first clear loss (test_the_verb_is_tested_by_transport_and_opcode_
    # apart): the masked run is what makes the second alternative worth its probe


def gpu_only(point: Any) -> Verdict:
    """Pause whenever GPU memory is used (the shape of the paper's #12): one condition of fifteen dimensions."""
    return PAUSE if features(SPACE.build(point)).gpu else CLEAN


def test_unnecessary_dimensions_are_simplified_in_one_grouped_probe() -> None:
    start = {**SPACE.simplest(), "memory": "gpu", "op": "UC_SEND", "qps": 300, "mrs": 5000, "batch": 32,
             "sges": 4, "wq_depth": 2048, "mtu": 1024, "processes": 3, "inline": 64, "signal_every": 16,
             "sizes": [4096]}
    result = Minimizer(SPACE, gpu_only, MinimizeSettings()).run(start, PAUSE)
    assert [str(c) for c in result.mfs.conditions] == ["gpu == True"]
    assert result.point == {**SPACE.simplest(), "memory": "gpu", "sizes": [4096]}
    grouped = [s for s in result.steps if s["kept"] and s["why"].count("->") == 9]
    assert len(grouped) == 1 and not grouped[0]["why"].endswith("(far side)")
    # one probe per dimension, and the verb's halves and the size's ends apart, cost 20 here; the far sides
    # take two grouped probes (each dimension's two ends)
    assert result.experiments <= 12


def test_a_grouped_probe_that_lost_the_anomaly_counts_as_the_first_run_of_its_recheck() -> None:
    calls: list[str] = []

    def counted(point: Any) -> Verdict:
        calls.append(repr(sorted(point.items())))
        return planted(point)

    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000, "qps": 77}
    result = Minimizer(SPACE, counted, MinimizeSettings()).run(start, PAUSE)
    assert result.experiments == len(calls) == sum(s["runs"] for s in result.steps)
    # no point is probed more than twice (a loss and its recheck), whichever probe saw it first
    assert max(calls.count(c) for c in calls) <= 2


def large_reads(point: Any) -> Verdict:
    """Pause when RC READ moves messages of 16 KiB or more (the shape of the paper's #3, without the MTU)."""
    f = features(SPACE.build(point))
    return PAUSE if f.opcode == "READ" and f.max_msg >= 16384 else CLEAN


def test_a_check_known_to_lose_the_anomaly_is_not_grouped() -> None:
    # all-small sizes lost the anomaly twice while the sizes were simplified: the far-side check of the small
    # end is that same point, so it goes straight to its bisection instead of failing every group it is in
    start = {**SPACE.simplest(), "op": "RC_READ", "sizes": [32, 4194304], "qps": 40, "batch": 16}
    result = Minimizer(SPACE, large_reads, MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert conds["max_msg"].op == ">=" and 11585 <= conds["max_msg"].value <= 16384
    small = [s for s in result.steps if "sizes -> [32]" in s["why"]]
    assert len(small) == 1 and small[0]["runs"] == 2 and not small[0]["kept"]
    assert result.experiments == sum(s["runs"] for s in result.steps)


def many_qps(point: Any) -> Verdict:
    """Pause when RC WRITE runs on 70 QPs or more: an edge between two rungs of the sqrt(2) ladder (64, 91)."""
    f = features(SPACE.build(point))
    return PAUSE if f.opcode == "WRITE" and f.qps_total >= 70 else CLEAN


def test_an_edge_between_wide_ladder_rungs_is_refined_by_one_probe() -> None:
    start = {**SPACE.simplest(), "qps": 3000}
    coarse = Minimizer(SPACE, many_qps, MinimizeSettings(refine=False)).run(start, PAUSE)
    fine = Minimizer(SPACE, many_qps, MinimizeSettings()).run(start, PAUSE)
    edge = {c.feature: c for c in coarse.mfs.conditions}["qps_total"]
    refined = {c.feature: c for c in fine.mfs.conditions}["qps_total"]
    assert edge.op == refined.op == ">="
    assert refined.value == 76 and edge.value in (90, 91)  # the geometric middle of the two rungs kept it
    assert fine.experiments == coarse.experiments + 1
    assert [s["why"] for s in fine.steps if s["why"].endswith("(refine)")] == ["qps -> 76 (refine)"]
    assert fine.point["qps"] == 76 and many_qps(fine.point).anomalous


def test_a_clear_loss_is_not_rechecked_and_a_near_one_is() -> None:
    def graded(level: float) -> Any:
        gone = Verdict(False, (), 0.0, "", levels={"pause@receiver": level})

        def probe(point: Any) -> Verdict:
            return PAUSE if planted(point).anomalous else gone
        return probe

    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000, "qps": 77}
    near = Minimizer(SPACE, graded(0.95), MinimizeSettings()).run(start, PAUSE)
    clear = Minimizer(SPACE, graded(0.2), MinimizeSettings()).run(start, PAUSE)
    unknown = Minimizer(SPACE, planted, MinimizeSettings()).run(start, PAUSE)
    lost = [s for s in clear.steps if s["kept"] is False]
    assert lost and all(s["runs"] == 1 for s in lost)  # one run tells a clear loss
    assert any(s["runs"] == 2 for s in near.steps)  # 5 % under the threshold: within the margin, rechecked
    assert near.experiments == unknown.experiments > clear.experiments  # a verdict without levels: rechecked
    # the same conditions either way
    assert clear.mfs.describe() == near.mfs.describe() == unknown.mfs.describe()
    assert clear.experiments == sum(s["runs"] for s in clear.steps)


def ud_or_rc_send(point: Any) -> Verdict:
    """Low throughput for UD SEND on 16+ QPs with deep queues (the paper's #2), and, with the same symptom, for
    RC SEND with 2+ SGEs at MTU 1024 or less (the shape of #6): a UD case moved to RC SEND can meet the second."""
    f = features(SPACE.build(point))
    ud = f.transport == "UD" and f.qps_total >= 16 and f.wq_depth >= 1024
    rc = f.transport == "RC" and f.opcode == "SEND" and f.sges >= 2 and f.mtu <= 1024
    return LOW if ud or rc else CLEAN


def test_a_verb_half_kept_far_from_the_simplest_case_is_checked_again_on_it() -> None:
    # RC SEND keeps the symptom at the start (many SGEs, MTU 256: the second anomaly), so the transport looks
    # unnecessary; on the simplified case (one SGE, MTU 4096) RC SEND loses it: the transport is UD after all
    start = {**SPACE.simplest(), "op": "UD_SEND", "qps": 51, "wq_depth": 1896, "sges": 16, "mtu": 256}
    result = Minimizer(SPACE, ud_or_rc_send, MinimizeSettings()).run(start, LOW)
    text = result.mfs.describe()
    assert "transport == UD" in text and "qps_total >= 16" in text and "wq_depth >= 1024" in text, text
    assert ud_or_rc_send(result.point).anomalous and result.point["op"] == "UD_SEND"


def read_or_send(sges: int) -> Any:
    """Pause for RC READ on 64+ QPs, and for RC SEND on 32+ QPs with ``sges`` SGEs or more (another anomaly with
    the same symptom: the shape of p2100g-100g's #16 beside its #17)."""
    def probe(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        read = f.transport == "RC" and f.opcode == "READ" and f.qps_total >= 64
        send = f.transport == "RC" and f.opcode == "SEND" and f.qps_total >= 32 and f.sges >= sges
        return PAUSE if read or send else CLEAN
    return probe


@pytest.mark.parametrize(("sges", "opcode"), [(1, ("in", ("READ", "SEND"))), (2, ("==", "READ"))])
def test_verb_alternatives_that_disagree_keep_the_opcode_half(sges: int, opcode: tuple[str, Any]) -> None:
    # RC WRITE (the simplest verb) loses the anomaly, RC SEND keeps it: the opcode matters, though not as
    # "== READ" alone while RC SEND keeps the symptom on the simplified case too; when the simplified case
    # (one SGE) loses it on RC SEND, the check narrows the set to READ
    start = {**SPACE.simplest(), "op": "RC_READ", "qps": 100, "sges": 4}
    result = Minimizer(SPACE, read_or_send(sges), MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert set(conds) == {"opcode", "qps_total"}, result.mfs.describe()
    assert (conds["opcode"].op, conds["opcode"].value) == opcode


def read_or_send_by_cause(point: Any) -> Verdict:
    """:func:`read_or_send` with one SGE, its runs carrying diagnostic counters as a NIC's would: the READ anomaly
    raises packet-pipeline stalls, the SEND one receive-WQE misses; a SEND run has some receive-WQE misses of its
    own."""
    f = features(SPACE.build(point))
    read = f.transport == "RC" and f.opcode == "READ" and f.qps_total >= 64
    send = f.transport == "RC" and f.opcode == "SEND" and f.qps_total >= 32
    diag = {"diag:pkt_stall": 0.5 if read else 0.1, "diag:qpc_miss": 0.3,
            "diag:rx_wqe_miss": 2.0 if send else 0.2 if f.opcode == "SEND" else 0.0}
    return dataclasses.replace(PAUSE if read or send else CLEAN, metrics=diag)


def test_a_verb_alternative_whose_diagnostics_point_at_another_cause_decides_nothing() -> None:
    # RC SEND keeps the pause on the simplified case too, but its packet-pipeline stalls fell back while its
    # receive-WQE misses rose tenfold: another anomaly of the same symptom, so the opcode stays READ (without the
    # counters, the check above reads "opcode in {READ, SEND}")
    start = {**SPACE.simplest(), "op": "RC_READ", "qps": 100}
    found = read_or_send_by_cause(start)
    result = Minimizer(SPACE, read_or_send_by_cause, MinimizeSettings()).run(start, found)
    assert [str(c) for c in result.mfs.conditions if c.feature == "opcode"] == ["opcode == READ"], \
        result.mfs.describe()
    assert result.point["op"] == "RC_READ"


def but_rc_write(point: Any) -> Verdict:
    """Low throughput on 8+ QPs with every verb but RC WRITE (the simplest verb)."""
    return LOW if point["op"] != "RC_WRITE" and features(SPACE.build(point)).qps_total >= 8 else CLEAN


def test_a_simplest_verb_that_lost_while_each_half_alone_kept_pins_the_verb_as_found() -> None:
    # UC SEND: RC WRITE loses, RC SEND (the transport moved) and UC WRITE (the opcode moved) keep; no one half
    # excludes RC WRITE without leaving out the other's keep, so the verb stays as found
    start = {**SPACE.simplest(), "op": "UC_SEND", "qps": 16}
    result = Minimizer(SPACE, but_rc_write, MinimizeSettings()).run(start, LOW)
    assert [str(c) for c in result.mfs.conditions] == ["transport == UC", "opcode == SEND", "qps_total >= 8"]
    assert not result.mfs.holds(features(SPACE.build({**result.point, "op": "RC_WRITE"})))
    assert result.point["op"] == "UC_SEND" and result.confirmed


def _counted(probe: Any) -> tuple[Any, list[int]]:
    calls = [0]

    def counting(point: Any) -> Verdict:
        calls[0] += 1
        return probe(point)
    return counting, calls


def test_a_deferred_run_leaves_wide_edges_that_finish_like_an_undeferred_run() -> None:
    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000, "qps": 77, "mtu": 2048,
             "sizes": [512, 1024], "direction": "bidirectional", "mrs": 900, "signal_every": 9}
    whole = Minimizer(SPACE, planted, MinimizeSettings()).run(start, PAUSE)
    probe, calls = _counted(planted)
    m = Minimizer(SPACE, probe, MinimizeSettings(search_bisect_steps=2))
    deferred = m.run(start, PAUSE, defer=True)
    assert m.open_edges == 2 and calls[0] == deferred.experiments
    wide = {c.feature: c.value for c in deferred.mfs.conditions}
    exact = {c.feature: c.value for c in whole.mfs.conditions}
    # an open edge stands in at the side that lost the anomaly: a wider region, still inside the true one's
    # ladder bracket (batch: the planted edge is 64, wq_depth: 256)
    assert wide["batch"] < exact["batch"] and wide["wq_depth"] < exact["wq_depth"]
    assert wide["batch"] > 8 and wide["wq_depth"] > 16
    assert deferred.confirmed and planted(deferred.point).anomalous
    budget = m.open_cost()
    finished = m.finish(deferred)
    assert 0 < finished.experiments - deferred.experiments <= budget
    assert finished.mfs == whole.mfs and m.open_edges == 0 and m.open_cost() == 0
    # the case moves to the finished edges, where an undeferred run leaves it, and is confirmed there
    assert finished.point == whole.point != deferred.point and finished.confirmed
    # the deferred run took fewer probes before the search could go on
    assert deferred.experiments < whole.experiments


def _flaky_at(edge_case: Any, judge: Callable[[Any], Verdict], seen: list[Any] | None = None
              ) -> Callable[[Any], Verdict]:
    """``judge``, except that ``edge_case`` keeps the anomaly once and then loses it (noise at an edge); each run
    of ``edge_case`` is appended to ``seen``."""
    seen = [] if seen is None else seen

    def flaky(point: Any) -> Verdict:
        if point == edge_case:
            seen.append(point)
            return judge(point) if len(seen) == 1 else CLEAN
        return judge(point)
    return flaky


def test_a_case_that_does_not_hold_up_at_its_finished_edges_stays_and_the_edges_come_to_it() -> None:
    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000}
    edge_case = Minimizer(SPACE, planted, MinimizeSettings()).run(start, PAUSE).point
    seen: list[Any] = []
    m = Minimizer(SPACE, _flaky_at(edge_case, planted, seen), MinimizeSettings(runs=3, required=2))
    deferred = m.run(start, PAUSE, defer=True)
    finished = m.finish(deferred)
    assert len(seen) > 1 and finished.point == deferred.point != edge_case
    assert off_edges(SPACE, finished.mfs, finished.point) == []
    conds = {c.feature: c.value for c in finished.mfs.conditions}
    assert conds["batch"] == features(SPACE.build(deferred.point)).batch


def test_an_edge_the_search_widened_meanwhile_is_not_finished_over() -> None:
    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000}
    m = Minimizer(SPACE, planted, MinimizeSettings())
    deferred = m.run(start, PAUSE, defer=True)
    widened = tuple(c if c.feature != "batch" else type(c)("batch", ">=", 7) for c in deferred.mfs.conditions)
    finished = m.finish(dataclasses.replace(deferred, mfs=type(deferred.mfs)(deferred.mfs.signature, widened)))
    conds = {c.feature: c.value for c in finished.mfs.conditions}
    assert conds["batch"] == 7 and 181 <= conds["wq_depth"] <= 256


def test_finishing_stops_with_the_probe_and_keeps_what_is_left_open() -> None:
    class Spent(Exception):
        pass

    start = {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000}
    allowed = [10 ** 6]

    def budgeted(point: Any) -> Verdict:
        if allowed[0] <= 0:
            raise Spent()
        allowed[0] -= 1
        return planted(point)

    m = Minimizer(SPACE, budgeted, MinimizeSettings())
    deferred = m.run(start, PAUSE, defer=True)
    cost = m.open_cost()
    allowed[0] = 1
    with pytest.raises(Spent):
        m.finish(deferred)
    assert 0 < m.open_cost() <= cost


def test_a_far_side_that_cannot_run_falls_back_on_the_farthest_legal_value() -> None:
    # small WRITEs over 12000+ MRs slow down (the paper's #7); an MR holds a whole message, and the case's
    # ~14000 MRs of 8 MB would pin more memory than a host allows: the far side of the size falls back from
    # 8 MB to the largest size that can run, and the upper edge is still found
    def small_writes(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        return PAUSE if f.opcode == "WRITE" and f.max_msg <= 1024 and f.mrs_host >= 12000 else CLEAN

    start = {**SPACE.simplest(), "op": "RC_WRITE", "mrs": 20000, "sizes": [256]}
    assert not SPACE.is_valid({**start, "sizes": [1 << 22]}) and SPACE.is_valid({**start, "sizes": [1 << 21]})
    result = Minimizer(SPACE, small_writes, MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert conds["max_msg"].op == "<=" and conds["max_msg"].value == 1024
    assert not SPACE.is_valid({**result.point, "sizes": [1 << 23]})
    assert any(s["why"] == "sizes -> [4194304] (far side)" and s["kept"] is False for s in result.steps)


def test_a_size_edge_from_one_size_is_told_apart_as_largest_or_every_message() -> None:
    # from a case of one size, "max_msg >= 16K" (one large message is enough) and "min_msg >= 16K" (every
    # message large) look the same: one probe with a small message added tells them apart
    def large_read(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        return PAUSE if f.opcode == "READ" and f.max_msg >= 16384 else CLEAN

    def all_large_read(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        return PAUSE if f.opcode == "READ" and f.min_msg >= 16384 else CLEAN

    # so do patterns whose every message is above the edge, though not of one size (185 KiB to 2 MiB READs)
    for pattern in ([1 << 20], [2103808, 189440, 304156]):
        start = {**SPACE.simplest(), "op": "RC_READ", "sizes": pattern}
        for planted_fn, feature in ((large_read, "max_msg"), (all_large_read, "min_msg")):
            result = Minimizer(SPACE, planted_fn, MinimizeSettings()).run(start, PAUSE)
            sizes = [c for c in result.mfs.conditions if c.feature in ("max_msg", "min_msg")]
            assert [(c.feature, c.op, c.value) for c in sizes] == [(feature, ">=", 16384)], result.mfs.describe()


def test_verb_checks_are_repeated_on_a_case_moved_to_its_finished_edges() -> None:
    # a UD SEND pause from 32 QPs and queues of 64, an RC SEND one from 64 QPs and queues of 128 (the same symptom
    # and, here, no diagnostic counter to tell them apart). Deferred, the case stays on 181 QPs while its QP
    # edge is open, where RC SEND keeps the pause: the transport reads free. Moved to the finished edge (32
    # QPs), RC SEND loses it: the transport is a condition after all
    def ud_and_rc(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        ud = f.transport == "UD" and f.qps_total >= 32 and f.wq_depth >= 64
        rc = f.transport == "RC" and f.qps_total >= 64 and f.wq_depth >= 128
        return PAUSE if f.opcode == "SEND" and (ud or rc) else CLEAN

    start = {**SPACE.simplest(), "op": "UD_SEND", "qps": 181, "wq_depth": 1024, "sizes": [256]}
    m = Minimizer(SPACE, ud_and_rc, MinimizeSettings(search_bisect_steps=1))
    deferred = m.run(start, PAUSE, defer=True)
    assert m.open_edges and "transport" not in deferred.mfs.describe()
    budget = m.open_cost()
    finished = m.finish(deferred)
    assert finished.experiments - deferred.experiments <= budget
    assert finished.point["qps"] == 32 and finished.confirmed
    assert "transport == UD" in finished.mfs.describe(), finished.mfs.describe()
    assert not ud_and_rc({**finished.point, "op": "RC_SEND"}).anomalous


def two_pauses(point: Any) -> Verdict:
    """Pause for RC WRITE and RC READ alike on 100+ QPs (two anomalies of one symptom); RC SEND does not."""
    f = features(SPACE.build(point))
    return PAUSE if f.transport == "RC" and f.opcode in ("WRITE", "READ") and f.qps_total >= 100 else CLEAN


def test_points_a_known_anomaly_explains_are_not_run_and_decide_nothing() -> None:
    # the WRITE pause is known; minimizing the READ one tries the simplest verb, RC WRITE, which would keep the
    # pause for the known anomaly's reason and make the READ find its duplicate. Explained, that point is not
    # run and reads as masked: the next verb (RC SEND) decides, and the READ stays a condition
    def known_write(point: Any) -> bool:
        f = features(SPACE.build(point))
        return f.transport == "RC" and f.opcode == "WRITE" and f.qps_total >= 100

    probe, calls = _counted(two_pauses)
    m = Minimizer(SPACE, probe, MinimizeSettings(), explained=known_write)
    result = m.run({**SPACE.simplest(), "op": "RC_READ", "qps": 300}, PAUSE)
    assert "opcode == READ" in result.mfs.describe() and result.point["op"] == "RC_READ"
    assert not any(known_write(s["point"]) for s in m.steps if s["runs"])  # never run in the known region
    assert any(s["runs"] == 0 and known_write(s["point"]) for s in m.steps)
    assert calls[0] == result.experiments
    # without the hook the simplest verb keeps the pause and the find becomes the WRITE anomaly
    plain = Minimizer(SPACE, two_pauses, MinimizeSettings()).run({**SPACE.simplest(), "op": "RC_READ", "qps": 300},
                                                                  PAUSE)
    assert plain.point["op"] == "RC_WRITE"


def test_off_edges_names_the_conditions_a_case_does_not_sit_at() -> None:
    mfs = MFS("pause@receiver", (Condition("batch", ">=", 64), Condition("mtu", "<=", 1024),
                                 Condition("wq_depth", ">=", 256)))
    at = {**SPACE.simplest(), "batch": 64, "mtu": 1024, "wq_depth": 256}
    assert off_edges(SPACE, mfs, at) == []
    # the simplest MTU is 4096: the simplest value that keeps mtu <= 1024 is 1024, not 256
    assert off_edges(SPACE, mfs, {**at, "mtu": 256}) == [mfs.conditions[1]]
    inside = MFS("pause@receiver", (Condition("qps_total", "<=", 4096),))  # the simplest QP count is inside
    assert off_edges(SPACE, inside, {**SPACE.simplest()}) == []
    assert off_edges(SPACE, mfs, {**at, "batch": 126, "wq_depth": 1448}) == [mfs.conditions[0], mfs.conditions[2]]


def _tail_anomaly(feature: str, lo: int, hi: int) -> Any:
    """Pause when ``lo <= feature <= hi`` (a size's place against a boundary)."""
    def probe(point: Any) -> Verdict:
        return PAUSE if lo <= getattr(features(SPACE.build(point)), feature) <= hi else CLEAN
    return probe


@pytest.mark.parametrize(("feature", "lo", "hi"), [("line_tail", 1, 8), ("line_tail", 3, 40), ("tail_packet", 1, 64),
                                                   ("tail_packet", 1, 300)])
def test_a_size_whose_boundary_is_the_condition_yields_tail_conditions(feature: str, lo: int, hi: int) -> None:
    # neither the smallest nor the largest size holds the tail, 3 x 4096 + 5 B does: rounding it to 8 or 16 KiB
    # loses the anomaly; the tail is bisected on its offset from the boundary, and the case moves to the lower
    # edge beside a power of two
    probe = _tail_anomaly(feature, lo, hi)
    start = {**SPACE.simplest(), "sizes": [2048, 3 * 4096 + 5, 1 << 20], "qps": 4}
    result = Minimizer(SPACE, probe, MinimizeSettings()).run(start, PAUSE)
    assert [str(c) for c in result.mfs.conditions] == [f"{feature} >= {lo}", f"{feature} <= {hi}"]
    (size,) = result.point["sizes"]
    base = size - lo
    assert base & (base - 1) == 0 and base >= 4096 and result.confirmed
    assert result.point["qps"] == 1


def test_a_size_off_a_power_of_two_shrinks_to_the_nearest_round_size_that_keeps_the_anomaly() -> None:
    def large(point: Any) -> Verdict:
        return PAUSE if features(SPACE.build(point)).max_msg >= 10000 else CLEAN

    result = Minimizer(SPACE, large, MinimizeSettings()).run({**SPACE.simplest(), "sizes": [12291]}, PAUSE)
    assert result.point["sizes"] == [16384]
    assert [str(c) for c in result.mfs.conditions] == ["max_msg >= 16384"]
    # 16 KiB loses a size that must stay under 13000: 8 KiB is tried next, and a case whose tail does not
    # matter drops it (whole cache lines, then a whole last packet)
    def window(point: Any) -> Verdict:
        return PAUSE if 10000 <= features(SPACE.build(point)).max_msg <= 13000 else CLEAN

    result = Minimizer(SPACE, window, MinimizeSettings()).run({**SPACE.simplest(), "sizes": [12291]}, PAUSE)
    assert result.point["sizes"] == [12288] and not any(c.feature in ("line_tail", "tail_packet")
                                                         for c in result.mfs.conditions)


@pytest.mark.parametrize(("flag", "mix", "kept"), [("read_write_mix", ["ATOMIC_FA", "READ"], ["READ"]),
                                                   ("atomics", ["SEND", "ATOMIC_CS"], ["ATOMIC_CS"])])
def test_a_necessary_mix_narrows_to_read_with_write_or_to_atomics(flag: str, mix: list[str], kept: list[str]
                                                                  ) -> None:
    def probe(point: Any) -> Verdict:
        return PAUSE if getattr(features(SPACE.build(point)), flag) else CLEAN

    start = {**SPACE.simplest(), "mix": mix, "qps": 8}
    result = Minimizer(SPACE, probe, MinimizeSettings()).run(start, PAUSE)
    # a mix drops the opcodes its transport lacks (UC has no READ or atomics), so RC may be kept as well
    conditions = [str(c) for c in result.mfs.conditions]
    assert f"{flag} == True" in conditions and set(conditions) <= {f"{flag} == True", "transport == RC"}
    assert result.point["mix"] == kept and result.point["op"] == "RC_WRITE" and result.confirmed


def test_a_mix_that_is_neither_stays_as_found_and_the_verb_leaves_the_opcode_to_it() -> None:
    def mixed(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        return PAUSE if f.opcode == "MIXED" and f.transport == "RC" else CLEAN

    result = Minimizer(SPACE, mixed, MinimizeSettings()).run({**SPACE.simplest(), "mix": ["SEND"]}, PAUSE)
    assert "opcode == MIXED" in [str(c) for c in result.mfs.conditions]
    assert result.mfs.matches(SPACE.build(result.point)) and result.point["mix"] == ["SEND"]
    # a mix the anomaly does not need is dropped
    result = Minimizer(SPACE, planted, MinimizeSettings()).run(
        {**SPACE.simplest(), "op": "UD_SEND", "batch": 64, "wq_depth": 256, "mix": ["SEND_IMM"]}, PAUSE)
    assert result.point["mix"] == [] and "opcode == SEND" in result.mfs.describe()


def any_send(point: Any) -> Verdict:
    """Receiver not ready on 8+ QPs with any SEND verb (the shape of the base model's RNR)."""
    f = features(SPACE.build(point))
    return Verdict(True, (), 2.0, "rnr@receiver") if f.opcode in ("SEND", "SEND_IMM") and f.qps_total >= 8 \
        else CLEAN


def test_a_simplest_verb_that_lost_while_each_half_alone_kept_is_left_out_by_the_opcodes_that_kept() -> None:
    # UD SEND: RC WRITE loses, RC SEND and UD SEND_IMM keep; the opcodes that kept leave WRITE out
    start = {**SPACE.simplest(), "op": "UD_SEND", "qps": 16}
    result = Minimizer(SPACE, any_send, MinimizeSettings()).run(start, Verdict(True, (), 2.0, "rnr@receiver"))
    assert [str(c) for c in result.mfs.conditions] == ["opcode in {SEND, SEND_IMM}", "qps_total >= 8"]


def any_write(point: Any) -> Verdict:
    """Low throughput on 8+ QPs whenever WRITE is among the opcodes, as the verb's or in the mix (the shape of
    an MR-churn anomaly whose find cycles WRITE beside an RC READ verb)."""
    opcodes = [point["op"].split("_", 1)[1], *point["mix"]]
    return LOW if "WRITE" in opcodes and features(SPACE.build(point)).qps_total >= 8 else CLEAN


def test_a_condition_a_later_kept_move_broke_is_dropped_and_the_mfs_holds_for_its_case() -> None:
    # the mix narrows to WRITE beside RC READ (read_write_mix), then the verb moves to RC WRITE and keeps the
    # anomaly: the case has no READ with WRITE any more, so that condition was not necessary
    start = {**SPACE.simplest(), "op": "RC_READ", "mix": ["WRITE_IMM", "WRITE"], "qps": 16}
    m = Minimizer(SPACE, any_write, MinimizeSettings())
    result = m.run(start, LOW, defer=True)
    assert result.point["op"] == "RC_WRITE" and result.point["mix"] == ["WRITE"]
    assert "read_write_mix" not in result.mfs.describe() and result.mfs.matches(SPACE.build(result.point))
    finished = m.finish(result)
    assert [str(c) for c in finished.mfs.conditions] == ["qps_total >= 8"]
    assert finished.mfs.matches(SPACE.build(finished.point))


def test_an_ordered_choice_of_the_receive_side_gets_its_edge() -> None:
    def slow_receiver(point: Any) -> Verdict:
        f = features(SPACE.build(point))
        return PAUSE if f.recv_delay_us >= 100 and f.rq_depth <= 64 else CLEAN

    start = {**SPACE.simplest(), "op": "RC_SEND", "recv_delay_us": 10000, "rq_depth": 16}
    result = Minimizer(SPACE, slow_receiver, MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert str(conds["recv_delay_us"]) == "recv_delay_us >= 100" and result.point["recv_delay_us"] == 100
    assert conds["rq_depth"].op == "<=" and 45 <= conds["rq_depth"].value <= 64


def test_a_small_round_size_is_told_apart_from_its_line_tail() -> None:
    # under 64 B a size is all tail: one cache line more keeps a line-tail anomaly and loses a small-message one
    start = {**SPACE.simplest(), "sizes": [4, 4096]}
    result = Minimizer(SPACE, _tail_anomaly("line_tail", 1, 8), MinimizeSettings()).run(start, PAUSE)
    assert [str(c) for c in result.mfs.conditions] == ["line_tail >= 1", "line_tail <= 8"]
    assert result.point["sizes"] == [65]

    def tiny(point: Any) -> Verdict:
        return PAUSE if features(SPACE.build(point)).min_msg <= 8 else CLEAN

    result = Minimizer(SPACE, tiny, MinimizeSettings()).run(start, PAUSE)
    assert [str(c) for c in result.mfs.conditions] == ["min_msg <= 8"] and result.point["sizes"] == [4]


def test_a_point_recorded_before_the_newer_dimensions_minimizes_from_their_defaults() -> None:
    # a case or campaign of the paper's space records no mix, receive side or churn; it ran at their defaults
    new = ("mix", "rq_depth", "recv_batch", "recv_sges", "recv_delay_us", "mr_churn", "qp_churn")
    start = {k: v for k, v in {**SPACE.simplest(), "op": "UD_SEND", "batch": 100, "wq_depth": 3000}.items()
             if k not in new}
    result = Minimizer(SPACE, planted, MinimizeSettings()).run(start, PAUSE)
    assert {c.feature for c in result.mfs.conditions} >= {"transport", "opcode", "batch", "wq_depth"}
    assert result.confirmed and planted(result.point).anomalous
    assert result.point["mix"] == [] and result.point["recv_delay_us"] == 0


def ud_where_only_ud_runs(point: Any) -> Verdict | None:
    """Pause for UD on 8+ QPs; nothing but UD can run here (the case pins more memory than a host allows with
    any other transport: p2100g-100g's #15 met beside a starved receiver at 200,000 MRs)."""
    f = features(SPACE.build(point))
    if f.transport != "UD":
        return None
    return PAUSE if f.qps_total >= 8 else CLEAN


def test_a_dimension_whose_probe_never_runs_keeps_the_case_value() -> None:
    # the simplest verb (RC WRITE) cannot run, before or after the others are simplified; nor can the
    # transport's alternatives: the transport cannot be shown irrelevant, so it stays (unknown is not irrelevant)
    start = {**SPACE.simplest(), "op": "UD_SEND", "qps": 16, "sizes": [1024]}
    result = Minimizer(SPACE, ud_where_only_ud_runs, MinimizeSettings()).run(start, PAUSE)
    conds = {c.feature: c for c in result.mfs.conditions}
    assert conds["transport"] == Condition("transport", "==", "UD"), result.mfs.describe()
    # the opcode half ran (UD SEND_IMM keeps the pause): it is free
    assert "opcode" not in conds and conds["qps_total"].op == ">="


def queue_window(point: Any) -> Verdict:
    """Pause with a send queue of 64 to 256 WQEs on 64 to 1024 QPs: a range on both sides of the simplest
    depth (128) and a range above the simplest QP count (1)."""
    f = features(SPACE.build(point))
    return PAUSE if 64 <= f.wq_depth <= 256 and 64 <= f.qps_total <= 1024 else CLEAN


def test_a_one_sided_condition_leaves_free_only_a_side_that_was_probed() -> None:
    # wq_depth is at its simplest value (128) inside the range: both its sides are checked; qps is bisected up
    # from its simplest (1) to 64: the side beyond the case (toward 20,000) is checked too
    start = {**SPACE.simplest(), "qps": 300}
    result = Minimizer(SPACE, queue_window, MinimizeSettings()).run(start, PAUSE)
    bounds = {(c.feature, c.op): c.value for c in result.mfs.conditions}
    assert set(bounds) == {("wq_depth", ">="), ("wq_depth", "<="), ("qps_total", ">="), ("qps_total", "<=")}
    assert 45 <= bounds["wq_depth", ">="] <= 64 and 256 <= bounds["wq_depth", "<="] <= 362
    assert 45 <= bounds["qps_total", ">="] <= 64 and 1024 <= bounds["qps_total", "<="] <= 1448
    assert result.point["wq_depth"] == 128 and queue_window(result.point).anomalous
    # the case sits at the edge it was bisected to; the far bound of a range is not one it must sit at
    assert off_edges(SPACE, result.mfs, result.point) == []


def test_a_range_whose_finished_case_does_not_hold_up_keeps_its_far_bound() -> None:
    start = {**SPACE.simplest(), "qps": 300}
    edge_case = Minimizer(SPACE, queue_window, MinimizeSettings()).run(start, PAUSE).point
    m = Minimizer(SPACE, _flaky_at(edge_case, queue_window), MinimizeSettings())
    deferred = m.run(start, PAUSE, defer=True)
    finished = m.finish(deferred)
    assert finished.point == deferred.point != edge_case
    bounds = {(c.feature, c.op): c.value for c in finished.mfs.conditions}
    # the edge that placed the case comes to it; the far bound of the range stays where it was probed
    assert bounds["qps_total", ">="] == features(SPACE.build(deferred.point)).qps_total
    assert 1024 <= bounds["qps_total", "<="] <= 1448
    assert off_edges(SPACE, finished.mfs, finished.point) == []


def small_mtu(point: Any) -> Verdict:
    """Pause at MTU 1024 or less, whatever else."""
    return PAUSE if features(SPACE.build(point)).mtu <= 1024 else CLEAN


def test_a_numeric_dimension_whose_simplest_value_a_known_anomaly_explains_keeps_an_edge() -> None:
    # a known anomaly of the same symptom holds every point on 4 QPs or fewer: the simplest QP count decides
    # nothing, before or after the others are simplified, so the edge is drawn beside the known region
    def explained(point: Any) -> bool:
        return bool(features(SPACE.build(point)).qps_total <= 4)

    start = {**SPACE.simplest(), "qps": 64, "mtu": 1024}
    result = Minimizer(SPACE, small_mtu, MinimizeSettings(), explained).run(start, PAUSE)
    bounds = {(c.feature, c.op): c.value for c in result.mfs.conditions}
    assert bounds == {("mtu", "<="): 1024, ("qps_total", ">="): 5}, result.mfs.describe()
    assert result.point["qps"] == 5


def test_a_far_side_a_known_anomaly_explains_is_not_left_free() -> None:
    # beyond 1,000 QPs a known anomaly of the same symptom explains whatever runs: that side decides nothing,
    # so the region stops before it rather than claiming it
    def explained(point: Any) -> bool:
        return bool(features(SPACE.build(point)).qps_total >= 1000)

    start = {**SPACE.simplest(), "qps": 64, "mtu": 1024}
    result = Minimizer(SPACE, small_mtu, MinimizeSettings(), explained).run(start, PAUSE)
    bounds = {(c.feature, c.op): c.value for c in result.mfs.conditions}
    assert bounds["mtu", "<="] == 1024 and 724 <= bounds["qps_total", "<="] < 1000, result.mfs.describe()
    assert not any(s["kept"] is not None and s["point"]["qps"] >= 1000 for s in result.steps)
