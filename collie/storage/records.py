"""The typed records of a campaign folder, each checked field by field when it is read.

* :class:`CampaignConfig` is ``campaign.toml``: what the campaign is (target, seed, budget, preset, strategy,
  space, corpus), versioned, plus what it learnt of its target (fingerprint, calibrated ceilings, baseline).
* :class:`TrialRecord` is one row of ``trials.jsonl``: a trial's number, phase, workload key, search point and
  :class:`TrialState`, with the run's result and verdict once it finished.

Every reading error is an :class:`~collie.errors.InputError` of one sentence naming the file, the line (for the
journal) and the field, never a ``KeyError`` or ``ValueError``.
"""

from __future__ import annotations

import json
import time as clock
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from collie.errors import InputError
from collie.oracle import Ceilings
from collie.preset import preset_path
from collie.strategies import STRATEGIES
from collie.targets.base import FlowResult, HostResult, RunResult, TargetInfo
from collie.tomlio import check_fields

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
    """The campaign phase a trial belongs to; explore, confirm and minimize trials count against the budget."""

    CALIBRATE = "calibrate"
    REPLAY = "replay"
    EXPLORE = "explore"
    CONFIRM = "confirm"
    MINIMIZE = "minimize"

    @property
    def budgeted(self) -> bool:
        return self in (Phase.EXPLORE, Phase.CONFIRM, Phase.MINIMIZE)


def _choices(kind: type[StrEnum]) -> str:
    return ", ".join(str(v) for v in kind)


def _expect(value: Any, kinds: type | tuple[type, ...], where: str, what: str) -> Any:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        raise InputError(f"{where}: expected {what}, got {shown}")
    return value


def _number(value: Any, where: str) -> float:
    return float(_expect(value, (int, float), where, "a number"))


def _table(value: Any, where: str, allowed: Sequence[str], required: Sequence[str] = ()) -> dict[str, Any]:
    table: dict[str, Any] = _expect(value, dict, where, "a table")
    check_fields(table, where, allowed, required)
    return table


def _mapping_of(value: Any, where: str, kind: type | tuple[type, ...], what: str) -> dict[str, Any]:
    table: dict[str, Any] = _expect(value, dict, where, "a table")
    for k, v in table.items():
        _expect(v, kind, f"{where}.{k}", what)
    return table


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
            ("--preset", preset, self.preset, preset is None or _same_preset(preset, self.preset)),
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
        allowed = [f.name for f in fields(cls)]
        table = _table(dict(raw), where, allowed, _CONFIG_REQUIRED)
        version = _expect(table.get("version", 1), int, f"{where}: version", "an integer")
        if version != CONFIG_VERSION:
            raise InputError(f"{where}: version: {version} is not a campaign layout this collie reads (it reads "
                             f"{CONFIG_VERSION}); use the collie that wrote it")
        strings = {k: _expect(table.get(k, ""), str, f"{where}: {k}", "a string")
                   for k in ("target", "preset", "strategy", "space", "corpus", "created")}
        seed = _expect(table["seed"], int, f"{where}: seed", "an integer")
        budget = _expect(table["budget"], int, f"{where}: budget", "a positive integer")
        earlier = _expect(table.get("earlier_budgets", []), list, f"{where}: earlier_budgets", "a list of budgets")
        for i, b in enumerate(earlier):
            _expect(b, int, f"{where}: earlier_budgets[{i}]", "a positive integer")
        parallel = _expect(table.get("parallel", 1), int, f"{where}: parallel", "a positive integer")
        info = None
        if "target_info" in table:
            info = _target_info(table["target_info"], f"{where}: target_info")
        ceilings = None
        if "ceilings" in table:
            c = _table(table["ceilings"], f"{where}: ceilings", ("wire_bps", "pps", "line_rate_bps"),
                       ("wire_bps", "pps"))
            wire = _mapping_of(c["wire_bps"], f"{where}: ceilings.wire_bps", (int, float), "a number")
            pps = _mapping_of(c["pps"], f"{where}: ceilings.pps", (int, float), "a number")
            ceilings = Ceilings({k: float(v) for k, v in wire.items()}, {k: float(v) for k, v in pps.items()},
                                _number(c.get("line_rate_bps", 0.0), f"{where}: ceilings.line_rate_bps"))
        baseline = None
        if "baseline" in table:
            base = _mapping_of(table["baseline"], f"{where}: baseline", (int, float), "a number")
            baseline = {k: float(v) for k, v in base.items()}
        try:
            return cls(**strings, seed=seed, budget=budget, earlier_budgets=tuple(earlier), target_info=info,
                       ceilings=ceilings, baseline=baseline, version=version, parallel=parallel)
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
    if config.strategy not in STRATEGIES:
        raise InputError(f"{where}: strategy: {config.strategy!r} is not a strategy; use one of "
                         f"{', '.join(STRATEGIES)}")
    if not config.preset:
        raise InputError(f"{where}: preset: must name a preset, got an empty string")
    if (config.ceilings is None) != (config.baseline is None):
        raise InputError(f"{where}: ceilings and baseline: calibration writes both, but only one is there")


