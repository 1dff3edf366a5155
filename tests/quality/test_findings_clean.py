"""A campaign's findings are clean: each anomaly saved once, each case at its MFS edges, each case replayable.

`bench/findings.py` holds the same properties over seeds 0-9 of the three profiles; these seeds are ones that
saved duplicates or cases far past their edges before finished MFSs were checked against the known ones.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from collie.minimize import off_edges
from collie.model.space import load_space
from collie.oracle import leading_symptom
from collie.storage.case import read_case_folder

SPACE = load_space()


def _campaign(out: Path, target: str, seed: int) -> list[Path]:
    done = subprocess.run([sys.executable, "-m", "collie", "campaign", "--target", target, "--seed", str(seed),
                           "--budget", "600", "--out", str(out)], capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: anomalies found
    return sorted(p for p in (out / "anomalies").iterdir() if p.is_dir())


@pytest.mark.parametrize(("target", "seed"), [("sim:cx6-200g", 4), ("sim:cx6-200g-amd", 1),
                                              ("sim:p2100g-100g", 6)])
def test_each_anomaly_is_saved_once_with_its_case_at_its_edges(tmp_path: Path, target: str, seed: int) -> None:
    folders = _campaign(tmp_path / "c", target, seed)
    cases = [read_case_folder(f) for f in folders]
    assert len(cases) >= 4
    for a, b in itertools.combinations(cases, 2):
        if a.mfs is not None and b.mfs is not None and leading_symptom(a.signature) == leading_symptom(b.signature):
            assert not a.mfs.nests(b.mfs), (a.anomaly_id, a.mfs.describe(), b.anomaly_id, b.mfs.describe())
    minimized = [c for c in cases if c.mfs is not None and c.confirmed]
    assert minimized
    for case in minimized:
        assert case.mfs is not None and case.evidence is not None
        # the case's own runs are runs of case.toml, and the case sits at every edge of its MFS
        assert SPACE.build(case.evidence.point).flows == case.workload.flows, case.anomaly_id
        assert off_edges(SPACE, case.mfs, case.evidence.point) == [], (case.anomaly_id, case.mfs.describe())
        assert case.mfs.matches(case.workload)
    if target == "sim:cx6-200g":  # plain collie replay reproduces each minimal case (exit 1: it reproduces)
        for folder in [tmp_path / "c" / "anomalies" / c.anomaly_id for c in minimized]:
            replay = subprocess.run([sys.executable, "-m", "collie", "replay", str(folder)], capture_output=True,
                                    text=True, check=False)
            assert replay.returncode == 1, (folder.name, replay.stdout, replay.stderr)
