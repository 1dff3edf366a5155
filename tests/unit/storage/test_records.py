"""The typed records of a campaign folder: campaign.toml and journal rows, checked field by field."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from collie.errors import InputError
from collie.model.workload import Workload
from collie.oracle import Ceilings
from collie.storage.records import CampaignConfig, Phase, TrialRecord, TrialState, TrialVerdict, check_sequence
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES

CONFIG = CampaignConfig(target="sim:cx6-200g-amd", seed=3, budget=300, preset="collie", strategy="anneal",
                        created="2026-01-01T00:00:00Z", target_info=SimTarget("cx6-200g-amd").describe(),
                        ceilings=Ceilings({"oneway": 2e11}, {"oneway": 1e8}, 2e11), baseline={"a:x": 1.0})


def test_a_config_round_trips_through_toml() -> None:
    text = tomli_w.dumps(CONFIG.to_toml_dict())
    assert "version = 1" in text
    import tomllib

    assert CampaignConfig.from_toml(tomllib.loads(text), "c.toml") == CONFIG


def test_a_config_without_version_is_read_as_the_first_layout() -> None:
    raw = {k: v for k, v in CONFIG.to_toml_dict().items() if k != "version"}
    assert CampaignConfig.from_toml(raw, "c.toml") == CONFIG


@pytest.mark.parametrize(("change", "message"), [
    ({"seed": None}, "c.toml: seed: missing (an integer)"),
    ({"budget": -3}, "c.toml: budget: must be at least 1, got -3"),
    ({"budget": "300"}, "c.toml: budget: expected a positive integer, got '300'"),
    ({"budget": True}, "c.toml: budget: expected a positive integer, got True"),
    ({"seed": -1}, "c.toml: seed: must be 0 or more, got -1"),
    ({"strategy": ""}, "c.toml: strategy: must name a strategy"),
    ({"target": ""}, "c.toml: target: must name a target"),
    ({"earlier_budgets": [300]}, "c.toml: earlier_budgets: each budget must be below the next"),
    ({"earlier_budgets": [0]}, "c.toml: earlier_budgets[0]: must be at least 1, got 0"),
    ({"version": 2}, "c.toml: version: 2 is not a campaign layout this collie reads"),
    ({"colour": "red"}, "c.toml: unknown field 'colour'"),
    ({"baseline": None}, "c.toml: ceilings and baseline: calibration writes both, but only one is there"),
    ({"ceilings": {"wire_bps": {"oneway": "fast"}, "pps": {}}},
     "c.toml: ceilings: wire_bps: oneway: expected a number"),
    ({"target_info": {"name": "x"}}, "c.toml: target_info: kind: missing (a string)"),
])
def test_a_damaged_config_is_one_sentence(change: dict[str, Any], message: str) -> None:
    raw = CONFIG.to_toml_dict()
    for k, v in change.items():
        if v is None:
            raw.pop(k)
        else:
            raw[k] = v
    with pytest.raises(InputError) as err:
        CampaignConfig.from_toml(raw, "c.toml")
    assert str(err.value).startswith(message), str(err.value)


def test_an_empty_config_says_what_it_should_hold() -> None:
    with pytest.raises(InputError, match=r"c\.toml: is empty; it should hold the campaign's target, seed, budget"):
        CampaignConfig.from_toml({}, "c.toml")


def test_resuming_extends_the_budget_and_refuses_any_other_change(tmp_path: Path) -> None:
    assert CONFIG.resumed("c.toml") == CONFIG
    assert CONFIG.resumed("c.toml", budget=300, seed=3, target="sim:cx6-200g-amd", preset="collie",
                          strategy="anneal") == CONFIG
    longer = CONFIG.resumed("c.toml", budget=500)
    assert (longer.budget, longer.earlier_budgets, longer.budgets) == (500, (300,), (300, 500))
    assert longer.resumed("c.toml", budget=800).budgets == (300, 500, 800)
    with pytest.raises(InputError, match=r"--budget 200 is below this campaign's budget of 300 \(in c.toml\)"):
        CONFIG.resumed("c.toml", budget=200)
    for option, value in [("seed", 4), ("target", "sim"), ("preset", "quick"), ("strategy", "random"),
                          ("space", tmp_path / "s.toml"), ("corpus", tmp_path)]:
        with pytest.raises(InputError, match=f"--{option} {value} differs from this campaign's {option}"):
            CONFIG.resumed("c.toml", **{option: value})
    # the same file named another way is the same preset or space
    space = tmp_path / "space.toml"
    with_space = dataclasses.replace(CONFIG, space=str(space.resolve()))
    assert with_space.resumed("c.toml", space=space) == with_space


def _complete(trial: int = 1) -> TrialRecord:
    result = SimTarget().run(Workload.load(EXAMPLES / "rc-write-64k.toml"), 1.0)
    return TrialRecord(trial, Phase.EXPLORE, result.workload_key, {"qps": 1}, TrialState.COMPLETE, 1.5,
                       result=result, verdict=TrialVerdict(anomalous=False, signature="", score=0.0, metrics={}))


def test_a_row_round_trips() -> None:
    record = _complete()
    assert TrialRecord.from_json(record.to_json(), "j: line 1") == record


@pytest.mark.parametrize(("change", "message"), [
    (lambda r: {}, "j: line 1: trial: missing (a trial number)"),
    (lambda r: None, "j: line 1: expected a JSON object (a trial record), got null"),
    (lambda r: {**r, "trial": "abc"}, "j: line 1: trial: expected a trial number, got 'abc'"),
    (lambda r: {**r, "trial": 0}, "j: line 1: trial: must be 1 or more, got 0"),
    (lambda r: {**r, "result": None}, "j: line 1: result: a COMPLETE trial needs its run result, got null"),
    (lambda r: {k: v for k, v in r.items() if k != "result"}, "j: line 1: result: a COMPLETE trial needs its run"),
    (lambda r: {**r, "status": "DONE"}, "j: line 1: status: 'DONE' is not a trial state; use one of RUNNING, COMPLETE"),
    (lambda r: {**r, "phase": "warmup"}, "j: line 1: phase: 'warmup' is not a phase"),
    (lambda r: {**r, "status": "PRUNED"}, "j: line 1: reason: a PRUNED trial says why, but it is missing"),
    (lambda r: {**r, "status": "FAILED", "reason": "x"}, "j: line 1: result: only a COMPLETE trial has one"),
    (lambda r: {**r, "time": "noon"}, "j: line 1: time: expected a number, got 'noon'"),
    (lambda r: {**r, "extra": 1}, "j: line 1: unknown field 'extra'"),
    (lambda r: {**r, "verdict": {**r["verdict"], "anomalous": 1}},
     "j: line 1: verdict: anomalous: expected true or false"),
    (lambda r: {**r, "result": {**r["result"], "hosts": [{**r["result"]["hosts"][0], "counters": {"x": "1"}}]}},
     "j: line 1: result: hosts[0]: counters: x: expected a number, got '1'"),
    (lambda r: {**r, "result": {**r["result"], "flows": "none"}},
     "j: line 1: result: flows: expected a list of tables"),
])
def test_a_damaged_row_is_one_sentence_naming_the_line_and_field(change: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        TrialRecord.from_json(change(_complete().to_json()), "j: line 1")
    assert str(err.value).startswith(message), str(err.value)


def test_the_journal_order_is_checked() -> None:
    running = dataclasses.replace(_complete(), state=TrialState.RUNNING, result=None, verdict=None)
    done = _complete()

    def at(r: TrialRecord, trial: int) -> TrialRecord:
        return dataclasses.replace(r, trial=trial)

    check_sequence([at(running, 1), at(done, 1), at(running, 2), at(running, 2), at(done, 2)], [1, 2, 3, 4, 5], "j")
    for records, message in [
        ([at(running, 1), at(done, 1), at(running, 3)], "j: line 3: trial: expected trial 2 here, got 3 (trial 2 is "
                                                        "missing)"),
        ([at(running, 1), at(done, 1), at(running, 1)], "j: line 3: trial: expected trial 2 here, got 1"),
        ([at(done, 1)], "j: line 1: trial: trial 1 ends without its RUNNING row"),
        ([at(running, 1), dataclasses.replace(at(done, 1), phase=Phase.CONFIRM)], "j: line 2: trial: trial 1 ends "
                                                                                 "with another phase"),
    ]:
        with pytest.raises(InputError) as err:
            check_sequence(records, list(range(1, len(records) + 1)), "j")
        assert str(err.value).startswith(message), str(err.value)
