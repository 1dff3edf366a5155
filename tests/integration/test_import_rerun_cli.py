"""``collie import rerun`` and ``collie report --compare IMPORT CAMPAIGN`` through the real CLI, on real published
sweeps (tests/fixtures/sweeps) rerun on ``sim:cx6-200g``: the rerun is a campaign folder that reports in every
format, the comparison reads the same both ways round, an interrupted folder still reports what it has, and every
bad input is one sentence and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

SWEEPS = ROOT / "tests" / "fixtures" / "sweeps" / "cx6-200g"
SEND_SWEEP = next(SWEEPS.glob("04-*"))  # ib_send_bw -a, full header: 23 rows
HEADERLESS = next(SWEEPS.glob("01-*"))  # ib_write_bw -a as published: no title, no header
NCCL = next((ROOT / "tests" / "fixtures" / "nccl_tests").glob("02-*"))


@pytest.fixture(scope="module")
def rerun(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("rerun")
    done = run_cli("import", "perftest", str(SEND_SWEEP), str(HEADERLESS), "-o", str(tmp / "imp"))
    assert done.returncode == 0, done.stderr
    done = run_cli("import", "rerun", str(tmp / "imp"), "--target", "sim:cx6-200g", "-o", str(tmp / "rerun"),
                   "--duration", "0.2", "--repeat", "2")
    assert done.returncode == 0, done.stderr
    assert f"rerunning 23 rows of {tmp / 'imp'} (23 workloads x 2) on sim:cx6-200g" in done.stderr
    assert f"skipped 23 rows of {HEADERLESS.name}: the log names no verb (no test title)" in done.stderr
    assert "== done: 46 runs of 23 workloads, 0 anomalous, 0 failed, 0 pruned" in done.stderr
    return tmp / "imp", tmp / "rerun"


def test_the_rerun_is_a_campaign_folder_that_reports(rerun: tuple[Path, Path]) -> None:
    _, out = rerun
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    phases = [t["phase"] for t in doc["trials"]]
    assert phases.count("replay") == 46 and set(phases) == {"calibrate", "replay"}
    assert doc["campaign"]["simulated"] and doc["summary"]["anomalies"] == 0
    assert doc["campaign"]["rerun_of"] == str(rerun[0].resolve())
    assert f"`collie report --compare {rerun[0].resolve()} {out.resolve()}`" in run_cli("report", str(out)).stdout
    assert all(t["anomalous"] is False for t in doc["trials"] if t["phase"] == "replay")  # judged, clean
    for fmt in ("md", "html", "csv", "junit"):
        done = run_cli("report", str(out), "--format", fmt)
        assert done.returncode == 0 and done.stdout, (fmt, done.stderr)


def test_the_comparison_reads_the_same_both_ways_round(rerun: tuple[Path, Path]) -> None:
    imp, out = rerun
    one = json.loads(run_cli("report", "--compare", str(imp), str(out), "--format", "json").stdout)
    other = json.loads(run_cli("report", "--compare", str(out), str(imp), "--format", "json").stdout)
    assert one == other and one["kind"] == "import-beside-campaign" and one["hint"] is None
    assert (len(one["matched"]), one["unmatched"], one["no_workload"]) == (23, 0, 23)
    assert all(m["runs"] == 2 and m["ratio"] > 0 and m["figure"] == "Gb/s" for m in one["matched"])
    md = run_cli("report", "--compare", str(out), str(imp)).stdout
    assert "23 of 46 imported rows matched" in md and "23 without a workload collie can run" in md
    assert md.count("| 04-ib\\_send\\_bw") == 23  # Markdown's specials escaped


def test_an_interrupted_rerun_reports_what_it_has(rerun: tuple[Path, Path], tmp_path: Path) -> None:
    imp, out = rerun
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("campaign.toml", "rerun.json"):
        (cut / name).write_bytes((out / name).read_bytes())
    lines = (out / "trials.jsonl").read_bytes().splitlines(keepends=True)
    (cut / "trials.jsonl").write_bytes(b"".join(lines[:30]) + lines[30][:40])  # a crash while writing a row
    done = run_cli("report", "--compare", str(imp), str(cut), "--format", "json")
    assert done.returncode == 0 and "is incomplete" in done.stderr
    doc = json.loads(done.stdout)
    assert 0 < len(doc["matched"]) < 23 and doc["unmatched"] == 23 - len(doc["matched"])
    assert run_cli("report", str(cut)).returncode == 0
    resumed = run_cli("import", "rerun", str(imp), "-o", str(cut), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    again = json.loads(run_cli("report", "--compare", str(imp), str(cut), "--format", "json").stdout)
    assert again["matched"] == json.loads(run_cli("report", "--compare", str(imp), str(out), "--format",
                                                  "json").stdout)["matched"]  # the same runs, journal for journal


def test_a_campaign_that_ran_none_of_the_rows_says_so(rerun: tuple[Path, Path], tmp_path: Path) -> None:
    imp, _ = rerun
    camp = tmp_path / "camp"
    done = run_cli("campaign", "--target", "sim:cx6-200g", "--budget", "2", "--preset", "quick", "--out", str(camp),
                   "--no-live")
    assert done.returncode == 0, done.stderr
    done = run_cli("report", "--compare", str(camp), str(imp))
    assert done.returncode == 0 and "0 of 46 imported rows matched" in done.stdout
    assert f"collie: 0 rows matched: the campaign {camp} ran none of the 23 imported workloads; run them with: " \
           f"collie import rerun {imp} --target sim:cx6-200g -o NEW_DIR" in done.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["rerun", "{nccl}", "-o", "{tmp}/o"], "holds nccl-tests logs; only perftest rows can be rerun"),
    (["rerun", "{out}", "-o", "{tmp}/o"], "is not an import folder (it has no import.json)"),
    (["rerun", "{tmp}/none", "-o", "{tmp}/o"], "does not exist; give a folder made by collie import perftest"),
    (["rerun", "{imp}", "-o", "{out}"], "is not empty"),
    (["rerun", "{imp}", "-o", "{tmp}/o", "--target", "bogus"], "unknown target 'bogus'"),
    (["rerun", "{imp}", "-o", "{tmp}/o", "--target", "verbs:"], "target verbs needs a device name"),
    (["rerun", "{imp}", "-o", "{out}", "--resume", "--repeat", "3"], "drop --repeat"),
    (["rerun", "{imp}", "-o", "{tmp}/o", "--resume"], "holds no rerun to resume"),
])
def test_bad_input_is_one_sentence(rerun: tuple[Path, Path], tmp_path: Path, args: list[str], says: str) -> None:
    imp, out = rerun
    if "{nccl}" in args:
        assert run_cli("import", "nccl-tests", str(NCCL), "-o", str(tmp_path / "nccl")).returncode == 0
    given = [a.format(nccl=tmp_path / "nccl", tmp=tmp_path, imp=imp, out=out) for a in args]
    done = run_cli("import", *given)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") <= 2, done.stderr
    assert not (tmp_path / "o").exists()


def test_a_comparison_of_an_import_and_a_campaign_refuses_other_formats(rerun: tuple[Path, Path]) -> None:
    imp, out = rerun
    done = run_cli("report", "--compare", str(imp), str(out), "--format", "csv")
    assert done.returncode == 2 and "writes md, json, not --format csv" in done.stderr
