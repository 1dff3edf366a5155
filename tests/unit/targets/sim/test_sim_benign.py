"""Benign workloads are clean on every profile: perftest-like defaults and many random points outside every
quirk's condition, judged by collie's oracle with ceilings calibrated on the target itself.

A run held below its line- or message-rate ceiling by a base-model limit the oracle calibrates (a QP's own WR
rate, the READ/atomic window, the atomic rate: ``JUDGED_LIMITS``) is judged like any other: the oracle's bounds
must explain it. A run with another base-model label (partial cache lines, receiver starvation, churn) is held
there by physics the oracle's calibration does not know; it is left out of the judgement like a run that fired a
quirk, and counted apart."""

from __future__ import annotations

import functools
import random

import pytest
from simhelpers import PERFTEST_DEFAULTS, fired, max_pause, oracle_for, random_workload

from collie.experiment import measure_solo
from collie.oracle import Oracle
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget, builtin_names
from collie.targets.sim.model import BASE_PREFIX

PROFILES = builtin_names()


@functools.lru_cache(maxsize=8)
def _oracle(profile: str) -> Oracle:
    return oracle_for(SimTarget(profile, seed=11))


def test_builtin_profiles_are_the_documented_nine() -> None:
    assert PROFILES == ["cx6-200g", "cx6-200g-amd", "fleet8-cx6", "fleet8-cx6-2port", "fleet8-cx6-fabric",
                        "fleet8-cx6-faults", "ideal", "p2100g-100g", "rxe"]


def _quirks(truth: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in truth if not t.startswith(BASE_PREFIX))


def _unjudged(truth: tuple[str, ...]) -> bool:
    """Whether a run's truth holds a label the oracle cannot be held to (a quirk, or an uncalibrated limit)."""
    return bool(fired(truth))


@pytest.mark.parametrize("profile", PROFILES)
def test_perftest_defaults_are_clean(profile: str) -> None:
    target = SimTarget(profile, seed=5)
    for w in PERFTEST_DEFAULTS:
        run = target.run(w, 10.0)
        assert not _unjudged(run.truth), (w.name, run.truth)
        verdict = _oracle(profile).judge(run, w)
        assert not verdict.anomalous, (w.name, verdict.signature, verdict.evidence)
        assert max_pause(run) < 1e-4


@pytest.mark.parametrize("profile", PROFILES)
def test_random_points_outside_quirks_are_clean(profile: str) -> None:
    target = SimTarget(profile, seed=3)
    info = target.describe()
    rng = random.Random(profile)
    judged = fired = 0
    for _ in range(600):
        w = random_workload(rng, gpu=info.details["gpu"] != "none", remote=target.profile.host.sockets > 1)
        if w is None:
            continue
        try:
            run = target.run(w, 10.0)
        except Unsupported:
            continue
        if _quirks(run.truth):
            fired += 1
        if _unjudged(run.truth):
            continue
        judged += 1
        verdict = _oracle(profile).judge(run, w)
        assert not verdict.anomalous, (w.to_dict(), verdict.signature, verdict.evidence)
        assert max_pause(run) < 1e-4
        for h in run.hosts:
            for name in ("out_of_sequence", "packet_seq_err", "duplicate_request", "rcvd_seq_err"):
                assert h.counters.get(name, 0.0) == 0.0
    assert judged >= 150
    if not target.profile.active_quirks:
        assert fired == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_plain_workloads_reach_their_ceiling(profile: str) -> None:
    """Large WRITEs reach >= 0.9 of line rate after headers; small ones >= 0.9 of the message-rate limit."""
    target = SimTarget(profile)
    info = target.describe()
    large = next(w for w in PERFTEST_DEFAULTS if w.name == "ib_write_bw -q 8 -l 16")
    small = next(w for w in PERFTEST_DEFAULTS if w.name == "ib_write_bw -s 64 -q 16")
    f = target.run(large, 10.0).flows[0]
    after_headers = info.line_rate_bps * 65536 / (65536 + 16 * 82 + 16)
    assert 0.9 * after_headers <= f.bps <= after_headers
    s = target.run(small, 10.0).flows[0]
    wire_pps = info.line_rate_bps / 8 / (64 + 82 + 16)
    assert 0.9 * min(info.msg_rate_pps, wire_pps) <= s.pps <= min(info.msg_rate_pps, wire_pps)


@pytest.mark.parametrize("profile", PROFILES)
def test_points_of_the_default_search_space_outside_quirks_are_clean(profile: str) -> None:
    """The campaign's own distribution (workloads/default.toml), incast and fan-out shapes, atomics mixed into
    other verbs and isolation experiments (judged against their victims' solo runs) included. A profile
    prunes many points of the whole space (inline beyond the device's max_inline, GPU or remote memory it does
    not have, ...) and base-model limits hold others (atomics, slow receivers), so it samples until it has judged
    enough clean points."""
    import numpy as np

    from collie.model.space import load_space

    space = load_space()
    rng = np.random.default_rng(len(profile))
    target = SimTarget(profile, seed=8)
    judged = victims = 0
    for _ in range(5000):
        if judged == 400:
            break
        point = space.sample(rng)
        if not space.is_valid(point):
            continue
        w = space.build(point)
        try:
            run = target.run(w, 10.0)
        except Unsupported:
            continue
        if _unjudged(run.truth):
            continue
        judged += 1
        if w.isolation:
            measure_solo(target, w, 10.0, _oracle(profile))
            victims += 1
        verdict = _oracle(profile).judge(run, w)
        assert not verdict.anomalous, (point, verdict.signature, verdict.evidence)
        assert max_pause(run) < 1e-4
    assert judged >= 300 and victims >= 30
