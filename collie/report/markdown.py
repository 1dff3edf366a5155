"""The Markdown report: what a vendor bug report needs, one section per anomaly.

A line saying so when the numbers are simulated, a table of the anomalies, the environment (the target's
fingerprint, once, and on a remote campaign the host of each role), then per anomaly: the symptom and its
magnitude, the minimal feature set in words, the minimal case, the counters that moved on both hosts, the
perftest lines (or what perftest lacks) and the replay command. Every name that comes from a campaign is written
inside code spans or fenced blocks, or with Markdown's special characters escaped, so it renders as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from collie import __version__
from collie.report.facts import AnomalyFacts, fingerprint_rows
from collie.report.machines import Machines
from collie.report.model import Report, counts, engine_bound_sentence

#: Counters listed per host (the largest deltas); the JSON report has them all.
MD_COUNTERS: Final = 15
_SPECIAL: Final = re.compile(r"([\\`*_\[\]|<>&])")


def md_text(text: str) -> str:
    """``text`` with Markdown's (and inline HTML's) special characters escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def table_value(value: Any) -> str:
    """A value as a table cell shows it, before escaping: nothing for None, 4 significant digits for a float."""
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def md_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    """The lines of a Markdown table of ``rows``' values under ``columns`` (a missing value: an empty cell)."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(md_text(table_value(r.get(c))) for c in columns) + " |" for r in rows)]


def md_code(text: str) -> str:
    """``text`` as an inline code span (backticks inside are fenced with more backticks)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fenced(text: str, lang: str = "") -> list[str]:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return [f"{fence}{lang}", text.rstrip("\n"), fence]


def render_markdown(report: Report) -> str:
    """The Markdown document of ``report``."""
    data, config = report.data, report.data.config
    c = counts(report)
    out = [f"# {md_text(report.title)}", ""]
    if report.machines.simulated:
        out += [f"> **{md_text(report.machines.simulated_sentence())}**", ""]
    out += [f"Campaign folder {md_code(str(data.root))}, target {md_code(config.target)}, started "
           f"{md_text(config.created or '(unknown)')}, seed {config.seed}, budget {config.budget}, preset "
           f"{md_code(config.preset)}, strategy {md_code(config.strategy)}.", "",
           f"{c['trials']} trials ({c['experiments']} budgeted experiments, {c['pruned']} pruned, {c['failed']} "
           f"failed), {c['anomalous']} anomalous runs, **{len(report.anomalies)} anomalies**.", ""]
    if c["engine_bound"]:
        out += [f"{md_text(engine_bound_sentence(c['engine_bound']))}.", ""]
    if data.rerun_of:
        out += [f"A rerun of the perftest rows imported in {md_code(data.rerun_of)} (`collie import rerun`): each "
                f"row beside collie's runs with {md_code(f'collie report --compare {data.rerun_of} {data.root}')}.",
                ""]
    for w in data.warnings:
        out += [f"> warning: {md_text(w)}", ""]
    out += _summary(report)
    out += ["## Environment" + (" (simulated)" if report.machines.simulated else ""), "",
            f"Target {md_code(config.target)}.", ""]
    rows = fingerprint_rows(config.target_info)
    if rows:
        out += ["| | |", "|---|---|"] + [f"| {label} | {md_text(value)} |" for label, value in rows]
        info = config.target_info
        if info is not None and info.details:
            out += [f"| {md_text(k)} | {md_text(v)} |" for k, v in sorted(info.details.items())
                    if k not in ("pcie", "quirks") and not report.machines.holds(k)]
    else:
        out.append("The campaign records no fingerprint of its target.")
    out.append("")
    out += _machines(report.machines)
    for a in report.anomalies:
        out += _anomaly(a, report)
    out += [f"_Made by collie {__version__}: {md_code('collie report ' + str(data.root) + ' --format md')}._", ""]
    return "\n".join(out)


def _summary(report: Report) -> list[str]:
    """The anomalies at a glance: one row each, linked to its section."""
    if not report.anomalies:
        return ["This campaign found no anomaly.", ""]
    out = ["## Anomalies at a glance", "",
           "| anomaly | host | symptom | size | magnitude | minimal feature set | found at trial | hits |",
           "|---|---|---|---|---:|---|---:|---:|"]
    for a in report.anomalies:
        trial = str(a.found_trial) if a.found_trial is not None else "-"
        out.append(f"| [{md_text(a.anomaly_id)}](#{_anchor(a)}) | {md_text(a.symptom_host or '-')} | "
                   f"{md_text(a.symptom_name or a.signature)} | {md_text(a.symptom_size or '-')} | "
                   f"{md_text(a.magnitude_text)} | {md_text(a.mfs_words)} | {trial} | {a.hits} |")
    return [*out, ""]


