"""Two campaigns compared (firmware, driver or kernel A against B): the qualification report a fleet team signs.

Anomalies are matched by signature and MFS: an anomaly of the new campaign is the same as one of the old when
they lead with the same symptom and either their MFSs are equal, or one's MFS holds for the other's minimal case
(a search stops on a ladder step, so the edges of one anomaly's MFS differ a little from campaign to campaign).
Anomalies not minimized match only by their exact signature. One campaign may hold an anomaly twice (two finds
of one MFS): every old anomaly that matches a new one is still present, paired with the first it matches.

* **new**: in the new campaign, matched by none of the old;
* **gone**: in the old campaign, not found again by the new one. A search is a sample, so "not found again" is
  not proof: replay the old case on the new target (its replay command is given) before calling it fixed;
* **still present**: matched in both.

Throughput is compared on the workloads both campaigns ran (same workload key, COMPLETE runs): the median
payload Gb/s of each, and new / old. Each workload is named in words: a calibration run by its name, a corpus case
by its name, a search point by its verb, direction, sizes, QPs, batch and MTU.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pandas as pd

from collie.mfs import MFS
from collie.model.features import features
from collie.model.workload import Workload
from collie.oracle import leading_symptom
from collie.report.facts import AnomalyFacts, fingerprint_rows, point_words, replay_command
from collie.report.model import Report, build_report, counts

COMPARE_FORMATS: Final = ("md", "html", "json")
COMPARE_SCHEMA: Final = {"name": "collie-compare", "version": 1}
#: Workloads listed in the throughput table of md and html (the largest changes); JSON has all.
SHOWN_WORKLOADS: Final = 20


@dataclass(frozen=True)
class Comparison:
    """Old against new.

    Attributes:
        old, new: the two reports.
        still: (old, new) pairs of the same anomaly.
        new_only: anomalies only the new campaign found.
        gone: anomalies the new campaign did not find again.
        throughput: one row per workload both ran: key, phase, workload (in words), old_gbps, new_gbps, ratio
            (new / old).
    """

    old: Report
    new: Report
    still: tuple[tuple[AnomalyFacts, AnomalyFacts], ...]
    new_only: tuple[AnomalyFacts, ...]
    gone: tuple[AnomalyFacts, ...]
    throughput: pd.DataFrame

    def fingerprints(self) -> list[tuple[str, str, str]]:
        """(label, old, new) for the main fingerprint fields either campaign records, then every other detail
        (CPU, NUMA, relaxed ordering, device limits, ...) whose value differs."""
        old_info, new_info = self.old.data.config.target_info, self.new.data.config.target_info
        old, new = dict(fingerprint_rows(old_info)), dict(fingerprint_rows(new_info))
        labels = list(dict.fromkeys([*old, *new]))
        rows = [("target", self.old.data.config.target, self.new.data.config.target),
                ("simulated", _yes(self.old.machines.simulated), _yes(self.new.machines.simulated))]
        rows += [(label, old.get(label, "(unknown)"), new.get(label, "(unknown)")) for label in labels]
        old_details = dict(old_info.details) if old_info is not None else {}
        new_details = dict(new_info.details) if new_info is not None else {}
        # "quirks" names what a simulated profile plants: a report does not show it (nor does the Markdown one)
        for key in sorted({*old_details, *new_details} - {"pcie", "quirks"}):
            was, now = old_details.get(key, "(unknown)"), new_details.get(key, "(unknown)")
            if was != now:
                rows.append((key, was, now))
        return rows


def engine_bound_words(c: Comparison) -> str:
    """One sentence with each campaign's engine-bound runs (``""``: neither has one)."""
    old, new = counts(c.old)["engine_bound"], counts(c.new)["engine_bound"]
    if not old and not new:
        return ""
    return (f"Engine-bound runs: old {old}, new {new} (the traffic engine, not the NIC, limited them: the oracle did "
            "not judge them, and the throughput below is the engine's where they ran)")


def simulated_words(c: Comparison) -> str:
    """One sentence naming the campaigns whose results are simulated (``""``: neither)."""
    which = [f"the {label} campaign" + (f" (profile {r.machines.profile})" if r.machines.profile else "")
             for label, r in (("old", c.old), ("new", c.new)) if r.machines.simulated]
    if not which:
        return ""
    return (f"Simulated results: {' and '.join(which)} ran on collie's simulator, not on RDMA hardware; the NIC, "
            "firmware and kernel named are those the profile models.")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _workload(a: AnomalyFacts) -> Workload:
    return Workload.from_toml(a.case_toml, f"case {a.anomaly_id}")


