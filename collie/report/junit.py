"""The JUnit XML report, written with junitparser: one test case per anomaly, known or new.

* a new anomaly (found by this campaign) is a failed test case whose message is its symptom and magnitude and
  whose text holds the MFS, the minimal case's key and the replay command;
* a known case of the corpus replayed first (a ``replay`` trial) is a test case that fails when it still
  reproduced (anomalous) and passes when it no longer did (fixed); it is skipped when its run was engine-bound
  (not judged, so neither).

CI systems show these as tests: a red test per anomaly. A campaign on the simulator says so in each suite's
``simulated`` property and at the start of every failure's message; each suite's ``engine_bound`` property is
the number of the campaign's runs the traffic engine, not the NIC, limited (not judged; ``0``: none).
"""

from __future__ import annotations

from typing import Any, Final

from collie.errors import CollieError
from collie.report.model import Report, counts

SUITE_NEW: Final = "collie.anomalies"
SUITE_KNOWN: Final = "collie.known"


def render_junit(report: Report) -> str:
    """The JUnit XML document of ``report``."""
    try:
        from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite
    except ImportError:
        raise CollieError("the JUnit report is written with junitparser, which is not installed; install it (pip "
                          "install junitparser) or choose another --format") from None
    simulated = report.machines.simulated
    prefix = "simulated: " if simulated else ""
    new = TestSuite(SUITE_NEW)
    for a in report.anomalies:
        case = TestCase(f"{a.anomaly_id} [{a.signature}]", classname=SUITE_NEW)
        failure = Failure(prefix + (a.symptom_text or f"anomalous: {a.signature}"), type_=a.signature or "anomaly")
        failure.text = "\n".join([*([report.machines.simulated_sentence()] if simulated else []),
                                  f"MFS: {a.mfs_words}", f"minimal case: {a.case_key}",
                                  f"magnitude: {a.magnitude_text}", f"replay: {a.replay}"])
        case.result = [failure]
        new.add_testcase(case)
    known = TestSuite(SUITE_KNOWN)
    t = report.trials
    for row in t[(t["phase"] == "replay")].to_dict(orient="records"):
        known.add_testcase(_known_case(row, report.data.corpus_names.get(str(row["key"]), ""), prefix, TestCase,
                                       Failure, Skipped))
    engine_bound = str(counts(report)["engine_bound"])
    for suite in (new, known):
        suite.add_property("simulated", "yes" if simulated else "no")
        suite.add_property("target", report.data.config.target)
        suite.add_property("engine_bound", engine_bound)
    xml: Any = JUnitXml("collie report " + report.data.root.name)
    xml.add_testsuite(new)
    if known.tests:
        xml.add_testsuite(known)
    text: bytes = xml.tostring()
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text.decode("utf-8") + "\n"


def _known_case(row: dict[Any, Any], name: str, prefix: str, case_type: Any, failure_type: Any,
                skipped_type: Any) -> Any:
    case = case_type(f"known case {name or row['key']} (trial {row['trial']})", classname=SUITE_KNOWN)
    if row["anomalous"] is True:
        failure = failure_type(f"{prefix}still reproduces: {row['signature']}", type_=str(row["signature"]))
        case.result = [failure]
    elif row["status"] != "COMPLETE":
        failure = failure_type(f"{prefix}could not run: {row['reason']}", type_=str(row["status"]))
        case.result = [failure]
    elif row["engine_bound"] is True:  # not judged: the replay shows neither that it reproduces nor that it is fixed
        case.result = [skipped_type(f"{prefix}not judged: the traffic engine, not the NIC, limited the run "
                                    "(engine-bound)", "engine-bound")]
    return case
