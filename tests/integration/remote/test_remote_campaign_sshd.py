"""Whole campaigns on ``remote:`` hosts through real OpenSSH servers on 127.0.0.1 (tests/sshd_fixture.py): the
same anomalies as the local simulator, faults injected on purpose (a killed agent, a stopped sshd, a swapped host
key, a host that never answers, a controller killed with SIGKILL), hostile names that never reach a shell, and no
agent left running after any of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collie.campaign import Campaign
from collie.errors import TargetUnavailable
from collie.events import Event, TrialFinished
from collie.model.space import load_space
from collie.preset import load_preset
from collie.remote.launch import AGENT_COMMAND_LINE
from collie.remote.orchestrator import RemoteTarget
from collie.storage.campaign import CampaignStore
from collie.storage.records import CampaignConfig, TrialState
from tests.conftest import ROOT, run_cli
from tests.sshd_fixture import SshdFarm, alive, own_farm, ssh_home, sshd_farm, sshd_one, wait_gone

__all__ = ["ssh_home", "sshd_farm", "sshd_one"]  # fixtures

SEED = 5
BUDGET = 60
PRESET = "quick"


def agents_of(folder: Path) -> list[int]:
    """PIDs of live ``collie.agent`` processes started through the sshd servers under ``folder`` (their sessions
    carry ``COLLIE_TEST_LOG`` inside it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            if b"collie.agent" not in cmd:
                continue
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(b"COLLIE_TEST_LOG=" + str(folder).encode()) for e in env) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def no_agent_left(folder: Path) -> None:
    for pid in agents_of(folder):
        assert wait_gone(pid, 20), f"agent {pid} is still running after the test"


