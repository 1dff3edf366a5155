"""A switch's shared buffer (``[fabric] buffer_mib``): a congested queue holds its dynamic threshold, ``alpha``
(``lossy_alpha`` for a priority PFC does not protect) times the buffer its switch has free, and a flow waits what
the queues on its way hold; the more queues of one switch are congested, the less each holds. The rates do not
change (they are steady state); the latency does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collie.errors import InputError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget, load_profile
from collie.targets.sim.profile import PROFILE_DIR, parse_profile

FABRIC = load_profile("fleet8-cx6-fabric")  # two leaves of four hosts, PFC on priority 3 only
MIB_BITS = (1 << 20) * 8
LINE = 200e9  # each host's port into it


def run(workload: Workload, buffer_mib: float, xoff_kib: float = 0.0, alpha: float = 0.125) -> RunResult:
    assert FABRIC.fabric is not None
    fabric = replace(FABRIC.fabric, buffer_mib=buffer_mib, xoff_kib=xoff_kib, alpha=alpha)
    return SimTarget(replace(FABRIC, fabric=fabric), seed=4).run(workload, 1.0)


def waited_us(workload: Workload, buffer_mib: float, flow: int = 0, alpha: float = 0.125) -> float:
    """What flow ``flow`` waits in the switches' queues: its median latency with the buffer, less without any
    queueing (the same workload draws the same noise)."""
    return run(workload, buffer_mib, alpha=alpha).flows[flow].lat_p50_us - run(workload, 0.0).flows[flow].lat_p50_us


def flows(*pairs: tuple[str, str, int | None]) -> Workload:
    return Workload(flows=tuple(Flow(Endpoint(a), Endpoint(b), tclass=t) for a, b, t in pairs))


INCAST_H0 = (("h1", "h0", None), ("h2", "h0", None))


def test_a_congested_queue_holds_its_threshold_of_the_free_buffer() -> None:
    # one congested queue of alpha 1/8 in a 32 MiB switch: T = B a / (1 + a) = 32/9 MiB, waited at 200 Gb/s
    assert waited_us(flows(*INCAST_H0), 32) == pytest.approx(32 / 9 * MIB_BITS / LINE * 1e6, rel=1e-6)
    assert waited_us(flows(*INCAST_H0), 32, alpha=1.0) == pytest.approx(16 * MIB_BITS / LINE * 1e6, rel=1e-6)
    # without a shared buffer every congested queue holds xoff_kib, as before
    plain = run(flows(*INCAST_H0), 0.0, xoff_kib=256).flows[0].lat_p50_us
    assert plain - run(flows(*INCAST_H0), 0.0).flows[0].lat_p50_us == pytest.approx(256 * 8192 / LINE * 1e6)


def test_the_more_queues_of_a_switch_are_congested_the_less_each_holds() -> None:
    both = flows(*INCAST_H0, ("h3", "h1", None), ("h0", "h1", None))  # a second incast, into h1 on the same leaf
    assert waited_us(both, 32) == pytest.approx(32 / 8 / 1.25 * MIB_BITS / LINE * 1e6, rel=1e-6)
    assert waited_us(both, 32) < 0.91 * waited_us(flows(*INCAST_H0), 32)
    # an incast into h4 congests the other leaf's queue: leaf0's buffer is not its
    apart = flows(*INCAST_H0, ("h5", "h4", None), ("h6", "h4", None))
    assert waited_us(apart, 32) == pytest.approx(waited_us(flows(*INCAST_H0), 32), rel=1e-6)
    assert [f.bps for f in run(both, 32).flows] == [f.bps for f in run(both, 0).flows]  # rates do not change


def test_a_lossy_queue_takes_buffer_a_lossless_one_would_have() -> None:
    """An incast of traffic class 0 (a priority PFC does not protect, lossy_alpha 1) into h1 beside one of the
    hosts' own class into h0, on one leaf: the lossless queue holds 32 x 1/8 / (1 + 1/8 + 1) MiB, not 32/9."""
    mixed = flows(*INCAST_H0, ("h3", "h1", 0), ("h0", "h1", 0))
    assert waited_us(mixed, 32) == pytest.approx(32 / 8 / 2.125 * MIB_BITS / LINE * 1e6, rel=1e-6)
    assert waited_us(mixed, 32, flow=2) == pytest.approx(32 / 2.125 * MIB_BITS / LINE * 1e6, rel=1e-6)


def test_the_buffer_keys_are_checked() -> None:
    text = (PROFILE_DIR / "fleet8-cx6-fabric.toml").read_text()
    good = parse_profile(text.replace("xoff_kib = 256", "buffer_mib = 32\nalpha = 0.5\nlossy_alpha = 2"), "f.toml")
    assert good.fabric is not None and (good.fabric.buffer_mib, good.fabric.alpha, good.fabric.lossy_alpha) == \
        (32.0, 0.5, 2.0)
    for bad, says in (("buffer_mib = -1", "fabric.buffer_mib: -1.0 must not be negative"),
                      ("alpha = 0", "fabric.alpha: must be greater than 0"),
                      ("lossy_alpha = \"big\"", "fabric.lossy_alpha: expected a number")):
        with pytest.raises(InputError, match=says):
            parse_profile(text.replace("xoff_kib = 256", bad), "f.toml")
