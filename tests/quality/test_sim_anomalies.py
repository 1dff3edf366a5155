"""Each of the 18 published anomalies: its case in ``workloads/corpus`` reproduces the symptom on its profile
and fires exactly its quirk (and those whose conditions it also meets), and breaking any one necessary
condition (``tests/fixtures/near-misses``) removes it (judged by collie's own oracle, ceilings calibrated on the
target the way a campaign does).

The cases are data: the corpus is what ``collie campaign --corpus workloads/corpus`` replays on any target;
``bench/write_corpus.py`` writes both folders. The simulator's ground truth (``RunResult.truth``) is read here,
by the tests, only.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from simhelpers import (
    CORPUS,
    DURATION,
    KnownCase,
    corpus,
    expected_quirks,
    fired,
    kinds,
    max_pause,
    near_misses,
    oracle_for,
)

from collie.model.constraints import validate_flows
from collie.model.features import features
from collie.model.space import load_space
from collie.oracle import Oracle
from collie.storage.corpus import load_corpus
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, library, load_profile
from collie.targets.sim.quirks import Quirk

THRESHOLD = 0.001
CASES = corpus()
MISSES = near_misses()


@functools.lru_cache(maxsize=8)
def _oracle(profile: str) -> Oracle:
    return oracle_for(SimTarget(profile, seed=7))


def _published(quirk: Quirk) -> set[str]:
    """The symptom kinds the quirk's declared symptom must show: pause if it pauses; low throughput if its rate
    (throughput factor, or what the pause leaves) is below the oracle's 0.8."""
    out = {"pause"} if quirk.symptom.pause > 0 else set()
    if min(quirk.symptom.throughput, 1 - quirk.symptom.pause) < 0.8:
        out.add("low_throughput")
    return out


def test_the_corpus_has_one_case_per_published_anomaly_and_nothing_else() -> None:
    lib = library()
    assert sorted(q.anomaly for q in lib.values()) == list(range(1, 19))
    assert sorted(lib[c.quirk].anomaly for c in CASES) == list(range(1, 19))
    for c in CASES:
        assert c.quirk in {q.id for q in load_profile(c.profile).active_quirks}, c.name
        assert c.mfs is not None and c.mfs.matches(c.workload), c.name
    # what --corpus replays: the 18 cases, no near miss, nothing else
    assert sorted(c.name for c in load_corpus(CORPUS)) == sorted(lib)
    # every case has near misses on its own profile, and every near miss belongs to a case
    assert {m.quirk for m in MISSES} == {c.quirk for c in CASES}
    assert all(m.name.startswith(m.quirk + "/") for m in MISSES)
    assert len(MISSES) >= 3 * len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_recorded_symptom_is_the_published_one(case: KnownCase) -> None:
    """evidence.json's signature is the quirk's declared symptom (so the symptom checks below are not circular),
    and mfs.json's conditions are the quirk's: the same verdict on sampled points of the default space."""
    quirk = library()[case.quirk]
    assert case.kinds == _published(quirk) | {k for q in expected_quirks(case.profile, case.workload)
                                              for k in _published(library()[q])}, case.signature
    assert case.mfs is not None and case.mfs.signature == case.signature
    space, rng = load_space(), np.random.default_rng(len(case.name))
    for _ in range(300):
        f = features(space.build(space.sample(rng)))
        assert case.mfs.holds(f) == quirk.fires(f), (case.name, f)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_reproduces_its_symptom_and_fires_exactly_its_quirk(case: KnownCase) -> None:
    validate_flows(case.workload.flows)
    expected = expected_quirks(case.profile, case.workload)
    assert case.quirk in expected
    quirk = library()[case.quirk]
    for seed in (0, 1, 2):
        run = SimTarget(case.profile, seed=seed).run(case.workload, DURATION)
        assert fired(run.truth) == expected
        verdict = _oracle(case.profile).judge(run, case.workload)
        found = kinds(verdict)
        if "pause" in case.kinds:
            assert "pause" in found, verdict.evidence
            assert max_pause(run) >= 0.5 * quirk.symptom.pause
        else:
            assert "pause" not in found, verdict.evidence
            assert max_pause(run) < THRESHOLD / 5
        if "low_throughput" in case.kinds:
            assert "low_throughput" in found, verdict.evidence


@pytest.mark.parametrize("miss", MISSES, ids=lambda m: m.name)
def test_breaking_one_condition_removes_it(miss: KnownCase) -> None:
    validate_flows(miss.workload.flows)
    run = SimTarget(miss.profile, seed=3).run(miss.workload, DURATION)
    assert miss.quirk not in run.truth
    assert fired(run.truth) == expected_quirks(miss.profile, miss.workload)
    if not fired(run.truth):
        verdict = _oracle(miss.profile).judge(run, miss.workload)
        assert not verdict.anomalous, (verdict.signature, verdict.evidence)
        assert max_pause(run) < THRESHOLD / 5


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_is_clean_on_the_ideal_subsystem(case: KnownCase) -> None:
    """The same workloads on a subsystem without quirks are not anomalous: the base model adds nothing."""
    run = SimTarget("ideal").run(case.workload, DURATION)
    assert run.truth == ()
    verdict = _oracle("ideal").judge(run, case.workload)
    assert not verdict.anomalous, (verdict.signature, verdict.evidence)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_diagnostic_counter_jumps_inside_the_condition(case: KnownCase) -> None:
    """The quirk's diagnostic counters are higher at the case than at every near miss of it on its profile."""
    quirk = library()[case.quirk]
    inside = SimTarget(case.profile).run(case.workload, DURATION)
    outside = [m for m in MISSES if m.quirk == case.quirk and m.profile == case.profile]
    assert outside
    for miss in outside:
        run = SimTarget(case.profile).run(miss.workload, DURATION)
        for counter in quirk.diagnostics:
            # per message moved, so that a variant that moves more messages does not win by volume
            assert _per_msg(inside, counter) > _per_msg(run, counter), (miss.name, counter)


def _per_msg(run: RunResult, counter: str) -> float:
    total = sum(h.counters[counter] for h in run.hosts)
    msgs = sum(f.msg_rate for f in run.flows)
    return float(total / max(msgs, 1.0))
