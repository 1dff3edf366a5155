"""The real resources and engine code on a fake pyverbs (see fakeverbs): counting, signalling, verification."""

from __future__ import annotations

import time
from typing import Any

import pytest

from collie.model.flow import Endpoint, Flow
from collie.targets.verbs import engine
from collie.targets.verbs.engine import run_job
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec
from tests.unit.targets.verbs.fakeverbs import fake

A, B = Endpoint("a"), Endpoint("b")


WARMUP, DURATION = 0.02, 0.1


def job(flow: Flow, verify: bool = True, duration: float = DURATION) -> WorkerJob:
    share = Share(flow_index=0, flow=flow, qps=flow.qps, mrs=flow.mrs, worker=0)
    return WorkerJob(worker=0, spec=VerbsSpec("fake0"), shares=(share,), timing=Timing(WARMUP, duration, 2.0),
                     verify=verify, seed=1)


#: Nanoseconds the engine's clock advances at each reading: not a divisor of the measured interval, so an interval that
#: is a multiple of it was measured between two readings, not copied from the configured duration.
TICK = 49_999
#: Clock readings one loop iteration of these flows may take (the loop's own, timed posts, polls): the most by
#: which the engine can notice an edge late.
ITERATION_READINGS = 16


class SteppingClock:
    """The ``time`` module as the engine sees it, with a monotonic clock that advances :data:`TICK` ns at every
    reading (and by the time slept): a run is a pure function of the engine's own steps, whatever the load."""

    def __init__(self) -> None:
        self.now = 1_000_000_000_000

    def monotonic_ns(self) -> int:
        self.now += TICK
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.parametrize("flow", [
    Flow(A, B, sizes=(4096,)),
    Flow(A, B, sizes=(64, 1000, 4096), sges=4, batch=3, signal_every=2, sq_depth=3, qps=3, mrs=2),
    Flow(A, B, opcodes=("READ",), sizes=(8192,), sges=2, batch=8, signal_every=8),
    Flow(A, B, opcodes=("SEND",), sizes=(512, 2048), batch=4, signal_every=4, rq_depth=16, qps=2),
    Flow(A, B, opcodes=("WRITE_IMM",), sizes=(256,), batch=2, signal_every=5, sq_depth=8),
    Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(1024,), mtu=1024, batch=8, signal_every=8),
    Flow(A, B, opcodes=("ATOMIC_FA",), sizes=(8,), batch=4, signal_every=4, mrs=3),
], ids=["write", "write-mix-odd-signal", "read", "send", "write-imm", "ud-send", "fetch-add"])
def test_engine_counts_and_verifies_on_the_fake_device(flow: Flow, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "time", SteppingClock())
    report = run_job(fake(), job(flow))
    assert report.errors == ()
    (s,) = report.stats
    assert s.verified and not s.verify_errors, s.verify_errors
    assert s.wrs > 0 and s.bytes > 0 and s.packets >= s.wrs
    assert s.lat_ns and s.loops > 0
    # The measured interval is the one between the engine's two edges: two clock readings (a whole number of
    # ticks), the first after the warm-up, the second after the deadline, each noticed within one loop
    # iteration. The clock only moves when the engine reads it, so no load on the machine can change this.
    interval = round(s.seconds * 1e9)
    assert interval % TICK == 0, interval
    assert abs(interval - DURATION * 1e9) <= ITERATION_READINGS * TICK, interval


def test_verification_catches_corrupted_data(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.targets.verbs import fakeverbs

    original = fakeverbs.FakeQP.post_send

    def corrupt(self: fakeverbs.FakeQP, wr: fakeverbs.FakeSendWR) -> None:
        original(self, wr)
        mem, off = fakeverbs._slice(wr.remote[1], 1)
        mem[off + 5] ^= 0xFF

    monkeypatch.setattr(fakeverbs.FakeQP, "post_send", corrupt)
    (s,) = run_job(fake(), job(Flow(A, B, sizes=(64,)))).stats
    assert not s.verified
    assert s.verify_errors and "byte 5" in s.verify_errors[0]


def test_bytes_follow_the_size_vector() -> None:
    (s,) = run_job(fake(), job(Flow(A, B, sizes=(100, 300), batch=2, signal_every=2), verify=False)).stats
    # every completed chain carries one 100 B and one 300 B message
    assert s.bytes == s.wrs // 2 * 400