def same_anomaly(a: AnomalyFacts, b: AnomalyFacts) -> bool:
    """Whether ``a`` and ``b`` are one anomaly (see the module docstring)."""
    if leading_symptom(a.signature) != leading_symptom(b.signature):
        return False
    if a.mfs is None or b.mfs is None:
        return a.signature == b.signature
    if _conditions(a.mfs) == _conditions(b.mfs):
        return True
    return a.mfs.holds(features(_workload(b))) or b.mfs.holds(features(_workload(a)))


def _conditions(mfs: MFS) -> set[str]:
    return {str(c) for c in mfs.conditions}


def compare(old: Report, new: Report) -> Comparison:
    """Match the anomalies of ``old`` and ``new`` and compare the throughput of the workloads both ran."""
    still: list[tuple[AnomalyFacts, AnomalyFacts]] = []
    gone: list[AnomalyFacts] = []
    matched: set[str] = set()
    for a in old.anomalies:
        matches = [b for b in new.anomalies if same_anomaly(a, b)]
        if matches:
            still.append((a, matches[0]))
            matched.update(b.anomaly_id for b in matches)
        else:
            gone.append(a)
    new_only = tuple(b for b in new.anomalies if b.anomaly_id not in matched)
    return Comparison(old, new, tuple(still), new_only, tuple(gone), _throughput(old, new))


def _throughput(old: Report, new: Report) -> pd.DataFrame:
    def medians(r: Report) -> pd.DataFrame:
        t = r.trials[(r.trials["status"] == "COMPLETE") & r.trials["bps"].notna()]
        return t.groupby("key", sort=True).agg(phase=("phase", "first"), point=("point", "first"),
                                               gbps=("bps", "median"))

    both = medians(old).join(medians(new), how="inner", lsuffix="_old", rsuffix="_new")
    names = {**_calibration_names(), **old.data.corpus_names, **new.data.corpus_names}
    words = [names.get(str(key)) or point_words(json.loads(point)) or _PHASE_WORDS.get(phase, str(key))
             for key, point, phase in zip(both.index, both["point_old"], both["phase_old"], strict=True)]
    out = pd.DataFrame({"key": both.index.astype("string"), "phase": both["phase_old"].astype("string"),
                        "workload": pd.Series(words, index=both.index, dtype="string"),
                        "old_gbps": both["gbps_old"] / 1e9, "new_gbps": both["gbps_new"] / 1e9})
    out["ratio"] = out["new_gbps"] / out["old_gbps"].where(out["old_gbps"] > 0)
    return out.sort_values("ratio", key=lambda s: (s - 1.0).abs(), ascending=False).reset_index(drop=True)


#: What a workload of a phase that journals no point is, in words.
_PHASE_WORDS: Final = {"solo": "a victim alone (its solo baseline)"}


def _calibration_names() -> dict[str, str]:
    """Workload key -> name of every calibration run."""
    from collie.calibrate import calibration_workloads

    return {w.key(): w.name for _, _, w in calibration_workloads()}


def build_comparison(old_dir: Path, new_dir: Path) -> Comparison:
    """Read both campaign folders and compare them.

    Raises:
        InputError: either is not a campaign folder, or holds a damaged file.
    """
    return compare(build_report(old_dir), build_report(new_dir))


