"""The case record: written and read back equal, the previous release's folders still read, the case's own
evidence chosen from its runs, failed writes leave nothing half-written."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from collie.campaign.runlog import Replay, RunLog
from collie.errors import InputError
from collie.oracle import Verdict
from collie.storage.case import (
    FORMAT,
    CaseEvidence,
    CaseRecord,
    OriginalFind,
    TargetRecord,
    read_case_folder,
    write_case_folder,
)
from collie.targets.sim import SimTarget
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "cases"


def _verdict(signature: str, score: float = 2.0) -> Verdict:
    return Verdict(anomalous=bool(signature), symptoms=(), score=score, signature=signature,
                   metrics={"throughput": 0.5}, levels={"pause@receiver": score})


def test_the_format_2_fixture_reads_and_writes_back_equal(tmp_path: Path) -> None:
    record = read_case_folder(FIXTURES / "v2-A003-pause")
    assert record.format == FORMAT and record.target is not None and record.target.fingerprint is not None
    assert record.target.spec == "sim:cx6-200g-amd" and record.target.fingerprint.driver == "mlx5"
    assert record.evidence is not None and record.original is not None and record.mfs is not None
    assert record.evidence.signature == "pause@receiver+low_throughput@receiver"  # case.toml's own runs
    assert record.original.verdict.signature == record.signature == "pause@receiver"  # the find, apart
    assert record.original.found_at == 38 and record.original.point["op"] == "UC_WRITE"
    again = read_case_folder(write_case_folder(tmp_path / "A003-pause", record))
    assert again == record
    assert json.loads((tmp_path / "A003-pause" / "evidence.json").read_text()) == \
        json.loads((FIXTURES / "v2-A003-pause" / "evidence.json").read_text())


def test_a_folder_of_the_previous_release_reads_with_the_target_and_own_runs_unknown() -> None:
    record = read_case_folder(FIXTURES / "v1-campaign" / "anomalies" / "A003-pause")
    assert record.format == 1 and record.target is None and record.evidence is None
    assert record.original is not None and record.original.found_at is not None
    assert record.original.verdict.signature == record.signature == "pause@receiver"  # the find's, labelled
    assert record.original.point["op"] == "UC_WRITE" and record.mfs is not None


def test_the_space_a_minimized_case_walked_is_written_and_read_back_and_absent_reads_as_unrecorded(
        tmp_path: Path) -> None:
    record = read_case_folder(FIXTURES / "v2-A003-pause")
    assert record.space == ""  # a folder written before cases recorded their space
    paper = str(ROOT / "workloads" / "paper.toml")
    folder = write_case_folder(tmp_path / "A003-pause", dataclasses.replace(record, space=paper))
    assert json.loads((folder / "evidence.json").read_text())["space"] == paper
    assert read_case_folder(folder).space == paper


def test_a_folder_with_only_a_case_toml_reads(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "v2-A003-pause" / "case.toml", tmp_path / "case.toml")
    record = read_case_folder(tmp_path)
    assert record.format == 0 and record.target is None and record.mfs is None and record.original is None


def test_a_newer_format_is_refused_in_one_sentence(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "v2-A003-pause", tmp_path / "c")
    evidence = json.loads((tmp_path / "c" / "evidence.json").read_text())
    (tmp_path / "c" / "evidence.json").write_text(json.dumps({**evidence, "format": FORMAT + 1}))
    with pytest.raises(InputError, match=rf"evidence\.json: format: written by a newer collie \(format {FORMAT + 1}"):
        read_case_folder(tmp_path / "c")


def test_the_case_signature_is_the_most_frequent_among_runs_showing_the_leading_symptom() -> None:
    runs = [_verdict(""), _verdict("pause@receiver"), _verdict("pause@receiver+low_throughput@receiver"),
            _verdict("pause@receiver+low_throughput@receiver"), _verdict("low_throughput@receiver")]
    own = CaseEvidence.of({"qps": 1}, runs, "pause@receiver")
    assert own is not None and own.signature == "pause@receiver+low_throughput@receiver"
    assert own.verdict is runs[2] and len(own.runs) == 5 and not own.runs[0].anomalous
    tie = CaseEvidence.of({}, runs[:3], "pause@receiver")
    assert tie is not None and tie.signature == "pause@receiver"  # a tie: the earliest
    lost = CaseEvidence.of({}, [runs[0], runs[4]], "pause@receiver")
    assert lost is not None and lost.signature == ""  # none showed it: the most frequent of all, said as it is
    assert CaseEvidence.of({}, [], "pause@receiver") is None


def test_the_run_log_keeps_each_points_runs_whatever_the_key_order() -> None:
    log = RunLog()
    answers = iter([_verdict("pause@receiver"), None, _verdict("pause@receiver", 3.0)])
    probe = log.watch(lambda p: next(answers))
    probe({"a": 1, "b": 2})
    probe({"a": 2, "b": 2})  # could not run: nothing recorded
    probe({"b": 2, "a": 1})
    own = log.evidence({"a": 1, "b": 2}, "pause@receiver")
    assert own is not None and [r.score for r in own.runs] == [2.0, 3.0]
    assert log.evidence({"a": 2, "b": 2}, "pause@receiver") is None


def test_a_replay_hands_out_each_points_runs_again_in_order_then_runs_live() -> None:
    log = RunLog()
    find, other = {"a": 1}, {"a": 2}
    log.add(find, _verdict("pause@receiver", 1.0))  # the find's own run: taken already
    recorded = iter([_verdict("pause@receiver", 2.0), _verdict("", 0.5), _verdict("pause@receiver", 3.0)])
    first = log.watch(lambda p: next(recorded))
    first(find), first(other), first({"a": 2})
    live: list[dict[str, int]] = []

    def run(p: Mapping[str, Any]) -> Verdict:
        live.append(dict(p))
        return _verdict("pause@receiver", 9.0)

    replay = Replay(log, find)
    confirm, minimize = replay.through(log.watch(run)), replay.through(log.watch(run))
    assert [v.score for v in (confirm(find), minimize(other), minimize(other))] == [2.0, 0.5, 3.0]
    assert live == []  # the walk so far is the recorded one: nothing ran
    assert minimize(other).score == 9.0 and confirm(find).score == 9.0 and live == [other, find]
    own = log.evidence(find, "pause@receiver")
    assert own is not None and [r.score for r in own.runs] == [1.0, 2.0, 9.0]  # the live runs join the evidence


def test_differences_name_the_spec_and_the_fingerprint_fields_that_differ() -> None:
    was = SimTarget("p2100g-100g").describe()
    now = SimTarget("cx6-200g").describe()
    recorded = TargetRecord("sim:p2100g-100g", was)
    diffs = recorded.differences("sim:cx6-200g", now)
    assert diffs[0] == "target sim:p2100g-100g -> sim:cx6-200g"
    assert f"NIC {was.nic_model} -> {now.nic_model}" in diffs and "line rate 100 Gb/s -> 200 Gb/s" in diffs
    assert "driver bnxt_re -> mlx5" in diffs and any(d.startswith("firmware ") for d in diffs)
    assert recorded.differences("sim:p2100g-100g", was) == []
    upgraded = dataclasses.replace(was, firmware="999.0")
    assert recorded.differences("sim:p2100g-100g", upgraded) == [f"firmware {was.firmware} -> 999.0"]
    assert TargetRecord("sim:p2100g-100g").differences("sim:cx6-200g", now) == \
        ["target sim:p2100g-100g -> sim:cx6-200g"]  # no fingerprint recorded: the spec only


def test_a_failed_write_leaves_neither_a_half_folder_nor_a_temporary_one(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    record = read_case_folder(FIXTURES / "v2-A003-pause")
    write_case_folder(tmp_path / "A003-pause", record)
    before = {p.name: p.read_bytes() for p in (tmp_path / "A003-pause").iterdir()}
    real = Path.write_text

    def full_disk(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if self.name == "evidence.json":
            raise OSError(28, "No space left on device")
        return real(self, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", full_disk)
    changed = dataclasses.replace(record, original=OriginalFind({"op": "RC_SEND"}, _verdict("pause@receiver")))
    with pytest.raises(OSError, match="No space left"):
        write_case_folder(tmp_path / "A003-pause", changed)
    assert [p.name for p in tmp_path.iterdir()] == ["A003-pause"]  # no temporary folder left behind
    assert {p.name: p.read_bytes() for p in (tmp_path / "A003-pause").iterdir()} == before  # the old one intact


def test_a_record_without_optional_parts_writes_only_what_it_has(tmp_path: Path) -> None:
    workload = read_case_folder(FIXTURES / "v2-A003-pause").workload
    folder = write_case_folder(tmp_path / "bare", CaseRecord("bare", "", False, workload))
    assert sorted(p.name for p in folder.iterdir()) == ["case.toml", "evidence.json"]
    evidence = json.loads((folder / "evidence.json").read_text())
    assert set(evidence) == {"format", "anomaly_id", "signature", "confirmed", "minimize_experiments",
                             "minimize_steps"}
    assert read_case_folder(folder) == CaseRecord("bare", "", False, workload)
