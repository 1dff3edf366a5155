"""Every report format says how many of a campaign's runs were engine-bound (issue #33): the traffic engine, not
the NIC, limited them and the oracle did not judge them. Folders are written through collie's own store; a
journal from before runs said so counts 0."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from junitparser import JUnitXml, Skipped
from markupsafe import escape
from reporthelpers import engine_bound_campaign

from collie.report import build_report, render
from collie.report.compare import compare, render_comparison
from collie.report.frames import read_trials_csv
from collie.report.model import counts, engine_bound_sentence
from collie.storage.records import Phase
from tests.conftest import ROOT

STORED = ROOT / "tests" / "fixtures" / "campaigns" / "main-474e322"


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five explore runs, three of them engine-bound (plus a calibration run and a pruned trial)."""
    return engine_bound_campaign(tmp_path_factory.mktemp("eb") / "c", [True, False, True, True, False])


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return engine_bound_campaign(tmp_path_factory.mktemp("eb") / "c", [False, False])


def test_the_count_is_one_fact_of_the_trials_frame(bound: Path) -> None:
    report = build_report(bound)
    assert counts(report)["engine_bound"] == 3
    flags = report.trials["engine_bound"]
    assert flags.tolist()[:6] == [False, True, False, True, True, False] and pd.isna(flags.iloc[6])  # pruned: no run


def test_markdown_says_how_many_runs_were_engine_bound_and_what_that_means(bound: Path) -> None:
    md = render(build_report(bound), "md")
    line = next(s for s in md.splitlines() if "engine-bound" in s)
    assert line == ("3 runs were engine-bound: the traffic engine, not the NIC, limited them, so the oracle did not "
                    "judge them and their rates are the engine's (docs/targets.md, \"What rates the engine can drive, "
                    "and engine\\_bound\").")
    assert md.index("budgeted experiments") < md.index(line)  # beside the counts, at the top


def test_markdown_of_a_campaign_without_engine_bound_runs_says_nothing_of_it(clean: Path) -> None:
    assert "engine" not in render(build_report(clean), "md")


def test_json_always_has_the_count_and_each_trial_its_flag(bound: Path, clean: Path) -> None:
    doc = json.loads(render(build_report(bound), "json"))
    assert doc["summary"]["engine_bound"] == 3
    assert [t["engine_bound"] for t in doc["trials"]] == [False, True, False, True, True, False, None]
    assert json.loads(render(build_report(clean), "json"))["summary"]["engine_bound"] == 0


def test_csv_has_the_flag_of_each_run_and_reads_back_equal(bound: Path) -> None:
    report = build_report(bound)
    frame = read_trials_csv(io.StringIO(render(report, "csv")))
    pd.testing.assert_frame_equal(frame, report.trials)
    assert int(frame["engine_bound"].sum()) == 3


def test_html_shows_the_count_only_when_there_are_engine_bound_runs(bound: Path, clean: Path) -> None:
    page = render(build_report(bound), "html")
    assert '<b id="engine-bound-count">3</b>engine-bound runs (not judged)' in page
    assert f'<p class="meta" id="engine-bound">{escape(engine_bound_sentence(3))}.</p>' in page
    assert "engine-bound" not in render(build_report(clean), "html")


def test_junit_suites_carry_the_count(bound: Path, clean: Path, tmp_path: Path) -> None:
    for folder, n in ((bound, "3"), (clean, "0")):
        (tmp_path / "r.xml").write_text(render(build_report(folder), "junit"))
        for suite in JUnitXml.fromfile(str(tmp_path / "r.xml")):
            assert {p.name: p.value for p in suite.properties()}["engine_bound"] == n


def test_junit_skips_a_known_case_whose_replay_was_engine_bound(tmp_path: Path) -> None:
    folder = engine_bound_campaign(tmp_path / "c", [True, False], phase=Phase.REPLAY)
    (tmp_path / "r.xml").write_text(render(build_report(folder), "junit"))
    known = next(s for s in JUnitXml.fromfile(str(tmp_path / "r.xml")) if s.name == "collie.known")
    skipped, fixed = list(known)
    assert isinstance(skipped.result[0], Skipped) and skipped.result[0].type == "engine-bound"
    assert skipped.result[0].message.startswith("not judged: the traffic engine, not the NIC, limited the run")
    assert fixed.is_passed and known.failures == 0


def test_a_journal_written_before_runs_said_whether_they_were_engine_bound_counts_none(tmp_path: Path) -> None:
    old = shutil.copytree(STORED, tmp_path / "old")
    rows = [json.loads(line) for line in (old / "trials.jsonl").read_text().splitlines()]
    for row in rows:
        if "result" in row:
            del row["result"]["engine_bound"]
    (old / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = build_report(old)
    assert counts(report)["engine_bound"] == 0 and report.trials["engine_bound"].notna().any()
    assert "engine" not in render(report, "md")
    assert json.loads(render(report, "json"))["summary"]["engine_bound"] == 0


def test_one_engine_bound_run_is_said_in_the_singular() -> None:
    assert engine_bound_sentence(1).startswith("1 run was engine-bound: the traffic engine, not the NIC, limited it, "
                                               "so the oracle did not judge it and its rates")
    assert engine_bound_sentence(0) == ""


def test_a_comparison_gives_each_campaigns_engine_bound_runs_when_either_has_some(bound: Path, clean: Path) -> None:
    c = compare(build_report(clean), build_report(bound))
    md = render_comparison(c, "md")
    assert ("Engine-bound runs: old 0, new 3 (the traffic engine, not the NIC, limited them: the oracle did not "
            "judge them, and the throughput below is the engine's where they ran).") in md
    assert md.index("still present**") < md.index("Engine-bound runs") < md.index("## Fingerprints")
    doc = json.loads(render_comparison(c, "json"))
    assert (doc["old_campaign"]["engine_bound"], doc["new_campaign"]["engine_bound"]) == (0, 3)
    assert '<p id="engine-bound">Engine-bound runs: old 0, new 3 (' in render_comparison(c, "html")
    same = compare(build_report(clean), build_report(clean))
    assert "ngine" not in render_comparison(same, "md") and "engine-bound" not in render_comparison(same, "html")
    assert json.loads(render_comparison(same, "json"))["new_campaign"]["engine_bound"] == 0
