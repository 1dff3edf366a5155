"""The gate's decision and its JUnit XML, from real campaigns on the simulator and a target whose runs fail."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml, Skipped

from collie.gate import ExitCode, InfrastructureError, KnownStatus, Waiver, Waivers
from collie.gate.junit import write_junit
from collie.model.workload import Workload
from collie.services import open_gate, plan_gate
from collie.storage.case import TargetRecord
from collie.targets.registry import parse_target
from collie.targets.sim import SimTarget

ROOT = Path(__file__).resolve().parents[3]
TODAY = dt.date(2026, 6, 1)


class BrokenTarget(SimTarget):
    """A simulated target whose every run fails (a NIC that went away after it was opened)."""

    def run(self, workload: Workload, duration: float, *, repetition: int = 0) -> Any:
        raise OSError("ibv_post_send: No such device")


class FailsAfterCalibration(SimTarget):
    """Calibrates, then fails every other run (a device that breaks under real traffic)."""

    def run(self, workload: Workload, duration: float, *, repetition: int = 0) -> Any:
        if workload.name.startswith("calibrate-"):
            return super().run(workload, duration, repetition=repetition)
        raise RuntimeError("completion with error: IBV_WC_RETRY_EXC_ERR")


class EngineBoundAfterCalibration(SimTarget):
    """Calibrates, then says every run was engine-bound (a verbs host whose engine cannot keep up)."""

    def run(self, workload: Workload, duration: float, *, repetition: int = 0) -> Any:
        result = super().run(workload, duration, repetition=repetition)
        return result if workload.name.startswith("calibrate-") else dataclasses.replace(result, engine_bound=True)


def _gate(tmp_path: Path, target: SimTarget, spec: str, waivers: Waivers | None = None,
          names: tuple[str, ...] = ("f03-read-mtu1k", "h15-ud-many-qp"),
          recorded: dict[str, TargetRecord] | None = None) -> Any:
    """The gate on the cases ``names`` of workloads/corpus, those in ``recorded`` recorded on another target."""
    plan = plan_gate(parse_target(spec), ROOT / "workloads" / "corpus", budget=10, seed=0, preset="quick", space=None,
                     out=tmp_path / "c", listener=lambda event: None)
    picked = tuple(dataclasses.replace(c, target=(recorded or {}).get(c.name, c.target))
                   for c in plan.corpus if c.name in names)
    gate = open_gate(dataclasses.replace(plan, corpus=picked), waivers or Waivers(), TODAY, targets=[target])
    return gate.run()


def test_reproduced_fixed_and_waived(tmp_path: Path) -> None:
    waivers = Waivers((Waiver("pause@receiver", "ticket", dt.date(2026, 12, 31), case="f03-read-mtu1k"),
                       Waiver("pause@receiver", "old", dt.date(2025, 1, 1), case="h15-ud-many-qp")))
    # h15 is a Broadcom anomaly, not on ConnectX-6: recorded on ConnectX-6, it is fixed there
    result = _gate(tmp_path, SimTarget("cx6-200g"), "sim:cx6-200g", waivers,
                   recorded={"h15-ud-many-qp": TargetRecord("sim:cx6-200g")})
    status = {k.name: k for k in result.known}
    assert status["f03-read-mtu1k"].status is KnownStatus.WAIVED
    assert status["h15-ud-many-qp"].status is KnownStatus.FIXED
    assert status["h15-ud-many-qp"].expired is not None
    assert result.exit_code is (ExitCode.ANOMALIES if any(n.fails for n in result.new) else ExitCode.CLEAN)
    write_junit(result, tmp_path / "j.xml")
    xml = JUnitXml.fromfile(str(tmp_path / "j.xml"))
    known = next(s for s in xml if s.name == "collie.known")
    cases = {c.name: c for c in known}
    assert isinstance(cases["f03-read-mtu1k"].result[0], Skipped) and cases["h15-ud-many-qp"].is_passed
    assert "expired waiver" in cases["h15-ud-many-qp"].system_out
    new = next(s for s in xml if s.name == "collie.new")
    assert [c.name for c in new] == [n.anomaly_id for n in result.new]
    assert all(isinstance(c.result[0], Failure) for c in new)
    assert xml.tests == len(result.known) + len(result.new)
    assert result.engine_bound == 0 and "engine" not in result.verdict() and result.to_dict()["engine_bound"] == 0
    assert all({p.name: p.value for p in suite.properties()}["engine_bound"] == "0" for suite in xml)


def test_a_case_recorded_on_another_target_decides_nothing(tmp_path: Path) -> None:
    cx6 = SimTarget("cx6-200g")
    with cx6:
        info = cx6.describe()
    upgraded = TargetRecord("sim:cx6-200g", dataclasses.replace(info, firmware="20.28.1002"))
    other_nic = TargetRecord("sim:cx6-200g", dataclasses.replace(info, nic_model="NVIDIA ConnectX-5"))
    waivers = Waivers((Waiver("pause@receiver", "old", dt.date(2025, 1, 1), case="h15-ud-many-qp"),))
    result = _gate(tmp_path, cx6, "sim:cx6-200g", waivers,
                   names=("f03-read-mtu1k", "f05-rc-send-batch", "f09-bi-sge-mix-noro", "h15-ud-many-qp"),
                   recorded={"f03-read-mtu1k": upgraded, "f05-rc-send-batch": other_nic})
    known = {k.name: k for k in result.known}
    # another firmware is the same target, changed: f03 is judged (and still reproduces), the difference named
    assert known["f03-read-mtu1k"].status is KnownStatus.REPRODUCES
    assert known["f03-read-mtu1k"].differences == ("firmware 20.28.1002 -> 20.31.1014",)
    assert known["f03-read-mtu1k"].target_note == "the target differs from the recorded one: firmware 20.28.1002 " \
                                                  "-> 20.31.1014"
    # another NIC under the same spec, another spec with the same NIC, another spec and NIC: recorded elsewhere
    assert known["f05-rc-send-batch"].target_note == ("recorded on sim:cx6-200g (NVIDIA ConnectX-5), run on "
                                                      f"sim:cx6-200g ({info.nic_model})")
    assert known["f09-bi-sge-mix-noro"].target_note == "recorded on sim:cx6-200g-amd, run on sim:cx6-200g"
    assert known["h15-ud-many-qp"].target_note.startswith("recorded on sim:p2100g-100g (Broadcom")
    for name in ("f05-rc-send-batch", "f09-bi-sge-mix-noro", "h15-ud-many-qp"):
        assert known[name].status is KnownStatus.OTHER_TARGET and not known[name].fails
    assert known["f05-rc-send-batch"].signature  # it reproduces on the other NIC, and still fails nothing
    assert sum(k.fails for k in result.known) == 1
    assert "1 known case still reproduces" in result.verdict()
    assert "3 recorded on another target, of 4 known" in result.verdict()


def test_every_run_failing_is_an_infrastructure_failure(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match="failed while the gate ran: OSError: ibv_post_send"):
        _gate(tmp_path, BrokenTarget("cx6-200g"), "sim:cx6-200g")


def test_replays_and_search_all_failing_is_an_infrastructure_failure(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match=r"every run failed on sim:cx6-200g .*IBV_WC_RETRY_EXC_ERR"):
        _gate(tmp_path, FailsAfterCalibration("cx6-200g"), "sim:cx6-200g")


def test_the_gate_counts_the_runs_its_engine_limited(tmp_path: Path) -> None:
    result = _gate(tmp_path, EngineBoundAfterCalibration("cx6-200g"), "sim:cx6-200g")
    ran = [row for row in _rows(tmp_path / "c") if "result" in row]
    bound = [row for row in ran if row["result"]["engine_bound"]]
    # every replay and search run, and no calibration run
    assert result.engine_bound == len(bound) == sum(row["phase"] != "calibrate" for row in ran) > 10
    assert not result.new  # nothing engine-bound is judged, so nothing is found
    # a replay that was not judged shows nothing fixed: not run, and why
    assert [(k.status, k.reason) for k in result.known] == \
        [(KnownStatus.NOT_RUN, "the oracle did not judge its run (engine-bound run)")] * 2
    assert result.verdict().endswith(f"; {result.engine_bound} engine-bound runs not judged")
    assert result.to_dict()["engine_bound"] == result.engine_bound
    write_junit(result, tmp_path / "j.xml")
    for suite in JUnitXml.fromfile(str(tmp_path / "j.xml")):
        assert {p.name: p.value for p in suite.properties()}["engine_bound"] == str(result.engine_bound)


def _rows(folder: Path) -> list[dict[str, Any]]:
    """The last row of each trial of the journal in ``folder``."""
    last = {}
    for line in (folder / "trials.jsonl").read_text().splitlines():
        row = json.loads(line)
        last[row["trial"]] = row
    return list(last.values())
