"""Reports of a campaign folder: pandas frames of its journal and anomalies, rendered to HTML, Markdown, CSV,
JSON and JUnit XML, the perftest lines of its minimal cases, and the comparison of two campaigns.

The library never prints: :func:`render` returns the text, the CLI (``collie report``) writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from collie.report.model import Report, build_report

#: Report formats -> the usual file suffix.
FORMATS: Final = {"html": ".html", "md": ".md", "csv": ".csv", "json": ".json", "junit": ".xml"}


def _csv(report: Report) -> str:
    text: str = report.trials.to_csv(index=False, lineterminator="\n")
    return text


def render(report: Report, fmt: str) -> str:
    """``report`` in format ``fmt`` (one of :data:`FORMATS`)."""
    renderers: dict[str, Callable[[Report], str]] = {"csv": _csv}
    if fmt == "html":
        from collie.report.html import render_html

        renderers["html"] = render_html
    elif fmt == "md":
        from collie.report.markdown import render_markdown

        renderers["md"] = render_markdown
    elif fmt == "json":
        from collie.report.jsonreport import render_json

        renderers["json"] = render_json
    elif fmt == "junit":
        from collie.report.junit import render_junit

        renderers["junit"] = render_junit
    return renderers[fmt](report)


__all__ = ["FORMATS", "Report", "build_report", "render"]
