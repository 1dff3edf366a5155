"""Every record, read from a file or off the wire, fails with the codec's one sentence: a missing field, a field of
the wrong type and an unknown field, named by its path, once per record type; and a TargetInfo without
``msg_rate_pps`` gives that same sentence from every reader of it (a campaign, a case folder, a corpus case's
campaign, the protocol, the CLI)."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from collie.codec import Reader, shown
from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.errors import InputError
from collie.gate.waivers import Waiver
from collie.mfs import MFS
from collie.model.workload import Workload
from collie.oracle import Ceilings
from collie.remote import protocol
from collie.remote.inventory import Host
from collie.remote.protocol import ProtocolError
from collie.storage.case import CaseEvidence, CaseRecord, CaseRun, OriginalFind, TargetRecord, read_case_folder
from collie.storage.corpus import load_case, recorded_target
from collie.storage.records import CampaignConfig, Phase, TrialRecord, TrialState, TrialVerdict
from collie.targets.base import FlowResult, HostResult, RunResult, TargetInfo
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES, ROOT, run_cli

CASES = ROOT / "tests" / "fixtures" / "cases"
SIM = SimTarget("cx6-200g-amd", seed=1)
INFO = SIM.describe()
RESULT = SIM.run(Workload.load(EXAMPLES / "rc-write-64k.toml"), 1.0)
VERDICT = TrialVerdict(anomalous=True, signature="pause@receiver", score=2.5, metrics={"throughput": 0.4})
ROW = TrialRecord(7, Phase.EXPLORE, RESULT.workload_key, {"qps": 1}, TrialState.COMPLETE, 1.5, result=RESULT,
                  verdict=VERDICT)
CEILINGS = Ceilings({"oneway": 2e11}, {"oneway": 1e8}, 2e11)
CONFIG = CampaignConfig(target="sim:cx6-200g-amd", seed=3, budget=300, preset="collie", strategy="anneal",
                        created="2026-01-01T00:00:00Z", target_info=INFO, ceilings=CEILINGS, baseline={"a:x": 1.0})
SNAPSHOT = Snapshot(1.5, {"a": 1, "b": None}, "sysfs", "mlx5_0/1", ("b: N/A",), {"a": "port", "b": "hw"})
PORT = PortStatus("mlx5_0", 1, "ACTIVE", "LinkUp", "Ethernet", 3, "fe80::1", "RoCE v2", "ens1f0", 9000, 4096)
EVIDENCE = json.loads((CASES / "v2-A003-pause" / "evidence.json").read_text())
MFS_JSON = json.loads((CASES / "v2-A003-pause" / "mfs.json").read_text())
CASE_WORKLOAD = Workload.load(CASES / "v2-A003-pause" / "case.toml")
WAIVER = {"signature": "pause@receiver", "reason": "vendor ticket", "expires": "2027-01-31", "case": "c1"}


def _wire(kind: str, wrap: Callable[[Any], dict[str, Any]]) -> Callable[[Any], object]:
    """A reader of a record that travels inside a ``kind`` message (``wrap`` puts it in place)."""

    def read(data: Any) -> object:
        line = json.dumps({"v": protocol.PROTOCOL_VERSION, "id": 1, "type": kind, **wrap(data)}).encode()
        return protocol.decode(line).message

    return read


@dataclass(frozen=True)
class Kind:
    """One record type, read one way: its good form, how it is read, where its fields are named, and one field
    to take away and to mistype (with what that field must be)."""

    name: str
    good: dict[str, Any]
    read: Callable[[Any], object]
    prefix: str
    error: type[Exception]
    field: str
    what: str
    wrong: Any


KINDS = [
    Kind("TargetInfo", INFO.to_dict(), lambda d: TargetInfo.from_dict(d, Reader("t.json")), "t.json: ", InputError,
         "msg_rate_pps", "a number", "fast"),
    Kind("TargetInfo-wire", INFO.to_dict(), _wire("described", lambda d: {"info": d}), "'described' message: info: ",
         ProtocolError, "msg_rate_pps", "a number", True),
    Kind("RunResult", RESULT.to_dict(), lambda d: RunResult.from_dict(d, Reader("r.json")), "r.json: ", InputError,
         "duration_s", "a number", "1s"),
    Kind("RunResult-wire", RESULT.to_dict(include_truth=True), _wire("ran", lambda d: {"result": d}),
         "'ran' message: result: ", ProtocolError, "workload_key", "a string", 7),
    Kind("FlowResult", RESULT.flows[0].to_dict(), lambda d: FlowResult.from_dict(d, Reader("f.json")), "f.json: ",
         InputError, "flow", "an integer", 0.5),
    Kind("HostResult", RESULT.hosts[0].to_dict(), lambda d: HostResult.from_dict(d, Reader("h.json")), "h.json: ",
         InputError, "host", "a string", 0),
    Kind("TrialRecord", ROW.to_json(), lambda d: TrialRecord.from_json(d, "j: line 3"), "j: line 3: ", InputError,
         "time", "a number", "noon"),
    Kind("TrialVerdict", VERDICT.to_dict(), lambda d: TrialVerdict.from_dict(d, Reader("j: line 3").at("verdict")),
         "j: line 3: verdict: ", InputError, "score", "a number", "high"),
    Kind("CampaignConfig", CONFIG.to_toml_dict(), lambda d: CampaignConfig.from_toml(d, "c.toml"), "c.toml: ",
         InputError, "seed", "an integer", 1.5),
    Kind("CaseRecord", EVIDENCE, lambda d: CaseRecord.from_evidence(d, Reader("e.json"), CASE_WORKLOAD, None),
         "e.json: ", InputError, "confirmed", "true or false", "yes"),
    Kind("TargetRecord", EVIDENCE["target"], lambda d: TargetRecord.from_dict(d, Reader("e.json").at("target")),
         "e.json: target: ", InputError, "spec", "a string", 3),
    Kind("CaseEvidence", EVIDENCE["case"], lambda d: CaseEvidence.from_dict(d, Reader("e.json").at("case")),
         "e.json: case: ", InputError, "signature", "a string", ["x"]),
    Kind("CaseRun", EVIDENCE["case"]["runs"][0], lambda d: CaseRun.from_dict(d, Reader("e.json")), "e.json: ",
         InputError, "score", "a number", "1"),
    Kind("OriginalFind", EVIDENCE["original"], lambda d: OriginalFind.from_dict(d, Reader("e.json")), "e.json: ",
         InputError, "point", "a table", [1]),
    Kind("MFS", MFS_JSON, lambda d: MFS.from_dict(d, Reader("m.json")), "m.json: ", InputError, "signature",
         "a string", 3),
    Kind("Waiver", WAIVER, lambda d: Waiver.from_dict(d, Reader("w.toml").at("waiver").at(0)), "w.toml: waiver[0]: ",
         InputError, "reason", "a non-empty string", 3),
    Kind("Hello", {"host": "h", "target": "sim", "controller_version": "1"}, _wire("hello", dict),
         "'hello' message: ", ProtocolError, "host", "a string", 3),
    Kind("Start", {"at": 1.5}, _wire("start", dict), "'start' message: ", ProtocolError, "at", "a number", "now"),
    Kind("Prepare", {"plan": {"run": 1, "workload": CASE_WORKLOAD.to_dict(), "roles": ["a"], "warmup": 0.5,
                              "duration": 1.0, "repetition": None}},
         _wire("prepare", lambda d: d), "'prepare' message: ", ProtocolError, "plan", "a table", 3),
    Kind("Host", {"name": "a", "address": "192.0.2.1", "target": "sim", "port": 22},
         lambda d: Host.from_dict(d, Reader("hosts.toml:3").at("host").at(0), base=Path("/")),
         "hosts.toml:3: host[0]: ", InputError, "address", "a host name or IP address", 3),
    Kind("Snapshot", SNAPSHOT.to_dict(), lambda d: Snapshot.from_dict(d, Reader("s.json: snapshot 0")),
         "s.json: snapshot 0: ", InputError, "timestamp", "a number of seconds", "noon"),
    Kind("Snapshot-wire", SNAPSHOT.to_dict(), _wire("sampled", lambda d: {"snapshots": [d]}),
         "'sampled' message: snapshots[0]: ", ProtocolError, "values", "a table", [1]),
    Kind("PortStatus-wire", PORT.to_dict(), _wire("inspected", lambda d: {"port": d}), "'inspected' message: port: ",
         ProtocolError, "port", "an integer", "1"),
    Kind("Ceilings", CEILINGS.to_dict(), lambda d: Ceilings.from_dict(d, Reader("c.toml").at("ceilings")),
         "c.toml: ceilings: ", InputError, "wire_bps", "a table of numbers", 3),
    Kind("Ceilings-campaign", CEILINGS.to_dict(),
         lambda d: CampaignConfig.from_toml({**CONFIG.to_toml_dict(), "ceilings": d}, "c.toml"), "c.toml: ceilings: ",
         InputError, "pps", "a table of numbers", "lots"),
]


def _ids(kind: Kind) -> str:
    return kind.name


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
def test_the_good_form_reads(kind: Kind) -> None:
    kind.read(json.loads(json.dumps(kind.good, default=str)))


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
def test_a_missing_field_is_named_with_what_it_must_be(kind: Kind) -> None:
    data = {k: v for k, v in kind.good.items() if k != kind.field}
    with pytest.raises(kind.error) as err:
        kind.read(data)
    assert str(err.value) == f"{kind.prefix}{kind.field}: missing ({kind.what})"


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
def test_a_mistyped_field_is_named_with_what_it_must_be(kind: Kind) -> None:
    with pytest.raises(kind.error) as err:
        kind.read({**kind.good, kind.field: kind.wrong})
    assert str(err.value) == f"{kind.prefix}{kind.field}: expected {kind.what}, got {shown(kind.wrong)}"


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
def test_an_unknown_field_is_named_with_the_allowed_ones(kind: Kind) -> None:
    with pytest.raises(kind.error) as err:
        kind.read({**kind.good, "colour": "red"})
    assert str(err.value).startswith(f"{kind.prefix.removesuffix(': ')}: unknown field 'colour'; allowed fields are ")
    assert kind.field in str(err.value)


def test_a_format_1_evidence_without_original_point_takes_the_case_point() -> None:
    folder = CASES / "v1-campaign" / "anomalies" / "A003-pause"
    legacy = json.loads((folder / "evidence.json").read_text())
    legacy.pop("original_point")
    record = CaseRecord.from_evidence(legacy, Reader("e.json"), Workload.load(folder / "case.toml"), None)
    assert record.format == 1 and record.original is not None and record.original.point == legacy["point"]


def test_a_counter_of_the_wrong_type_inside_a_record_is_named_by_its_path() -> None:
    with pytest.raises(InputError, match=r"^c\.toml: ceilings: pps: oneway: expected a number, got 'fast'$"):
        CampaignConfig.from_toml(
            {**CONFIG.to_toml_dict(), "ceilings": {**CEILINGS.to_dict(), "pps": {"oneway": "fast"}}}, "c.toml")
    with pytest.raises(ProtocolError, match=r"^'sampled' message: snapshots\[0\]: values: a: expected a number or "
                                            r"null, got 'lots'$"):
        _wire("sampled", lambda d: {"snapshots": [d]})({**SNAPSHOT.to_dict(), "values": {"a": "lots"}})


def test_a_bool_is_never_a_number() -> None:
    with pytest.raises(InputError, match=r"^t\.json: line_rate_bps: expected a number, got True$"):
        TargetInfo.from_dict({**INFO.to_dict(), "line_rate_bps": True}, Reader("t.json"))


# -- a TargetInfo without msg_rate_pps, from every reader ---------------------------------------------------------


def _no_rate(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k != "msg_rate_pps"}


def _campaign_toml(tmp_path: Path) -> str:
    raw = CONFIG.to_toml_dict()
    raw["target_info"] = _no_rate(raw["target_info"])
    with pytest.raises(InputError) as err:
        CampaignConfig.from_toml(raw, "c.toml")
    return str(err.value)


def _case_folder(tmp_path: Path) -> str:
    case = tmp_path / "case"
    shutil.copytree(CASES / "v2-A003-pause", case)
    evidence = json.loads((case / "evidence.json").read_text())
    evidence["target"]["fingerprint"] = _no_rate(evidence["target"]["fingerprint"])
    (case / "evidence.json").write_text(json.dumps(evidence))
    with pytest.raises(InputError) as err:
        read_case_folder(case)
    return str(err.value).replace(str(case / "evidence.json"), "FILE")


def _corpus_campaign(tmp_path: Path) -> str:
    folder = tmp_path / "v1-campaign"
    shutil.copytree(CASES / "v1-campaign", folder)
    config = folder / "campaign.toml"
    raw = tomllib.loads(config.read_text())
    raw["target_info"] = _no_rate(raw["target_info"])
    config.write_text(tomli_w.dumps(raw))
    with pytest.raises(InputError) as err:
        recorded_target(load_case(folder / "anomalies" / "A003-pause"))
    return str(err.value).replace(str(config), "FILE")


def _wire_described(tmp_path: Path) -> str:
    with pytest.raises(ProtocolError) as err:
        _wire("described", lambda d: {"info": d})(_no_rate(INFO.to_dict()))
    return str(err.value)


@pytest.mark.parametrize(("reader", "sentence"), [
    (_campaign_toml, "c.toml: target_info: msg_rate_pps: missing (a number)"),
    (_case_folder, "FILE: target: fingerprint: msg_rate_pps: missing (a number)"),
    (_corpus_campaign, "FILE: target_info: msg_rate_pps: missing (a number)"),
    (_wire_described, "'described' message: info: msg_rate_pps: missing (a number)"),
])
def test_a_target_info_without_msg_rate_is_the_same_sentence_from_every_reader(
        tmp_path: Path, reader: Callable[[Path], str], sentence: str) -> None:
    assert reader(tmp_path) == sentence


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(CASES / "v2-A003-pause", case)
    evidence = json.loads((case / "evidence.json").read_text())
    evidence["target"]["fingerprint"] = _no_rate(evidence["target"]["fingerprint"])
    (case / "evidence.json").write_text(json.dumps(evidence))
    r = run_cli("replay", str(case))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"collie: error: {case / 'evidence.json'}: target: fingerprint: msg_rate_pps: missing (a number)"]
