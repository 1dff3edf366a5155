"""The services the CLI calls, through the library on the simulator: one experiment judged, a case replayed and
minimized on the target it was found on, a campaign planned, opened and resumed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from collie import calibrate
from collie.errors import InputError, TargetError, TargetUnavailable
from collie.events import PhaseStarted, TrialFinished, TrialStarted, Warned
from collie.experiment import run_and_judge
from collie.model.space import load_space
from collie.model.workload import Workload
from collie.preset import load_preset
from collie.services import (
    Note,
    ResumeOptions,
    ServiceEvent,
    case_oracle,
    check_new_folder,
    locate_case,
    minimize_case,
    open_campaign,
    plan_campaign,
    plan_minimize,
    plan_resumed_campaign,
    replay_case,
    run_workload,
    save_minimized,
)
from collie.storage.corpus import load_case
from collie.storage.records import TrialState
from collie.targets.base import RunResult, Unsupported
from collie.targets.registry import parse_target
from collie.targets.sim import SimTarget

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "workloads" / "examples"
CASES = ROOT / "tests" / "fixtures" / "cases"
THRESHOLDS = load_preset("collie").thresholds


class Refusing(SimTarget):
    """A simulator that raises ``error`` for every workload but calibration's."""

    def __init__(self, error: Exception) -> None:
        super().__init__("cx6-200g")
        self.error = error

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        if workload.name.startswith("calibrate-"):
            return super().run(workload, duration, repetition=repetition)
        raise self.error


class Heard(list[ServiceEvent]):
    """A listener that keeps every event."""

    def __call__(self, event: ServiceEvent) -> None:
        self.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self if isinstance(e, kind)]


# -- one experiment -----------------------------------------------------------------------------------------


def test_run_and_judge_completes_prunes_fails_and_passes_the_unreachable_on() -> None:
    workload = Workload.load(EXAMPLES / "rc-write-64k.toml")
    with SimTarget("cx6-200g", seed=1) as target:
        oracle = calibrate.calibrate_target(target, THRESHOLDS, calibrate.kinds_of(workload)).oracle
        done = run_and_judge(target, workload, 1.0, oracle, repetition=0)
        again = run_and_judge(target, workload, 1.0, oracle, repetition=0)
        unjudged = run_and_judge(target, workload, 1.0, None, repetition=0)
    assert done.state is TrialState.COMPLETE and done.verdict is not None and done.reason == ""
    assert again == done  # the repetition, not the call, draws the simulator's noise
    assert unjudged.verdict is None and unjudged.result == done.result
    with Refusing(Unsupported("qps 20000 > device max_qp 16384")) as target:
        pruned = run_and_judge(target, workload, 1.0, oracle)
    assert (pruned.state, pruned.reason, pruned.detail) == (
        TrialState.PRUNED, "unsupported: qps 20000 > device max_qp 16384", "qps 20000 > device max_qp 16384")
    with Refusing(OSError("ibv_post_send: No such device")) as target:
        failed = run_and_judge(target, workload, 1.0, oracle)
    assert failed.state is TrialState.FAILED and failed.reason == "OSError: ibv_post_send: No such device"
    assert isinstance(failed.error, OSError) and failed.result is None and failed.verdict is None
    with Refusing(TargetUnavailable("every host is gone")) as target, pytest.raises(TargetUnavailable):
        run_and_judge(target, workload, 1.0, oracle)


def test_calibrating_some_direction_kinds_costs_three_runs_each_two_for_one_qp_and_one_for_atomics() -> None:
    with SimTarget("cx6-200g") as target:
        some = calibrate.calibrate_target(target, THRESHOLDS, ("oneway",), seconds=0.5)
        every = calibrate.calibrate_target(target, THRESHOLDS)
    assert some.runs == 6 and set(some.oracle.ceilings.wire_bps) == set(some.oracle.ceilings.read_rtt_us) == {"oneway"}
    assert some.oracle.ceilings.atomic_ops > 0 and some.oracle.ceilings.qp_wr_us > 0
    assert every.runs == 3 * len(calibrate.DIRECTION_KINDS) + 3


