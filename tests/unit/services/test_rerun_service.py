"""``collie import rerun``'s service on the simulator: each imported perftest row's workload run as journaled
trials of a campaign folder, the rows collie cannot express counted with their reason, the verdicts calibrated
first (or none), and an interrupted rerun resumed trial for trial into the journal an uninterrupted one writes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from collie.campaign import CampaignInterrupted
from collie.errors import InputError
from collie.events import TrialFinished
from collie.model.workload import Workload
from collie.services.events import ServiceEvent
from collie.services.rerun import (
    RerunPlan,
    parsed_target,
    plan_rerun,
    plan_resumed_rerun,
    rerun_rows,
    run_rerun,
)
from collie.storage.campaign import JOURNAL
from collie.storage.imports import ImportFolder, ImportTool, import_logs
from collie.storage.records import Phase, TrialRecord, TrialState
from collie.storage.rerun import read_rerun
from collie.targets.base import RunResult
from collie.targets.sim import SimTarget

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEND_SWEEP = next((FIXTURES / "sweeps" / "cx6-200g").glob("04-*"))  # a full header: 23 rows, each a workload
HEADERLESS = next((FIXTURES / "sweeps" / "cx6-200g").glob("01-*"))  # no title or header: no verb, no workload
SERVER_SIDE = next((FIXTURES / "sweeps" / "cx6-200g").glob("05-*"))  # the server's side of the same run
LATENCY = next((FIXTURES / "perftest").glob("01-*"))
NCCL = next((FIXTURES / "nccl_tests").glob("02-*"))


def _import(tmp: Path, *logs: Path) -> ImportFolder:
    return import_logs(ImportTool.PERFTEST, list(logs), tmp / "imp")


def _journal(root: Path) -> list[TrialRecord]:
    return [TrialRecord.from_json(json.loads(line), "") for line in (root / JOURNAL).read_text().splitlines()]


def _plan(tmp: Path, *logs: Path, repeat: int = 1, verdict: bool = True) -> RerunPlan:
    _import(tmp, *logs)
    return plan_rerun(tmp / "imp", target=parsed_target("sim:cx6-200g"), out=tmp / "out", duration=0.1,
                      repeat=repeat, verdict=verdict, seed=3)


def test_every_row_is_rerun_or_counted_with_why(tmp_path: Path) -> None:
    copy = tmp_path / "again.txt"
    copy.write_bytes(SEND_SWEEP.read_bytes())
    rows, skipped, workloads = rerun_rows(_import(tmp_path, SEND_SWEEP, HEADERLESS, SERVER_SIDE, copy))
    assert len(rows) == 69 and len(skipped) == 23
    assert {s.reason for s in skipped} == {"the log names no verb (no test title)"}
    assert {s.log for s in skipped} == {HEADERLESS.name}
    assert [r.log for r in rows[::23]] == [SEND_SWEEP.name, SERVER_SIDE.name, copy.name]
    # a log imported twice states the same flows: one workload per size, run once
    assert [r.workload_key for r in rows[46:]] == [r.workload_key for r in rows[:23]] == list(workloads)[:23]
    assert len(workloads) == len({r.workload_key for r in rows})


def test_a_rerun_is_a_journaled_campaign_calibrated_first(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SEND_SWEEP, HEADERLESS, repeat=2)
    events: list[ServiceEvent] = []
    summary = run_rerun(plan, listener=events.append)
    assert (summary.rows, summary.skipped, summary.workloads, summary.complete) == (23, 23, 23, 46)
    trials = _journal(tmp_path / "out")
    ends = [t for t in trials if t.state.finished]
    calibration = [t for t in ends if t.phase is Phase.CALIBRATE]
    reruns = [t for t in ends if t.phase is Phase.REPLAY]
    assert len(calibration) == summary.calibration > 0 and len(reruns) == 46
    assert all(t.state is TrialState.COMPLETE and t.verdict is not None for t in reruns)
    assert [t.key for t in reruns[:4]] == [k for k in list(plan.workloads)[:2] for _ in range(2)]  # repeated in a row
    record = read_rerun(tmp_path / "out")
    assert record == plan.record and record.import_folder == str((tmp_path / "imp").resolve())
    progress = [e.experiments for e in events if isinstance(e, TrialFinished) and e.phase == "replay"]
    assert progress == list(range(1, 47))  # the dashboard's bar counts the reruns


def test_no_verdict_calibrates_nothing_and_judges_nothing(tmp_path: Path) -> None:
    summary = run_rerun(_plan(tmp_path, LATENCY, verdict=False))
    trials = [t for t in _journal(tmp_path / "out") if t.state.finished]
    assert summary.calibration == 0 and all(t.phase is Phase.REPLAY and t.verdict is None for t in trials)


class _Interrupting(SimTarget):
    """The simulator, Ctrl-C'd during its ``after``-th run."""

    def __init__(self, after: int) -> None:
        super().__init__("cx6-200g", seed=3)
        self.left = after

    def run(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
        return super().run(*args, **kwargs)  # type: ignore[arg-type]


def test_an_interrupted_rerun_resumes_into_the_uninterrupted_journal(tmp_path: Path) -> None:
    whole = _plan(tmp_path / "whole", SEND_SWEEP)
    run_rerun(whole)
    cut = _plan(tmp_path / "cut", SEND_SWEEP)
    with pytest.raises(CampaignInterrupted):
        run_rerun(cut, target=_Interrupting(after=15))
    assert _journal(tmp_path / "cut" / "out")[-1].state is TrialState.RUNNING  # the trial in flight
    resumed = plan_resumed_rerun(tmp_path / "cut" / "imp", tmp_path / "cut" / "out")
    run_rerun(resumed)

    def finished(root: Path) -> list[tuple[int, str, str, object]]:
        return [(t.trial, t.phase, t.key, t.result.to_dict() if t.result else None)
                for t in _journal(root) if t.state.finished]

    assert finished(tmp_path / "cut" / "out") == finished(tmp_path / "whole" / "out")


def test_bad_input_is_one_sentence_and_writes_nothing(tmp_path: Path) -> None:
    spec = parsed_target("sim")
    import_logs(ImportTool.NCCL_TESTS, [NCCL], tmp_path / "nccl")
    with pytest.raises(InputError, match="only perftest rows can be rerun"):
        plan_rerun(tmp_path / "nccl", target=spec, out=tmp_path / "o", duration=1, repeat=1, verdict=True, seed=0)
    with pytest.raises(InputError, match="is not an import folder"):
        plan_rerun(tmp_path, target=spec, out=tmp_path / "o", duration=1, repeat=1, verdict=True, seed=0)
    import_logs(ImportTool.PERFTEST, [HEADERLESS], tmp_path / "bare")
    with pytest.raises(InputError, match=r"none of the 23 rows .* can run, so nothing is rerun: the log names no verb"):
        plan_rerun(tmp_path / "bare", target=spec, out=tmp_path / "o", duration=1, repeat=1, verdict=True, seed=0)
    import_logs(ImportTool.PERFTEST, [SEND_SWEEP], tmp_path / "sweep")
    with pytest.raises(InputError, match="is not empty"):
        plan_rerun(tmp_path / "sweep", target=spec, out=tmp_path, duration=1, repeat=1, verdict=True, seed=0)
    with pytest.raises(InputError, match="unknown target 'bogus'"):
        parsed_target("bogus")
    with pytest.raises(InputError, match="needs a device name"):
        parsed_target("verbs:")
    with pytest.raises(InputError, match="holds no rerun to resume"):
        plan_resumed_rerun(tmp_path / "bare", tmp_path / "o")
    assert not (tmp_path / "o").exists()


class _EngineBound(SimTarget):
    """The simulator, every rerun engine-bound (a verbs host whose engine cannot keep up with the sweep)."""

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        result = super().run(workload, duration, repetition=repetition)
        return result if workload.name.startswith("calibrate-") else dataclasses.replace(result, engine_bound=True)


def test_a_rerun_counts_its_engine_bound_runs(tmp_path: Path) -> None:
    summary = run_rerun(_plan(tmp_path, LATENCY), target=_EngineBound("cx6-200g", seed=3))
    bound = [t for t in _journal(tmp_path / "out") if t.result is not None and t.result.engine_bound]
    assert summary.engine_bound == len(bound) == summary.complete > 0
    assert all(t.phase is Phase.REPLAY and t.verdict is not None and not t.verdict.anomalous for t in bound)
