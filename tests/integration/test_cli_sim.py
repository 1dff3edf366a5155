"""``collie sim profiles`` / ``collie sim show`` / ``collie sim quirks`` end to end, and a malformed
profile given to ``sim show`` and to ``run --target sim:PATH.toml``: one sentence naming the field and line,
exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES, run_cli

BAD = '''name = "bad"
dialect = "mlx5"

[nic]
model = "x"
driver = "mlx5"
line_rate_gbps = "fast"
msg_rate_mpps = 100
'''


def test_sim_profiles_lists_the_builtins() -> None:
    p = run_cli("sim", "profiles", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["name"] for r in rows] == ["cx6-200g", "cx6-200g-amd", "fleet8-cx6", "fleet8-cx6-2port",
                                        "fleet8-cx6-fabric", "fleet8-cx6-faults", "ideal", "p2100g-100g", "rxe"]
    assert {r["name"]: r["quirks"] for r in rows}["cx6-200g-amd"] == 13
    table = run_cli("sim", "profiles")
    assert table.returncode == 0 and "ConnectX-6" in table.stdout


def test_sim_show_a_builtin_and_a_file(tmp_path: Path) -> None:
    p = run_cli("sim", "show", "cx6-200g", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["dialect"] == "mlx5" and len(doc["quirks"]) == 10
    assert {q["anomaly"] for q in doc["quirks"]} == {1, 2, 3, 4, 5, 6, 7, 8, 10, 13}
    csv = run_cli("sim", "show", "p2100g-100g", "--format", "csv")
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("profile,state,id")
    assert len(csv.stdout.splitlines()) == 6
    table = run_cli("sim", "show", "ideal")
    assert table.returncode == 0 and "no quirks" in table.stdout
    src = Path(__file__).resolve().parents[2] / "collie/targets/sim/profiles/cx6-200g-amd.toml"
    mine = tmp_path / "ro-on.toml"
    mine.write_text(src.read_text().replace("relaxed_ordering = false", "relaxed_ordering = true"))
    p = run_cli("sim", "show", str(mine), "--format", "json")
    assert p.returncode == 0, p.stderr
    states = {q["id"]: q["state"] for q in json.loads(p.stdout)["quirks"]}
    assert states["f09-bi-sge-mix-noro"].startswith("inactive: needs pcie.relaxed_ordering = false")
    quirks = run_cli("sim", "quirks", "--format", "json")
    assert quirks.returncode == 0 and len(json.loads(quirks.stdout)) == 18


def test_malformed_profile_exits_2_with_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD)
    for args in (("sim", "show", str(bad)),
                 ("run", "--target", f"sim:{bad}", "--workload", str(EXAMPLES / "rc-write-64k.toml"))):
        p = run_cli(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        err = p.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert f"{bad}:7: nic.line_rate_gbps" in err


def test_unknown_profile_exits_2() -> None:
    p = run_cli("sim", "show", "cx7-400g")
    assert p.returncode == 2 and "unknown simulator profile 'cx7-400g'" in p.stderr
    assert "cx6-200g" in p.stderr
