"""What a campaign did: the tally its runner and phases keep while it runs, read by the CLI when it ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from collie.campaign.registry import AnomalyRecord


@dataclass
class CampaignSummary:
    """The running tally of a campaign (mutable: the runner and the phases count into it as they go).

    Attributes:
        experiments: explore, confirm and minimize runs that were not pruned (what the budget counts).
        calibration: calibration runs.
        replayed: corpus cases replayed.
        pruned: trials the target could not run.
        failed: trials the target failed.
        engine_bound: runs of any phase the traffic engine, not the NIC, limited (``RunResult.engine_bound``; the
            oracle judges none of them).
        minimize_experiments: of ``experiments``, those spent confirming and minimizing.
        anomalies: the anomalies found, in the order found (the registry keeps it; MFSs replaced in place).
        known_hits: finds a known anomaly explained (or whose MFS was widened to take them in).
        corpus_reproduced: the corpus cases that reproduced.
        confirms: whether the preset confirms and minimizes finds (``random`` and ``bayes`` do not).
    """

    experiments: int = 0
    calibration: int = 0
    replayed: int = 0
    pruned: int = 0
    failed: int = 0
    engine_bound: int = 0
    minimize_experiments: int = 0
    anomalies: list[AnomalyRecord] = field(default_factory=list)
    known_hits: int = 0
    corpus_reproduced: list[str] = field(default_factory=list)
    confirms: bool = True
