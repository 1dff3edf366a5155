"""The corpus of published anomalies (``workloads/corpus``) through the real CLI: a campaign replays all 18
cases first, and on each built-in profile exactly those whose conditions meet one of its anomalies reproduce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simhelpers import CORPUS, NEAR_MISSES, corpus, expected_quirks

from tests.conftest import run_cli


@pytest.mark.parametrize("profile", ["cx6-200g", "cx6-200g-amd", "p2100g-100g"])
def test_a_campaign_replays_the_corpus_and_reproduces_the_anomalies_of_its_target(tmp_path: Path,
                                                                                  profile: str) -> None:
    r = run_cli("campaign", "--corpus", str(CORPUS), "--target", f"sim:{profile}", "--budget", "1",
                "--out", str(tmp_path / "c"), "--format", "json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["replayed"] == 18
    reproduced = {Path(p).parent.name for p in summary["corpus_reproduced"]}
    assert reproduced == {c.name for c in corpus() if expected_quirks(profile, c.workload)}
    assert {c.name for c in corpus() if c.profile == profile} <= reproduced


def test_replay_a_corpus_case_and_a_near_miss_of_it() -> None:
    case = run_cli("replay", str(CORPUS / "f03-read-mtu1k"), "--target", "sim:cx6-200g", "--runs", "1")
    assert case.returncode == 1 and "reproduces" in case.stderr
    miss = run_cli("replay", str(NEAR_MISSES / "f03-read-mtu1k" / "mtu-le-1k"), "--target", "sim:cx6-200g",
                   "--runs", "1")
    assert miss.returncode == 0 and "does not reproduce" in miss.stderr
