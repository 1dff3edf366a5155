from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.mfs import MFS, Condition
from collie.model.workload import Workload
from collie.oracle import Ceilings
from collie.preset import campaign_preset, load_preset
from collie.storage.campaign import CampaignStore
from collie.storage.case import CaseRecord
from collie.storage.records import CampaignConfig, Phase, TrialRecord, TrialState
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES, ROOT

CONFIG = CampaignConfig(target="sim", seed=1, budget=10, preset="collie", strategy="anneal")


def _record(trial: int, state: TrialState = TrialState.COMPLETE) -> TrialRecord:
    result = SimTarget().run(Workload.load(EXAMPLES / "rc-write-64k.toml"), 1.0) \
        if state is TrialState.COMPLETE else None
    reason = "why" if state in (TrialState.PRUNED, TrialState.FAILED) else ""
    return TrialRecord(trial, Phase.EXPLORE, "k", {}, state, 1.0, reason, result)


def _append(store: CampaignStore, *trials: int) -> None:
    for i in trials:
        store.append(_record(i, TrialState.RUNNING))
        store.append(_record(i))


def test_journal_append_and_truncated_last_line(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", CONFIG)
    _append(s, 1, 2, 3)
    s.close()
    with open(tmp_path / "c" / "trials.jsonl", "a") as fh:
        fh.write('{"trial": 4, "sta')
    journal = tmp_path / "c" / "trials.jsonl"
    torn = journal.read_bytes()
    read = CampaignStore.open(tmp_path / "c").read_journal()
    assert [r.trial for r in read.records if r.state.finished] == [1, 2, 3]
    assert read.records == tuple(r for i in (1, 2, 3) for r in (_record(i, TrialState.RUNNING), _record(i)))
    assert read.warnings and "truncated" in read.warnings[0]
    assert journal.read_bytes() == torn  # reading writes nothing
    # repairing cuts the damaged tail off (reporting what reading reports), so appending goes on cleanly
    again = CampaignStore.open(tmp_path / "c")
    assert again.repair_journal() == read
    assert journal.read_bytes() == torn[:torn.rindex(b"\n") + 1]
    assert again.read_journal() == replace(read, warnings=(), repair=None)
    _append(again, 4)
    again.close()
    assert [r.trial for r in again.read_journal().records if r.state.finished] == [1, 2, 3, 4]


def test_a_whole_last_record_without_its_newline_gets_it_back(tmp_path: Path) -> None:
    # a crash that lost only the newline of the last record: appending must not glue the next record to it
    s = CampaignStore.create(tmp_path / "c", CONFIG)
    _append(s, 1, 2)
    s.close()
    journal = tmp_path / "c" / "trials.jsonl"
    journal.write_bytes(journal.read_bytes()[:-1])
    read = CampaignStore.open(tmp_path / "c").read_journal()
    assert [r.trial for r in read.records] == [1, 1, 2, 2]
    assert read.warnings and "line 4 lacks its newline" in read.warnings[0]
    again = CampaignStore.open(tmp_path / "c")
    again.repair_journal()
    _append(again, 3)
    again.close()
    assert [r.trial for r in again.read_journal().records] == [1, 1, 2, 2, 3, 3]


def test_running_rows_that_end_the_journal_are_left_out_and_repaired_off(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", CONFIG)
    _append(s, 1, 2)
    s.append(_record(3, TrialState.RUNNING))
    s.close()
    journal = tmp_path / "c" / "trials.jsonl"
    whole = journal.read_bytes()
    read = s.read_journal()
    assert [r.trial for r in read.records] == [1, 1, 2, 2] and read.warnings == ()
    assert read.repair is not None and journal.read_bytes() == whole
    with pytest.raises(RuntimeError, match="call repair_journal"):  # never appended after an unrepaired trace
        s.append(_record(3, TrialState.RUNNING))
    assert s.repair_journal() == read
    assert journal.read_bytes().count(b"\n") == 4 and s.read_journal().repair is None
    s.append(_record(3, TrialState.RUNNING))
    s.close()


def test_damage_in_the_middle_is_an_error_and_leaves_the_file_alone(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", CONFIG)
    _append(s, 1, 2)
    s.close()
    journal = tmp_path / "c" / "trials.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "xx", *lines[2:]]) + "\n")
    before = journal.read_bytes()
    with pytest.raises(InputError, match="line 2: not a valid JSON record"):
        s.read_journal()
    # a last line that ends with its newline was written whole: garbage there is damage too, not a crash
    journal.write_text("\n".join([*lines[:3], "xx"]) + "\n")
    with pytest.raises(InputError, match="line 4: not a valid JSON record"):
        s.read_journal()
    journal.write_text("\n".join(lines) + "\n")
    journal.write_bytes(journal.read_bytes()[:-5] + b"\xff\xfe\n")
    with pytest.raises(InputError, match="line 4: not a valid JSON record"):
        s.read_journal()
    journal.write_bytes(before)
    with pytest.raises(InputError, match="line 2: not a valid JSON record"):
        s.read_journal()
    assert journal.read_bytes() == before


def test_an_emptied_journal_beside_calibrated_ceilings_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    calibrated = replace(CONFIG, ceilings=Ceilings({"oneway": 1e9}, {"oneway": 1e6}), baseline={})
    CampaignStore.create(tmp_path / "c", calibrated)
    (tmp_path / "c" / "trials.jsonl").write_text("")
    with pytest.raises(InputError, match=r"holds no finished trial.*lost or emptied"):
        CampaignStore.open(tmp_path / "c").read_journal()
    s2 = CampaignStore.create(tmp_path / "d", CONFIG)  # not calibrated yet: nothing was lost
    assert s2.read_journal().records == ()


_FAILING_WRITES = """
import json, resource, signal, sys
from dataclasses import replace
from pathlib import Path
from collie.storage.case import CaseRecord
from collie.errors import StoreError
from collie.mfs import MFS
from collie.storage.campaign import CampaignStore
from collie.model.workload import Workload

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
store = CampaignStore.open(Path(sys.argv[1]))
workload = Workload.load(sys.argv[2])
big = "x" * 9000
record = CaseRecord("A002-pause", "pause@receiver", True, workload, minimized_from=big)
outcomes = []
for name, write in [
    ("new folder, its evidence too big", lambda: store.save_anomaly(record)),
    ("rewritten folder, its case too big", lambda: store.update_mfs(
        "A001-pause", MFS("pause@receiver", ()), replace(workload, description=big), cost=4)),
    ("rewritten folder, its evidence too big", lambda: store.save_anomaly(replace(record, anomaly_id="A001-pause"))),
]:
    try:
        write()
        outcomes.append([name, "written"])
    except StoreError as exc:
        outcomes.append([name, "StoreError" if "cannot write to the campaign folder" in str(exc) else str(exc)])
print(json.dumps(outcomes))
"""


def test_anomaly_folders_are_complete_or_absent(tmp_path: Path) -> None:
    s = CampaignStore.create(tmp_path / "c", CONFIG)
    example = EXAMPLES / "rc-write-64k.toml"
    workload = Workload.load(example)
    folder = s.save_anomaly(CaseRecord("A001-pause", "pause@receiver", True, workload, MFS("pause@receiver", ())))
    assert sorted(p.name for p in folder.iterdir()) == ["case.toml", "evidence.json", "mfs.json"]
    assert json.loads((folder / "evidence.json").read_text())["anomaly_id"] == "A001-pause"
    assert [p.name for p in s.anomaly_dirs()] == ["A001-pause"]

    def snapshot() -> dict[str, dict[str, str]]:
        return {p.name: {f.name: f.read_text() for f in p.iterdir()} for p in s.anomaly_dirs()}

    before = snapshot()
    # a real failing write (a file size limit: the write stops part-way with EFBIG), in a child process, while a
    # new folder is saved and while the saved one is rewritten (a finished MFS) or saved again (a resume)
    r = subprocess.run([sys.executable, "-c", _FAILING_WRITES, str(tmp_path / "c"), str(example)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert r.returncode == 0, r.stderr
    assert [o[1] for o in json.loads(r.stdout)] == ["StoreError"] * 3, r.stdout
    assert snapshot() == before  # the new folder is absent, the old one whole and unchanged
    # a failed write leaves no half-written temporary folder behind
    assert sorted(p.name for p in (tmp_path / "c" / "anomalies").iterdir()) == ["A001-pause"]
    assert s.keep_anomalies({"A001-pause"}) == []
    narrowed = MFS("pause@receiver", (Condition("qps_total", ">=", 4),))
    s.update_mfs("A001-pause", narrowed, replace(workload, description="narrowed"), cost=4)
    after = snapshot()["A001-pause"]
    assert json.loads(after["mfs.json"]) == narrowed.to_dict()
    assert 'description = "narrowed"' in after["case.toml"]
    assert json.loads(after["evidence.json"])["minimize_experiments"] == 4


def test_create_refuses_an_existing_campaign_and_open_needs_one(tmp_path: Path) -> None:
    CampaignStore.create(tmp_path / "c", CONFIG)
    with pytest.raises(InputError, match="already holds a campaign"):
        CampaignStore.create(tmp_path / "c", CONFIG)
    with pytest.raises(InputError, match="holds no campaign"):
        CampaignStore.open(tmp_path / "other")


def test_a_prepared_store_writes_nothing_until_it_begins(tmp_path: Path) -> None:
    s = CampaignStore.prepare(tmp_path / "c", CONFIG)
    assert not (tmp_path / "c").exists()
    s.begin(None)
    assert CampaignStore.open(tmp_path / "c").config() == CONFIG


def test_default_folders_never_collide(tmp_path: Path) -> None:
    first = CampaignStore.prepare(tmp_path / "campaign-x", CONFIG, unique=True)
    second = CampaignStore.prepare(tmp_path / "campaign-x", CONFIG, unique=True)
    first.begin(None)
    second.begin(None)
    assert (first.root.name, second.root.name) == ("campaign-x", "campaign-x-2")


def test_builtin_presets_load() -> None:
    for name in ("collie", "random", "bayes", "quick"):
        p = load_preset(name)
        assert p.budget > 0 and p.duration > 0
    assert load_preset("random").minimize is None and not load_preset("random").exclude_known
    assert load_preset("collie").minimize is not None and load_preset("collie").exclude_known


def test_a_campaign_runs_its_preset_with_its_own_strategy() -> None:
    assert campaign_preset("collie", "anneal", "c.toml") == load_preset("collie")
    other = campaign_preset("collie", "random", "c.toml")
    assert (other.strategy, other.strategy_options) == ("random", {})
    with pytest.raises(InputError) as err:  # a damaged campaign.toml: the sentence its reader used to give
        campaign_preset("collie", "genetic", "c.toml")
    assert str(err.value) == "c.toml: strategy: 'genetic' is not a strategy; use one of anneal, random, bayes"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('strategy = "genetic"\n', "not a strategy"),
        ("budget = 0\n", "must be at least 1"),
        ("speed = 3\n", "unknown field 'speed'"),
        ("[oracle]\npause = 0.1\n", "unknown field 'pause'"),
        ('[oracle]\npause_ratio = "high"\n', "expected a number"),
        ("[oracle]\nstraggler_margin = 1.5\n", "oracle.straggler_margin: must be between 0 and 1, got 1.5"),
        ("[oracle]\nthroughput_fraction = 0\n", "oracle.throughput_fraction: must be between 0 and 1, got 0.0"),
        ("[minimize]\nruns = 2\nrequired = 3\n", "must be between 1 and runs"),
        ("[minimize]\nfar_side = 1\n", "expected true or false"),
        ("[minimize]\nruns = 2.5\n", "expected an integer"),
        ('[minimize]\nrecheck_margin = "some"\n', "expected a number"),
        ("[minimize]\nrecheck_margin = -0.1\n", "recheck_margin (-0.1) must be 0 or more"),
        ("[minimize]\nsearch_bisect_steps = -1\n", "search_bisect_steps (-1) must be 0 or more"),
        ("[minimize]\nsearch_bisect_steps = 1.5\n", "expected"),
    ],
)
def test_bad_presets(tmp_path: Path, text: str, fragment: str) -> None:
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_preset(str(p))
    assert fragment in str(err.value)


def test_a_numeric_minimize_setting_takes_an_int_or_a_float(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    for value in ("0", "0.25"):
        p.write_text(f"[minimize]\nrecheck_margin = {value}\n")
        minimize = load_preset(str(p)).minimize
        assert minimize is not None and minimize.recheck_margin == float(value)


def test_unknown_builtin_preset() -> None:
    with pytest.raises(InputError, match="unknown preset 'turbo'; use one of bayes, collie, quick, random"):
        load_preset("turbo")
