"""The gate's decision and its JUnit XML, from real campaigns on the simulator and a target whose runs fail."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml, Skipped

from collie.gate import ExitCode, InfrastructureError, KnownStatus, Waiver, Waivers
from collie.gate.junit import write_junit
from collie.model.workload import Workload
from collie.services import open_gate, plan_gate
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


def _gate(tmp_path: Path, target: SimTarget, spec: str, waivers: Waivers | None = None) -> Any:
    plan = plan_gate(parse_target(spec), ROOT / "workloads" / "corpus", budget=10, seed=0, preset="quick", space=None,
                     out=tmp_path / "c", listener=lambda event: None)
    picked = tuple(c for c in plan.corpus if c.name in ("f03-read-mtu1k", "h15-ud-many-qp"))
    gate = open_gate(dataclasses.replace(plan, corpus=picked), waivers or Waivers(), TODAY, targets=[target])
    return gate.run()


def test_reproduced_fixed_and_waived(tmp_path: Path) -> None:
    waivers = Waivers((Waiver("pause@receiver", "ticket", dt.date(2026, 12, 31), case="f03-read-mtu1k"),
                       Waiver("pause@receiver", "old", dt.date(2025, 1, 1), case="h15-ud-many-qp")))
    result = _gate(tmp_path, SimTarget("cx6-200g"), "sim:cx6-200g", waivers)
    status = {k.name: k for k in result.known}
    assert status["f03-read-mtu1k"].status is KnownStatus.WAIVED
    assert status["h15-ud-many-qp"].status is KnownStatus.FIXED  # a Broadcom anomaly: not on ConnectX-6
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


def test_every_run_failing_is_an_infrastructure_failure(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match="failed while the gate ran: OSError: ibv_post_send"):
        _gate(tmp_path, BrokenTarget("cx6-200g"), "sim:cx6-200g")


def test_replays_and_search_all_failing_is_an_infrastructure_failure(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match=r"every run failed on sim:cx6-200g .*IBV_WC_RETRY_EXC_ERR"):
        _gate(tmp_path, FailsAfterCalibration("cx6-200g"), "sim:cx6-200g")
