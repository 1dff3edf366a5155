"""``collie ci`` end to end on the simulator: exit codes for a reproducing, a fixed, a waived case, a case
recorded on another target, an expired waiver, a new anomaly, an unreachable target and bad input; JUnit XML read
back with junitparser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Skipped

from tests.conftest import ROOT, run_cli

CORPUS = ROOT / "workloads" / "corpus"
IDEAL = ROOT / "collie" / "targets" / "sim" / "profiles" / "ideal.toml"
#: The gate's short search runs in the paper's space: its planted anomalies are what these tests gate on. In the
#: whole default space even the ideal NIC starves a paced receiver (RNR, ``base:rnr``), a new anomaly to the gate.
PAPER = ROOT / "workloads" / "paper.toml"


def _corpus(folder: Path, names: tuple[str, ...], spec: str | None = None) -> Path:
    """A corpus of the cases ``names`` of workloads/corpus, each recorded on ``spec`` (None: its own target)."""
    for name in names:
        shutil.copytree(CORPUS / name, folder / name)
        if spec is not None:
            evidence = json.loads((folder / name / "evidence.json").read_text())
            evidence["target"] = {"spec": spec}
            (folder / name / "evidence.json").write_text(json.dumps(evidence))
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated NIC that has only the anomaly of f03, and a corpus of that one known case, found on it."""
    root = tmp_path_factory.mktemp("ci")
    profile = IDEAL.read_text().replace('name = "ideal"', 'name = "only-f03"')
    (root / "only-f03.toml").write_text(profile.replace("quirks = []", 'quirks = ["f03-read-mtu1k"]'))
    _corpus(root / "corpus", ("f03-read-mtu1k",), f"sim:{root / 'only-f03.toml'}")
    return root


def _waivers(path: Path, expires: str, signature: str = "pause@receiver+low_throughput@receiver",
             case: str = "f03-read-mtu1k") -> Path:
    case_line = f'case = "{case}"\n' if case else ""
    path.write_text(f'[[waiver]]\nsignature = "{signature}"\nreason = "vendor ticket 1234"\nexpires = {expires}\n'
                    f"{case_line}")
    return path


def _ci(lab: Path, out: str, *args: str, target: str = "", corpus: str = "corpus"
        ) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    r = run_cli("ci", "--target", target or f"sim:{lab / 'only-f03.toml'}", "--corpus", str(lab / corpus),
                "--budget", "20", "--space", str(PAPER), "--out", str(lab / out), "--format", "json", "-q", *args)
    assert "Traceback" not in r.stderr
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr


def test_a_known_case_that_reproduces_fails_the_gate(lab: Path) -> None:
    code, data, err = _ci(lab, "repro", "--junit", str(lab / "repro.xml"))
    assert code == 1, err
    (known,) = data["known"]
    assert known["name"] == "f03-read-mtu1k" and known["status"] == "reproduces" and known["fails"]
    assert known["signature"].startswith("pause@receiver") and data["new"] == []
    assert "gate FAILED: 1 known case still reproduces" in err
    xml = JUnitXml.fromfile(str(lab / "repro.xml"))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"collie.known", "collie.new"}
    (case,) = list(suites["collie.known"])
    assert case.name == "f03-read-mtu1k" and isinstance(case.result[0], Failure)
    assert "still reproduces: pause@receiver" in case.result[0].message
    assert suites["collie.known"].failures == 1 and suites["collie.new"].tests == 0
    props = {p.name: p.value for p in suites["collie.known"].properties()}
    assert props["budget"] == "20" and props["campaign"] == str(lab / "repro") and props["engine_bound"] == "0"
    assert data["engine_bound"] == 0 and "engine" not in err  # the simulator is never engine-bound: no word of it
    # the gate's folder is an ordinary campaign folder
    assert (lab / "repro" / "campaign.toml").is_file() and (lab / "repro" / "trials.jsonl").is_file()


