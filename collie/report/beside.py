"""A perftest import set beside a campaign: each imported row's figure beside what collie measured of the same
workload (``collie report --compare IMPORT_DIR CAMPAIGN_DIR``, either order).

A row matches the campaign's COMPLETE trials of its workload key (the flow shape its run's header states, at its
size): a rerun of the import (``collie import rerun``) has them all, any other campaign those it happened to run.
A bandwidth row compares Gb/s (perftest's average; collie's payload bits/s of every flow of the run, so a
bidirectional row sums both directions, as perftest does); a latency row perftest's typical latency with collie's
median completion latency (p50) of the run's flow. Several trials of one workload (``--repeat``) give their mean,
and their spread (lowest, highest and standard deviation); the ratio is collie / perftest.

Invariants:
    * every perftest row of the import is either matched (listed, in the logs' order), or counted: without a
      workload (the model cannot express its run), or without a trial of its workload in the campaign;
    * the figures are those the import and the journal hold; nothing is made up (a value missing on one side
      leaves the ratio null);
    * the comparison reads both folders and writes neither.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from collie.errors import InputError
from collie.report.imports import import_rows
from collie.report.load import CampaignData
from collie.report.markdown import md_code, md_table, md_text, table_value
from collie.storage.imports import ImportFolder, ImportTool
from collie.storage.records import TrialRecord, TrialState

#: The formats of an import set beside a campaign.
BESIDE_FORMATS: Final = ("md", "json")
GBPS: Final = "Gb/s"
LATENCY: Final = "latency us (perftest typical, collie p50)"


def collie_figure(trial: TrialRecord, figure: str) -> float | None:
    """What ``trial`` measured, as ``figure`` (:data:`GBPS` or :data:`LATENCY`); None without a result."""
    result = trial.result
    if result is None or not result.flows:
        return None
    return result.payload_gbps if figure == GBPS else result.lat_p50_us


def trials_by_key(campaign: CampaignData) -> dict[str, list[TrialRecord]]:
    """The campaign's COMPLETE trials, by workload key, in trial order."""
    out: dict[str, list[TrialRecord]] = {}
    for t in campaign.trials:
        if t.state is TrialState.COMPLETE and t.result is not None:
            out.setdefault(t.key, []).append(t)
    return out


def compare_beside(imported: ImportFolder, campaign: CampaignData) -> dict[str, Any]:
    """The import's rows beside the campaign's trials of the same workloads (see the module docstring).

    Raises:
        InputError: the import holds nccl-tests logs (only perftest rows have a workload).
    """
    if imported.tool is not ImportTool.PERFTEST:
        raise InputError(f"{imported.root} holds {imported.tool.value} logs; only perftest rows are set beside a "
                         "campaign (a collective has no single workload collie runs)")
    trials = trials_by_key(campaign)
    matched: list[dict[str, Any]] = []
    unmatched: list[dict[str, Any]] = []
    no_workload = 0
    rows = import_rows(imported)
    for row in rows:
        key = row["workload_key"]
        if key is None:
            no_workload += 1
            continue
        runs = trials.get(key, [])
        if not runs:
            unmatched.append({"log": row["log"], "line": row["line"], "size_bytes": row["size_bytes"],
                              "workload_key": key})
            continue
        matched.append(_matched(row, runs))
    info = campaign.config.target_info
    doc: dict[str, Any] = {
        "schema": 1, "kind": "import-beside-campaign", "tool": imported.tool.value,
        "import": str(imported.root), "campaign": str(campaign.root), "target": campaign.config.target,
        "simulated": info is not None and info.simulated,
        "rerun_of": campaign.rerun_of or None,
        "rows": len(rows), "matched": matched, "unmatched": len(unmatched), "unmatched_rows": unmatched,
        "no_workload": no_workload, "median_ratio": {
            figure: _median([m["ratio"] for m in matched if m["figure"] == figure and m["ratio"] is not None])
            for figure in (GBPS, LATENCY)},
        "hint": None}
    if not matched:
        doc["hint"] = (f"the campaign {campaign.root} ran none of the {len(rows) - no_workload} imported workloads; "
                       f"run them with: collie import rerun {imported.root} --target {campaign.config.target} -o "
                       "NEW_DIR")
    elif campaign.rerun_of and Path(campaign.rerun_of) != imported.root.resolve():
        doc["hint"] = (f"the campaign reran the import {campaign.rerun_of}, not {imported.root}; rows are matched "
                       "by workload key")
    return doc


