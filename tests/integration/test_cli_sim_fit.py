"""``collie sim fit LOG... -o OUT.toml`` end to end: a published sweep fitted, the profile written, loaded and run
as ``--target sim:OUT.toml``; and what a user can get wrong, each one sentence naming the file and exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from collie.targets.sim import load_profile
from tests.conftest import EXAMPLES, ROOT, run_cli

SWEEPS = ROOT / "tests" / "fixtures" / "sweeps"
SEND = next((SWEEPS / "cx6-200g").glob("04-*"))
WRITE = next((SWEEPS / "cx6-200g").glob("01-*"))


def _one_sentence(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert p.returncode == 2, (p.stdout, p.stderr)
    err = p.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


def test_fit_writes_a_profile_that_runs(tmp_path: Path) -> None:
    out = tmp_path / "my-nic.toml"
    p = run_cli("sim", "fit", str(SEND), "-o", str(out), "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["within"]["rows"] == 23 and doc["within"]["after"] >= 18
    assert {c["name"] for c in doc["fitted"]} == {"line_rate_gbps", "qp_wr_ns", "doorbell_ns"}
    assert len(doc["rows"]) == 23 and all(r["before"] and r["after"] for r in doc["rows"])
    profile = load_profile(str(out))
    assert profile.name == "my-nic" and profile.nic.line_rate_gbps > 200
    text = out.read_text()
    assert text.startswith(f"# Fitted by `collie sim fit` from {SEND.name} on base profile")
    assert "cx6-200g" in text.splitlines()[1] and "# Not determined by the sweep (kept from the base):" in text
    run = run_cli("run", "--target", f"sim:{out}", "--workload", str(EXAMPLES / "rc-write-64k.toml"))
    assert run.returncode == 0, run.stderr
    show = run_cli("sim", "show", str(out), "--format", "json")
    assert show.returncode == 0 and json.loads(show.stdout)["name"] == "my-nic"


def test_the_table_and_a_headerless_log(tmp_path: Path) -> None:
    out = tmp_path / "azure.toml"
    p = run_cli("sim", "fit", str(WRITE), "--verb", "WRITE", "--base", "cx6-200g", "--name", "azure-hdr",
                "-o", str(out))
    assert p.returncode == 0, p.stderr
    for word in ("published", "before", "after", "ratio", "line_rate_gbps", "msg_rate_mpps", "rows within 10%"):
        assert word in p.stdout
    assert load_profile(str(out)).name == "azure-hdr"


def test_output_exists_without_force(tmp_path: Path) -> None:
    out = tmp_path / "mine.toml"
    out.write_text("keep me")
    _one_sentence(run_cli("sim", "fit", str(SEND), "-o", str(out)), str(out), "--force")
    assert out.read_text() == "keep me"
    p = run_cli("sim", "fit", str(SEND), "-o", str(out), "--force", "--base", "rxe")
    assert p.returncode == 0, p.stderr
    assert load_profile(str(out)).dialect == "rxe"


def test_bad_input_is_one_sentence(tmp_path: Path) -> None:
    out = tmp_path / "out.toml"
    missing = tmp_path / "nope.txt"
    _one_sentence(run_cli("sim", "fit", str(missing), "-o", str(out)), str(missing), "no such file")
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 8)
    _one_sentence(run_cli("sim", "fit", str(garbage), "-o", str(out)), str(garbage), "not perftest output")
    nccl = next((ROOT / "tests" / "fixtures" / "nccl_tests").glob("01-*"))
    _one_sentence(run_cli("sim", "fit", str(nccl), "-o", str(out)), str(nccl))
    _one_sentence(run_cli("sim", "fit", str(WRITE), "-o", str(out)), str(WRITE), "no test title", "--verb")
    _one_sentence(run_cli("sim", "fit", str(SEND), "-o", str(out), "--base", "cx7-400g"),
                  "unknown simulator profile 'cx7-400g'")
    _one_sentence(run_cli("sim", "fit", str(SEND), "-o", str(out), "--name", "no spaces"), "--name")
    assert not out.exists()
