"""Test helpers for reports: campaign folders written by the current collie, and one with hostile names.

:func:`make_campaign` runs the real ``collie campaign`` on the simulator (a second or two); :func:`hostile_copy`
copies a campaign folder and renames what a user's inventory, workloads or driver could name freely (a case's
workload name, a host in the evidence, a counter, a fingerprint detail) to :data:`SCRIPT`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import tomli_w

from collie.tomlio import read_toml
from tests.conftest import run_cli

SCRIPT = "<script>alert(1)</script>"


def make_campaign(out: Path, budget: int = 150, seed: int = 2, *options: str) -> Path:
    """A campaign folder written by ``collie campaign`` on the simulator."""
    r = run_cli("campaign", "--budget", str(budget), "--seed", str(seed), "--out", str(out), *options, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def hostile_copy(src: Path, dst: Path) -> Path:
    """A copy of campaign ``src`` whose first anomaly's workload, its receiving host, one of its counters and
    the target's CPU are named :data:`SCRIPT`."""
    shutil.copytree(src, dst)
    config = read_toml(dst / "campaign.toml")
    config["target_info"]["details"]["cpu"] = SCRIPT
    (dst / "campaign.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    folder = sorted((dst / "anomalies").iterdir())[0]
    case = read_toml(folder / "case.toml")
    case["name"] = SCRIPT
    (folder / "case.toml").write_text(tomli_w.dumps(case), encoding="utf-8")
    evidence = json.loads((folder / "evidence.json").read_text())
    hosts = evidence["case"]["verdict"]["evidence"]["hosts"]
    receiver = next(h for h, ev in hosts.items() if ev["end"] == "receiver")
    ev = hosts.pop(receiver)
    name = next(iter(ev["counters"]))
    ev["counters"][SCRIPT] = {"delta": 12345.0, "source": SCRIPT}
    ev["counters"][name]["delta"] = 1.0
    hosts[SCRIPT] = ev
    (folder / "evidence.json").write_text(json.dumps(evidence), encoding="utf-8")
    return dst




__all__ = ["SCRIPT", "hostile_copy", "make_campaign"]