def _same_path(given: Path, own: str) -> bool:
    return given.resolve() == Path(own).resolve()


def _same_preset(given: str, own: str) -> bool:
    return given == own or preset_path(given).resolve() == preset_path(own).resolve()


_INFO_STRINGS: Final = ("name", "kind", "nic_model", "firmware", "driver", "kernel", "counter_dialect")


def _target_info(value: Any, where: str) -> TargetInfo:
    t = _table(value, where, [f.name for f in fields(TargetInfo)], [*_INFO_STRINGS, "line_rate_bps", "hosts"])
    for k in _INFO_STRINGS:
        _expect(t[k], str, f"{where}.{k}", "a string")
    hosts = _expect(t["hosts"], list, f"{where}.hosts", "a list of host names")
    for i, h in enumerate(hosts):
        _expect(h, str, f"{where}.hosts[{i}]", "a host name")
    details = _mapping_of(t.get("details", {}), f"{where}.details", str, "a string")
    return TargetInfo(**{k: t[k] for k in _INFO_STRINGS}, line_rate_bps=_number(t["line_rate_bps"],
                      f"{where}.line_rate_bps"), msg_rate_pps=_number(t.get("msg_rate_pps", 0.0),
                      f"{where}.msg_rate_pps"), hosts=tuple(hosts), details=details)


# -- trials.jsonl --------------------------------------------------------------------------------------------

_ROW_FIELDS: Final = ("trial", "phase", "key", "point", "status", "time", "reason", "result", "verdict", "chain")
_VERDICT_FIELDS: Final = ("anomalous", "signature", "score", "metrics")


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
        verdict: ``anomalous``, ``signature``, ``score`` and ``metrics`` of the oracle's verdict.
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
    verdict: Mapping[str, Any] | None = field(default=None)
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
            row["verdict"] = dict(self.verdict)
        if self.chain is not None:
            row["chain"] = self.chain
        return row

    @classmethod
    def from_json(cls, row: Any, where: str) -> TrialRecord:
        """Read one parsed journal row; ``where`` names the file and line.

        Raises:
            InputError: a row that is not an object, or an unknown, missing or mistyped field.
        """
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object (a trial record), got {json.dumps(row)[:60]}")
        r = _table(row, where, _ROW_FIELDS, ("trial", "phase", "key", "point", "status", "time"))
        trial = _expect(r["trial"], int, f"{where}: trial", "a trial number")
        if trial < 1:
            raise InputError(f"{where}: trial: must be 1 or more, got {trial}")
        phase = r["phase"]
        if phase not in Phase.__members__.values():
            raise InputError(f"{where}: phase: {phase!r} is not a phase; one of {_choices(Phase)}")
        status = r["status"]
        if status not in TrialState.__members__.values():
            raise InputError(f"{where}: status: {status!r} is not a trial state; one of {_choices(TrialState)}")
        state = TrialState(status)
        key = _expect(r["key"], str, f"{where}: key", "a workload key")
        if not key:
            raise InputError(f"{where}: key: must be a workload key, got an empty string")
        point = _expect(r["point"], dict, f"{where}: point", "a table of parameters")
        time = _number(r["time"], f"{where}: time")
        reason = _expect(r.get("reason", ""), str, f"{where}: reason", "a string")
        if state in (TrialState.PRUNED, TrialState.FAILED) and not reason:
            raise InputError(f"{where}: reason: a {state} trial says why, but it is missing")
        if state is TrialState.RUNNING and reason:
            raise InputError(f"{where}: reason: a RUNNING trial has none, got {reason!r}")
        raw_result = r.get("result")
        if state is TrialState.COMPLETE and raw_result is None:
            raise InputError(f"{where}: result: a COMPLETE trial needs its run result, got "
                             f"{'null' if 'result' in r else 'none'}")
        if state is not TrialState.COMPLETE and raw_result is not None:
            raise InputError(f"{where}: result: only a COMPLETE trial has one, this one is {state}")
        result = _run_result(raw_result, f"{where}: result") if raw_result is not None else None
        verdict = r.get("verdict")
        if verdict is not None:
            if state is not TrialState.COMPLETE:
                raise InputError(f"{where}: verdict: only a COMPLETE trial has one, this one is {state}")
            v = _table(verdict, f"{where}: verdict", _VERDICT_FIELDS, _VERDICT_FIELDS)
            _expect(v["anomalous"], bool, f"{where}: verdict.anomalous", "true or false")
            _expect(v["signature"], str, f"{where}: verdict.signature", "a string")
            _number(v["score"], f"{where}: verdict.score")
            _mapping_of(v["metrics"], f"{where}: verdict.metrics", (int, float), "a number")
        chain = r.get("chain")
        if chain is not None:
            _expect(chain, int, f"{where}: chain", "a chain number")
            if chain < 0:
                raise InputError(f"{where}: chain: must be 0 or more, got {chain}")
        return cls(trial, Phase(phase), key, point, state, time, reason, result, verdict, chain)