def test_run_workload_judges_with_an_oracle_calibrated_for_its_kinds_only() -> None:
    ran = run_workload(parse_target("sim"), EXAMPLES / "rc-write-64k.toml", duration=1.0, seed=0, pace=0.0,
                       judge=True, accept_new_host_keys=False)
    assert ran.verdict is not None and ran.oracle is not None
    assert ran.calibration == len(calibrate.calibration_workloads(calibrate.kinds_of(ran.workload)))
    bare = run_workload(parse_target("sim"), EXAMPLES / "rc-write-64k.toml", duration=1.0, seed=0, pace=0.0,
                        judge=False, accept_new_host_keys=False)
    assert (bare.verdict, bare.oracle, bare.calibration) == (None, None, 0)


def test_an_isolation_workload_is_judged_against_its_victim_run_alone_once() -> None:
    class Counting(SimTarget):
        def __init__(self) -> None:
            super().__init__("cx6-200g-amd", seed=1)
            self.keys: list[str] = []

        def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
            self.keys.append(workload.key())
            return super().run(workload, duration, repetition=repetition)

    workload = Workload.load(EXAMPLES / "aggressor-victim.toml")
    with Counting() as target:
        oracle = calibrate.calibrate_target(target, THRESHOLDS, calibrate.kinds_of(workload)).oracle
        first = run_and_judge(target, workload, 1.0, oracle)
        second = run_and_judge(target, workload, 1.0, oracle)
    solo = workload.solo().key()
    assert target.keys.count(solo) == 1 and target.keys[-3:] == [solo, workload.key(), workload.key()]
    assert set(oracle.solos) == {solo}
    for e in (first, second):
        assert e.verdict is not None and e.verdict.signature == "isolation@victim"
    ran = run_workload(parse_target("sim:cx6-200g-amd"), EXAMPLES / "aggressor-victim.toml", duration=1.0, seed=0,
                       pace=0.0, judge=True, accept_new_host_keys=False)
    assert ran.verdict is not None and ran.verdict.leading == "isolation@victim"


# -- a saved case ------------------------------------------------------------------------------------------


def test_a_workload_file_runs_on_the_default_target_with_a_warning_and_a_bare_case_folder_needs_one(
        tmp_path: Path) -> None:
    heard = Heard()
    located = locate_case(EXAMPLES / "rc-write-64k.toml", None, heard)
    assert located.spec == "sim" and located.recorded is None and not located.given
    assert [w.message for w in heard.of(Warned)] == [
        f"{EXAMPLES / 'rc-write-64k.toml'} is a workload file, which records no target; running it on the default "
        "target sim (give --target to choose)"]
    folder = tmp_path / "A003"
    shutil.copytree(CASES / "v1-campaign" / "anomalies" / "A003-pause", folder)  # outside its campaign
    with pytest.raises(InputError, match="does not record the target it was found on"):
        locate_case(folder, None, heard)
    assert locate_case(folder, parse_target("sim:cx6-200g"), heard).given


def test_replay_runs_where_the_case_was_found_and_says_so() -> None:
    heard = Heard()
    located = locate_case(CASES / "v2-A003-pause", None, heard)
    replayed = replay_case(located, runs=3, duration=1.0, seed=0, accept_new_host_keys=False, listener=heard)
    assert located.spec == "sim:cx6-200g-amd" and located.recorded is not None
    assert [n.text for n in heard.of(Note)] == [f"{CASES / 'v2-A003-pause'} was found on sim:cx6-200g-amd; "
                                                "running it there"]
    assert [p.phase for p in heard.of(PhaseStarted)] == ["calibrate", "replay"]
    assert [e.trial for e in heard.of(TrialStarted)] == [1, 2, 3]
    assert [e.verdict for e in heard.of(TrialFinished)] == list(replayed.verdicts)
    assert replayed.reproduced and replayed.hits == 3
    assert all("pause" in v.signature for v in replayed.verdicts)


def test_a_case_the_target_cannot_run_is_an_error_never_a_pass() -> None:
    located = locate_case(CASES / "v2-A003-pause", parse_target("verbs:nosuchdevice0"), Heard())
    with pytest.raises(TargetError):
        replay_case(located, runs=1, duration=1.0, seed=0, accept_new_host_keys=False, listener=Heard())


