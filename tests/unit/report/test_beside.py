"""A perftest import beside a campaign: rows matched to the trials of their workload key, the mean over repeats and
its spread, collie / perftest, and every row that does not match counted (on real sweeps rerun on the simulator)."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.model.workload import Workload
from collie.report.beside import GBPS, LATENCY, collie_figure, compare_beside, render_beside, trials_by_key
from collie.report.load import load_campaign
from collie.services.rerun import parsed_target, plan_rerun, run_rerun
from collie.storage.imports import ImportTool, import_logs
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEND_SWEEP = next((FIXTURES / "sweeps" / "cx6-200g").glob("04-*"))
HEADERLESS = next((FIXTURES / "sweeps" / "cx6-200g").glob("01-*"))
LATENCY_SWEEP = next((FIXTURES / "perftest").glob("01-*"))
NCCL = next((FIXTURES / "nccl_tests").glob("02-*"))


def _rerun(tmp: Path, *logs: Path, repeat: int = 1) -> Path:
    import_logs(ImportTool.PERFTEST, list(logs), tmp / "imp")
    run_rerun(plan_rerun(tmp / "imp", target=parsed_target("sim:cx6-200g"), out=tmp / "rerun", duration=0.1,
                         repeat=repeat, verdict=True, seed=1))
    return tmp / "rerun"


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _rerun(tmp_path_factory.mktemp("beside"), SEND_SWEEP, LATENCY_SWEEP, repeat=3)


def test_each_row_is_the_mean_of_its_workloads_trials(repeated: Path) -> None:
    imported = import_logs(ImportTool.PERFTEST, [SEND_SWEEP, LATENCY_SWEEP], repeated.parent / "again")
    campaign = load_campaign(repeated)
    c = compare_beside(imported, campaign)
    assert (len(c["matched"]), c["unmatched"], c["no_workload"], c["rows"]) == (46, 0, 0, 46)
    assert c["rerun_of"] == str((repeated.parent / "imp").resolve()) and "not" in c["hint"]  # another import
    trials = trials_by_key(campaign)
    for m in c["matched"]:
        figure = GBPS if m["log"] == SEND_SWEEP.name else LATENCY
        values = [collie_figure(t, figure) for t in trials[m["workload_key"]]]
        assert m["figure"] == figure and m["runs"] == 3 and len(m["trials"]) == 3
        assert m["collie"] == pytest.approx(statistics.fmean(v for v in values if v is not None))
        assert m["collie_min"] <= m["collie"] <= m["collie_max"] and m["collie_stdev"] is not None
        assert m["ratio"] == pytest.approx(m["collie"] / m["perftest"])
        assert m["judged"] == 3 and m["anomalous"] == 0
    first = c["matched"][0]  # "2  1000  4.85  4.80  2.518597": MB/s are 2^20 bytes a second
    assert (first["size_bytes"], first["perftest"]) == (2, pytest.approx(4.80 * 8 * 2**20 / 1e9))
    lat = next(m for m in c["matched"] if m["log"] == LATENCY_SWEEP.name)
    assert lat["perftest"] == 0.98  # the typical latency of "2  1000  0.88  4.75  0.98 ..."
    md = render_beside(c, "md")
    assert "46 of 46 imported rows matched" in md and "| 2 | Gb/s |" in md and " to " in md  # the spread
    assert md.count("| clean |") == 46


def test_rows_the_campaign_did_not_run_and_rows_without_a_workload_are_counted(tmp_path: Path) -> None:
    rerun = _rerun(tmp_path, SEND_SWEEP)
    wider = import_logs(ImportTool.PERFTEST, [SEND_SWEEP, LATENCY_SWEEP, HEADERLESS], tmp_path / "wider")
    c = compare_beside(wider, load_campaign(rerun))
    assert (len(c["matched"]), c["unmatched"], c["no_workload"], c["rows"]) == (23, 23, 23, 69)
    assert {r["log"] for r in c["unmatched_rows"]} == {LATENCY_SWEEP.name}
    assert c["median_ratio"][GBPS] is not None and c["median_ratio"][LATENCY] is None
    assert "23 with a workload the campaign did not run; 23 without a workload" in render_beside(c, "md")


def test_a_campaign_that_ran_none_of_the_workloads_says_how_to_run_them(tmp_path: Path) -> None:
    rerun = _rerun(tmp_path, SEND_SWEEP)
    other = import_logs(ImportTool.PERFTEST, [LATENCY_SWEEP], tmp_path / "other")
    c = compare_beside(other, load_campaign(rerun))
    assert c["matched"] == [] and c["unmatched"] == 23
    assert f"collie import rerun {other.root} --target sim:cx6-200g -o NEW_DIR" in c["hint"]
    md = render_beside(c, "md")
    assert "0 of 23 imported rows matched" in md and "| log |" not in md


def test_an_nccl_tests_import_is_refused(tmp_path: Path) -> None:
    rerun = _rerun(tmp_path, SEND_SWEEP)
    nccl = import_logs(ImportTool.NCCL_TESTS, [NCCL], tmp_path / "nccl")
    with pytest.raises(InputError, match="only perftest rows are set beside a campaign"):
        compare_beside(nccl, load_campaign(rerun))


class _EngineBound(SimTarget):
    """The simulator, every rerun engine-bound (a verbs host whose engine cannot keep up with the sweep)."""

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        result = super().run(workload, duration, repetition=repetition)
        return result if workload.name.startswith("calibrate-") else dataclasses.replace(result, engine_bound=True)


def test_engine_bound_reruns_are_counted_apart_and_not_called_clean(tmp_path: Path) -> None:
    imported = import_logs(ImportTool.PERFTEST, [SEND_SWEEP], tmp_path / "imp")
    run_rerun(plan_rerun(tmp_path / "imp", target=parsed_target("sim:cx6-200g"), out=tmp_path / "rerun",
                         duration=0.1, repeat=1, verdict=True, seed=1), target=_EngineBound("cx6-200g", seed=1))
    c = compare_beside(imported, load_campaign(tmp_path / "rerun"))
    assert c["matched"] and all((m["judged"], m["engine_bound"], m["anomalous"]) == (0, 1, 0) for m in c["matched"])
    md = render_beside(c, "md")
    assert md.count("| 1 engine-bound, not judged |") == len(c["matched"]) and "| clean |" not in md
