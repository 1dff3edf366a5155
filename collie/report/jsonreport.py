"""The JSON report: a documented, versioned document (docs/reports.md, "The JSON schema").

``schema`` names the document and its version; a reader checks both. The version grows when a field is removed
or changes meaning; new fields may appear within a version.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any, Final

from collie.report.facts import AnomalyFacts
from collie.report.machines import Machines
from collie.report.model import Report, counts

SCHEMA_NAME: Final = "collie-report"
SCHEMA_VERSION: Final = 1


def report_dict(report: Report) -> dict[str, Any]:
    """The JSON document of ``report`` (plain data; NaN and missing values are None)."""
    data = report.data
    config = data.config
    return {
        "schema": {"name": SCHEMA_NAME, "version": SCHEMA_VERSION},
        "campaign": {
            "folder": str(data.root), "target": config.target, "seed": config.seed, "budget": config.budget,
            "preset": config.preset, "strategy": config.strategy, "created": config.created,
            "fingerprint": config.target_info.to_dict() if config.target_info is not None else None,
            "simulated": report.machines.simulated, "machines": machines_dict(report.machines),
            "rerun_of": data.rerun_of or None,
        },
        "summary": {**counts(report), "anomalies": len(report.anomalies)},
        "trials": frame_records(report.trials),
        "anomalies": [anomaly_dict(a) for a in report.anomalies],
        "warnings": list(data.warnings),
    }


def machines_dict(m: Machines) -> dict[str, Any] | None:
    """Role -> its inventory host, address, device, port, GID index and GID (None: a local target)."""
    if not m.remote:
        return None
    return {role: {"host": h.host, "address": h.device.address, "target": h.target, "device": h.device.name,
                   "port": h.device.port,
                   "gid_index": h.device.gid_index, "gid": h.gid} for role, h in m.roles.items()}


def anomaly_dict(a: AnomalyFacts) -> dict[str, Any]:
    """One anomaly of the JSON report."""
    p = a.perftest
    return {
        "id": a.anomaly_id, "signature": a.signature, "leading": a.leading, "confirmed": a.confirmed,
        "symptom": asdict(a.symptom) if a.symptom is not None else None, "magnitude": a.magnitude,
        "symptom_text": a.symptom_text, "headline": a.headline, "symptom_size": a.symptom_size,
        "magnitude_text": a.magnitude_text,
        "mfs": {"text": a.mfs.describe(), "words": a.mfs_words,
                "conditions": [c.to_dict() for c in a.mfs.conditions]} if a.mfs is not None else None,
        "case": {"key": a.case_key, "name": a.case_name, "flows": list(a.case_flows), "toml": a.case_toml},
        "found_at": a.found_at, "found_trial": a.found_trial, "hits": a.hits,
        "further_hits": [h.to_dict() for h in a.further_hits], "throughput": a.throughput,
        "replay": a.replay,
        "target": {"spec": a.target_spec,
                   "fingerprint": a.fingerprint.to_dict() if a.fingerprint is not None else None},
        "hosts": {h: {"end": str(ev.get("end", "")), "name": a.machines.of(h).name, "label": a.host_label(h),
                      "moved": [{"counter": m.name, "delta": m.delta, "unit": m.unit, "source": m.source,
                                 "headline": a.is_headline(m)} for m in a.moved_on(h)]}
                  for h, ev in sorted(a.hosts.items())},
        "perftest": ({"tool": p.tool, "server_host": p.server_host, "server": p.server, "client_host": p.client_host,
                      "client": p.client} if p.expressible else {"lacks": p.lacks}),
        "evidence_of": a.verdict_of,
    }


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """A frame's rows as plain dicts (pandas NA and NaN become None)."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: _plain(v) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return value


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, allow_nan=False)
