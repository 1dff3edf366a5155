"""The typed records of a campaign folder, each checked field by field when it is read.

* :class:`CampaignConfig` is ``campaign.toml``: what the campaign is (target, seed, budget, preset, strategy,
  space, corpus), versioned, plus what it learnt of its target (fingerprint, calibrated ceilings, baseline).
* :class:`TrialRecord` is one row of ``trials.jsonl``: a trial's number, phase, workload key, search point and
  :class:`TrialState`, with the run's result and verdict once it finished.

Every reading error is an :class:`~collie.errors.InputError` of one sentence naming the file, the line (for the
journal) and the field, never a ``KeyError`` or ``ValueError``.
"""

from __future__ import annotations

import time as clock
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from collie.codec import MISSING, Reader, decode, encode_fields
from collie.errors import InputError
from collie.oracle import Ceilings, Verdict
from collie.preset import same_preset
from collie.targets.base import RunResult, TargetInfo

#: The version of ``campaign.toml`` this collie writes; files without ``version`` (older collie) are read as 1.
CONFIG_VERSION: Final = 1


class TrialState(StrEnum):
    """Where a trial is: journaled ``RUNNING`` before the target runs it, then one of the three ends."""

    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"  # the target ran it: the row has its result
    PRUNED = "PRUNED"  # the target cannot run it (Unsupported): never an anomaly, not counted in the budget
    FAILED = "FAILED"  # the target failed while running it

    @property
    def finished(self) -> bool:
        return self is not TrialState.RUNNING


class Phase(StrEnum):
    """The campaign phase a trial belongs to; explore, confirm and minimize trials count against the budget.
    A SOLO trial is an isolation experiment's victims run alone (``Workload.solo``), measured once per distinct
    victim just before the first trial that needs it, as calibration is: unbudgeted and not judged."""

    CALIBRATE = "calibrate"
    REPLAY = "replay"
    EXPLORE = "explore"
    CONFIRM = "confirm"
    MINIMIZE = "minimize"
    SOLO = "solo"

    @property
    def budgeted(self) -> bool:
        return self in (Phase.EXPLORE, Phase.CONFIRM, Phase.MINIMIZE)


# -- campaign.toml -------------------------------------------------------------------------------------------

_CONFIG_REQUIRED: Final = ("target", "seed", "budget", "preset", "strategy")


