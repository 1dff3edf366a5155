"""The report of an import folder (:mod:`collie.storage.imports`): every measured row as a table, in Markdown,
CSV or JSON; and two import folders of one tool side by side (firmware A against firmware B).

A perftest row is one message size of one run: its workload's key and shape (the flow the run's header states),
the bandwidth in Gb/s and message rate, or the latency percentiles. An nccl-tests row is one size of one
collective: count, type, out-of-place and in-place time, algbw, busbw and ``#wrong``, as nccl-tests prints them.

Two folders are compared row by row: a perftest row matches the row of the other folder with the same workload
(its key: the same flow shape and size), an nccl-tests row the one of the same collective, rank count, size and
type; each match gives the figure both measured (perftest: Gb/s, else the typical latency; nccl-tests: the
out-of-place busbw) and new / old.

Invariant: every row of every log is in the report, in the logs' order; a value the log does not have is empty
(CSV, Markdown) or null (JSON), never made up. A row that matches none of the other folder's is counted, not
compared; when a side has several rows of one match (two runs of one sweep), the first is taken and the others
counted.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from collie.errors import InputError
from collie.importers.nccl_tests import NcclResult, NcclTestsLog
from collie.importers.perftest import PerftestLog, PerftestRun
from collie.importers.shape import measured, shape_problem
from collie.report.facts import flow_shape
from collie.report.markdown import md_code, md_table, md_text, table_value
from collie.storage.imports import ImportFolder

#: The formats an import folder's report is written in.
IMPORT_FORMATS: Final = ("html", "md", "csv", "json")
PERFTEST_COLUMNS: Final = ("log", "line", "test", "device", "connection", "qps", "bidirectional", "size_bytes",
                           "gbps", "msg_rate_mpps", "lat_min_us", "lat_typical_us", "lat_avg_us", "lat_p99_us",
                           "lat_p99.9_us", "lat_max_us", "workload_key", "workload")
NCCL_COLUMNS: Final = ("log", "line", "collective", "ranks", "size_bytes", "count", "type", "redop", "root",
                       "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong", "ip_time_us", "ip_algbw_gbs",
                       "ip_busbw_gbs", "ip_wrong")


def import_rows(folder: ImportFolder) -> list[dict[str, Any]]:
    """Every measured row of the folder, one dict per row with the columns of its tool (see the module docstring)."""
    rows: list[dict[str, Any]] = []
    for log in folder.logs:
        parsed = log.parsed
        if isinstance(parsed, PerftestLog):
            for run in parsed.runs:
                rows += _perftest_rows(log.name, run)
        else:
            rows += _nccl_rows(log.name, parsed)
    return rows


def render_import(folder: ImportFolder, fmt: str) -> str:
    """The folder's report in ``fmt`` (one of :data:`IMPORT_FORMATS`)."""
    rows = import_rows(folder)
    columns = PERFTEST_COLUMNS if folder.tool.value == "perftest" else NCCL_COLUMNS
    if fmt == "json":
        return json.dumps({"schema": 1, "kind": "import", "tool": folder.tool.value,
                           "imported_at": folder.imported_at,
                           "logs": [{"name": log.name, "origin": log.origin, "sha256": log.sha256}
                                    for log in folder.logs],
                           "warnings": list(folder.warnings), "rows": rows}, indent=2) + "\n"
    if fmt == "html":
        return _html(folder, rows, _display_columns(folder))
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _plain(v) for k, v in row.items()} for row in rows)
        return out.getvalue()
    return _markdown(folder, rows)