def test_a_case_in_its_campaign_is_judged_with_the_campaigns_ceilings(tmp_path: Path) -> None:
    case = CASES / "v1-campaign" / "anomalies" / "A003-pause"
    located = locate_case(case, None, Heard())
    assert located.spec == "sim:cx6-200g-amd" and located.recorded is not None
    assert located.recorded.source == "its campaign"
    with SimTarget("cx6-200g-amd") as target:
        recorded = case_oracle(located, target, THRESHOLDS)
        elsewhere = case_oracle(locate_case(case, parse_target("sim:cx6-200g-amd-other"), Heard()), target, THRESHOLDS)
    assert recorded.runs == 0 and recorded.oracle.ceilings.wire_bps
    assert elsewhere.runs == len(calibrate.calibration_workloads())  # another spec: calibrated afresh


def test_minimize_finds_the_mfs_and_saves_a_case_that_knows_its_target(tmp_path: Path) -> None:
    heard = Heard()
    out = tmp_path / "saved" / "ud-batch"
    check_new_folder(out)
    plan = plan_minimize(EXAMPLES / "ud-send-batch64.toml", None, None, "quick", heard)
    minimized = minimize_case(plan, seed=0, accept_new_host_keys=False, listener=heard)
    mfs = minimized.result.mfs.describe()
    assert "transport == UD" in mfs and minimized.verdict.anomalous
    assert minimized.calibration == len(calibrate.calibration_workloads())
    assert [p.phase for p in heard.of(PhaseStarted)] == ["calibrate", "minimize"]
    assert len(heard.of(TrialFinished)) == len(heard.of(TrialStarted)) >= minimized.result.experiments
    # each probe shows the point that ran, made legal, not the one asked (a READ's inline, an MR too small)
    assert all(plan.space.legal_point(e.point, plan.space.build(e.point)) == e.point for e in heard.of(TrialStarted))
    save_minimized(minimized, out)
    saved = load_case(out)
    assert saved.record.target is not None and saved.record.target.spec == "sim"
    assert saved.record.mfs == minimized.result.mfs and saved.record.minimized_from == str(plan.located.case.path)
    with pytest.raises(InputError, match=r"ud-batch is not empty \(it holds case.toml, evidence.json, mfs.json\)"):
        check_new_folder(out)


def test_a_case_found_in_the_papers_space_minimizes_in_the_default_space() -> None:
    """A corpus case's original point names only the paper's dimensions (no mix, receive side nor churn): the
    minimizer starts from it completed by what its workload has, rather than a KeyError on 'mix'."""
    case = ROOT / "workloads" / "corpus" / "f05-rc-send-batch"
    plan = plan_minimize(case, None, None, "quick", Heard())
    original = load_case(case).record.original
    assert original is not None and "mix" not in original.point and plan.point == dict(original.point)
    minimized = minimize_case(plan, seed=0, accept_new_host_keys=False, listener=Heard())
    assert "transport == RC" in minimized.result.mfs.describe()
    assert set(minimized.result.point) == set(plan.space.names) and minimized.result.point["qp_churn"] == 0


def test_a_case_minimizes_in_the_space_its_campaign_searched_unless_space_is_given(tmp_path: Path) -> None:
    campaign = tmp_path / "campaign"
    shutil.copytree(CASES / "v1-campaign", campaign)
    config = campaign / "campaign.toml"
    paper = ROOT / "workloads" / "paper.toml"
    config.write_text(config.read_text().replace('space = ""', f'space = "{paper}"'))
    case = campaign / "anomalies" / "A003-pause"
    heard = Heard()
    assert plan_minimize(case, None, None, "quick", heard).space.names == load_space(paper).names
    assert [n.text for n in heard.of(Note)] == [f"minimizing {case} in the space its campaign searched, {paper} "
                                                "(give --space for another)"]
    default = ROOT / "workloads" / "default.toml"
    assert plan_minimize(case, None, default, "quick", Heard()).space.names == load_space(None).names
    config.write_text(config.read_text().replace(str(paper), str(tmp_path / "moved.toml")))
    with pytest.raises(InputError, match=r"A003-pause was found in the space .*moved.toml \(as its campaign "
                                         r"records\), which cannot be read: .*; give --space"):
        plan_minimize(case, None, None, "quick", Heard())