# -- rendering ---------------------------------------------------------------------------------------------


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The JSON document of a comparison (``schema`` names it and its version)."""
    from collie.report.jsonreport import anomaly_dict, frame_records

    t = c.throughput
    return {
        "schema": dict(COMPARE_SCHEMA),
        "old_campaign": {"folder": str(c.old.data.root), "target": c.old.data.config.target,
                         "engine_bound": counts(c.old)["engine_bound"]},
        "new_campaign": {"folder": str(c.new.data.root), "target": c.new.data.config.target,
                         "engine_bound": counts(c.new)["engine_bound"]},
        "fingerprints": [{"field": f, "old": o, "new": n} for f, o, n in c.fingerprints()],
        "still_present": [{"old": anomaly_dict(a), "new": anomaly_dict(b)} for a, b in c.still],
        "new_anomalies": [anomaly_dict(b) for b in c.new_only],
        "gone": [{**anomaly_dict(a), "replay_on_new": replay_command(a.folder, c.new.data.config.target)}
                 for a in c.gone],
        "throughput": {"common_workloads": len(t),
                       "median_ratio": _median(t["ratio"]),
                       "workloads": frame_records(t)},
    }


def _median(series: pd.Series) -> float | None:
    value = series.dropna().median()
    return None if pd.isna(value) else float(value)


def render_comparison(c: Comparison, fmt: str) -> str:
    """``c`` as ``fmt`` (one of :data:`COMPARE_FORMATS`)."""
    if fmt == "json":
        return json.dumps(comparison_dict(c), indent=2, allow_nan=False)
    if fmt == "md":
        return _markdown(c)
    return _html(c)


def _markdown(c: Comparison) -> str:
    from collie.report.markdown import md_code, md_text

    old, new = c.old.data, c.new.data
    engine_bound = engine_bound_words(c)
    out = [f"# collie comparison: {md_text(old.root.name)} -> {md_text(new.root.name)}", "",
           *([f"> **{md_text(simulated_words(c))}**", ""] if simulated_words(c) else []),
           f"Old campaign {md_code(str(old.root))}, new campaign {md_code(str(new.root))}.", "",
           f"**{len(c.new_only)} new**, **{len(c.gone)} not found again**, **{len(c.still)} still present**.", "",
           *([f"{md_text(engine_bound)}.", ""] if engine_bound else []),
           "## Fingerprints", "", "| | old | new |", "|---|---|---|"]
    out += [f"| {md_text(f)} | {md_text(o)} | {'**' + md_text(n) + '**' if n != o else md_text(n)} |"
            for f, o, n in c.fingerprints()]
    out.append("")

    def line(a: AnomalyFacts) -> str:
        return f"- {md_text(a.anomaly_id)} {md_code(a.signature)}: {md_text(a.symptom_text or a.signature)}; " \
               f"MFS {md_code(a.mfs.describe() if a.mfs else '(not minimized)')}"

    out += ["## New anomalies", ""] + ([line(b) for b in c.new_only] or ["None."]) + [""]
    out += ["## Not found again", "", "Replay each on the new target before calling it fixed:", ""] \
        if c.gone else ["## Not found again", "", "None.", ""]
    for a in c.gone:
        out += [line(a), f"  - replay on the new target: {md_code(replay_command(a.folder, new.config.target))}"]
    out += ["", "## Still present", ""]
    out += [f"- {md_text(a.anomaly_id)} -> {md_text(b.anomaly_id)} {md_code(b.signature)}: {md_text(still_words(a, b))}"
            for a, b in c.still] or ["None."]
    t = c.throughput
    out += ["", "## Throughput of the same workloads", "",
            f"{len(t)} workloads ran in both campaigns; median new / old: "
            f"{_ratio(_median(t['ratio']))}.", ""]
    if len(t):
        out += [f"{md_text(shown_words(len(t)))}", "",
                "| workload | key | phase | old Gb/s | new Gb/s | new / old |", "|---|---|---|---:|---:|---:|"]
        out += [f"| {md_text(str(r['workload']))} | {md_code(str(r['key']))} | {r['phase']} | {r['old_gbps']:.2f} | "
                f"{r['new_gbps']:.2f} | {_ratio(r['ratio'])} |"
                for r in t.head(SHOWN_WORKLOADS).to_dict(orient="records")]
        out.append("")
    return "\n".join(out) + "\n"


def still_words(old: AnomalyFacts, new: AnomalyFacts) -> str:
    """An anomaly in both campaigns, before and after: its size and its magnitude, each with its unit."""
    size = f"{old.symptom_size} -> {new.symptom_size}; " if old.symptom_size and new.symptom_size else ""
    return f"{size}magnitude {old.magnitude_text} -> {new.magnitude_text}"


def shown_words(common: int) -> str:
    """Which of the ``common`` workloads the table shows."""
    if common <= SHOWN_WORKLOADS:
        return f"All {common} workloads, largest change first."
    return (f"{SHOWN_WORKLOADS} of {common} workloads shown, largest change first; the JSON comparison (--format "
            "json) lists them all.")


def _ratio(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else f"{float(value):.3f}"


def _html(c: Comparison) -> str:
    from collie.report.html import template

    t = c.throughput
    return template("compare.html.j2").render(
        c=c, fingerprints=c.fingerprints(), median=_ratio(_median(t["ratio"])), common=len(t),
        engine_bound=engine_bound_words(c),
        shown=shown_words(len(t)), simulated=simulated_words(c), still=[(a, b, still_words(a, b)) for a, b in c.still],
        workloads=[{**r, "ratio_text": _ratio(r["ratio"])} for r in t.head(SHOWN_WORKLOADS).to_dict(orient="records")],
        replays={a.anomaly_id: replay_command(a.folder, c.new.data.config.target) for a in c.gone})
