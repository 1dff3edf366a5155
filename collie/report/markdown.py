"""The Markdown report: what a vendor bug report needs, one section per anomaly.

Environment (the target's fingerprint), then per anomaly: the symptom and its magnitude, the minimal feature set
in words, the minimal case, the counters that moved on both hosts, the perftest lines (or what perftest lacks)
and the replay command. Every name that comes from a campaign is written inside code spans or fenced blocks, or
with Markdown's special characters escaped, so it renders as written.
"""

from __future__ import annotations

import re
from typing import Final

from collie import __version__
from collie.report.facts import AnomalyFacts, fingerprint_rows
from collie.report.model import Report, counts

#: Counters listed per host (the largest deltas); the JSON report has them all.
MD_COUNTERS: Final = 15
_SPECIAL: Final = re.compile(r"([\\`*_\[\]|<>&])")


def md_text(text: str) -> str:
    """``text`` with Markdown's (and inline HTML's) special characters escaped."""
    return _SPECIAL.sub(r"\\\1", text)


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
    out = [f"# {md_text(report.title)}", "",
           f"Campaign folder {md_code(str(data.root))}, target {md_code(config.target)}, started "
           f"{md_text(config.created or '(unknown)')}, seed {config.seed}, budget {config.budget}, preset "
           f"{md_code(config.preset)}, strategy {md_code(config.strategy)}.", "",
           f"{c['trials']} trials ({c['experiments']} budgeted experiments, {c['pruned']} pruned, {c['failed']} "
           f"failed), {c['anomalous']} anomalous runs, **{len(report.anomalies)} anomalies**.", ""]
    for w in data.warnings:
        out += [f"> warning: {md_text(w)}", ""]
    out += ["## Environment", ""]
    rows = fingerprint_rows(config.target_info)
    if rows:
        out += ["| | |", "|---|---|"] + [f"| {label} | {md_text(value)} |" for label, value in rows]
        info = config.target_info
        if info is not None and info.details:
            out += [f"| {md_text(k)} | {md_text(v)} |" for k, v in sorted(info.details.items())
                    if k not in ("pcie", "quirks")]
    else:
        out.append("The campaign records no fingerprint of its target.")
    out.append("")
    for a in report.anomalies:
        out += _anomaly(a)
    out += [f"_Made by collie {__version__}: {md_code('collie report ' + str(data.root) + ' --format md')}._", ""]
    return "\n".join(out)


def _anomaly(a: AnomalyFacts) -> list[str]:
    out = [f"## {md_text(a.anomaly_id)}: {md_code(a.signature or '(no signature)')}", ""]
    if a.symptom_text:
        out += [f"**Symptom:** {md_text(a.symptom_text)}.", ""]
    out += [f"**Minimal feature set:** the anomaly {md_text(a.mfs_words)}"
            + (f" ({md_code(a.mfs.describe())})." if a.mfs is not None else "."), ""]
    status = "confirmed" if a.confirmed else "not confirmed"
    found = f", found at experiment {a.found_at}" if a.found_at is not None else ""
    tput = f"; the minimal case reached {a.throughput:.0%} of the calibrated ceiling" if a.throughput is not None \
        else ""
    out += [f"{status.capitalize()}{found}{tput}.", ""]
    if a.verdict_of == "original":
        out += ["The evidence below is the original find's (this case records no runs of its own).", ""]
    out += ["**Target:** " + md_code(a.target_spec)
            + "".join(f"; {label} {md_text(value)}" for label, value in a.fingerprint_rows()), ""]
    out += [f"**Minimal case** (workload {md_code(a.case_key)}, {md_code('case.toml')}):", ""]
    out += [f"- {md_text(f)}" for f in a.case_flows] + [""]
    out += [*_fenced(a.case_toml, "toml"), ""]
    out += ["**Replay with collie:**", "", *_fenced(a.replay, "sh"), ""]
    p = a.perftest
    if p.expressible:
        out += [f"**Reproduce with perftest** (server on host {md_code(p.server_host)} first, then the client on "
                f"host {md_code(p.client_host)}):", "", *_fenced(f"{p.server}\n{p.client}", "sh"), ""]
    else:
        out += [f"**perftest:** cannot express this case: {md_text(p.lacks)}.", ""]
    out += ["**Counters that moved:**", ""]
    hosts = sorted(a.hosts)
    if not hosts:
        out += ["No per-host evidence was recorded.", ""]
    for h in hosts:
        moved = a.moved_on(h)
        end = str(a.hosts[h].get("end", ""))
        out += [f"Host {md_code(h)}" + (f" ({md_text(end)})" if end else "") + f": {len(moved)} moved", ""]
        if moved:
            out += ["| counter | delta | source |", "|---|---:|---|"]
            out += [f"| {md_code(m.name)} | {_number(m.delta)} | {md_text(m.source)} |" for m in moved[:MD_COUNTERS]]
            if len(moved) > MD_COUNTERS:
                out.append(f"| ({len(moved) - MD_COUNTERS} more in the JSON report) | | |")
            out.append("")
    return out


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