def test_a_case_saved_by_minimize_out_records_its_space_and_minimizes_in_it_again(tmp_path: Path) -> None:
    paper = ROOT / "workloads" / "paper.toml"
    plan = plan_minimize(EXAMPLES / "ud-send-batch64.toml", None, paper, "quick", Heard())
    assert plan.space_file == str(paper.resolve())
    out = tmp_path / "ud-batch"
    save_minimized(minimize_case(plan, seed=0, accept_new_host_keys=False, listener=Heard()), out)
    assert load_case(out).record.space == str(paper.resolve())
    heard = Heard()
    again = plan_minimize(out, None, None, "quick", heard)
    assert again.space.names == load_space(paper).names and again.space_file == str(paper.resolve())
    assert [n.text for n in heard.of(Note)] == [f"minimizing {out} in the space its case folder records, "
                                                f"{paper.resolve()} (give --space for another)"]
    # a case minimized in the default space records none, and minimizes in the default space again
    plan = plan_minimize(EXAMPLES / "ud-send-batch64.toml", None, None, "quick", Heard())
    save_minimized(minimize_case(plan, seed=0, accept_new_host_keys=False, listener=Heard()), tmp_path / "d")
    assert load_case(tmp_path / "d").record.space == "" and "space" not in \
        json.loads((tmp_path / "d" / "evidence.json").read_text())


def test_a_clean_case_has_nothing_to_minimize() -> None:
    plan = plan_minimize(EXAMPLES / "rc-write-64k.toml", None, None, "quick", Heard())
    with pytest.raises(InputError, match="is not anomalous on sim: nothing to minimize"):
        minimize_case(plan, seed=0, accept_new_host_keys=False, listener=Heard())


# -- campaigns ---------------------------------------------------------------------------------------------


def test_a_campaign_is_planned_without_writing_opened_run_and_resumed_after_a_crash(tmp_path: Path) -> None:
    out = tmp_path / "c"
    heard = Heard()
    plan = plan_campaign(target=parse_target("sim"), seed=2, preset="quick", budget=30, out=out, listener=heard)
    assert not out.exists() and plan.config.budget == 30 and not plan.resume
    summary = open_campaign(plan, listener=heard).run()
    assert summary.experiments == 30 and (out / "trials.jsonl").is_file()
    journal = (out / "trials.jsonl").read_bytes()
    (out / "trials.jsonl").write_bytes(journal[:-20])  # a crash while the last record was written
    with pytest.raises(InputError, match="--seed"):
        plan_resumed_campaign(out, ResumeOptions(seed=3), heard)
    resumed = plan_resumed_campaign(out, ResumeOptions(budget=40), heard)
    assert resumed.resume and resumed.config.earlier_budgets == (30,)
    assert (out / "trials.jsonl").read_bytes() == journal[:-20]  # planning repairs nothing
    again = Heard()
    campaign = open_campaign(resumed, listener=again)
    warnings = [w.message for w in again.of(Warned)]
    assert len(warnings) == 1 and "is truncated" in warnings[0]
    # cut off: the torn record, and the RUNNING row of its trial before it (the trial runs again)
    assert (out / "trials.jsonl").read_bytes() == b"".join(journal.splitlines(keepends=True)[:-2])
    assert campaign.run().experiments == 40


def test_parallel_chains_need_a_remote_target(tmp_path: Path) -> None:
    plan = plan_campaign(target=parse_target("sim"), seed=0, preset="quick", budget=10, parallel=2, out=tmp_path / "c",
                         listener=Heard())
    with pytest.raises(InputError, match="--parallel 2 needs a remote target"):
        open_campaign(plan)
    with pytest.raises(InputError, match="--resume needs --out"):
        plan_resumed_campaign(None, ResumeOptions(), Heard())
