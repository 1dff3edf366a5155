"""The gate's result as JUnit XML, written with junitparser (CI systems show it as test results).

Two test suites: ``collie.known`` has one test case per known case (a failure when it still reproduces
unwaived; skipped when waived, not run or recorded on another target; passed when fixed), ``collie.new`` one
per new anomaly (a failure unless waived, then skipped). Each suite carries the target, the campaign folder, the
budget and the number of engine-bound runs (``engine_bound``: the traffic engine, not the NIC, limited them, and
they were not judged) as properties.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collie.gate.gate import GateResult, KnownStatus

KNOWN_SUITE = "collie.known"
NEW_SUITE = "collie.new"


def _junitparser() -> Any:
    try:
        import junitparser
    except ImportError:  # pragma: no cover - a declared dependency; a broken install says what to do
        from collie.errors import InputError

        raise InputError("--junit needs the junitparser package (pip install 'junitparser>=3.1')") from None
    return junitparser


def write_junit(result: GateResult, path: Path) -> None:
    """Write ``result`` to ``path`` as JUnit XML.

    Raises:
        OSError: the file could not be written.
    """
    jp = _junitparser()
    known = jp.TestSuite(KNOWN_SUITE)
    for k in result.known:
        case = jp.TestCase(k.name, KNOWN_SUITE)
        lines = [f"case: {k.path}", f"recorded signature: {k.recorded or '(none)'}", f"status: {k.status}"]
        if k.status is KnownStatus.REPRODUCES:
            case.result = [jp.Failure(f"still reproduces: {k.signature} (score {k.score:.3g})", "reproduces")]
        elif k.status is KnownStatus.WAIVED:
            assert k.waiver is not None
            case.result = [jp.Skipped(f"reproduces ({k.signature}), waived: {k.waiver.describe()}", "waived")]
        elif k.status is KnownStatus.NOT_RUN:
            case.result = [jp.Skipped(f"not run: {k.reason or 'the target cannot run it'}", "not-run")]
        elif k.status is KnownStatus.OTHER_TARGET:
            case.result = [jp.Skipped(k.target_note, "other-target")]
        else:
            lines.append("fixed: it no longer reproduces")
        if k.differences:
            lines.append(f"target differences: {', '.join(k.differences)}")
        if k.expired is not None:
            lines.append(f"expired {k.expired.describe()} (it no longer waives)")
        case.system_out = "\n".join(lines)
        known.add_testcase(case)
    new = jp.TestSuite(NEW_SUITE)
    for n in result.new:
        case = jp.TestCase(n.anomaly_id, NEW_SUITE)
        mfs = n.mfs or "not minimized"
        if n.waiver is not None:
            case.result = [jp.Skipped(f"new anomaly {n.signature}, waived: {n.waiver.describe()}", "waived")]
        else:
            case.result = [jp.Failure(f"new anomaly {n.signature}; MFS: {mfs}", "new-anomaly")]
        lines = [f"signature: {n.signature}", f"MFS: {mfs}", f"confirmed: {n.confirmed}",
                 f"found at experiment {n.found_at}", f"case: {Path(result.out) / 'anomalies' / n.anomaly_id}"]
        if n.expired is not None:
            lines.append(f"expired {n.expired.describe()} (it no longer waives)")
        case.system_out = "\n".join(lines)
        new.add_testcase(case)
    xml = jp.JUnitXml("collie ci")
    for suite in (known, new):
        suite.add_property("target", result.target)
        suite.add_property("campaign", result.out)
        suite.add_property("budget", str(result.budget))
        suite.add_property("engine_bound", str(result.engine_bound))
        suite.update_statistics()
        xml.add_testsuite(suite)
    xml.update_statistics()
    xml.write(str(path), pretty=True)