@pytest.fixture(autouse=True)
def nothing_left(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    """After every test of this module: no agent started through its sshd servers is still running."""
    yield
    folders = [tmp_path]
    if "sshd_farm" in request.fixturenames:
        folders.append(request.getfixturevalue("sshd_farm").servers[0].folder.parent)
    for folder in folders:
        no_agent_left(folder)


@pytest.fixture
def farm3(tmp_path: Path) -> Iterator[SshdFarm]:
    """Three sshd servers of this test's own (it may stop one)."""
    with own_farm(tmp_path / "sshd", 3) as farm:
        yield farm
    no_agent_left(tmp_path / "sshd")


def campaign_cli(target: str, out: Path, *extra: str, budget: int = BUDGET, timeout: float = 600
                 ) -> subprocess.CompletedProcess[str]:
    return run_cli("campaign", "--target", target, "--seed", str(SEED), "--budget", str(budget), "--preset", PRESET,
                   "--out", str(out), "--no-live", "--format", "json", *extra, timeout=timeout)


def anomalies(out: Path) -> dict[str, tuple[str, Any]]:
    """Anomaly id -> (signature, MFS) from a campaign folder's anomaly files; an anomaly saved as found when the
    budget ran out has no MFS (None) and its signature from its evidence."""
    found = {}
    for case in sorted((out / "anomalies").iterdir()):
        if (case / "mfs.json").exists():
            mfs = json.loads((case / "mfs.json").read_text())
            found[case.name] = (mfs["signature"], mfs)
        else:
            found[case.name] = (json.loads((case / "evidence.json").read_text())["signature"], None)
    return found


def journal(out: Path) -> list[dict[str, Any]]:
    """The finished trials, without what may differ between targets and runs (times, the target's name)."""
    rows = []
    for line in (out / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "RUNNING":
            continue
        r.pop("time", None)
        if r.get("result"):
            r["result"].pop("target", None)
        rows.append(r)
    return rows


def in_process(target: RemoteTarget, out: Path, on_trial: Callable[[TrialFinished], None], budget: int = BUDGET,
               resume: bool = False) -> Any:
    """A campaign run by the library, as ``collie campaign`` runs it (it enters and leaves ``target``), with
    ``on_trial`` called after each trial (where a test injects its fault)."""
    preset = load_preset(PRESET)
    config = CampaignConfig.new(target=target.spec, seed=SEED, budget=budget, preset=PRESET, strategy=preset.strategy)
    store = CampaignStore.prepare(out, config)

    def listen(event: Event) -> None:
        if isinstance(event, TrialFinished):
            on_trial(event)

    return Campaign(targets=[target], space=load_space(None), preset=preset, store=store, seed=SEED, budget=budget,
                    listener=listen, corpus=(), resume=resume).run()


def test_a_campaign_on_two_remote_sim_hosts_finds_what_the_local_simulator_finds(
        sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["node-a", "node-b", "node-c"])
    before = [len(s.commands()) for s in sshd_farm.servers]
    local = campaign_cli("sim:cx6-200g", tmp_path / "local")
    remote = campaign_cli(f"remote:{inventory}", tmp_path / "remote")
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    found = anomalies(tmp_path / "remote")
    assert found and found == anomalies(tmp_path / "local")
    assert journal(tmp_path / "remote") == journal(tmp_path / "local")  # every trial: same point, same numbers
    summary = json.loads(remote.stdout)
    assert summary["failed"] == 0 and summary["experiments"] == BUDGET
    config = (tmp_path / "remote" / "campaign.toml").read_text()
    assert f'target = "remote:{inventory}"' in config and 'kind = "remote"' in config
    assert '"a.host" = "node-a"' in config and '"b.host" = "node-b"' in config
    # one agent per placed host for the whole campaign (node-c is not placed), started with the fixed line
    assert [s.commands()[n:] for s, n in zip(sshd_farm.servers, before, strict=True)] == [
        [AGENT_COMMAND_LINE], [AGENT_COMMAND_LINE], []]
    # the other commands open the same target: run, and replay / minimize a case on the hosts it was found on
    case = sorted((tmp_path / "remote" / "anomalies").iterdir())[0]
    ran = run_cli("run", "--target", f"remote:{inventory}", "--workload", str(case / "case.toml"), "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["target"] == f"remote:{inventory}"
    replayed = run_cli("replay", str(case), "--runs", "2", "--format", "json")
    assert replayed.returncode == 1, replayed.stderr  # it reproduces there
    assert f"{case} was found on remote:{inventory}; running it there" in replayed.stderr
    minimized = run_cli("minimize", str(case), "--format", "json")
    assert minimized.returncode == 0, minimized.stderr
    no_agent_left(sshd_farm.servers[0].folder.parent)


HOSTILE = ["a;touch PWNED-1", "$(touch PWNED-2)", "`touch PWNED-3`", "q'\"uote", "new\nline; touch PWNED-4"]


def test_hostile_host_names_and_tags_never_reach_a_shell_in_a_campaign(sshd_farm: SshdFarm, ssh_home: Path,
                                                                     tmp_path: Path) -> None:
    names = [HOSTILE[0], HOSTILE[1], HOSTILE[4]]
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", names, tags=HOSTILE[2:4],
                                    extra_top="[place]\na = " + json.dumps(HOSTILE[1]) + "\nb = "
                                    + json.dumps("tag:" + HOSTILE[2]))
    before = [len(s.commands()) for s in sshd_farm.servers]
    out = campaign_cli(f"remote:{inventory}", tmp_path / "c", budget=20, timeout=300)
    assert out.returncode == 0, out.stderr
    # both roles: a on the host named $(touch PWNED-2), b on the first host tagged `touch PWNED-3` not yet taken
    config = (tmp_path / "c" / "campaign.toml").read_text()
    assert json.dumps(HOSTILE[1]) in config and json.dumps(HOSTILE[0]) in config
    for server, n in zip(sshd_farm.servers, before, strict=True):
        assert all(c == AGENT_COMMAND_LINE for c in server.commands()[n:])
    assert sum(len(s.commands()) - n for s, n in zip(sshd_farm.servers, before, strict=True)) == 2
    for folder in (tmp_path, ROOT, Path.cwd(), ssh_home, *(s.folder for s in sshd_farm.servers)):
        assert not list(folder.glob("PWNED*"))


def test_a_killed_agent_fails_one_trial_with_its_reason_and_is_started_again(
        sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["h0", "h1", "h2"])
    killed: list[int] = []
    pids: list[int] = []
    target = RemoteTarget(inventory, seed=SEED)

    def kill(event: TrialFinished) -> None:
        agent = target._agents.get("h1")
        if agent is not None and agent.client.welcome is not None:
            pids.append(agent.client.welcome.pid)
        if event.trial == 14:
            os.kill(pids[-1], signal.SIGKILL)
            assert wait_gone(pids[-1])
            killed.append(pids[-1])

    summary = in_process(target, tmp_path / "c", kill)
    relaunched = pids[-1]
    assert summary.failed == 1 and summary.experiments == BUDGET
    failed = [r for r in journal(tmp_path / "c") if r["status"] == TrialState.FAILED.value]
    assert [r["trial"] for r in failed] == [15]
    assert failed[0]["reason"].startswith("HostError: host 'h1': its agent was killed") and \
        failed[0]["reason"].endswith("before answering prepare")
    assert relaunched != killed[0]
    assert sshd_farm.servers[1].commands()[-2:] == [AGENT_COMMAND_LINE] * 2  # started again, the same way
    no_agent_left(sshd_farm.servers[0].folder.parent)


def test_a_stopped_sshd_is_taken_out_after_three_failed_trials_and_the_spare_goes_on(
        farm3: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = farm3.inventory(tmp_path / "hosts.toml", ["h0", "h1", "spare"], connect_timeout=5)

    def stop(event: TrialFinished) -> None:
        if event.trial == 12 and farm3.servers[1].proc is not None:
            farm3.servers[1].stop()

    target = RemoteTarget(inventory, seed=SEED)
    summary = in_process(target, tmp_path / "c", stop)
    assert target.placement["b"].name == "spare" and target.out == ["h1"]
    assert summary.failed == 3 and summary.experiments == BUDGET
    failed = [r for r in journal(tmp_path / "c") if r["status"] == TrialState.FAILED.value]
    assert [r["trial"] for r in failed] == [13, 14, 15]
    assert failed[0]["reason"].startswith("HostError: host 'h1': its agent was killed or lost its connection")
    port = farm3.servers[1].port
    assert failed[1]["reason"] == f"HostError: host 'h1': cannot connect to 127.0.0.1:{port}: Connection refused"
    assert failed[2]["reason"].endswith("host 'h1' failed 3 runs in a row and is taken out: role b now on host "
                                        "'spare'")
    assert farm3.servers[2].commands() == [AGENT_COMMAND_LINE]


def test_without_a_spare_the_campaign_stops_with_exit_3_and_resumes_once_the_host_is_back(
        farm3: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    farm = SshdFarm(farm3.client_key, farm3.servers[:2])
    inventory = farm.inventory(tmp_path / "hosts.toml", ["h0", "h1"], connect_timeout=5)
    out = tmp_path / "c"

    def stop(event: TrialFinished) -> None:
        if event.trial == 12 and farm.servers[1].proc is not None:
            farm.servers[1].stop()

    with pytest.raises(TargetUnavailable) as err:
        in_process(RemoteTarget(inventory, seed=SEED), out, stop)
    assert str(err.value).startswith("host 'h1' failed 3 runs in a row and is taken out, and no unused host of ")
    assert str(err.value).endswith("the campaign cannot go on (fix the host, then continue with --resume)")
    at_open = campaign_cli(f"remote:{inventory}", out, "--resume")
    assert at_open.returncode == 3
    # the resume says what it reads back, then why it cannot go on
    assert at_open.stderr.startswith("resumed ")
    assert at_open.stderr.splitlines()[-1].startswith("collie: error: host 'h1': ")
    assert "collie hosts check" in at_open.stderr
    farm.servers[1].start()  # back, on the same port with the same key
    resumed = campaign_cli(f"remote:{inventory}", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    rows = journal(out)
    assert [r["trial"] for r in rows if r["status"] == TrialState.FAILED.value] == [13, 14]
    assert json.loads(resumed.stdout)["experiments"] == BUDGET


def test_a_swapped_host_key_is_refused_at_open_with_its_fingerprint(sshd_one: SshdFarm, ssh_home: Path,
                                                                   tmp_path: Path) -> None:
    inventory = sshd_one.inventory(tmp_path / "hosts.toml", ["node"])
    server = sshd_one.servers[0]
    server.swap_host_key()
    new = subprocess.run(["ssh-keygen", "-l", "-f", str(server.host_key.with_suffix(".pub"))], capture_output=True,
                         text=True, check=True).stdout.split()[1]
    for extra in ((), ("--accept-new-host-keys",)):
        out = campaign_cli(f"remote:{inventory}", tmp_path / f"c{len(extra)}", *extra)
        assert out.returncode == 3
        line = out.stderr.strip()
        assert line.startswith("collie: error: host 'node': ") and "\n" not in line
        assert f"ssh-ed25519 {new}" in line and "CHANGED" in line
        assert not (tmp_path / f"c{len(extra)}").exists()  # nothing was written for a target never opened
    assert server.commands() == []


def test_an_inventory_mistake_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text('[[host]]\nname = "x"\naddress = "127.0.0.1"\ntarget = "sim"\n[place]\nc = "x"\n')
    for args in (("campaign", "--budget", "5"), ("run", "--workload", str(ROOT / "workloads/examples/"
                                                                         "rc-write-64k.toml"))):
        out = run_cli(*args, "--target", f"remote:{path}")
        assert out.returncode == 2
        assert out.stderr.strip() == (f"collie: error: {path}:6: place: unknown field 'c'; allowed fields are a, b, "
                                      "ranks")


def test_a_host_that_never_answers_fails_its_trial_by_timeout(sshd_farm: SshdFarm, ssh_home: Path,
                                                             tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["h0", "h1", "h2"], request_timeout=5)
    stopped: list[int] = []
    target = RemoteTarget(inventory, seed=SEED)

    def hang(event: TrialFinished) -> None:
        if event.trial == 14 and not stopped:  # after the 12 calibration runs: a search trial hangs, not calibration
            pid = target._agents["h0"].client.welcome.pid  # type: ignore[union-attr]
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        elif stopped and event.status is TrialState.FAILED:
            os.kill(stopped[0], signal.SIGCONT)  # it reads its closed channel's end and exits

    summary = in_process(target, tmp_path / "c", hang, budget=30)
    assert summary.failed == 1 and summary.experiments == 30
    (failed,) = [r for r in journal(tmp_path / "c") if r["status"] == TrialState.FAILED.value]
    assert failed["trial"] == 15
    assert failed["reason"] == "HostError: host 'h0': its agent did not answer prepare within 5 s"
    assert wait_gone(stopped[0])
    no_agent_left(sshd_farm.servers[0].folder.parent)


def test_a_controller_killed_with_sigkill_resumes_to_the_uninterrupted_result(sshd_farm: SshdFarm, ssh_home: Path,
                                                                              tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["h0", "h1", "h2"])
    out, budget = tmp_path / "c", 150
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "collie", "campaign", "--target", f"remote:{inventory}", "--seed",
                             str(SEED), "--budget", str(budget), "--preset", PRESET, "--out", str(out), "--no-live"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal_file = out / "trials.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if journal_file.exists() and journal_file.read_text().count("\n") >= 40:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the campaign ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    no_agent_left(sshd_farm.servers[0].folder.parent)  # the agents saw their channel end and exited
    resumed = campaign_cli(f"remote:{inventory}", out, "--resume", budget=budget)
    assert resumed.returncode == 0, resumed.stderr
    whole = campaign_cli(f"remote:{inventory}", tmp_path / "whole", budget=budget)
    assert whole.returncode == 0, whole.stderr
    assert anomalies(out) == anomalies(tmp_path / "whole")
    assert journal(out) == journal(tmp_path / "whole")
    no_agent_left(sshd_farm.servers[0].folder.parent)


def test_a_host_nobody_listens_on_is_exit_3_for_run_and_campaign(ssh_home: Path, tmp_path: Path) -> None:
    from tests.sshd_fixture import free_port

    port = free_port()  # nothing listens there
    path = tmp_path / "hosts.toml"
    path.write_text(f'connect_timeout = 5\n[[host]]\nname = "gone"\naddress = "127.0.0.1"\nport = {port}\n'
                    f'target = "sim"\n')
    workload = str(ROOT / "workloads" / "examples" / "rc-write-64k.toml")
    for args in (("run", "--workload", workload), ("campaign", "--budget", "5", "--out", str(tmp_path / "c"))):
        out = run_cli(*args, "--target", f"remote:{path}")
        assert out.returncode == 3, out.stderr
        assert out.stderr.strip() == (f"collie: error: host 'gone': cannot connect to 127.0.0.1:{port}: Connection "
                                      f"refused; see: collie hosts check --inventory {path}")
    assert not (tmp_path / "c").exists()
