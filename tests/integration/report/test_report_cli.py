"""``collie report`` end to end on campaign folders written by the current collie and by an older one."""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from junitparser import Failure, JUnitXml
from reporthelpers import REMOTE_HOSTS, SCRIPT, hostile_copy, make_campaign, remote_copy

from collie.oracle import SYMPTOM_ORDER
from collie.report.frames import TRIAL_COLUMNS, read_trials_csv
from collie.report.markdown import md_text
from tests.conftest import ROOT, run_cli

V1_CAMPAIGN = ROOT / "tests" / "fixtures" / "cases" / "v1-campaign"


def _report(folder: Path, fmt: str, tmp_path: Path) -> Path:
    out = tmp_path / f"report.{fmt}"
    r = run_cli("report", str(folder), "--format", fmt, "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


def _journal(folder: Path) -> list[dict[str, Any]]:
    """The journal's rows, the last of each trial, read without collie."""
    last: dict[int, dict[str, Any]] = {}
    for line in (folder / "trials.jsonl").read_text().splitlines():
        row = json.loads(line)
        last[row["trial"]] = row
    return [last[n] for n in sorted(last)]


def test_the_csv_read_back_by_pandas_equals_the_journal(campaign: Path, tmp_path: Path) -> None:
    frame = read_trials_csv(_report(campaign, "csv", tmp_path))
    rows = _journal(campaign)
    assert list(frame.columns) == list(TRIAL_COLUMNS)
    assert len(frame) == len(rows) and len(rows) > 150
    for got, row in zip(frame.to_dict(orient="records"), rows, strict=True):
        assert got["trial"] == row["trial"] and got["phase"] == row["phase"] and got["key"] == row["key"]
        assert got["status"] == row["status"] and got["time"] == row["time"]
        assert got["reason"] == row.get("reason", "")
        assert json.loads(got["point"]) == row["point"]
        verdict, result = row.get("verdict"), row.get("result")
        if verdict is None:
            assert pd.isna(got["anomalous"]) and got["signature"] == "" and pd.isna(got["throughput"])
        else:
            assert got["anomalous"] == verdict["anomalous"] and got["signature"] == verdict["signature"]
            assert got["score"] == verdict["score"] and got["throughput"] == verdict["metrics"]["throughput"]
        if result is None:
            assert pd.isna(got["bps"]) and pd.isna(got["duration_s"]) and pd.isna(got["engine_bound"])
        else:
            assert got["engine_bound"] == result["engine_bound"]
            assert got["bps"] == pytest.approx(sum(f["bps"] for f in result["flows"]), rel=1e-15)
            assert got["pps"] == pytest.approx(sum(f["pps"] for f in result["flows"]), rel=1e-15)
            assert got["lat_p99_us"] == max(f["lat_p99_us"] for f in result["flows"])
            assert got["duration_s"] == result["duration_s"]
    assert frame["anomalous"].sum() > 0  # the campaign found anomalies: the column is not all empty


def test_junit_read_back_has_one_failed_case_per_anomaly(campaign: Path, tmp_path: Path) -> None:
    xml = JUnitXml.fromfile(str(_report(campaign, "junit", tmp_path)))
    suites = {s.name: s for s in xml}
    folders = sorted(p.name for p in (campaign / "anomalies").iterdir())
    cases = list(suites["collie.anomalies"])
    assert [c.name.split(" ")[0] for c in cases] == folders
    for case in cases:
        (failure,) = case.result
        assert isinstance(failure, Failure)
        signature = case.name.split("[", 1)[1].rstrip("]")
        assert failure.type == signature
        # the symptom and its magnitude (a fraction's threshold, an event rate's limit)
        assert failure.message and ("threshold" in failure.message or "x the limit of" in failure.message)
        assert "replay: collie replay " in failure.text and "MFS: " in failure.text
    assert suites["collie.anomalies"].failures == len(folders)


def _case_hosts(case_toml: str) -> set[str]:
    """The hosts a case's workload runs on: both ends of its flows (one host for a loopback alone)."""
    return {end["host"] for f in tomllib.loads(case_toml)["flows"] for end in (f["client"], f["server"])}


def _check(value: Any, kind: Any, where: str) -> None:
    assert isinstance(value, kind) and not (isinstance(value, bool) and bool not in (kind if isinstance(
        kind, tuple) else (kind,))), f"{where}: {value!r} is not {kind}"


OPTIONAL_NUMBER = (int, float, type(None))


def test_json_follows_its_documented_schema(campaign: Path, tmp_path: Path) -> None:
    doc = json.loads(_report(campaign, "json", tmp_path).read_text())
    assert doc["schema"] == {"name": "collie-report", "version": 1}
    assert set(doc) == {"schema", "campaign", "summary", "trials", "anomalies", "warnings"}
    c = doc["campaign"]
    for key, kind in {"folder": str, "target": str, "seed": int, "budget": int, "preset": str, "strategy": str,
                      "created": str, "simulated": bool}.items():
        _check(c[key], kind, f"campaign.{key}")
    assert set(c["fingerprint"]) >= {"nic_model", "firmware", "driver", "kernel", "line_rate_bps", "hosts"}
    assert set(doc["summary"]) == {"trials", "experiments", "anomalous", "pruned", "failed", "engine_bound",
                                   "anomalies"}
    assert doc["summary"]["engine_bound"] == 0  # a campaign on sim: the simulator is never engine-bound
    assert doc["summary"]["anomalies"] == len(doc["anomalies"]) == len(list((campaign / "anomalies").iterdir()))
    assert len(doc["trials"]) == doc["summary"]["trials"] == len(_journal(campaign))
    for row in doc["trials"]:
        assert list(row) == list(TRIAL_COLUMNS)
        _check(row["trial"], int, "trial")
        _check(row["anomalous"], (bool, type(None)), "anomalous")
        _check(row["engine_bound"], (bool, type(None)), "engine_bound")
        for k in ("score", "throughput", "bps", "pps", "msg_rate", "lat_p99_us", "duration_s"):
            _check(row[k], OPTIONAL_NUMBER, k)
    for a in doc["anomalies"]:
        assert set(a) == {"id", "signature", "leading", "confirmed", "symptom", "magnitude", "symptom_text", "mfs",
                          "case", "found_at", "throughput", "replay", "target", "hosts", "perftest", "evidence_of",
                          "headline", "symptom_size", "magnitude_text", "found_trial", "hits", "further_hits"}
        _check(a["magnitude"], (int, float), "magnitude")
        assert a["symptom"]["kind"] in SYMPTOM_ORDER
        assert set(a["symptom"]) == {"kind", "host", "end", "value", "threshold", "counter", "estimate", "source",
                                     "read_on", "link"}
        assert a["leading"] == a["signature"].split("+")[0] or a["evidence_of"] == "case"
        assert a["mfs"] is None or set(a["mfs"]) == {"text", "words", "conditions"}  # None: not minimized
        assert set(a["case"]) == {"key", "name", "flows", "toml"}
        assert a["replay"].startswith("collie replay ") and a["id"] in a["replay"]
        assert set(a["target"]) == {"spec", "fingerprint"}
        assert set(a["hosts"]) == _case_hosts(a["case"]["toml"])  # both ends: every host the case runs on
        for ev in a["hosts"].values():
            assert ev["end"] in ("sender", "receiver") and ev["moved"]
            assert all(set(m) == {"counter", "delta", "unit", "source", "headline"} and m["delta"] != 0
                       for m in ev["moved"])
        p = a["perftest"]
        assert set(p) in ({"lacks"}, {"tool", "server_host", "server", "client_host", "client"})


def test_markdown_holds_what_a_vendor_bug_report_needs(campaign: Path, tmp_path: Path) -> None:
    text = _report(campaign, "md", tmp_path).read_text()
    assert "## Environment" in text and "| firmware | " in text and "| kernel | " in text
    for folder in sorted((campaign / "anomalies").iterdir()):
        section = text.split(f"## {folder.name}", 1)[1].split("\n## ", 1)[0]
        if (folder / "mfs.json").exists():
            mfs = json.loads((folder / "mfs.json").read_text())["text"]
            assert f"`{mfs}`" in section  # the MFS, in words and as conditions
        else:  # saved as found when the budget ran out
            assert "not minimized" in section
        assert f"collie replay {folder} --target sim" in section
        assert "```toml" in section and "**Counters that moved:**" in section
        assert section.count("On host ") == len(_case_hosts((folder / "case.toml").read_text()))
        assert ("ib_" in section and "--report_gbits" in section) or "cannot express this case" in section


def test_an_older_campaign_folder_still_renders(tmp_path: Path) -> None:
    # written before case records had a format and a target, and with no journal kept
    for fmt in ("html", "md", "csv", "json", "junit"):
        out = _report(V1_CAMPAIGN, fmt, tmp_path)
        assert out.stat().st_size > 0
    doc = json.loads((tmp_path / "report.json").read_text())
    (a,) = doc["anomalies"]
    assert a["id"] == "A003-pause" and a["evidence_of"] == "original" and a["target"]["spec"] == "sim:cx6-200g-amd"


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_report_of_a_campaign_being_written_leaves_it_as_it_is(campaign: Path, tmp_path: Path) -> None:
    folder = tmp_path / "running"
    shutil.copytree(campaign, folder)
    with open(folder / "trials.jsonl", "a") as fh:  # the campaign is writing its next row
        fh.write('{"key":"aa6f334f90917310","phase":"explore","po')
    before = _digest(folder)
    r = run_cli("report", str(folder), "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert "incomplete" in r.stderr and "leaves it out" in r.stderr
    assert len(read_trials_csv(io.StringIO(r.stdout))) == len(_journal(campaign))
    assert _digest(folder) == before


@pytest.mark.parametrize("args, says", [
    (["{missing}"], "does not exist"),
    (["{tmp}"], "is not a campaign folder"),
    (["{campaign}", "-o", "{file}/report.html"], "does not exist"),
    (["{campaign}", "-o", "{tmp}"], "is a folder"),
    ([], "give the campaign folder"),
    (["{campaign}", "--compare", "{campaign}", "{campaign}"], "not both"),
    (["--compare", "{campaign}", "{campaign}", "--format", "csv"], "--compare writes"),
])
def test_user_mistakes_are_one_sentence_and_exit_2(campaign: Path, tmp_path: Path, args: list[str],
                                                   says: str) -> None:
    (tmp_path / "file").write_text("x")
    values = {"missing": tmp_path / "nope", "tmp": tmp_path, "campaign": campaign, "file": tmp_path / "file"}
    r = run_cli("report", *(a.format(**values) for a in args))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collie: error: ") and says in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_an_unknown_format_is_a_usage_error(campaign: Path) -> None:
    r = run_cli("report", str(campaign), "--format", "pdf")
    assert r.returncode == 2 and "'pdf' is not one of" in r.stderr and "Traceback" not in r.stderr


def test_the_format_follows_the_output_suffix(campaign: Path, tmp_path: Path) -> None:
    r = run_cli("report", str(campaign), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_junit_has_a_test_case_per_known_case_replayed(tmp_path: Path) -> None:
    folder = make_campaign(tmp_path / "corpus", 1, 2, "--corpus", str(ROOT / "workloads" / "corpus"))
    xml = JUnitXml.fromfile(str(_report(folder, "junit", tmp_path)))
    known = next(s for s in xml if s.name == "collie.known")
    replays = [r for r in _journal(folder) if r["phase"] == "replay"]
    names = sorted(p.name for p in (ROOT / "workloads" / "corpus").iterdir() if p.is_dir())
    assert sorted(c.name.split(" ")[2] for c in known) == names and len(replays) == len(names) == 18
    reproduced = sum(r["verdict"]["anomalous"] for r in replays)
    assert known.failures == reproduced > 0  # a known case that still reproduces fails


def test_markdown_escapes_what_a_campaign_names(campaign: Path, tmp_path: Path) -> None:
    text = _report(hostile_copy(campaign, tmp_path / "hostile"), "md", tmp_path).read_text()
    assert SCRIPT not in text.replace(f'name = "{SCRIPT}"', "").replace(f"`{SCRIPT}`", "")
    assert "\\<script\\>alert(1)\\</script\\>" in text  # the CPU, as text


STORED = ROOT / "tests" / "fixtures" / "campaigns" / "main-474e322"


def test_a_stored_campaign_folder_of_an_earlier_collie_renders_in_every_format(tmp_path: Path) -> None:
    for fmt in ("html", "md", "csv", "json", "junit"):
        assert _report(STORED, fmt, tmp_path).stat().st_size > 0
    doc = json.loads((tmp_path / "report.json").read_text())
    assert len(doc["trials"]) == len(_journal(STORED))
    by_id = {a["id"]: a for a in doc["anomalies"]}
    assert sorted(by_id) == ["A001-pause", "A002-low-throughput"]
    assert by_id["A001-pause"]["mfs"]["text"] == "loopback == True and incast == True"
    assert by_id["A002-low-throughput"]["mfs"] is None  # the budget ran out before it was minimized
    assert "not minimized" in (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    assert html.count('<section class="card anomaly"') == 2


def test_a_simulated_campaign_says_so_in_every_format(campaign: Path, tmp_path: Path) -> None:
    html = _report(campaign, "html", tmp_path).read_text()
    banner = html.split('id="simulated">', 1)[1]
    assert banner.startswith("Simulated results") and html.index('id="simulated"') < html.index("<h1>")
    md = _report(campaign, "md", tmp_path).read_text().splitlines()
    assert md[2].startswith("> **Simulated results") and "(profile cx6-200g)" in md[2]
    doc = json.loads(_report(campaign, "json", tmp_path).read_text())
    assert doc["campaign"]["simulated"] is True and doc["campaign"]["machines"] is None
    xml = JUnitXml.fromfile(str(_report(campaign, "junit", tmp_path)))
    suite = next(iter(xml))
    assert {p.name: p.value for p in suite.properties()}["simulated"] == "yes"
    messages = [r.message for case in suite for r in case.result if isinstance(r, Failure)]
    assert messages and all(m.startswith("simulated: ") for m in messages)


def test_no_report_speaks_of_energy(campaign: Path, tmp_path: Path) -> None:
    for fmt in ("html", "md", "json", "junit"):
        assert "energy" not in _report(campaign, fmt, tmp_path).read_text().lower(), fmt


def test_the_table_at_the_top_and_each_card_give_the_same_trial_the_journal_found_it_in(campaign: Path,
                                                                                      tmp_path: Path) -> None:
    doc = json.loads(_report(campaign, "json", tmp_path).read_text())
    budgeted = [row["trial"] for row in _journal(campaign)
                if row["phase"] in ("explore", "confirm", "minimize") and row["status"] != "PRUNED"]
    md = _report(campaign, "md", tmp_path).read_text()
    table = md.split("## Anomalies at a glance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| [")]
    assert len(rows) == len(doc["anomalies"])
    for a, row in zip(doc["anomalies"], rows, strict=True):
        assert a["found_trial"] == budgeted[a["found_at"] - 1] and a["hits"] == 1 + len(a["further_hits"])
        assert row.startswith(f"| [{a['id']}](#") and row.endswith(f" | {a['found_trial']} | 1 |")
        assert f"{md_text(a['symptom_size'])} | {md_text(a['magnitude_text'])} |" in row
        section = md.split(f"## {a['id']}: ", 1)[1].split("\n## ", 1)[0]
        assert f"found at trial {a['found_trial']} (budgeted experiment {a['found_at']})" in section
    html = _report(campaign, "html", tmp_path).read_text()
    assert "found at experiment" not in html and "found at experiment" not in md


def test_the_counter_a_symptom_rests_on_is_marked_and_every_counter_has_its_unit(campaign: Path,
                                                                                  tmp_path: Path) -> None:
    doc = json.loads(_report(campaign, "json", tmp_path).read_text())
    for a in doc["anomalies"]:
        marked = [(h, m["counter"]) for h, ev in a["hosts"].items() for m in ev["moved"] if m["headline"]]
        s = a["symptom"]
        assert marked == ([(s["read_on"] or s["host"], s["counter"])] if s["counter"] else [])
        assert all(m["unit"] for ev in a["hosts"].values() for m in ev["moved"])
    md = _report(campaign, "md", tmp_path).read_text()
    pause = next(a for a in doc["anomalies"] if a["symptom"]["kind"] == "pause")
    assert f"**`{pause['symptom']['counter']}`** (the symptom's) |" in md


@pytest.mark.parametrize("simulated", [False, True])
def test_a_remote_campaign_names_the_host_device_and_address_of_each_role(campaign: Path, tmp_path: Path,
                                                                        simulated: bool) -> None:
    folder = remote_copy(campaign, tmp_path / "remote", simulated=simulated)
    doc = json.loads(_report(folder, "json", tmp_path).read_text())
    assert doc["campaign"]["simulated"] is simulated
    assert doc["campaign"]["machines"]["b"] == {"host": "node-b", "address": "10.0.0.2", "device": "mlx5_1",
                                                "target": "verbs:mlx5_1:1:3", "port": 1, "gid_index": 3,
                                                "gid": "fe80::b"}
    md = _report(folder, "md", tmp_path).read_text()
    assert ("on every host of the inventory" in md) is simulated
    assert "| b | `node-b` | 10.0.0.2 | `verbs:mlx5_1:1:3` | mlx5\\_1 | 1 | 3 | fe80::b |" in md
    for a in doc["anomalies"]:
        host = a["symptom"]["host"]
        name, _, target, _ = REMOTE_HOSTS[host]
        port = target.split(":")[1] + ":" + target.split(":")[2]
        assert a["headline"].endswith(f" on {name} ({port}, {a['symptom']['end']})")
        assert a["hosts"][host]["name"] == name
        assert f"## {a['id']}: {a['headline'].replace('_', chr(92) + '_')}" in md
        p = a["perftest"]
        if "lacks" in p:
            continue
        server, client = shlex.split(p["server"]), shlex.split(p["client"])
        served = REMOTE_HOSTS[p["server_host"]][2].split(":")
        assert server[1:7] == ["-d", served[1], "-i", served[2], "-x", served[3]]
        assert client[-1] == REMOTE_HOSTS[p["server_host"]][1].split("@")[1].split(":")[0]
    html = _report(folder, "html", tmp_path).read_text()
    assert ('id="simulated"' in html) is simulated
    on_b = [a for a in doc["anomalies"] if "b" in _case_hosts(a["case"]["toml"])]
    assert html.count("<h3>node-b (mlx5_1:1, ") == len(on_b) and on_b


def test_an_anomalys_further_hits_show_in_every_format(campaign: Path, tmp_path: Path) -> None:
    folder = tmp_path / "hits"
    shutil.copytree(campaign, folder)
    case = sorted((folder / "anomalies").iterdir())[0]
    evidence = json.loads((case / "evidence.json").read_text())
    evidence["hits"] = [{"trial": 120, "kind": "inside", "signature": evidence["signature"], "experiments": 0},
                        {"trial": 305, "kind": "nested", "signature": evidence["signature"], "experiments": 31}]
    (case / "evidence.json").write_text(json.dumps(evidence))
    html = _report(folder, "html", tmp_path).read_text()
    assert "Met again</b> (2 further hits): trial 120: inside its minimal feature set; trial 305: minimized to " \
           "the same region (after 31 experiments)" in html
    md = _report(folder, "md", tmp_path).read_text()
    assert "**Met again** (2 further hits): trial 120" in md
    doc = json.loads(_report(folder, "json", tmp_path).read_text())
    first = next(a for a in doc["anomalies"] if a["id"] == case.name)
    assert first["hits"] == 3 and [h["trial"] for h in first["further_hits"]] == [120, 305]


def _rnr_copy(dst: Path) -> Path:
    """A copy of :data:`STORED` whose minimized anomaly is receiver starvation: 12,000 RNR NAKs/s that host a,
    the requester, received from b, whose receive queue ran dry."""
    shutil.copytree(STORED, dst)
    path = dst / "anomalies" / "A001-pause" / "evidence.json"
    evidence = json.loads(path.read_text())
    verdict = evidence["case"]["verdict"]
    verdict["symptoms"] = [{"kind": "rnr", "host": "b", "end": "receiver", "value": 12_000.0, "threshold": 10.0,
                            "counter": "rnr_nak_retry_err", "estimate": False, "source": "hw", "read_on": "a"}]
    verdict["score"] = 1200.0
    verdict["evidence"]["hosts"]["a"]["counters"]["rnr_nak_retry_err"]["delta"] = 60_000.0  # over 5 s
    for record in (evidence, evidence["case"], verdict):
        record["signature"] = "rnr@receiver"
    path.write_text(json.dumps(evidence), encoding="utf-8")
    return dst


def test_a_receiver_starvation_anomaly_renders_in_every_format(tmp_path: Path) -> None:
    folder = _rnr_copy(tmp_path / "rnr")
    size = "12,000 RNR NAKs/s of rnr_nak_retry_err"
    text = f"receiver not ready on host b (receiver): {size} counted on host a, 1200.0x the limit of 10/s"
    doc = json.loads(_report(folder, "json", tmp_path).read_text())
    a = next(x for x in doc["anomalies"] if x["id"] == "A001-pause")
    assert (a["signature"], a["leading"], a["symptom"]["kind"]) == ("rnr@receiver", "rnr@receiver", "rnr")
    assert (a["headline"], a["symptom_size"], a["symptom_text"]) == ("receiver not ready on host b (receiver)",
                                                                    size, text)
    # the counter it rests on is marked where it was read: on the requester
    assert [(h, m["counter"]) for h, ev in a["hosts"].items() for m in ev["moved"] if m["headline"]] == \
        [("a", "rnr_nak_retry_err")]
    md = _report(folder, "md", tmp_path).read_text()
    assert "## A001-pause: receiver not ready on host b (receiver)" in md
    escaped = {size: size.replace("_", "\\_"), text: text.replace("_", "\\_")}
    assert f"| host b (receiver) | receiver not ready | {escaped[size]} | 1.2e+03x its threshold |" in md
    assert f"**Symptom:** {escaped[text]}." in md
    html = _report(folder, "html", tmp_path).read_text()
    assert "receiver not ready" in html and '<tr class="headline"><td><code>rnr_nak_retry_err</code>' in html
    xml = JUnitXml.fromfile(str(_report(folder, "junit", tmp_path)))
    messages = [r.message for case in next(iter(xml)) for r in case.result if isinstance(r, Failure)]
    assert f"simulated: {text}" in messages
    r = run_cli("report", "--compare", str(STORED), str(folder), "--format", "md")
    assert r.returncode == 0, r.stderr
    new = r.stdout.split("## New anomalies", 1)[1].split("## Not found again", 1)[0]
    assert f"- A001-pause `rnr@receiver`: {escaped[text]}; MFS" in new
