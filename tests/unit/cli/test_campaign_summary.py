"""What ``collie campaign`` prints when it ends: the engine-bound runs are counted (issue #33), said in the done
line only when there were some, and always in ``--format json``."""

from __future__ import annotations

from pathlib import Path

from collie.campaign import CampaignSummary
from collie.cli.campaign_cmd import spent, summary_dict


def test_the_done_line_counts_the_engine_bound_runs_only_when_there_are_some() -> None:
    summary = CampaignSummary(experiments=150, calibration=6, minimize_experiments=12, pruned=2, failed=1,
                              engine_bound=3)
    assert spent(summary) == ("150 experiments (12 minimizing, 6 calibration, 2 pruned, 1 failed, 3 engine-bound runs "
                              "not judged)")
    clean = CampaignSummary(experiments=1, calibration=6)
    assert spent(clean) == "1 experiment (0 minimizing, 6 calibration, 0 pruned, 0 failed)"


def test_the_json_summary_always_has_the_engine_bound_count() -> None:
    assert summary_dict(CampaignSummary(engine_bound=3), Path("/c"), simulated=False)["engine_bound"] == 3
    doc = summary_dict(CampaignSummary(), Path("/c"), simulated=True)
    assert doc["engine_bound"] == 0 and doc["out"] == "/c" and doc["simulated"] is True