@dataclass(frozen=True)
class CampaignConfig:
    """``campaign.toml``.

    Invariants:
        * ``target``, ``seed``, ``preset``, ``strategy``, ``space`` and ``corpus`` never change after the
          campaign starts (a resume that names another value is refused);
        * ``budget`` (experiments in all) only grows: each earlier value is kept in ``earlier_budgets``, in
          order, each smaller than the next, because the campaign re-walks its journal budget by budget;
        * ``target_info`` is the fingerprint of the target it started on; ``ceilings`` and ``baseline`` are set
          by calibration (together).

    Attributes:
        target: the target spec as given (``sim:cx6-200g-amd``).
        seed: the campaign's seed (search stream and simulator noise).
        budget: explore + confirm + minimize experiments in all.
        preset: the preset's name or file.
        strategy: the strategy the campaign uses (the preset's, or ``--strategy``).
        space: the search space file (absolute), ``""`` for the default space.
        corpus: the corpus folder (absolute), ``""`` for none.
        created: when it started (UTC, ISO 8601).
        earlier_budgets: the budgets it ran to before ``--resume --budget`` extended it.
        target_info: the target's fingerprint (with ``parallel`` > 1: chain 0's host group's).
        ceilings: the calibrated ceilings.
        baseline: the clean calibration runs' loss and retransmission rates (events/s).
        version: the file's layout version.
        parallel: how many search chains run at once (``--parallel K``; 1: one, the file then leaves it out, so
            a campaign without ``--parallel`` writes what older collie wrote and older folders load as 1).
    """

    target: str
    seed: int
    budget: int
    preset: str
    strategy: str
    space: str = ""
    corpus: str = ""
    created: str = ""
    earlier_budgets: tuple[int, ...] = ()
    target_info: TargetInfo | None = None
    ceilings: Ceilings | None = None
    baseline: Mapping[str, float] | None = None
    version: int = CONFIG_VERSION
    parallel: int = 1

    def __post_init__(self) -> None:
        _check_config(self, "the campaign's configuration")

    @classmethod
    def new(cls, *, target: str, seed: int, budget: int, preset: str, strategy: str, space: Path | None = None,
            corpus: Path | None = None, parallel: int = 1) -> CampaignConfig:
        """The configuration of a new campaign: files named absolute, stamped with the time it is made.

        Raises:
            InputError: a value out of range (one sentence naming the field).
        """
        return cls(target=target, seed=seed, budget=budget, preset=preset, strategy=strategy,
                   space=str(space.resolve()) if space else "", corpus=str(corpus.resolve()) if corpus else "",
                   created=clock.strftime("%Y-%m-%dT%H:%M:%SZ", clock.gmtime()), parallel=parallel)

    def resumed(self, where: str, *, target: str | None = None, seed: int | None = None, budget: int | None = None,
                preset: str | None = None, strategy: str | None = None, space: Path | None = None,
                corpus: Path | None = None, parallel: int | None = None) -> CampaignConfig:
        """This campaign resumed with the options a user gave (None: not given); ``where`` names its file.

        A budget above the campaign's extends it (the old one is kept in :attr:`earlier_budgets`); the same one
        changes nothing. Every other option must be the campaign's own: it cannot change on resume.

        Raises:
            InputError: a budget below the campaign's, or another option that differs (one sentence naming the
                option, both values and the file).
        """
        given: list[tuple[str, Any, Any, bool]] = [
            ("--target", target, self.target, target is None or target == self.target),
            ("--seed", seed, self.seed, seed is None or seed == self.seed),
            ("--preset", preset, self.preset, preset is None or same_preset(preset, self.preset)),
            ("--strategy", strategy, self.strategy, strategy is None or strategy == self.strategy),
            ("--space", space, self.space or "the default space",
             space is None or (bool(self.space) and _same_path(space, self.space))),
            ("--corpus", corpus, self.corpus or "none", corpus is None or (bool(self.corpus)
             and _same_path(corpus, self.corpus))),
            ("--parallel", parallel, self.parallel, parallel is None or parallel == self.parallel),
        ]
        for option, value, own, same in given:
            if not same:
                name = option.lstrip("-")
                raise InputError(f"{option} {value} differs from this campaign's {name} ({own}, in {where}); a "
                                 f"resumed campaign keeps its {name}: drop {option}, or start a new campaign with "
                                 "another --out")
        if budget is None or budget == self.budget:
            return self
        if budget < self.budget:
            raise InputError(f"--budget {budget} is below this campaign's budget of {self.budget} (in {where}); a "
                             "resume can extend a campaign, not shorten it")
        return replace(self, budget=budget, earlier_budgets=self.budgets)

    @property
    def budgets(self) -> tuple[int, ...]:
        """Every budget the campaign ran or runs to, in order (the last is :attr:`budget`)."""
        return (*self.earlier_budgets, self.budget)

    def to_toml_dict(self) -> dict[str, Any]:
        """The ``campaign.toml`` table (empty and unset fields left out)."""
        out: dict[str, Any] = {"version": self.version, "target": self.target, "seed": self.seed,
                               "budget": self.budget, "preset": self.preset, "strategy": self.strategy,
                               "space": self.space, "corpus": self.corpus, "created": self.created}
        if self.earlier_budgets:
            out["earlier_budgets"] = list(self.earlier_budgets)
        if self.parallel != 1:
            out["parallel"] = self.parallel
        if self.target_info is not None:
            out["target_info"] = self.target_info.to_dict()
        if self.ceilings is not None:
            out["ceilings"] = self.ceilings.to_dict()
        if self.baseline is not None:
            out["baseline"] = dict(self.baseline)
        return out

    @classmethod
    def from_toml(cls, raw: Mapping[str, Any], where: str) -> CampaignConfig:
        """Read a parsed ``campaign.toml``; ``where`` names the file in messages.

        Raises:
            InputError: an empty file, an unknown, missing or mistyped field, a value out of range, or a version
                this collie does not know.
        """
        if not raw:
            raise InputError(f"{where}: is empty; it should hold the campaign's {', '.join(_CONFIG_REQUIRED)}")
        reader = Reader(where)
        table = reader.table(dict(raw), [f.name for f in fields(cls)])
        version = table.integer("version", 1)
        if version != CONFIG_VERSION:
            raise InputError(f"{where}: version: {version} is not a campaign layout this collie reads (it reads "
                             f"{CONFIG_VERSION}); use the collie that wrote it")
        strings = {k: table.text(k, "" if k not in _CONFIG_REQUIRED else MISSING)
                   for k in ("target", "preset", "strategy", "space", "corpus", "created")}
        earlier = table.items("earlier_budgets", [], "a list of budgets")
        info = TargetInfo.from_dict(table.data["target_info"], table.at("target_info")) \
            if "target_info" in table else None
        ceilings = Ceilings.from_dict(table.data["ceilings"], table.at("ceilings")) if "ceilings" in table else None
        try:
            return cls(**strings, seed=table.integer("seed"), budget=table.integer("budget", what="a positive integer"),
                       earlier_budgets=tuple(table.at("earlier_budgets").at(i).integer(b, "a positive integer")
                                             for i, b in enumerate(earlier)),
                       target_info=info, ceilings=ceilings,
                       baseline=table.numbers("baseline") if "baseline" in table else None,
                       version=version, parallel=table.integer("parallel", 1, "a positive integer"))
        except InputError as exc:  # one sentence about the configuration: name the file instead
            raise InputError(str(exc).replace("the campaign's configuration", where, 1)) from None


