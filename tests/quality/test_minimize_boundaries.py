"""The minimizer on the simulator, against anomalies planted on where sizes sit against a boundary and on the
opcode mix: the MFS it returns is the planted condition.

The planted quirk is inline in a test profile (the ideal subsystem plus one ``[[quirk]]``). The start points are
sampled from the default space among those where the quirk fires (ground truth, read by the test only); the
minimizer sees verdicts alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from simhelpers import DURATION, oracle_for

from collie.experiment import run_and_judge
from collie.minimize import Minimizer, MinimizeSettings
from collie.model.features import features
from collie.model.space import load_space
from collie.oracle import Verdict
from collie.targets.sim import SimTarget
from collie.targets.sim.profile import PROFILE_DIR

SPACE = load_space()
IDEAL = PROFILE_DIR / "ideal.toml"


def _target(tmp: Path, when: list[str], seed: int) -> SimTarget:
    """The ideal subsystem with one planted low-throughput quirk on ``when``."""
    base = IDEAL.read_text()
    clauses = ", ".join(f'"{c}"' for c in when)
    path = tmp / "planted.toml"
    path.write_text(base.replace('name = "ideal"', 'name = "planted"') + f"""
[[quirk]]
id = "t-planted"
summary = "planted for the minimizer's quality test"
when = [{clauses}]
symptom = {{ throughput = 0.4 }}
diagnostics = ["sim_pcie_backpressure"]
""")
    return SimTarget(str(path), seed=seed)


def _minimize(target: SimTarget, rng: np.random.Generator, start_if: Any) -> tuple[Any, dict[str, Any]]:
    """The MFS and case of a minimization from a sampled point where the planted quirk fires."""
    oracle = oracle_for(target)
    (quirk,) = target.profile.active_quirks

    def probe(point: Mapping[str, Any]) -> Verdict | None:
        return run_and_judge(target, SPACE.build(point), DURATION, oracle).verdict

    while True:
        point = SPACE.sample(rng)
        f = features(SPACE.build(point))
        if quirk.fires(f) and start_if(f):
            verdict = probe(point)
            if verdict is not None and verdict.anomalous:
                break
    result = Minimizer(SPACE, probe, MinimizeSettings()).run(point, verdict)
    assert result.confirmed
    return result.mfs, result.point


@pytest.mark.parametrize(("seed", "large"), [(0, False), (1, True), (2, True)])
def test_a_quirk_on_the_cache_line_tail_minimizes_to_its_conditions(tmp_path: Path, seed: int, large: bool) -> None:
    """From any start (a size under 64 B is all tail) and from one whose sizes are all 64 B or more (the tail is
    a boundary's neighbour)."""
    # up to 7 B: the 8 B fetch-adds that calibration runs (the atomic rate) must not fire it
    target = _target(tmp_path, ["line_tail >= 1", "line_tail <= 7"], seed)
    # a flow of atomics carries 8 B whatever its sizes: its line tail is not the sizes' to find
    mfs, case = _minimize(target, np.random.default_rng(seed), lambda f: not f.atomics and f.min_msg >= 64 * large)
    assert sorted(map(str, mfs.conditions)) == ["line_tail <= 7", "line_tail >= 1"], mfs.describe()
    # the case: one size, a power of two (64 B or more) plus the lower edge's 1 B
    (size,) = case["sizes"]
    assert size % 64 == 1 and (size - 1) & (size - 2) == 0, case["sizes"]


def test_a_quirk_on_read_mixed_with_write_minimizes_to_the_mix(tmp_path: Path) -> None:
    target = _target(tmp_path, ["read_write_mix"], 3)
    mfs, case = _minimize(target, np.random.default_rng(3), lambda f: True)
    assert [str(c) for c in mfs.conditions] == ["read_write_mix == True"], mfs.describe()
    assert len(case["mix"]) <= 2 and set(case["mix"]) <= {"READ", "WRITE"}
