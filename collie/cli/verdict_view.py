"""How the CLI shows an oracle verdict: one sentence, a row per symptom with its magnitude, the counters that moved.

Shared by ``collie run``, ``collie ci`` and the live dashboard, so a verdict reads the same everywhere. Only
measured data goes in (the verdict and the oracle's calibrated ceilings and baseline), never ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collie.oracle import Oracle, Symptom, Verdict


def magnitude(symptom: Symptom, oracle: Oracle | None = None) -> str:
    """The symptom's reading against the calibrated baseline, in words (``pause 9.96 % of the time (threshold
    0.1 %, 99.6x)``); ``oracle`` adds the clean baseline a loss, retransmission or RNR rate was compared with."""
    x = f"{symptom.strength:.3g}x"
    if symptom.kind == "pause":
        bound = "at most " if symptom.estimate else ""
        origin = ""
        if symptom.end == "fabric":
            origin = f"{symptom.read_on} by {symptom.port_words()}, "
        return f"{origin}paused {bound}{symptom.value:.3%} of the time (threshold {symptom.threshold:.2%}, {x})"
    if symptom.kind == "low_throughput":
        return (f"{symptom.value:.1%} of the calibrated ceiling (threshold {symptom.threshold:.0%}, {x} below "
                f"it)")
    if symptom.kind == "straggler":
        return (f"{symptom.link} at {symptom.value:.1%} of the pattern's reference link (threshold "
                f"{symptom.threshold:.0%}, {x} below it)")
    if symptom.kind == "isolation":
        return (f"victim slowed {symptom.value:.3g}x against its fair share or its p99 alone (threshold "
                f"{symptom.threshold:.3g}x, {x})")
    base = ""
    if oracle is not None:
        key = f"{symptom.counter_host}:{symptom.counter}"
        baseline = oracle.baseline.get(key, oracle.baseline.get(symptom.counter, 0.0))
        base = f", clean baseline {_rate(baseline)}/s"
    what = "RNR NAKs/s" if symptom.kind == "rnr" else "events/s"
    where = f" counted on {symptom.read_on}" if symptom.read_on else ""
    return f"{_rate(symptom.value)} {what}{where} (limit {_rate(symptom.threshold)}/s{base}, {x})"


def _rate(per_s: float) -> str:
    """An event rate in words: whole events with thousands separators from 100/s (``12,000``), else 3 digits."""
    return f"{per_s:,.0f}" if per_s >= 100 else f"{per_s:.3g}"


def sentence(verdict: Verdict) -> str:
    """One line: anomalous or not, and why."""
    if "not_judged" in verdict.evidence:
        return f"not judged: {verdict.evidence['not_judged']}"
    if not verdict.anomalous:
        return "not anomalous"
    return f"ANOMALOUS: {verdict.signature} (score {verdict.score:.3g})"


def symptom_rows(verdict: Verdict, oracle: Oracle | None = None) -> list[dict[str, Any]]:
    """One row per symptom, strongest first: kind, where, the counter it rests on and its source, magnitude."""
    return [{
        "symptom": s.kind, "host": s.host, "end": s.end, "counter": s.counter or "(measured traffic)",
        "source": s.source or "-", "value": s.value, "threshold": s.threshold, "strength": round(s.strength, 3),
        "magnitude": magnitude(s, oracle),
    } for s in verdict.symptoms]


def moved_counters(verdict: Verdict, duration_s: float = 0.0) -> list[dict[str, Any]]:
    """Every counter the verdict rests on that moved (a delta other than 0), per host, with its source and,
    given the run's ``duration_s``, its rate."""
    rows: list[dict[str, Any]] = []
    hosts: Mapping[str, Any] = verdict.evidence.get("hosts", {})
    for host, ev in sorted(hosts.items()):
        for name, c in sorted(ev.get("counters", {}).items()):
            delta = c.get("delta")
            if delta:
                rate = delta / duration_s if duration_s > 0 else None
                rows.append({"host": host, "end": ev.get("end", ""), "counter": name, "delta": delta,
                             "per_s": rate, "source": c.get("source", "") or "-"})
    return rows


def throughput_rows(verdict: Verdict) -> list[dict[str, Any]]:
    """Per receiving host: what it got against the calibrated ceilings of its direction kind."""
    rows: list[dict[str, Any]] = []
    for host, t in sorted(verdict.evidence.get("throughput", {}).items()):
        rows.append({"host": host, "kind": t["kind"], "Gb/s": round(t["bps"] / 1e9, 3),
                     "ceiling Gb/s": round(t["bps_ceiling"] / 1e9, 3), "Mpps": round(t["pps"] / 1e6, 4),
                     "ceiling Mpps": round(t["pps_ceiling"] / 1e6, 4), "fraction": round(t["fraction"], 4)})
    return rows


def verdict_dict(verdict: Verdict, oracle: Oracle | None = None, duration_s: float = 0.0) -> dict[str, Any]:
    """The verdict for JSON: the oracle's own form, plus the symptom rows and the counters that moved."""
    moved = moved_counters(verdict, duration_s)
    return {**verdict.to_dict(), "summary": sentence(verdict), "symptom_rows": symptom_rows(verdict, oracle),
            "moved_counters": moved}