def _anchor(a: AnomalyFacts) -> str:
    """The anchor GitHub-style renderers give the anomaly's heading (lowercase, punctuation dropped)."""
    heading = f"{a.anomaly_id} {a.headline}".strip().lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def _machines(m: Machines) -> list[str]:
    """The host of each role of a remote campaign (none on a local target)."""
    if not m.remote:
        return []
    out = ["| role | inventory host | address | target | device | port | GID index | GID |",
           "|---|---|---|---|---|---|---|---|"]
    for role, h in m.roles.items():
        d = h.device
        out.append(f"| {md_text(role)} | {md_code(h.host)} | {md_text(d.address or '-')} | "
                   f"{md_code(h.target) if h.target else '-'} | {md_text(d.name or '-')} "
                   f"| {d.port if d.port is not None else '-'} | {d.gid_index if d.gid_index is not None else '-'} | "
                   f"{md_text(h.gid or '-')} |")
    return [*out, ""]


def _anomaly(a: AnomalyFacts, report: Report) -> list[str]:
    out = [f"## {md_text(a.anomaly_id)}" + (f": {md_text(a.headline)}" if a.headline else ""), "",
           f"Signature {md_code(a.signature or '(no signature)')}.", ""]
    if a.symptom_text:
        out += [f"**Symptom:** {md_text(a.symptom_text)}.", ""]
    out += [f"**Minimal feature set:** the anomaly {md_text(a.mfs_words)}"
            + (f" ({md_code(a.mfs.describe())})." if a.mfs is not None else "."), ""]
    status = "confirmed" if a.confirmed else "not confirmed"
    found = f", found at trial {a.found_trial} (budgeted experiment {a.found_at})" if a.found_trial is not None \
        else ""
    tput = f"; the minimal case reached {a.throughput:.0%} of the calibrated ceiling" if a.throughput is not None \
        else ""
    out += [f"{status.capitalize()}{found}; magnitude {md_text(a.magnitude_text)}{tput}.", ""]
    if a.verdict_of == "original":
        out += ["The evidence below is the original find's (this case records no runs of its own).", ""]
    if a.further_hits:
        out += [f"**Met again** ({len(a.further_hits)} further {'hit' if len(a.further_hits) == 1 else 'hits'}): "
                f"{md_text(a.hits_text)}.", ""]
    config = report.data.config
    if a.target_spec != config.target or a.fingerprint != config.target_info:  # else named once, above
        out += ["**Target of this case:** " + md_code(a.target_spec)
                + "".join(f"; {label} {md_text(value)}" for label, value in a.fingerprint_rows()), ""]
    if a.collective_text:
        out += [f"**Collective:** {md_text(a.collective_text)}.", ""]
    out += [f"**Minimal case** (workload {md_code(a.case_key)}, {md_code('case.toml')}):", ""]
    out += [f"- {md_text(f)}" for f in a.case_flows] + [""]
    out += [*_fenced(a.case_toml, "toml"), ""]
    out += ["**Replay with collie:**", "", *_fenced(a.replay, "sh"), ""]
    p = a.perftest
    if p.expressible:
        out += [f"**Reproduce with perftest** (server on {md_text(a.machines.label(p.server_host))} first, then "
                f"the client on {md_text(a.machines.label(p.client_host))}):", "",
                *_fenced(f"{p.server}\n{p.client}", "sh"), ""]
    else:
        out += [f"**perftest:** cannot express this case: {md_text(p.lacks)}.", ""]
    out += ["**Counters that moved:**", ""]
    hosts = sorted(a.hosts)
    if not hosts:
        out += ["No per-host evidence was recorded.", ""]
    for h in hosts:
        moved = a.moved_on(h)
        out += [f"On {md_text(a.host_label(h))}: {len(moved)} moved", ""]
        if moved:
            out += ["| counter | delta | unit | source |", "|---|---:|---|---|"]
            out += [f"| {_counter(m.name, a.is_headline(m))} | {_number(m.delta)} | {md_text(m.unit)} | "
                    f"{md_text(m.source)} |" for m in a.top_moved(h, MD_COUNTERS)]
            if len(moved) > MD_COUNTERS:
                out.append(f"| ({len(moved) - MD_COUNTERS} more in the JSON report) | | | |")
            out.append("")
    return out


def _counter(name: str, headline: bool) -> str:
    """A counter's name; the one the symptom rests on in bold, and said to be."""
    return f"**{md_code(name)}** (the symptom's)" if headline else md_code(name)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
