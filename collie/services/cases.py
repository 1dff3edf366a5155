"""Saved cases re-checked and shrunk on a target: what ``collie replay`` and ``collie minimize`` call.

A case runs on the target it was found on (its record's, or its campaign's for an older case folder) unless the
caller names another; a recorded target that cannot be opened is an error, never a pass. A bare workload file
records no target: it runs on the default target with a warning. Judging a re-run takes its campaign's ceilings
when the case sits in a campaign folder made on the same target, otherwise a fresh calibration.

Every experiment is :func:`~collie.experiment.run_and_judge`'s; a failed one raises the target's own error
again (an interactive command stops there), a pruned one is a :class:`~collie.errors.TargetError` for a replay
and an unusable probe for a minimization.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from collie import calibrate
from collie.campaign.runlog import RunLog
from collie.errors import CollieError, InputError, TargetError, TargetUnavailable
from collie.events import PhaseStarted, TrialFinished, TrialStarted, Warned, counted
from collie.experiment import Experiment, run_and_judge
from collie.minimize import Minimizer, MinimizeResult, MinimizeSettings
from collie.model.space import SearchSpace, load_space
from collie.model.workload import Workload
from collie.oracle import Thresholds, Verdict
from collie.preset import DEFAULT_PRESET, Preset, load_preset
from collie.services.events import Note, ServiceListener
from collie.storage.case import (
    EVIDENCE_FILE,
    CaseEvidence,
    CaseRecord,
    OriginalFind,
    TargetRecord,
    write_case_folder,
)
from collie.storage.corpus import Case, RecordedTarget, campaign_config, load_case, recorded_target
from collie.storage.records import TrialState
from collie.targets.base import Target, TargetInfo
from collie.targets.kind import TargetSpec
from collie.targets.registry import DEFAULT_TARGET, open_target, parse_target

_CALIBRATE_DETAIL = "the target's ceilings (its campaign's, when the case ran there)"


@dataclass(frozen=True)
class LocatedCase:
    """A case read from disk and the target it is to run on.

    Attributes:
        case: the case.
        spec: the target spec it runs on.
        recorded: where it was found (None: nothing records it).
        given: ``spec`` was named by the caller (``--target``), not taken from the record.
    """

    case: Case
    spec: str
    recorded: RecordedTarget | None
    given: bool


def locate_case(path: Path, target_spec: TargetSpec | None, listener: ServiceListener) -> LocatedCase:
    """Read the case at ``path`` and choose its target: ``target_spec`` if given, else the recorded one, else
    (a bare workload file) the default target, with a warning.

    Raises:
        InputError: a damaged case, or a case folder that records no target and no ``target_spec``.
    """
    return _locate(load_case(path), target_spec, listener)


def _locate(case: Case, given: TargetSpec | None, listener: ServiceListener) -> LocatedCase:
    recorded = recorded_target(case)
    if given is not None:
        return LocatedCase(case, str(given), recorded, True)
    if recorded is not None:
        return LocatedCase(case, recorded.target.spec, recorded, False)
    if case.path.is_dir():
        raise InputError(f"{case.path} does not record the target it was found on (a case folder from an older "
                         f"collie, outside its campaign); give --target, e.g. --target {DEFAULT_TARGET}")
    listener(Warned(f"{case.path} is a workload file, which records no target; running it on the default "
                     f"target {DEFAULT_TARGET} (give --target to choose)"))
    return LocatedCase(case, DEFAULT_TARGET, None, False)


@contextmanager
def _entered(located: LocatedCase, seed: int, accept_new_host_keys: bool,
             listener: ServiceListener) -> Iterator[tuple[Target, TargetInfo]]:
    """Open and enter the case's target; a :class:`Note` says how it differs from where the case was found. A
    target taken from the record that cannot be parsed or opened is one sentence saying so.

    Raises:
        TargetError: the target cannot be opened.
        TargetUnavailable: a remote target's hosts cannot be reached.
    """
    case, spec, recorded = located.case, located.spec, located.recorded
    try:
        target = open_target(parse_target(spec), seed=seed, accept_new_host_keys=accept_new_host_keys)
        target.__enter__()
    except TargetUnavailable:  # remote hosts that cannot be reached: their own sentence, exit 3
        raise
    except Exception as exc:  # any failure to open is one sentence, never a traceback
        why = str(exc) if isinstance(exc, CollieError) else f"{type(exc).__name__}: {exc}"
        if recorded is not None and not located.given:
            raise TargetError(f"{case.path} was found on {spec} (as {recorded.source} records), which cannot be "
                              f"opened here: {why}; give --target to run it on another target") from None
        if isinstance(exc, CollieError):
            raise
        raise TargetError(f"the target {spec} cannot be opened: {why}") from None
    try:
        info = target.describe()
        if recorded is not None:
            listener(Note(_differences(located, recorded, info)))
        yield target, info
    finally:
        target.__exit__(None, None, None)


def _differences(located: LocatedCase, recorded: RecordedTarget, info: TargetInfo) -> str:
    spec = located.spec
    diffs = recorded.target.differences(spec, info)
    found = f"{located.case.path} was found on {recorded.target.spec}"
    if not diffs:
        return f"{found}; running it there"
    if located.given and spec != recorded.target.spec:
        return f"note: {found}; running it on {spec} instead, which differs: {', '.join(diffs)}"
    return f"warning: {found}, and the target differs from the one it was found on: {', '.join(diffs)}"


def case_oracle(located: LocatedCase, target: Target, thresholds: Thresholds) -> calibrate.Calibration:
    """An oracle for re-running the case on the entered ``target``: its campaign's ceilings when the case sits in
    a campaign folder calibrated on the same target spec, else a fresh calibration of every direction kind.

    Raises:
        InputError: the campaign.toml whose ceilings it takes is damaged.
        Unsupported: the target cannot run a calibration workload.
    """
    config = campaign_config(located.case)
    if config is not None and config.target == located.spec and config.ceilings is not None:
        return calibrate.recorded_oracle(target.describe(), config.ceilings, config.baseline or {}, thresholds)
    return calibrate.calibrate_target(target, thresholds)


def _complete(experiment: Experiment) -> Experiment:
    """``experiment`` if it ran; a failed one raises the target's error again (an interactive command stops)."""
    if experiment.state is TrialState.FAILED and experiment.error is not None:
        raise experiment.error
    return experiment


