"""Reports of a campaign folder: pandas frames of its journal and anomalies, rendered to HTML, Markdown, CSV,
JSON and JUnit XML, the perftest lines of its minimal cases, and the comparison of two campaigns.

The library never prints: :func:`render` returns the text, the CLI (``collie report``) writes it. Importing this
package imports nothing heavy (pandas, jinja2, matplotlib come with the function that needs them), so that
:mod:`collie.report.perftest` also works where only collie's core dependencies are installed (the soft-RoCE
guest).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collie.report.model import Report

#: Report formats -> the usual file suffix.
FORMATS: Final = {"html": ".html", "md": ".md", "csv": ".csv", "json": ".json", "junit": ".xml"}


def build_report(root: Path) -> Report:
    """Read the campaign folder ``root`` (see :func:`collie.report.model.build_report`)."""
    from collie.report.model import build_report as build

    return build(root)


def render(report: Report, fmt: str) -> str:
    """``report`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "html":
        from collie.report.html import render_html

        return render_html(report)
    if fmt == "md":
        from collie.report.markdown import render_markdown

        return render_markdown(report)
    if fmt == "json":
        from collie.report.jsonreport import render_json

        return render_json(report)
    if fmt == "junit":
        from collie.report.junit import render_junit

        return render_junit(report)
    if fmt == "csv":
        text: str = report.trials.to_csv(index=False, lineterminator="\n")
        return text
    raise ValueError(f"unknown report format {fmt!r}")


__all__ = ["FORMATS", "build_report", "render"]