def _check_config(config: CampaignConfig, where: str) -> None:
    if not config.target:
        raise InputError(f"{where}: target: must name a target, got an empty string")
    if config.seed < 0:
        raise InputError(f"{where}: seed: must be 0 or more, got {config.seed}")
    for name, b in [("budget", config.budget)] + [(f"earlier_budgets[{i}]", b)
                                                    for i, b in enumerate(config.earlier_budgets)]:
        if b < 1:
            raise InputError(f"{where}: {name}: must be at least 1, got {b}")
    budgets = config.budgets
    for i in range(1, len(budgets)):
        if budgets[i] <= budgets[i - 1]:
            raise InputError(f"{where}: earlier_budgets: each budget must be below the next (and the last below "
                             f"budget = {config.budget}), got {list(budgets)}")
    if config.parallel < 1:
        raise InputError(f"{where}: parallel: must be at least 1, got {config.parallel}")
    if not config.strategy:
        raise InputError(f"{where}: strategy: must name a strategy, got an empty string")
    if not config.preset:
        raise InputError(f"{where}: preset: must name a preset, got an empty string")
    if (config.ceilings is None) != (config.baseline is None):
        raise InputError(f"{where}: ceilings and baseline: calibration writes both, but only one is there")


def _same_path(given: Path, own: str) -> bool:
    return given.resolve() == Path(own).resolve()


# -- trials.jsonl --------------------------------------------------------------------------------------------

_ROW_FIELDS: Final = ("trial", "phase", "key", "point", "status", "time", "reason", "result", "verdict", "chain")


@dataclass(frozen=True)
class TrialVerdict:
    """The oracle's verdict as a journal row keeps it: enough to read the journal without re-judging.

    Invariant: the same four fields as the :class:`~collie.oracle.Verdict` it summarises (a resumed campaign
    re-judges the result instead of reading this).
    """

    anomalous: bool
    signature: str
    score: float
    metrics: Mapping[str, float]

    @classmethod
    def of(cls, verdict: Verdict) -> TrialVerdict:
        """The summary of ``verdict``."""
        return cls(verdict.anomalous, verdict.signature, verdict.score, dict(verdict.metrics))

    def to_dict(self) -> dict[str, Any]:
        """``{anomalous, signature, score, metrics}``."""
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> TrialVerdict:
        """Read :meth:`to_dict`'s form, every field required and checked (raises ``reader``'s error)."""
        return decode(cls, data, reader)


