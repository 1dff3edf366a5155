"""Test helpers for reports: campaign folders written by the current collie, one with hostile names, one
recorded as a remote campaign, and one on a verbs target some of whose runs were engine-bound.

:func:`make_campaign` runs the real ``collie campaign`` on the simulator (a second or two); :func:`hostile_copy`
copies a campaign folder and renames what a user's inventory, workloads or driver could name freely (a case's
workload name, a host in the evidence, a counter, a fingerprint detail) to :data:`SCRIPT`; :func:`remote_copy`
copies one and records its target as a ``remote:`` inventory of two verbs hosts, the way a remote campaign's
fingerprint records them (``a.host``, ``a.address``, ``a.target``, ``a.gid``, ...); :func:`engine_bound_campaign`
writes a small campaign through collie's own store whose runs are engine-bound where asked (a campaign on ``sim``
never has one).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomli_w

from collie.storage.campaign import CampaignStore
from collie.storage.records import CampaignConfig, Phase, TrialRecord, TrialState, TrialVerdict
from collie.targets.base import FlowResult, HostResult, RunResult, TargetInfo
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


#: The hosts :func:`remote_copy` records: role -> (inventory host, SSH endpoint, the host's target, GID).
REMOTE_HOSTS = {"a": ("node-a", "lab@10.0.0.1:22", "verbs:mlx5_0:1:3", "fe80::a"),
                "b": ("node-b", "lab@10.0.0.2:2222", "verbs:mlx5_1:1:3", "fe80::b")}


def remote_fingerprint(info: dict[str, Any], inventory: str, simulated: bool) -> dict[str, Any]:
    """``info`` (a recorded fingerprint) as a remote campaign on :data:`REMOTE_HOSTS` records it."""
    details: dict[str, str] = {}
    for role, (host, endpoint, target, gid) in REMOTE_HOSTS.items():
        device, port, gid_index = target.split(":")[1:]
        details.update({f"{role}.host": host, f"{role}.address": endpoint, f"{role}.target": target,
                        f"{role}.device": device, f"{role}.port": port, f"{role}.gid_index": gid_index,
                        f"{role}.gid": gid, f"{role}.nic_model": info["nic_model"]})
    if simulated:
        details["simulated"] = "yes"
    return {**info, "name": inventory, "kind": "remote", "hosts": list(REMOTE_HOSTS), "details": details}


def remote_copy(src: Path, dst: Path, *, simulated: bool = False) -> Path:
    """A copy of campaign ``src`` recorded as run on ``remote:hosts.toml`` over :data:`REMOTE_HOSTS` (every
    host on the simulator when ``simulated``)."""
    shutil.copytree(src, dst)
    inventory = f"remote:{dst / 'hosts.toml'}"
    config = read_toml(dst / "campaign.toml")
    config["target"] = inventory
    config["target_info"] = remote_fingerprint(config["target_info"], inventory, simulated)
    (dst / "campaign.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    for folder in (dst / "anomalies").iterdir():
        evidence = json.loads((folder / "evidence.json").read_text())
        evidence["target"] = {"spec": inventory, "fingerprint": config["target_info"]}
        (folder / "evidence.json").write_text(json.dumps(evidence), encoding="utf-8")
    return dst


#: The verbs target :func:`engine_bound_campaign` records.
RXE = TargetInfo("verbs:rxe0", "verbs", "rxe", "", "rxe", "6.1.0", "rxe", 10e9, 0.0, ("a", "b"))


def engine_bound_campaign(out: Path, engine_bound: Sequence[bool], *, target: TargetInfo = RXE,
                          phase: Phase = Phase.EXPLORE) -> Path:
    """A campaign folder on ``target`` written through :class:`CampaignStore`: one calibration run, then one
    run of ``phase`` per flag of ``engine_bound`` (engine-bound where the flag is true, and then not judged, as the
    oracle leaves such a run; clean otherwise), then one pruned trial (no run)."""
    store = CampaignStore.prepare(out, CampaignConfig(target=target.name, seed=1, budget=len(engine_bound) + 1,
                                                      preset="quick", strategy="anneal"))
    store.begin(target)

    def result(key: str, bound: bool) -> RunResult:
        return RunResult(key, target.name, 1.0, 0.1, (FlowResult(0, "a", "b", 2e9 if bound else 9e9, 4e6, 4e6, 2.0,
                                                                 3.0, 4.0),),
                         (HostResult("a", 9e9, 0.0, 4e6, 0.0), HostResult("b", 0.0, 9e9, 0.0, 4e6)),
                         engine_bound=bound)

    store.append(TrialRecord(1, Phase.CALIBRATE, "cal", {}, TrialState.COMPLETE, 1.0, result=result("cal", False)))
    for i, bound in enumerate(engine_bound, start=2):
        verdict = TrialVerdict(False, "", 0.0, {"throughput": 0.2 if bound else 0.95})
        point = {"qps": i, "op": "RC_WRITE"} if phase is Phase.EXPLORE else {}
        store.append(TrialRecord(i, phase, f"k{i}", point, TrialState.COMPLETE, float(i),
                                 result=result(f"k{i}", bound), verdict=verdict))
    n = len(engine_bound) + 2
    store.append(TrialRecord(n, Phase.EXPLORE, f"k{n}", {"qps": 99999}, TrialState.PRUNED, float(n),
                             reason="qps 99999 > max_qp"))
    store.close()
    return out


__all__ = ["REMOTE_HOSTS", "RXE", "SCRIPT", "engine_bound_campaign", "hostile_copy", "make_campaign", "remote_copy",
           "remote_fingerprint"]