def test_a_case_that_no_longer_reproduces_is_reported_fixed(lab: Path) -> None:
    _corpus(lab / "corpus-ideal", ("f03-read-mtu1k",), "sim:ideal")  # found on ideal, which now lacks it
    code, data, err = _ci(lab, "fixed", "--junit", str(lab / "fixed.xml"), target="sim:ideal", corpus="corpus-ideal")
    assert code == 0, err
    (known,) = data["known"]
    assert known["status"] == "fixed" and not known["fails"] and known["signature"] == ""
    assert "gate passed" in err and "1 fixed" in err
    (case,) = list(next(s for s in JUnitXml.fromfile(str(lab / "fixed.xml")) if s.name == "collie.known"))
    assert case.is_passed and "fixed" in case.system_out


def test_a_case_recorded_on_another_target_is_neither_fixed_nor_failing(lab: Path) -> None:
    # h16 (found on the Broadcom profile) shows an anomaly on ConnectX-6 too, h17 does not: neither decides
    _corpus(lab / "corpus-bcm", ("h16-read-mtu1k-qps", "h17-send-small-qps"))
    code, data, err = _ci(lab, "bcm", "--junit", str(lab / "bcm.xml"), target="sim:cx6-200g", corpus="corpus-bcm")
    assert code == (1 if data["new"] else 0), err
    note = ("recorded on sim:p2100g-100g (Broadcom BCM57508 NetXtreme-E P2100G (2x100GbE)), "
            "run on sim:cx6-200g (NVIDIA ConnectX-6 VPI MCX653105A-HDAT (200GbE))")
    for known in data["known"]:
        assert known["status"] == "other target" and not known["fails"] and known["target_note"] == note
        assert "firmware 222.0.140.0 -> 20.31.1014" in known["target_differences"]
    assert [k["signature"] != "" for k in data["known"]] == [True, False]  # what the replays showed is kept
    assert "0 fixed, 2 recorded on another target, of 2 known" in err
    cases = list(next(s for s in JUnitXml.fromfile(str(lab / "bcm.xml")) if s.name == "collie.known"))
    assert all(c.is_skipped and c.result[0].message == note and c.result[0].type == "other-target" for c in cases)
    table = run_cli("ci", "--target", "sim:cx6-200g", "--corpus", str(lab / "corpus-bcm"), "--budget", "20",
                    "--out", str(lab / "bcm-table"), "-q")
    assert table.stdout.count("other target") == 2 and "sim:p2100g-100g" in table.stdout


def test_a_waived_case_passes_the_gate(lab: Path) -> None:
    waive = _waivers(lab / "waive.toml", "2099-01-31")
    code, data, err = _ci(lab, "waived", "--waive", str(waive), "--junit", str(lab / "waived.xml"))
    assert code == 0, err
    (known,) = data["known"]
    assert known["status"] == "waived" and known["waiver"]["reason"] == "vendor ticket 1234"
    (case,) = list(next(s for s in JUnitXml.fromfile(str(lab / "waived.xml")) if s.name == "collie.known"))
    assert case.is_skipped and isinstance(case.result[0], Skipped) and "vendor ticket 1234" in case.result[0].message


def test_an_expired_waiver_no_longer_waives_and_says_so(lab: Path) -> None:
    waive = _waivers(lab / "expired.toml", "2020-01-31")
    code, data, err = _ci(lab, "expired", "--waive", str(waive))
    assert code == 1, err
    (known,) = data["known"]
    assert known["status"] == "reproduces" and known["waiver"] is None
    assert known["expired_waiver"]["expires"] == "2020-01-31"
    assert "expired on 2020-01-31; it no longer waives" in err


def test_a_waiver_for_another_case_does_not_waive(lab: Path) -> None:
    _corpus(lab / "corpus-two", ("f01-ud-rx-wqe", "f03-read-mtu1k"), f"sim:{lab / 'only-f03.toml'}")
    waive = _waivers(lab / "other.toml", "2099-01-31", case="f01-ud-rx-wqe")
    code, data, _ = _ci(lab, "other", "--waive", str(waive), corpus="corpus-two")
    assert code == 1 and [k["status"] for k in data["known"]] == ["fixed", "reproduces"]


