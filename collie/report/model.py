"""A report of one campaign: its data, its frames and the facts of each anomaly, built once for every format."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from collie.report.facts import AnomalyFacts, counter_catalog, facts_of
from collie.report.frames import anomalies_frame, trials_frame
from collie.report.load import CampaignData, load_campaign
from collie.report.machines import Machines, machines_of
from collie.storage.records import Phase


@dataclass(frozen=True)
class Report:
    """Everything the renderers read.

    Attributes:
        data: the campaign folder as read.
        trials: the trials frame (:func:`~collie.report.frames.trials_frame`).
        anomalies: the facts of each anomaly, by folder name.
        anomaly_frame: the anomalies frame.
        machines: the machines of the campaign's target, and whether it is simulated.
    """

    data: CampaignData
    trials: pd.DataFrame
    anomalies: tuple[AnomalyFacts, ...]
    anomaly_frame: pd.DataFrame
    machines: Machines

    @property
    def title(self) -> str:
        return f"collie campaign {self.data.root.name}" + (" (simulated)" if self.machines.simulated else "")

    def found_at_trials(self) -> dict[str, int]:
        """Anomaly id -> the trial number of the run that found it (those known)."""
        return {a.anomaly_id: a.found_trial for a in self.anomalies if a.found_trial is not None}


def counts(report: Report) -> dict[str, int]:
    """Trials, budgeted experiments, anomalous runs, pruned and failed trials, and engine-bound runs (of every
    phase: the traffic engine, not the NIC, limited them, and the oracle judged none of them; 0 in a journal
    written before runs said so)."""
    t = report.trials
    budgeted = t["phase"].isin([str(p) for p in Phase if p.budgeted])
    return {"trials": len(t), "experiments": int((budgeted & (t["status"] != "PRUNED")).sum()),
            "anomalous": int(t["anomalous"].fillna(False).astype(bool).sum()),
            "pruned": int((t["status"] == "PRUNED").sum()), "failed": int((t["status"] == "FAILED").sum()),
            "engine_bound": int(t["engine_bound"].fillna(False).astype(bool).sum())}


def engine_bound_sentence(runs: int) -> str:
    """What ``runs`` engine-bound runs mean, in one sentence a report shows beside its counts (``""``: none)."""
    if not runs:
        return ""
    them = "it" if runs == 1 else "them"
    return (f"{runs} run{' was' if runs == 1 else 's were'} engine-bound: the traffic engine, not the NIC, limited "
            f"{them}, so the oracle did not judge {them} and {'its' if runs == 1 else 'their'} rates are the "
            "engine's (docs/targets.md, \"What rates the engine can drive, and engine_bound\")")


def build_report(root: Path) -> Report:
    """Read the campaign folder ``root`` and derive everything a report shows.

    Raises:
        InputError: not a campaign folder, or a damaged file in it (one sentence).
    """
    data = load_campaign(root)
    info = data.config.target_info
    catalog = counter_catalog(info)
    facts = tuple(facts_of(r, data, catalog) for r in data.anomalies)
    return Report(data, trials_frame(data.trials), facts, anomalies_frame(facts),
                  machines_of(info, data.config.target))