# -- replay ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A case re-run.

    Attributes:
        located: the case and the target it ran on.
        verdicts: the oracle's verdict on each run, in order.
    """

    located: LocatedCase
    verdicts: tuple[Verdict, ...]

    @property
    def hits(self) -> int:
        """The anomalous runs."""
        return sum(v.anomalous for v in self.verdicts)

    @property
    def reproduced(self) -> bool:
        """Anomalous in more than half the runs."""
        return self.hits * 2 > len(self.verdicts)


def replay_case(located: LocatedCase, *, runs: int, duration: float, seed: int, accept_new_host_keys: bool,
                listener: ServiceListener) -> Replay:
    """Run the case ``runs`` times for ``duration`` seconds on its target and judge each run (the oracle of
    :func:`case_oracle`, with the default preset's thresholds).

    Raises:
        TargetError: the target cannot be opened, or cannot run the case.
        TargetUnavailable: a remote target's hosts cannot be reached.
        Exception: what the target raised for a run that failed.
    """
    case, spec = located.case, located.spec
    verdicts: list[Verdict] = []
    with _entered(located, seed, accept_new_host_keys, listener) as (target, _):
        listener(PhaseStarted("calibrate", _CALIBRATE_DETAIL))
        oracle = case_oracle(located, target, load_preset(DEFAULT_PRESET).thresholds).oracle
        listener(PhaseStarted("replay", f"{counted(runs, 'run')} of {duration:g} s"))
        for i in range(runs):
            listener(TrialStarted(i + 1, "replay", {}))
            experiment = _complete(run_and_judge(target, case.workload, duration, oracle))
            if experiment.state is TrialState.PRUNED:
                raise TargetError(f"{spec} cannot run this case: {experiment.detail}") from None
            assert experiment.verdict is not None
            listener(TrialFinished(i + 1, "replay", TrialState.COMPLETE, i + 1, {}, experiment.verdict,
                                   experiment.result))
            verdicts.append(experiment.verdict)
    return Replay(located, tuple(verdicts))


# -- minimize --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MinimizePlan:
    """A minimization checked and ready to run.

    Attributes:
        located: the case and the target it runs on.
        preset: thresholds, minimization settings and the duration of each experiment.
        space: the search space the case is a point of.
        point: where minimizing starts (the original find's point if the case records one, else its own).
        space_file: the file ``space`` was read from (absolute; ``""``: the default space).
    """

    located: LocatedCase
    preset: Preset
    space: SearchSpace
    point: dict[str, Any]
    space_file: str = ""


def plan_minimize(path: Path, target_spec: TargetSpec | None, space_file: Path | None, preset: str,
                  listener: ServiceListener) -> MinimizePlan:
    """Read and check everything a minimization needs, in the order a user fixes it: the case, the preset, the
    space, the start point, the target.

    The space is ``space_file`` if given, else the one the case folder records (``collie minimize --out``), else
    the one the case's campaign searched (its ``campaign.toml``), else the default space; a :class:`Note` names a
    recorded space.

    Raises:
        InputError: a damaged case, preset or space, a recorded space file that cannot be read, a recorded point
            that is not a legal point of the space, or a case folder that records no target and no ``target_spec``.
    """
    case = load_case(path)
    chosen = load_preset(preset)
    if space_file is not None:
        space, file = load_space(space_file), str(space_file.resolve())
    else:
        space, file = _recorded_space(case, listener)
    point = _start_point(case, space)
    return MinimizePlan(_locate(case, target_spec, listener), chosen, space, point, file)


def _recorded_space(case: Case, listener: ServiceListener) -> tuple[SearchSpace, str]:
    """The space ``case``'s folder records, else the one the campaign holding it searched, else the default
    space; and its file (``""``: the default space).

    Raises:
        InputError: the recorded space file cannot be read (one sentence naming it and what to do).
    """
    config = campaign_config(case)
    file, whose, did = (case.record.space, "its case folder", "records") if case.record.space else \
        (config.space if config is not None else "", "its campaign", "searched")
    if not file:
        return load_space(None), ""
    try:
        space = load_space(file)
    except InputError as exc:
        raise InputError(f"{case.path} was found in the space {file} (as {whose} records), which cannot be read: "
                         f"{exc}; give --space to minimize it in another space") from None
    listener(Note(f"minimizing {case.path} in the space {whose} {did}, {file} (give --space for another)"))
    return space, file


def _start_point(case: Case, space: SearchSpace) -> dict[str, Any]:
    """Where minimizing starts: the original find's point if the case records one, else the case's own.

    Raises:
        InputError: a recorded point that is not a legal point of ``space`` (naming the file and the field).
    """
    original = case.record.original
    if original is None:
        return dict(space.point_of(case.workload))
    point = dict(original.point)
    problems = space.problems(point)
    if problems:
        field = "original.point" if case.record.format >= 2 else "original_point"
        raise InputError(f"{case.path / EVIDENCE_FILE}: {field}: {problems[0][1]}")
    return point


@dataclass(frozen=True)
class Minimized:
    """A minimized case.

    Attributes:
        plan: what was minimized where.
        info: the fingerprint of the target it ran on.
        verdict: the verdict on the start point (anomalous).
        result: the MFS, the simplest point, whether it was confirmed, the cost.
        simplest: the workload of the simplest point.
        calibration: the calibration runs the oracle cost (0: its campaign's ceilings).
        evidence: what the simplest point's own runs showed (None: it never ran on its own).
    """

    plan: MinimizePlan
    info: TargetInfo
    verdict: Verdict
    result: MinimizeResult
    simplest: Workload
    calibration: int
    evidence: CaseEvidence | None

    @property
    def signature(self) -> str:
        return self.verdict.signature


def minimize_case(plan: MinimizePlan, *, seed: int, accept_new_host_keys: bool,
                  listener: ServiceListener) -> Minimized:
    """Find the minimal feature set and the simplest case of the planned case on its target.

    Raises:
        InputError: the case is not anomalous on the target.
        TargetError: the target cannot be opened.
        TargetUnavailable: a remote target's hosts cannot be reached.
        Exception: what the target raised for a run that failed.
    """
    located, chosen, space = plan.located, plan.preset, plan.space
    log = RunLog()
    with _entered(located, seed, accept_new_host_keys, listener) as (target, info):
        listener(PhaseStarted("calibrate", _CALIBRATE_DETAIL))
        calibration = case_oracle(located, target, chosen.thresholds)
        listener(PhaseStarted("minimize", f"preset {chosen.name}, {chosen.duration:g} s per experiment"))
        spent = 0

        def run(p: Mapping[str, Any]) -> Verdict | None:
            nonlocal spent
            w = space.build(p)
            ran = space.legal_point(p, w)
            spent += 1
            listener(TrialStarted(spent, "minimize", ran))
            experiment = _complete(run_and_judge(target, w, chosen.duration, calibration.oracle))
            listener(TrialFinished(spent, "minimize", experiment.state, spent, ran, experiment.verdict,
                                   experiment.result, experiment.detail))
            return experiment.verdict

        probe = log.watch(run)
        verdict = probe(plan.point)
        if verdict is None or not verdict.anomalous:
            raise InputError(f"{located.case.path} is not anomalous on {located.spec}: nothing to minimize")
        result = Minimizer(space, probe, chosen.minimize or MinimizeSettings()).run(plan.point, verdict)
    return Minimized(plan, info, verdict, result, space.build(result.point), calibration.runs,
                     log.evidence(result.point, verdict.leading))


def save_minimized(minimized: Minimized, out_dir: Path) -> None:
    """Save a minimized case as the case folder ``out_dir`` (its name is the case's id).

    Raises:
        InputError: the folder could not be written.
    """
    plan, verdict, result = minimized.plan, minimized.verdict, minimized.result
    named = replace(minimized.simplest, name=out_dir.name,
                    description=f"{verdict.signature}; MFS: {result.mfs.describe()}")
    record = CaseRecord(
        anomaly_id=out_dir.name, signature=verdict.signature, confirmed=result.confirmed, workload=named,
        mfs=result.mfs, target=TargetRecord(plan.located.spec, minimized.info), evidence=minimized.evidence,
        original=OriginalFind(dict(plan.point), verdict), minimize_experiments=result.experiments,
        minimize_steps=len(result.steps), minimized_from=str(plan.located.case.path), space=plan.space_file)
    try:
        write_case_folder(out_dir, record)
    except OSError as exc:
        raise InputError(f"the result above could not be saved to {out_dir}: {exc.strerror or exc}") from None