@dataclass(frozen=True)
class TrialRecord:
    """One row of the journal.

    Invariants: ``result`` is set exactly when ``state`` is COMPLETE; ``reason`` is set when it is PRUNED or
    FAILED (why) and never when RUNNING; ``verdict`` (the oracle's summary, recomputed on resume and kept for
    readers of the journal) only on a COMPLETE trial of a judged phase.

    Attributes:
        trial: the trial's number, from 1, in the order the campaign ran them.
        phase: the phase it belongs to.
        key: the workload's :meth:`~collie.model.workload.Workload.key`.
        point: the search point (empty for calibration and corpus replays).
        state: RUNNING before the run, then how it ended.
        time: when the row was written (seconds since the epoch).
        reason: why it was pruned or failed.
        result: what the target measured.
        verdict: the oracle's verdict, in brief.
        chain: the search chain that ran it, from 0 (``--parallel K`` with K > 1; None, and left out of the
            row, otherwise). Chain ``i`` runs on host group ``i``; calibration and corpus replays run on chain 0.
    """

    trial: int
    phase: Phase
    key: str
    point: Mapping[str, Any]
    state: TrialState
    time: float
    reason: str = ""
    result: RunResult | None = None
    verdict: TrialVerdict | None = None
    chain: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The journal row (keys sorted when written)."""
        row: dict[str, Any] = {"trial": self.trial, "phase": str(self.phase), "key": self.key,
                               "point": dict(self.point), "status": str(self.state), "time": self.time}
        if self.reason:
            row["reason"] = self.reason
        if self.result is not None:
            row["result"] = self.result.to_dict()
        if self.verdict is not None:
            row["verdict"] = self.verdict.to_dict()
        if self.chain is not None:
            row["chain"] = self.chain
        return row

    @classmethod
    def from_json(cls, row: Any, where: str) -> TrialRecord:
        """Read one parsed journal row; ``where`` names the file and line.

        Raises:
            InputError: a row that is not an object, or an unknown, missing or mistyped field.
        """
        reader = Reader(where)
        r = reader.table(row, _ROW_FIELDS, what="a JSON object (a trial record)")
        trial = r.integer("trial", what="a trial number", minimum=1)
        phase = r.choice("phase", Phase, "a phase")
        state = r.choice("status", TrialState, "a trial state")
        key = r.text("key", what="a workload key")
        if not key:
            reader.at("key").fail("must be a workload key, got an empty string")
        point = r.table("point").data
        time = r.number("time")
        reason = r.text("reason", "")
        if state in (TrialState.PRUNED, TrialState.FAILED) and not reason:
            reader.at("reason").fail(f"a {state} trial says why, but it is missing")
        if state is TrialState.RUNNING and reason:
            reader.at("reason").fail(f"a RUNNING trial has none, got {reason!r}")
        raw_result = r.get("result", None)
        if state is TrialState.COMPLETE and raw_result is None:
            got = "null" if "result" in r else "none"
            reader.at("result").fail(f"a COMPLETE trial needs its run result, got {got}")
        if state is not TrialState.COMPLETE and raw_result is not None:
            reader.at("result").fail(f"only a COMPLETE trial has one, this one is {state}")
        result = RunResult.from_dict(raw_result, r.at("result")) if raw_result is not None else None
        raw_verdict = r.get("verdict", None)
        if raw_verdict is not None and state is not TrialState.COMPLETE:
            reader.at("verdict").fail(f"only a COMPLETE trial has one, this one is {state}")
        verdict = TrialVerdict.from_dict(raw_verdict, r.at("verdict")) if raw_verdict is not None else None
        chain = r.integer("chain", what="a chain number", minimum=0) if r.get("chain", None) is not None else None
        return cls(trial, phase, key, point, state, time, reason, result, verdict, chain)


def check_sequence(records: Sequence[TrialRecord], lines: Sequence[int], path: str, in_flight: int = 1) -> None:
    """Check the journal's order: trial ``n`` is journaled RUNNING (again, after a crash) before it ends, and
    ends once, right after trial ``n - 1`` ended. A gap, a repeat or a row out of place is damage.

    ``in_flight`` is how many trials may run at once (a campaign's ``parallel``): a RUNNING row may then be for
    any of the ``in_flight`` trials from the next to end on, and a trial's end needs its RUNNING row somewhere
    since the trial before it ended, not right before it. With 1, every end follows its own RUNNING row.

    Raises:
        InputError: naming the file, the line and the trial number.
    """
    expected = 1
    running: dict[int, TrialRecord] = {}
    for record, line in zip(records, lines, strict=True):
        where = f"{path}: line {line}: trial"
        top = expected + in_flight - 1
        if record.trial < expected or record.trial > (top if not record.state.finished else expected):
            what = "missing" if record.trial > expected else "ended already"
            shown = str(expected) if in_flight == 1 or record.state.finished else f"{expected} to {top}"
            raise InputError(f"{where}: expected trial {shown} here, got {record.trial} (trial "
                             f"{min(expected, record.trial)} is {what}); the journal is damaged")
        if record.state.finished:
            started = running.pop(record.trial, None)
            if started is None:
                raise InputError(f"{where}: trial {record.trial} ends without its RUNNING row before it; the "
                                 "journal is damaged")
            if (started.phase, started.key) != (record.phase, record.key):
                raise InputError(f"{where}: trial {record.trial} ends with another phase or workload than it "
                                 "started with; the journal is damaged")
            expected += 1
        else:
            running[record.trial] = record