def _html(folder: ImportFolder, rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """A self-contained page: the logs, their warnings, a plot per series of two sizes or more, every row."""
    from markupsafe import Markup

    from collie import __version__
    from collie.report.html import template
    from collie.report.plots import sweep_svg

    return template("import.html.j2").render(
        tool=folder.tool.value, root=str(folder.root), imported_at=folder.imported_at, logs=folder.logs,
        warnings=folder.warnings, rows=rows, columns=columns, cell=table_value, version=__version__,
        plots=[Markup(sweep_svg(title, ylabel, lines)) for title, ylabel, lines in _series(folder, rows)])


def _series(folder: ImportFolder, rows: list[dict[str, Any]]
            ) -> list[tuple[str, str, list[tuple[str, list[tuple[int, float]]]]]]:
    """The plots of an import: per log, its bandwidth runs (Gb/s) and its latency runs (typical, p99, p99.9 µs);
    per nccl-tests collective, busbw out of place and in place. Only series of two sizes or more."""
    plots = []
    for log in folder.logs:
        mine = [r for r in rows if r["log"] == log.name]
        if folder.tool.value == "perftest":
            runs: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
            for r in mine:
                runs.setdefault((r["test"], r["connection"], r["qps"]), []).append(r)
            bw = [(f"{test} ({conn}, {qps} QP)", [(r["size_bytes"], r["gbps"]) for r in rs if r["gbps"] is not None])
                  for (test, conn, qps), rs in runs.items()]
            lat = [(f"{test}: {name}", [(r["size_bytes"], r[key]) for r in rs if r[key] is not None])
                   for (test, _, _), rs in runs.items()
                   for name, key in (("typical", "lat_typical_us"), ("p99", "lat_p99_us"),
                                     ("p99.9", "lat_p99.9_us"))]
            plots += [(f"{log.name}: {what}", unit, kept) for what, unit, series in
                      (("bandwidth", "Gb/s", bw), ("latency", "µs", lat))
                      if (kept := [(label, pts) for label, pts in series if len(pts) > 1])]
        else:
            names = list(dict.fromkeys(r["collective"] for r in mine))
            for name in names:
                these = [r for r in mine if r["collective"] == name]
                series = [(f"busbw {way}", [(r["size_bytes"], r[f"{key}_busbw_gbs"]) for r in these
                                            if r[f"{key}_busbw_gbs"] is not None])
                          for way, key in (("out of place", "oop"), ("in place", "ip"))]
                kept = [(label, pts) for label, pts in series if len(pts) > 1]
                if kept:
                    plots.append((f"{log.name}: {name or 'unnamed collective'}", "busbw (GB/s)", kept))
    return plots


def _perftest_rows(name: str, run: PerftestRun) -> list[dict[str, Any]]:
    h = run.header
    out = []
    for row, m in zip(run.rows, measured(run), strict=True):
        lat = dict(m.lat_us)
        w = m.workload
        out.append({"log": name, "line": row.line, "test": run.title, "device": h.device,
                    "connection": h.connection, "qps": h.qps, "bidirectional": run.bidirectional,
                    "size_bytes": m.size, "gbps": m.gbps, "msg_rate_mpps": m.msg_rate_mpps,
                    "lat_min_us": lat.get("min"), "lat_typical_us": lat.get("typical"), "lat_avg_us": lat.get("avg"),
                    "lat_p99_us": lat.get("p99"), "lat_p99.9_us": lat.get("p99.9"), "lat_max_us": lat.get("max"),
                    "workload_key": w.key() if w is not None else None,
                    "workload": flow_shape(w.flows[0]) if w is not None else shape_problem(run)})
    return out


def _nccl_rows(name: str, log: NcclTestsLog) -> list[dict[str, Any]]:
    out = []
    for c in log.collectives:
        for row in c.rows:
            d: dict[str, Any] = {"log": name, "line": row.line, "collective": c.name, "ranks": len(c.ranks) or None,
                                 "size_bytes": row.size, "count": row.count, "type": row.type, "redop": row.redop,
                                 "root": row.root}
            for prefix, result in (("oop", row.out_of_place), ("ip", row.in_place)):
                d.update(_result(prefix, result))
            out.append(d)
    return out


def _result(prefix: str, r: NcclResult | None) -> dict[str, Any]:
    return {f"{prefix}_time_us": r and r.time_us, f"{prefix}_algbw_gbs": r and r.algbw,
            f"{prefix}_busbw_gbs": r and r.busbw, f"{prefix}_wrong": r and r.wrong}


def _plain(value: Any) -> Any:
    return "" if value is None else value


def _display_columns(folder: ImportFolder) -> tuple[str, ...]:
    """The columns Markdown and HTML show (CSV and JSON have every one)."""
    if folder.tool.value == "perftest":
        return ("log", "test", "connection", "qps", "size_bytes", "gbps", "msg_rate_mpps", "lat_typical_us",
                "lat_p99_us", "lat_p99.9_us")
    return ("log", "collective", "ranks", "size_bytes", "type", "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs",
            "ip_busbw_gbs", "oop_wrong")


def _markdown(folder: ImportFolder, rows: list[dict[str, Any]]) -> str:
    lines = [f"# {folder.tool.value} logs imported into {md_code(str(folder.root))}", "",
             f"Imported {folder.imported_at}; {len(rows)} rows from {len(folder.logs)} log"
             f"{'s' if len(folder.logs) != 1 else ''}:", ""]
    lines += [f"- {md_code(log.name)} (from {md_code(log.origin)}, SHA-256 {log.sha256[:16]}...)"
              for log in folder.logs]
    if folder.warnings:
        lines += ["", "## Warnings", "", *(f"- {md_text(w)}" for w in folder.warnings)]
    lines += ["", "## Rows", "", *md_table(rows, _display_columns(folder))]
    if folder.tool.value == "perftest":
        shapes = {r["workload_key"]: r["workload"] for r in rows if r["workload_key"]}
        lines += ["", "## Workloads", "", "Each row's flow shape, as its run's header states it:", "",
                  *(f"- `{key}`: {md_text(str(shape))}" for key, shape in shapes.items())]
    return "\n".join(lines) + "\n"


def compare_imports(old: ImportFolder, new: ImportFolder) -> dict[str, Any]:
    """``new`` against ``old`` (see the module docstring): the matched rows with both figures and their ratio,
    and how many rows of each side matched nothing.

    Raises:
        InputError: the folders hold logs of different tools.
    """
    if old.tool is not new.tool:
        raise InputError(f"{old.root} holds {old.tool.value} logs and {new.root} {new.tool.value} logs; compare "
                         f"imports of one tool")
    perftest = old.tool.value == "perftest"
    sides = [_by_match(import_rows(folder), perftest) for folder in (old, new)]
    matched = []
    for key, a in sides[0].items():
        b = sides[1].get(key)
        if b is None:
            continue
        x, y = _figure(a, perftest), _figure(b, perftest)
        matched.append({"match": key, "what": _what(a, perftest), "size_bytes": a["size_bytes"],
                        "figure": "Gb/s" if perftest and a["gbps"] is not None else
                        "latency us (typical)" if perftest else "busbw GB/s (out of place)",
                        "old": x, "new": y, "ratio": y / x if x and y is not None else None})
    only = [sum(1 for k in side if k not in other) for side, other in ((sides[0], sides[1]), (sides[1], sides[0]))]
    return {"schema": 1, "kind": "import-comparison", "tool": old.tool.value, "old": str(old.root),
            "new": str(new.root), "matched": matched, "only_old": only[0], "only_new": only[1]}


def render_import_comparison(c: Mapping[str, Any], fmt: str) -> str:
    """A comparison of :func:`compare_imports` as ``md`` or ``json``."""
    if fmt == "json":
        return json.dumps(c, indent=2) + "\n"
    old, new = md_code(c["old"]), md_code(c["new"])
    lines = [f"# {c['tool']} imports compared: {new} against {old}", "",
             f"{len(c['matched'])} row{'s' if len(c['matched']) != 1 else ''} measured by both; {c['only_old']} "
             f"only in {old}, {c['only_new']} only in {new}.", "",
             *md_table(c["matched"], ("what", "size_bytes", "figure", "old", "new", "ratio"))]
    return "\n".join(lines) + "\n"


def _by_match(rows: list[dict[str, Any]], perftest: bool) -> dict[str, dict[str, Any]]:
    """The rows by what they match on (the first of each)."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = (row["workload_key"] if perftest else
               f"{row['collective']}/{row['ranks']}/{row['size_bytes']}/{row['type']}")
        if key is not None:
            out.setdefault(key, row)
    return out


def _figure(row: Mapping[str, Any], perftest: bool) -> float | None:
    """The figure a row is compared by (see the module docstring)."""
    first, second = ("gbps", "lat_typical_us") if perftest else ("oop_busbw_gbs", "ip_busbw_gbs")
    value = row[first] if row[first] is not None else row[second]
    return None if value is None else float(value)


def _what(row: Mapping[str, Any], perftest: bool) -> str:
    return str(row["workload"]) if perftest else f"{row['collective']} over {row['ranks']} ranks, {row['type']}"
