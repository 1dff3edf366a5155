"""The HTML report: one self-contained page (no script, no external file, no network), made with jinja2.

Autoescape is on for every value: workload, host, inventory and counter names are text, never markup. The only
markup placed unescaped is the SVG matplotlib draws (:mod:`collie.report.plots`), which escapes its own text.
The page's Content-Security-Policy forbids every fetch and every script, so even a browser that met a stray
reference would not load it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from collie import __version__
from collie.errors import CollieError
from collie.report.facts import AnomalyFacts, fingerprint_rows
from collie.report.model import Report, counts, engine_bound_sentence
from collie.report.plots import counters_svg, overview_svg
from collie.storage.records import Phase, TrialState

if TYPE_CHECKING:
    import jinja2

_SHOWN_DETAILS: Final = ("pcie_gbps", "relaxed_ordering", "cpu", "numa", "gpu", "max_qp", "max_mr", "max_sge",
                         "max_qp_wr")


def template(name: str) -> jinja2.Template:
    """The jinja2 template ``name`` of ``collie/report/templates`` (autoescape on, undefined names an error).

    Raises:
        CollieError: jinja2 is not installed (one sentence saying how to get it).
    """
    try:
        import jinja2
    except ImportError:
        raise CollieError("HTML reports are templated with jinja2, which is not installed; install it (pip "
                          "install jinja2) or choose another --format") from None
    env = jinja2.Environment(loader=jinja2.PackageLoader("collie.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["tokens"] = tokens
    return env.get_template(name)


def tokens(line: str) -> list[str]:
    """The shell words of a command line made by :func:`shlex.join`, each quoted as it was: the page wraps a
    command between words, never inside one (joined by single spaces they are ``line`` again)."""
    return [shlex.quote(word) for word in shlex.split(line)]


def render_html(report: Report) -> str:
    """The page of ``report``."""
    page = template("report.html.j2")
    from markupsafe import Markup  # jinja2's own dependency
    data = report.data
    info = data.config.target_info
    c = counts(report)
    return page.render(
        title=report.title, version=__version__, data=data, config=data.config, counts=c,
        engine_bound=engine_bound_sentence(c["engine_bound"]),
        machines=report.machines, campaign_fingerprint=fingerprint_rows(info),
        campaign_details=[(k, info.details[k]) for k in _SHOWN_DETAILS if info is not None and k in info.details],
        overview=Markup(overview_svg(report.trials, report.found_at_trials(),
                                     info.line_rate_bps if info is not None else 0.0)),
        anomalies=[_card(a, Markup, report) for a in report.anomalies],
        states=[str(s) for s in TrialState], by_phase=_by_phase(report),
    )


def _by_phase(report: Report) -> list[tuple[str, list[int]]]:
    t = report.trials
    out = []
    for phase in Phase:
        rows = t[t["phase"] == str(phase)]
        if len(rows):
            out.append((str(phase), [int((rows["status"] == str(s)).sum()) for s in TrialState]))
    return out


def _card(a: AnomalyFacts, markup: Any, report: Report) -> dict[str, Any]:
    config = report.data.config
    # the page names the campaign's target once; a card names its own only when it differs
    own = a.target_spec != config.target or a.fingerprint != config.target_info
    return {"facts": a, "fingerprint": a.fingerprint_rows() if own else None, "plot": markup(counters_svg(a)),
            "hosts": [(h, _host(a, h, ev)) for h, ev in sorted(a.hosts.items())]}


def _host(a: AnomalyFacts, host: str, ev: Mapping[str, Any]) -> dict[str, Any]:
    return {"label": a.host_label(host),
            "tx": _rate(ev.get("tx_bps"), ev.get("tx_pps")), "rx": _rate(ev.get("rx_bps"), ev.get("rx_pps")),
            "pause_tx": _pause(ev.get("pause_ratio_tx"), ev.get("pause_readable")),
            "pause_rx": _pause(ev.get("pause_ratio_rx"), ev.get("pause_readable")),
            "moved": a.moved_on(host),
            "unreadable": sorted(dict(ev.get("unreadable") or {}).items())}


def _rate(bps: Any, pps: Any) -> str:
    if not isinstance(bps, int | float):
        return "-"
    text = f"{bps / 1e9:.2f} Gb/s"
    return text + (f", {pps / 1e6:.2f} Mpps" if isinstance(pps, int | float) else "")


def _pause(ratios: Any, readable: Any) -> str:
    if readable is False:
        return "unreadable"
    if not isinstance(ratios, Mapping) or not ratios:
        return "-"
    return ", ".join(f"{'prio ' + k if k != 'global' else 'global'} {v:.2%}" for k, v in ratios.items()
                     if isinstance(v, int | float))
