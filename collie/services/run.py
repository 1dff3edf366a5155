"""One experiment and its verdict: what ``collie run`` calls."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collie import calibrate
from collie.errors import TargetError
from collie.experiment import run_and_judge
from collie.model.collective import CollectiveResult, collective
from collie.model.workload import Workload
from collie.oracle import Oracle, Verdict
from collie.preset import DEFAULT_PRESET, load_preset
from collie.storage.records import TrialState
from collie.targets.base import RunResult, Unsupported
from collie.targets.kind import TargetSpec
from collie.targets.registry import open_target


@dataclass(frozen=True)
class WorkloadRun:
    """One experiment, judged.

    Attributes:
        workload: what ran.
        result: what the target measured.
        oracle: the oracle that judged it (None: not judged).
        verdict: its verdict on ``result`` (None: not judged).
        calibration: the calibration runs the oracle cost.
        collective: a pattern's figures (time, algbw, busbw, each rank and link); None for plain flows.
    """

    workload: Workload
    result: RunResult
    oracle: Oracle | None
    verdict: Verdict | None
    calibration: int
    collective: CollectiveResult | None = None


def run_workload(target_spec: TargetSpec, workload_file: Path, *, duration: float, seed: int, pace: float, judge: bool,
                 accept_new_host_keys: bool) -> WorkloadRun:
    """Run the workload of ``workload_file`` once for ``duration`` seconds on ``target_spec``; with ``judge``,
    judge it with an oracle calibrated first on the direction kinds it needs only (two runs per kind, each at
    most ``duration`` and :data:`~collie.calibrate.CALIBRATION_SECONDS`), with the default preset's thresholds.

    Raises:
        InputError: a bad workload file or inventory.
        TargetError: the target cannot be opened, or cannot run the workload or a calibration workload.
        TargetUnavailable: a remote target's hosts cannot be reached.
        Exception: what the target raised for a run that failed.
    """
    workload = Workload.load(workload_file)
    target = open_target(target_spec, seed=seed, pace=pace, accept_new_host_keys=accept_new_host_keys)
    with target:
        calibration = None
        if judge:
            try:
                calibration = calibrate.calibrate_target(target, load_preset(DEFAULT_PRESET).thresholds,
                                                         calibrate.kinds_of(workload),
                                                         min(duration, calibrate.CALIBRATION_SECONDS))
            except Unsupported as exc:
                raise TargetError(f"{target_spec} cannot run this workload: {exc}") from None
        oracle = calibration.oracle if calibration is not None else None
        experiment = run_and_judge(target, workload, duration, oracle)
    if experiment.state is TrialState.PRUNED:
        raise TargetError(f"{target_spec} cannot run this workload: {experiment.detail}") from None
    if experiment.error is not None:
        raise experiment.error
    result = experiment.result
    assert result is not None
    figures = collective(workload.pattern, result.flows) if workload.pattern is not None and result.flows else None
    return WorkloadRun(workload, result, oracle, experiment.verdict,
                       calibration.runs if calibration is not None else 0, figures)