def _matched(row: Mapping[str, Any], runs: Sequence[TrialRecord]) -> dict[str, Any]:
    """One imported row beside its workload's trials."""
    figure = GBPS if row["gbps"] is not None else LATENCY if row["lat_typical_us"] is not None else None
    perftest = row["gbps"] if figure == GBPS else row["lat_typical_us"]
    values = [v for t in runs if figure is not None and (v := collie_figure(t, figure)) is not None]
    mean = statistics.fmean(values) if values else None
    bound = [t.result is not None and t.result.engine_bound for t in runs]  # the oracle judged none of these
    judged = [t.verdict for t, b in zip(runs, bound, strict=True) if t.verdict is not None and not b]
    return {"log": row["log"], "line": row["line"], "test": row["test"], "size_bytes": row["size_bytes"],
            "workload_key": row["workload_key"], "workload": row["workload"], "figure": figure,
            "perftest": perftest, "collie": mean, "collie_min": min(values) if values else None,
            "collie_max": max(values) if values else None,
            "collie_stdev": statistics.stdev(values) if len(values) > 1 else None,
            "runs": len(values), "trials": [t.trial for t in runs],
            "ratio": mean / perftest if mean is not None and perftest else None,
            "judged": len(judged), "engine_bound": sum(bound), "anomalous": sum(v.anomalous for v in judged),
            "signatures": sorted({v.signature for v in judged if v.anomalous})}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def render_beside(c: Mapping[str, Any], fmt: str) -> str:
    """A comparison of :func:`compare_beside` as ``md`` or ``json``."""
    if fmt == "json":
        return json.dumps(c, indent=2) + "\n"
    imp, camp = md_code(c["import"]), md_code(c["campaign"])
    n = len(c["matched"])
    lines = [f"# perftest import {imp} beside campaign {camp}", ""]
    if c["simulated"]:
        lines += [f"> **Simulated results: collie's figures come from its simulator ({md_code(c['target'])}), not "
                  "from RDMA hardware.**", ""]
    lines += [f"{n} of {c['rows']} imported row{'s' if c['rows'] != 1 else ''} matched by the campaign's trials of "
              f"the same workload (target {md_code(c['target'])}); {c['unmatched']} with a workload the campaign "
              f"did not run; {c['no_workload']} without a workload collie can run.", ""]
    if c["hint"]:
        lines += [f"**Note:** {md_text(c['hint'])}", ""]
    medians = [f"{figure}: {table_value(value)}" for figure, value in c["median_ratio"].items() if value is not None]
    if medians:
        lines += [f"Median collie / perftest, {md_text('; '.join(medians))}.", ""]
    if n:
        shown = [{**m, "spread": _spread(m), "collie / perftest": m["ratio"], "verdict": _verdict(m)}
                 for m in c["matched"]]
        lines += md_table(shown, ("log", "test", "size_bytes", "figure", "perftest", "collie", "spread", "runs",
                                  "collie / perftest", "verdict", "workload_key"))
        shapes = {m["workload_key"]: m["workload"] for m in c["matched"]}
        lines += ["", "## Workloads", "", *(f"- `{key}`: {md_text(str(shape))}" for key, shape in shapes.items())]
    return "\n".join(lines) + "\n"


def _spread(m: Mapping[str, Any]) -> str:
    """The lowest, highest and standard deviation of a repeated row's runs (empty: one run)."""
    if m["collie_stdev"] is None:
        return ""
    return f"{table_value(m['collie_min'])} to {table_value(m['collie_max'])} (sd {table_value(m['collie_stdev'])})"


def _verdict(m: Mapping[str, Any]) -> str:
    """The verdicts of a row's trials in words (empty: not judged), its engine-bound runs (which the oracle does
    not judge) counted apart: ``clean; 2 engine-bound, not judged``."""
    bound = f"{m['engine_bound']} engine-bound, not judged" if m["engine_bound"] else ""
    if not m["judged"]:
        return bound
    sigs = ", ".join(m["signatures"])
    words = "clean" if not m["anomalous"] else f"anomalous ({sigs})" if m["anomalous"] == m["judged"] else \
        f"{m['anomalous']} of {m['judged']} anomalous ({sigs})"
    return f"{words}; {bound}" if bound else words
