"""pandas frames of a campaign: one row per trial of the journal, one row per anomaly.

The trials frame (:func:`trials_frame`, also the CSV report) has these typed columns, in this order:

===============  ========  ===================================================================================
column           dtype     meaning
===============  ========  ===================================================================================
trial            int64     the trial's number, from 1
phase            string    calibrate, solo, replay, explore, confirm or minimize
key              string    the workload's key
status           string    COMPLETE, PRUNED, FAILED, or RUNNING (the campaign is in it, or stopped in it)
time             float64   when its last row was written (seconds since the epoch)
reason           string    why it was pruned or failed (empty otherwise)
anomalous        boolean   the oracle's verdict (empty: not judged, e.g. calibration or not COMPLETE)
signature        string    the verdict's signature (empty when clean or not judged)
score            float64   how far past its threshold the strongest symptom is (empty: not judged)
throughput       float64   fraction of the calibrated ceiling the lowest receiver got (empty: not judged)
bps              float64   payload bits/s delivered, all flows (empty: no result)
pps              float64   data packets/s, all flows (empty: no result)
msg_rate         float64   messages/s, all flows (empty: no result)
lat_p99_us       float64   the highest flow's 99th-percentile completion latency (empty: no result)
mr_churn_per_s   float64   MRs registered and deregistered per second per side, all flows (empty: no result)
mr_churn_p99_us  float64   the highest flow's 99th-percentile latency of one churned MR (0: none)
qp_churn_per_s   float64   QPs created and destroyed per second per side, all flows (empty: no result)
qp_churn_p99_us  float64   the highest flow's 99th-percentile latency of one churned QP (0: none)
duration_s       float64   the measured interval (empty: no result)
point            string    the search point, as compact JSON with sorted keys (``{}`` for calibration/replay)
chain            Int64     the search chain that ran it (empty: a campaign of one chain)
engine_bound     boolean   the traffic engine, not the NIC, limited the run; the oracle did not judge it (empty: no
                           result)
===============  ========  ===================================================================================

Invariant: one row per trial, in trial order; every value comes from the journal's row as written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import pandas as pd

from collie.report.facts import AnomalyFacts
from collie.storage.records import TrialRecord

#: The trials frame's columns and their pandas dtypes.
TRIAL_COLUMNS: Final = {
    "trial": "int64", "phase": "string", "key": "string", "status": "string", "time": "float64",
    "reason": "string", "anomalous": "boolean", "signature": "string", "score": "float64",
    "throughput": "float64", "bps": "float64", "pps": "float64", "msg_rate": "float64", "lat_p99_us": "float64",
    "mr_churn_per_s": "float64", "mr_churn_p99_us": "float64", "qp_churn_per_s": "float64",
    "qp_churn_p99_us": "float64", "duration_s": "float64", "point": "string", "chain": "Int64",
    "engine_bound": "boolean",
}
#: The anomalies frame's columns and their pandas dtypes.
ANOMALY_COLUMNS: Final = {
    "anomaly": "string", "signature": "string", "leading": "string", "confirmed": "boolean",
    "symptom": "string", "host": "string", "magnitude": "float64", "found_at": "Int64", "mfs": "string",
    "case_key": "string", "throughput": "float64", "target": "string", "perftest": "string",
}


def trial_row(t: TrialRecord) -> dict[str, Any]:
    """One trial as a row of :data:`TRIAL_COLUMNS` (None where a value is absent)."""
    r, v = t.result, t.verdict
    row: dict[str, Any] = {
        "trial": t.trial, "phase": str(t.phase), "key": t.key, "status": str(t.state), "time": t.time,
        "reason": t.reason, "anomalous": None, "signature": "", "score": None, "throughput": None,
        "bps": None, "pps": None, "msg_rate": None, "lat_p99_us": None, "mr_churn_per_s": None,
        "mr_churn_p99_us": None, "qp_churn_per_s": None, "qp_churn_p99_us": None, "duration_s": None,
        "point": json.dumps(dict(t.point), sort_keys=True, separators=(",", ":")), "chain": t.chain,
        "engine_bound": None,
    }
    if v is not None:
        row.update(anomalous=v.anomalous, signature=v.signature, score=v.score,
                   throughput=v.metrics.get("throughput"))
    if r is not None:
        row.update(bps=sum(f.bps for f in r.flows), pps=sum(f.pps for f in r.flows),
                   msg_rate=sum(f.msg_rate for f in r.flows),
                   lat_p99_us=max((f.lat_p99_us for f in r.flows), default=None), duration_s=r.duration_s,
                   engine_bound=r.engine_bound)
        for k in ("mr", "qp"):
            row[f"{k}_churn_per_s"] = sum(getattr(f, f"{k}_churn_per_s") for f in r.flows)
            row[f"{k}_churn_p99_us"] = max((getattr(f, f"{k}_churn_p99_us") for f in r.flows), default=0.0)
    return row


def trials_frame(trials: Sequence[TrialRecord]) -> pd.DataFrame:
    """The trials frame (see the module docstring)."""
    return _typed([trial_row(t) for t in trials], TRIAL_COLUMNS)


def anomalies_frame(anomalies: Sequence[AnomalyFacts]) -> pd.DataFrame:
    """One row per anomaly: its signature, leading symptom and magnitude, MFS, case and perftest coverage."""
    rows = [{
        "anomaly": a.anomaly_id, "signature": a.signature, "leading": a.leading, "confirmed": a.confirmed,
        "symptom": a.symptom.kind if a.symptom else None, "host": a.symptom.host if a.symptom else None,
        "magnitude": a.magnitude, "found_at": a.found_at, "mfs": a.mfs.describe() if a.mfs else None,
        "case_key": a.case_key, "throughput": a.throughput, "target": a.target_spec,
        "perftest": a.perftest.tool or None,
    } for a in anomalies]
    return _typed(rows, ANOMALY_COLUMNS)


def _typed(rows: list[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(columns))
    return frame.astype(columns)


def read_trials_csv(source: Any) -> pd.DataFrame:
    """Read a trials CSV (a path or a file) back into the trials frame's dtypes."""
    frame = pd.read_csv(source, dtype={k: v for k, v in TRIAL_COLUMNS.items() if v != "boolean"},
                        keep_default_na=False, na_values={c: [""] for c in TRIAL_COLUMNS
                                                          if c not in ("reason", "signature")})
    return frame.astype(TRIAL_COLUMNS)