_FLOW_NUMBERS: Final = ("bps", "pps", "msg_rate", "lat_p50_us", "lat_p99_us", "lat_p999_us")
_HOST_NUMBERS: Final = ("tx_bps", "rx_bps", "tx_pps", "rx_pps")
_RESULT_REQUIRED: Final = ("workload_key", "target", "duration_s", "setup_s", "flows", "hosts")


def _run_result(value: Any, where: str) -> RunResult:
    """A journal row's ``result``, checked to the leaves before it is turned into a :class:`RunResult`."""
    d = _table(value, where, (*_RESULT_REQUIRED, "errors", "engine_bound", "truth"), _RESULT_REQUIRED)
    for k in ("workload_key", "target"):
        _expect(d[k], str, f"{where}.{k}", "a string")
    duration, setup = _number(d["duration_s"], f"{where}.duration_s"), _number(d["setup_s"], f"{where}.setup_s")
    flows = []
    for i, f in enumerate(_expect(d["flows"], list, f"{where}.flows", "a list of flow results")):
        w = f"{where}.flows[{i}]"
        names = [x.name for x in fields(FlowResult)]
        f = _table(f, w, names, names)
        _expect(f["flow"], int, f"{w}.flow", "a flow index")
        for k in ("client", "server"):
            _expect(f[k], str, f"{w}.{k}", "a host name")
        flows.append(FlowResult(f["flow"], f["client"], f["server"], *(_number(f[k], f"{w}.{k}")
                                                                       for k in _FLOW_NUMBERS)))
    hosts = []
    for i, h in enumerate(_expect(d["hosts"], list, f"{where}.hosts", "a list of host results")):
        w = f"{where}.hosts[{i}]"
        h = _table(h, w, ("host", *_HOST_NUMBERS, "counters", "sources", "unreadable"),
                   ("host", *_HOST_NUMBERS, "counters"))
        _expect(h["host"], str, f"{w}.host", "a host name")
        counters = _mapping_of(h["counters"], f"{w}.counters", (int, float), "a number")
        sources = _mapping_of(h.get("sources", {}), f"{w}.sources", str, "a string")
        unreadable = _mapping_of(h.get("unreadable", {}), f"{w}.unreadable", str, "a string")
        rates = {k: _number(h[k], f"{w}.{k}") for k in _HOST_NUMBERS}
        hosts.append(HostResult(h["host"], rates["tx_bps"], rates["rx_bps"], rates["tx_pps"], rates["rx_pps"],
                                counters=counters, sources=sources, unreadable=unreadable))
    lists = {}
    for k in ("errors", "truth"):
        items = _expect(d.get(k, []), list, f"{where}.{k}", "a list of strings")
        for i, item in enumerate(items):
            _expect(item, str, f"{where}.{k}[{i}]", "a string")
        lists[k] = tuple(items)
    engine_bound = _expect(d.get("engine_bound", False), bool, f"{where}.engine_bound", "true or false")
    return RunResult(d["workload_key"], d["target"], duration, setup, tuple(flows), tuple(hosts),
                     errors=lists["errors"], engine_bound=engine_bound, truth=lists["truth"])


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
