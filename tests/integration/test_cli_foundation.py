"""The CLI end to end, as a user runs it: every bad input is one sentence and exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli


def test_version_and_help() -> None:
    out = run_cli("--version")
    assert out.returncode == 0 and "collie, version" in out.stdout
    out = run_cli("--help")
    assert out.returncode == 0 and "space" in out.stdout and "run" in out.stdout


@pytest.mark.parametrize("fmt", ["table", "json", "jsonl", "csv"])
def test_space_show_every_format(fmt: str) -> None:
    out = run_cli("space", "show", "--format", fmt)
    assert out.returncode == 0, out.stderr
    assert "qps" in out.stdout
    if fmt == "json":
        data = json.loads(out.stdout)
        assert {r["parameter"] for r in data["parameters"]} >= {"qps", "sizes", "op"}
        assert "ud_msg_le_mtu" in {c["constraint"] for c in data["constraints"]}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_run_every_example(path: Path) -> None:
    out = run_cli("run", "--workload", str(path), "--duration", "1")
    assert out.returncode == 0, out.stderr
    assert "Gb/s" in out.stdout
    data = json.loads(run_cli("run", "--workload", str(path), "--format", "json").stdout)
    assert len(data["flows"]) == len(data["workload"]["flows"])
    assert all(f["bps"] > 0 for f in data["flows"])
    assert "truth" not in data


def _write(tmp_path: Path, text: str, name: str = "w.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[[flows]\n", "malformed TOML"),
        ('[[flows]]\nclient = "a"\nserver = "b"\ncolour = 1\n', "unknown field 'colour'"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nqps = -3\n', "qps: -3 is out of range"),
        ('[[flows]]\nclient = "a"\nserver = "b"\ntransport = "UD"\nopcode = "READ"\nsizes = [64]\n',
         "UD does not support READ"),
        ('[[flows]]\nclient = "a"\nserver = "b"\ntransport = "UD"\nopcode = "SEND"\nsizes = ["8K"]\n',
         "UD messages must fit in one MTU"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nbatch = 64\nsq_depth = 8\n', "sq_depth 8 is below batch 64"),
        # sizes read as people write them, in units; a message lies in one MR (msg_fits_mr) whatever its SGEs, so
        # more SGEs are no way out and the advice names the MR size alone
        ('[[flows]]\nclient = "a"\nserver = "b"\nsizes = ["4M"]\nmr_size = "1M"\n',
         "a message of 4 MiB does not fit an MR of 1 MiB (a message's range, all its SGEs, lies in one MR); "
         "use mr_size >= 4 MiB\n"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nsizes = ["4M"]\nmr_size = "1M"\nsges = 4\n',
         "a message of 4 MiB does not fit an MR of 1 MiB (a message's range, all its SGEs, lies in one MR); "
         "use mr_size >= 4 MiB\n"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nmrs = 10000\nmr_size = "1000G"\n',
         "host a would pin 9.54 PiB of MRs; allowed is at most 64 GiB"),
    ],
)
def test_run_bad_workloads(tmp_path: Path, text: str, fragment: str) -> None:
    out = run_cli("run", "--workload", _write(tmp_path, text))
    assert out.returncode == 2
    assert fragment in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_run_missing_file_unknown_target_and_bad_space(tmp_path: Path) -> None:
    out = run_cli("run", "--workload", str(tmp_path / "missing.toml"))
    assert out.returncode == 2 and "no such file" in out.stderr
    out = run_cli("run", "--target", "nic9", "--workload", str(EXAMPLES / "rc-write-64k.toml"))
    assert out.returncode == 2 and "unknown target 'nic9'" in out.stderr
    out = run_cli("space", "show", "--space", _write(tmp_path, "dimension = 1\n", "s.toml"))
    assert out.returncode == 2 and "expected a list" in out.stderr
    out = run_cli("run", "--workload", str(EXAMPLES / "rc-write-64k.toml"), "--format", "xml")
    assert out.returncode == 2 and "Traceback" not in out.stderr