def test_a_new_anomaly_fails_the_gate_and_can_be_waived(lab: Path) -> None:
    # cx6-200g has ten anomalies: a short search beside the known f03 finds another one
    code, data, err = _ci(lab, "new", "--junit", str(lab / "new.xml"), target="sim:cx6-200g")
    assert code == 1, err
    assert data["new"] and all(n["fails"] for n in data["new"])
    new_suite = next(s for s in JUnitXml.fromfile(str(lab / "new.xml")) if s.name == "collie.new")
    assert [c.name for c in new_suite] == [n["anomaly_id"] for n in data["new"]]
    assert all(isinstance(c.result[0], Failure) and "new anomaly" in c.result[0].message for c in new_suite)
    # waive every symptom the gate met (no case: known cases and new anomalies alike)
    lines = "".join(f'[[waiver]]\nsignature = "{sig}"\nreason = "accepted"\nexpires = 2099-12-31\n'
                    for sig in {n["signature"] for n in data["new"]} | {data["known"][0]["signature"]})
    (lab / "all.toml").write_text(lines)
    code, waived, err = _ci(lab, "new-waived", "--waive", str(lab / "all.toml"), target="sim:cx6-200g")
    assert code == 0, err
    assert [n["anomaly_id"] for n in waived["new"]] == [n["anomaly_id"] for n in data["new"]]
    assert all(not n["fails"] and n["waiver"]["reason"] == "accepted" for n in waived["new"])


def test_an_unreachable_target_is_an_infrastructure_failure(lab: Path) -> None:
    code, data, err = _ci(lab, "nodev", target="verbs:collie-no-such-dev0")
    assert code == 3 and data == {}
    assert err.startswith("collie: error: the target verbs:collie-no-such-dev0 cannot be opened")
    assert len(err.strip().splitlines()) == 1
    assert not (lab / "nodev").exists()  # nothing left behind


def test_a_waiver_about_a_case_the_corpus_lacks_is_a_usage_error(lab: Path) -> None:
    waive = _waivers(lab / "typo.toml", "2099-01-31", case="f03-read-mtu1")
    code, data, err = _ci(lab, "typo", "--waive", str(waive))
    assert code == 2 and data == {} and len(err.strip().splitlines()) == 1
    assert f"{waive}: waiver[0]: case: 'f03-read-mtu1' is no case of the corpus" in err
    assert "did you mean 'f03-read-mtu1k'?" in err and not (lab / "typo").exists()


@pytest.mark.parametrize(("text", "expected"), [
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 2027-01-31\nowner = "me"\n',
     "waiver[0]: unknown field 'owner'"),
    ('[[waiver]]\nsignature = "pause@receiver"\nexpires = 2027-01-31\n',
     "waiver[0]: reason: missing (a non-empty string)"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = "next spring"\n',
     "waiver[0]: expires: expected a date like 2027-01-31, got 'next spring'"),
    ('[[waiver]]\nsignature = "pause@receiver"\nreason = "r"\nexpires = 2027-02-30\n', "malformed TOML"),
    ('[[waiver]]\nsignature = "stall@nic"\nreason = "r"\nexpires = 2027-01-31\n',
     "waiver[0]: signature: 'stall@nic' is not a symptom"),
])
def test_a_bad_waiver_file_is_one_sentence_and_exit_2(lab: Path, text: str, expected: str) -> None:
    bad = lab / "bad.toml"
    bad.write_text(text)
    code, data, err = _ci(lab, "bad", "--waive", str(bad))
    assert code == 2 and data == {} and expected in err
    assert len(err.strip().splitlines()) == 1 and not (lab / "bad").exists()


def test_usage_errors_exit_2(lab: Path) -> None:
    code, _, err = _ci(lab, "u1", target="nic9")
    assert code == 2 and "unknown target" in err
    code, _, err = _ci(lab, "u2", "--junit", str(lab / "no-such-folder" / "j.xml"))
    assert code == 2 and "does not exist" in err
    r = run_cli("ci", "--corpus", str(lab / "missing"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
