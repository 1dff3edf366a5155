"""Each of the 18 published anomalies: its concrete trigger reproduces the symptom on its profile, and
breaking any one necessary condition removes it (judged by collie's own oracle, ceilings calibrated on the
target the way a campaign does)."""

from __future__ import annotations

import functools

import pytest
from simhelpers import DURATION, kinds, max_pause, oracle_for

from collie.constraints import validate_workload
from collie.oracle import Oracle
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, library, load_profile
from collie.targets.sim.triggers import TRIGGERS, Trigger

THRESHOLD = 0.001


@functools.lru_cache(maxsize=8)
def _oracle(profile: str) -> Oracle:
    return oracle_for(SimTarget(profile, seed=7))


def _id(t: Trigger) -> str:
    return f"{t.anomaly:02d}-{t.quirk}"


def test_every_anomaly_has_one_trigger_and_one_quirk() -> None:
    lib = library()
    assert sorted(q.anomaly for q in lib.values()) == list(range(1, 19))
    assert sorted(t.anomaly for t in TRIGGERS) == list(range(1, 19))
    for t in TRIGGERS:
        assert lib[t.quirk].anomaly == t.anomaly
        assert t.quirk in {q.id for q in load_profile(t.profile).active_quirks}


@pytest.mark.parametrize("trigger", TRIGGERS, ids=_id)
def test_trigger_reproduces_symptom(trigger: Trigger) -> None:
    validate_workload(trigger.workload)
    for seed in (0, 1, 2):
        target = SimTarget(trigger.profile, seed=seed)
        run = target.run(trigger.workload, DURATION)
        assert trigger.quirk in run.truth
        verdict = _oracle(trigger.profile).judge(run, trigger.workload)
        found = kinds(verdict)
        quirk = library()[trigger.quirk]
        if trigger.pause:
            assert "pause" in found, verdict.evidence
            assert max_pause(run) >= 0.5 * quirk.symptom.pause
        else:
            assert "pause" not in found, verdict.evidence
            assert max_pause(run) < THRESHOLD / 5
        if trigger.low_throughput:
            assert "low_throughput" in found, verdict.evidence


_BREAKS = [(t, name) for t in TRIGGERS for name in t.breaks]


@pytest.mark.parametrize(("trigger", "broken"), _BREAKS, ids=[f"{_id(t)}:{n}" for t, n in _BREAKS])
def test_breaking_one_condition_removes_it(trigger: Trigger, broken: str) -> None:
    case = trigger.breaks[broken]
    profile, workload = case if isinstance(case, tuple) else (trigger.profile, case)
    validate_workload(workload)
    run = SimTarget(profile, seed=3).run(workload, DURATION)
    assert trigger.quirk not in run.truth
    if not run.truth:
        verdict = _oracle(profile).judge(run, workload)
        assert not verdict.anomalous, (verdict.signature, verdict.evidence)
        assert max_pause(run) < THRESHOLD / 5


@pytest.mark.parametrize("trigger", TRIGGERS, ids=_id)
def test_trigger_is_clean_on_the_ideal_subsystem(trigger: Trigger) -> None:
    """The same workloads on a subsystem without quirks are not anomalous: the base model adds nothing."""
    target = SimTarget("ideal")
    run = target.run(trigger.workload, DURATION)
    assert run.truth == ()
    verdict = _oracle("ideal").judge(run, trigger.workload)
    assert not verdict.anomalous, (verdict.signature, verdict.evidence)


@pytest.mark.parametrize("trigger", TRIGGERS, ids=_id)
def test_diagnostic_counter_jumps_inside_the_condition(trigger: Trigger) -> None:
    """The quirk's diagnostic counters are higher at the trigger than at every broken variant of it."""
    quirk = library()[trigger.quirk]
    inside = SimTarget(trigger.profile).run(trigger.workload, DURATION)
    for name, case in trigger.breaks.items():
        if isinstance(case, tuple):
            continue
        outside = SimTarget(trigger.profile).run(case, DURATION)
        for counter in quirk.diagnostics:
            # per message moved, so that a variant that moves more messages does not win by volume
            assert _per_msg(inside, counter) > _per_msg(outside, counter), (name, counter)


def _per_msg(run: RunResult, counter: str) -> float:
    total = sum(h.counters[counter] for h in run.hosts)
    msgs = sum(f.msg_rate for f in run.flows)
    return float(total / max(msgs, 1.0))
