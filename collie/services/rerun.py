"""An import's perftest rows run again by collie: what ``collie import rerun`` calls.

Each perftest row of an import folder (:mod:`collie.storage.imports`) is the workload its run's header states
(:func:`~collie.importers.shape.measured`); a rerun runs each distinct workload ``repeat`` times on a target, as a
campaign folder that ``collie report`` renders and ``collie report --compare IMPORT RERUN`` sets beside the import.
It is assembled from the campaign's parts, not a storage of its own: a :class:`~collie.storage.campaign.
CampaignStore` (journal fsynced per record), a :class:`~collie.campaign.runner.TrialRunner` (each run a numbered
trial, journaled RUNNING before it runs), the oracle calibrated through journaled ``calibrate`` trials as a
campaign calibrates (only the direction kinds the workloads need), and ``DIR/rerun.json``
(:mod:`collie.storage.rerun`): which import, options and rows.

Invariants:
    * everything is checked before the target is opened (the import, the out folder, at least one row to run);
      nothing is written before the target is open;
    * the trials are, in order: the calibration runs (unless ``verdict`` is off), then each distinct workload key in
      the order of its first row, ``repeat`` times in a row, as ``replay`` trials (unbudgeted); so a resumed rerun
      re-walks its journal trial for trial (the runner checks each) and runs only what is missing;
    * a row whose workload is None is counted with its reason in ``rerun.json``, never run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from collie import calibrate
from collie.campaign.budget import Budget
from collie.campaign.campaign import begin_on
from collie.campaign.runner import CampaignInterrupted, SharedJournal, TrialRunner
from collie.campaign.summary import CampaignSummary
from collie.errors import CollieError, InputError
from collie.events import Event, PhaseStarted, TrialFinished, Warned, counted
from collie.importers.perftest import PerftestLog
from collie.importers.shape import measured, shape_problem
from collie.model.workload import Workload
from collie.preset import DEFAULT_PRESET, load_preset
from collie.services.events import Note, ServiceListener
from collie.storage.campaign import CONFIG, CampaignStore, holds_campaign
from collie.storage.files import check_new_folder
from collie.storage.imports import ImportFolder, ImportTool, is_import_folder, read_import
from collie.storage.records import CampaignConfig, Phase, TrialState
from collie.storage.rerun import RERUN_FILE, RerunRecord, RerunRow, SkippedRow, read_rerun, write_rerun
from collie.targets.base import RunResult, Target, TargetInfo
from collie.targets.kind import TargetSpec
from collie.targets.registry import open_target, parse_target

#: Why a row with an expressible header still has no workload (its numbers break one of the model's constraints).
NO_LEGAL_FLOW: Final = "its run's header and size make no flow collie can run (they break a constraint of the model)"


@dataclass(frozen=True)
class RerunPlan:
    """A rerun read and checked, not yet run.

    Attributes:
        imported: the import folder.
        store: the campaign folder (made once the target is open; opened when resumed).
        record: what ``rerun.json`` holds.
        workloads: the workload of each key of ``record.keys``, by key.
        seed: the simulator's noise seed (the campaign's seed).
        resume: it continues the journal in ``store``.
    """

    imported: ImportFolder
    store: CampaignStore
    record: RerunRecord
    workloads: dict[str, Workload]
    seed: int
    resume: bool

    @property
    def trials(self) -> int:
        """The rerun trials in all (calibration apart): each distinct workload ``repeat`` times."""
        return len(self.workloads) * self.record.repeat


@dataclass(frozen=True)
class RerunSummary:
    """How a rerun ended.

    Attributes:
        out: its campaign folder.
        rows: the imported rows rerun.
        skipped: the rows without a workload.
        workloads: distinct workloads run.
        complete: rerun trials the target ran.
        failed: rerun trials that failed.
        pruned: rerun trials the target cannot run.
        anomalous: rerun trials the oracle judged anomalous.
        calibration: calibration runs.
        engine_bound: runs (calibration and reruns) the traffic engine, not the NIC, limited; not judged.
    """

    out: Path
    rows: int
    skipped: int
    workloads: int
    complete: int
    failed: int
    pruned: int
    anomalous: int
    calibration: int
    engine_bound: int = 0


def rerun_rows(imported: ImportFolder) -> tuple[tuple[RerunRow, ...], tuple[SkippedRow, ...], dict[str, Workload]]:
    """Every perftest row of ``imported``: those with a workload (and each distinct workload, by key, in the order
    of its first row), and those without, with why.

    Raises:
        InputError: the folder holds nccl-tests logs (only perftest rows can be rerun).
    """
    if imported.tool is not ImportTool.PERFTEST:
        raise InputError(f"{imported.root} holds {imported.tool.value} logs; only perftest rows can be rerun (a "
                         "collective has no single workload collie runs)")
    rows: list[RerunRow] = []
    skipped: list[SkippedRow] = []
    workloads: dict[str, Workload] = {}
    for log in imported.logs:
        assert isinstance(log.parsed, PerftestLog)  # a perftest import parses its logs with perftest's parser
        for run in log.parsed.runs:
            problem = shape_problem(run)
            for row, m in zip(run.rows, measured(run), strict=True):
                if m.workload is None:
                    skipped.append(SkippedRow(log.name, row.line, problem or NO_LEGAL_FLOW))
                    continue
                key = m.workload.key()
                workloads.setdefault(key, m.workload)
                rows.append(RerunRow(log.name, row.line, key))
    return tuple(rows), tuple(skipped), workloads


def plan_rerun(import_dir: Path, *, target: TargetSpec, out: Path, duration: float, repeat: int, verdict: bool,
               seed: int) -> RerunPlan:
    """A new rerun of the import in ``import_dir`` on ``target`` into ``out`` (see the module docstring).

    Raises:
        InputError: ``import_dir`` is not an import folder or holds nccl-tests logs, no row has a workload, or
            ``out`` is not a new or empty folder.
    """
    imported = _import(import_dir)
    rows, skipped, workloads = rerun_rows(imported)
    if not rows:
        reasons = sorted({s.reason for s in skipped})
        raise InputError(f"none of the {counted(len(skipped), 'row')} of {import_dir} has a workload collie can "
                         f"run, so nothing is rerun: {'; '.join(reasons)}")
    check_new_folder(out)
    preset = load_preset(DEFAULT_PRESET)
    record = RerunRecord(str(imported.root.resolve()), str(target), duration, repeat, verdict, rows, skipped)
    config = CampaignConfig.new(target=str(target), seed=seed, budget=len(workloads) * repeat, preset=DEFAULT_PRESET,
                                strategy=preset.strategy)
    return RerunPlan(imported, CampaignStore.prepare(out, config), record, workloads, seed, False)


def plan_resumed_rerun(import_dir: Path, out: Path) -> RerunPlan:
    """The rerun in ``out`` continued: the same import (its rows unchanged) and the options it recorded.

    Raises:
        InputError: ``out`` holds no rerun, ``import_dir`` is not the import it reran, or the import's rows
            changed since.
    """
    if not holds_campaign(out):
        raise InputError(f"{out} holds no rerun to resume (no {CONFIG}); start one without --resume")
    record = read_rerun(out)
    if record is None:
        raise InputError(f"{out} holds a campaign, not a rerun (no {RERUN_FILE}); continue it with collie campaign "
                         "--resume")
    imported = _import(import_dir)
    if imported.root.resolve() != Path(record.import_folder):
        raise InputError(f"{out} reran the import {record.import_folder}, not {import_dir}; resume it with that "
                         "import folder")
    rows, skipped, workloads = rerun_rows(imported)
    if (rows, skipped) != (record.rows, record.skipped):
        raise InputError(f"the rows of {import_dir} are not those {out / RERUN_FILE} reran; start a new rerun "
                         "with another -o")
    store = CampaignStore.open(out)
    return RerunPlan(imported, store, record, workloads, store.config().seed, True)


def parsed_target(text: str) -> TargetSpec:
    """The spec ``text`` names, its mistakes as :class:`~collie.errors.InputError` (a usage mistake, exit 2).

    Raises:
        InputError: ``text`` names no target kind, or its kind cannot read it.
    """
    try:
        return parse_target(text)
    except InputError:
        raise
    except CollieError as exc:  # UnknownTargetKind, TargetError: one sentence each
        raise InputError(str(exc)) from None


def _import(import_dir: Path) -> ImportFolder:
    if not is_import_folder(import_dir):
        what = "does not exist" if not import_dir.exists() else "is not an import folder (it has no import.json)"
        raise InputError(f"{import_dir} {what}; give a folder made by collie import perftest")
    return read_import(import_dir)


def run_rerun(plan: RerunPlan, *, target: Target | None = None, pace: float = 0.0,
              accept_new_host_keys: bool = False, listener: ServiceListener | None = None) -> RerunSummary:
    """Run the planned rerun (see the module docstring) on ``target`` (None: opened from the recorded spec).

    Raises:
        CampaignInterrupted: on Ctrl-C (the journal holds every trial before it; ``--resume`` continues).
        InputError: a calibration run failed, or a resumed journal that is not this rerun's.
        TargetError: the target cannot be opened.
        TargetUnavailable: a remote target's hosts cannot be reached.
    """
    emit: Callable[[Event | Note], None] = listener or (lambda _: None)
    record, store = plan.record, plan.store
    if target is None:
        target = open_target(parse_target(record.target), seed=plan.seed, pace=pace,
                             accept_new_host_keys=accept_new_host_keys)
    journal = store.repair_journal() if plan.resume else None
    shared = SharedJournal(journal)
    calibration, reruns = CampaignSummary(confirms=False), CampaignSummary(confirms=False)  # tallies
    budget = Budget((store.config().budget,))
    done = [0, 0]  # rerun trials finished, anomalous

    def progress(event: Event) -> None:
        if isinstance(event, TrialFinished) and event.phase == Phase.REPLAY:
            done[0] += 1
            done[1] += event.verdict is not None and event.verdict.anomalous
            event = dataclasses.replace(event, experiments=done[0])
        emit(event)

    try:
        with target:
            info = target.describe()
            if not plan.resume:
                check_new_folder(store.root)
                store.root.mkdir(parents=True, exist_ok=True)
                write_rerun(store.root, record)
            begin_on(store, info, emit, "rerun")
            for w in journal.warnings if journal is not None else ():
                emit(Warned(w))
            if record.verdict:
                seconds = min(record.duration, calibrate.CALIBRATION_SECONDS)
                _calibrate(TrialRunner(target, store, seconds, calibration, emit, shared=shared, budget=budget),
                           plan, info, emit)
            runner = TrialRunner(target, store, record.duration, reruns, progress, shared=shared, budget=budget)
            emit(PhaseStarted("replay", f"{counted(len(plan.workloads), 'imported workload')} x {record.repeat}"))
            for key in record.keys:
                for _ in range(record.repeat):
                    runner.run(Phase.REPLAY, plan.workloads[key], None)
    except KeyboardInterrupt:
        raise CampaignInterrupted() from None
    except OSError as exc:
        raise InputError(f"cannot write to {store.root} ({exc.strerror or exc}); rerun into another -o") from None
    finally:
        store.close()
    return RerunSummary(store.root, len(record.rows), len(record.skipped), len(plan.workloads),
                        done[0] - reruns.pruned - reruns.failed, reruns.failed, reruns.pruned, done[1],
                        shared.trials - done[0],  # a rerun numbers nothing but calibration runs and reruns
                        calibration.engine_bound + reruns.engine_bound)


def _calibrate(runner: TrialRunner, plan: RerunPlan, info: TargetInfo, emit: Callable[[Event | Note], None]) -> None:
    """Calibrate the oracle the reruns are judged with, through journaled ``calibrate`` trials (the direction
    kinds the workloads need, in the order :func:`~collie.calibrate.kinds_of` gives), and record its ceilings in
    ``campaign.toml`` as a campaign does."""
    needed = tuple(dict.fromkeys(k for w in plan.workloads.values() for k in calibrate.kinds_of(w)))
    emit(PhaseStarted("calibrate", f"ceilings of {', '.join(needed)}"))

    def run(workload: Workload) -> RunResult:
        trial = runner.run(Phase.CALIBRATE, workload, None)
        if trial.state is not TrialState.COMPLETE or trial.result is None:
            raise InputError(f"calibration run {workload.name} failed on {plan.record.target} ({trial.reason}); "
                             "collie cannot judge the reruns without ceilings: rerun with --no-verdict")
        return trial.result

    oracle = calibrate.calibrated_oracle(run, calibrate.catalog_of(info), info, load_preset(DEFAULT_PRESET).thresholds,
                                         needed)
    runner.shared.oracle = oracle
    store = plan.store
    store.update_config(dataclasses.replace(store.config(), ceilings=oracle.ceilings, baseline=oracle.baseline))
