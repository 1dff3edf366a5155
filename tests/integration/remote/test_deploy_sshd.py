"""Deploying collie to hosts that lack it or run another version, through real OpenSSH servers on 127.0.0.1.

Each host here is an sshd of the test's own (tests/sshd_fixture.py) whose sessions run Debian's ``/usr/bin/python3``
(the host's own interpreter: its numpy and tomli-w, no collie) with a ``PYTHONPATH`` standing for what the host
has installed: nothing, an older collie, or this checkout. Every server records the command lines it was asked
to run: only the fixed ones, and the SFTP subsystem, ever appear.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest

import collie.remote.deploy as deploy_module
from collie import __version__
from collie.remote.client import AgentClient
from collie.remote.deploy import MARKER, Action, start_agent
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host, load_inventory
from collie.remote.launch import AGENT_COMMAND_LINE, deployed_command_line, deployed_folder
from collie.remote.protocol import PROTOCOL_VERSION
from collie.remote.ssh import KnownHosts, SshLauncher
from tests.conftest import ROOT, run_cli
from tests.sshd_fixture import Sshd, SshdFarm, keygen, ssh_home, wait_gone
from tests.system_components import DEBIAN_PYTHON, require

__all__ = ["ssh_home"]  # fixtures (a conftest.py here would shadow tests/conftest.py)

FOLDER = deployed_folder(__version__)
#: An agent of another collie: it answers hello as collie 0.0.1 (or, speaking protocol 99, refuses ours).
FAKE_AGENT = """import json, os, sys
WELCOME = {welcome!r}
for line in sys.stdin:
    req = json.loads(line)
    if WELCOME is None:
        reply = {{"v": 99, "id": req.get("id", 0), "type": "error", "kind": "version",
                 "message": "this agent speaks protocol 99"}}
    elif req["type"] == "hello":
        reply = dict(WELCOME, id=req["id"], host=req["host"], pid=os.getpid())
    else:
        reply = {{"v": req["v"], "id": req["id"], "type": "farewell"}}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
    if req.get("type") == "bye":
        break
"""


def host_python_version() -> str:
    out = subprocess.run([DEBIAN_PYTHON, "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def python3_bin(folder: Path, *flags: str) -> str:
    """A folder whose ``python3`` runs Debian's python3 (with ``flags``), for a host's PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec {DEBIAN_PYTHON} {" ".join(flags)} "$@"\n')
    wrapper.chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def fake_collie(folder: Path, welcome: dict[str, object] | None) -> Path:
    """A fake collie package of another version at ``folder/collie`` (an older install on the host)."""
    pkg = folder / "collie"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (pkg / "agent.py").write_text(FAKE_AGENT.format(welcome=welcome))
    return folder


@pytest.fixture
def make_host(tmp_path: Path, ssh_home: Path) -> Iterator[Callable[..., tuple[Sshd, Path]]]:
    """Starts an sshd of this test with a given PYTHONPATH and python3; returns it and a one-host inventory."""
    require("sshd")
    servers: list[Sshd] = []
    client = keygen(tmp_path / "client_ed25519")

    def make(name: str, pythonpath: Path, path: str) -> tuple[Sshd, Path]:
        folder = tmp_path / f"sshd-{name}"
        folder.mkdir()
        server = Sshd(folder, client, pythonpath=str(pythonpath), path=path)
        servers.append(server.start())
        inventory = SshdFarm(client, [server]).inventory(tmp_path / f"{name}.toml", [name])
        return server, inventory

    yield make
    for s in servers:
        s.stop()


def check_json(inventory: Path, *extra: str) -> tuple[int, dict[str, object], str]:
    out = run_cli("hosts", "check", "--inventory", str(inventory), "--format", "json", *extra)
    rows = json.loads(out.stdout) if out.stdout.strip() else [{}]
    return out.returncode, rows[0], out.stderr


def deployments(server: Sshd) -> list[str]:
    root = server.home / ".cache" / "collie"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def launcher_for(inventory: Path) -> tuple[SshLauncher, Host]:
    inv = load_inventory(inventory)
    return SshLauncher(KnownHosts.default(inv.known_hosts), inv.connect_timeout), inv.hosts[0]


def test_a_host_without_collie_gets_it_deployed_and_the_next_check_reuses_it(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path) -> None:
    require("debian-python")
    empty = tmp_path / "nothing"
    empty.mkdir()
    server, inventory = make_host("bare", empty, python3_bin(tmp_path / "bin"))

    code, row, err = check_json(inventory)
    assert code == 0, err
    assert (row["status"], row["deployed"], row["deploy_action"]) == ("ok", __version__, "uploaded")
    assert row["deployed_folder"] == FOLDER and row["agent_version"] == __version__
    assert row["python"] == host_python_version()  # the host's own python3 ran it
    assert isinstance(row["counters"], int) and row["counters"] > 50
    assert deployments(server) == [f"agent-{__version__}"]  # no temporary folder left behind
    deployed = server.home / FOLDER
    marker = json.loads((deployed / MARKER).read_text())
    assert marker["version"] == __version__ and marker["files"] > 100
    assert (deployed / "collie" / "agent.py").read_bytes() == (ROOT / "collie" / "agent.py").read_bytes()
    for name in ("counters", "workloads", "search", "hosts"):
        assert any((deployed / "collie" / "_data" / name).iterdir())
    assert server.commands() == [AGENT_COMMAND_LINE, server.sftp_command, deployed_command_line(__version__)]

    table = run_cli("hosts", "check", "--inventory", str(inventory))
    assert table.returncode == 0, table.stderr
    assert f"{__version__} (reused)" in table.stdout and "1 of 1 host(s) usable" in table.stdout
    assert server.commands()[3:] == [AGENT_COMMAND_LINE, server.sftp_command, deployed_command_line(__version__)]
    assert deployments(server) == [f"agent-{__version__}"]

    ssh, host = launcher_for(inventory)
    try:
        started = start_agent(ssh, host, 30)
        assert started.deployment is not None and started.deployment.action is Action.REUSED
        cwd = Path(os.readlink(f"/proc/{started.welcome.pid}/cwd"))
        assert cwd == deployed.resolve()  # it runs the deployed copy, from its folder
        assert started.client.describe().nic_model.startswith("NVIDIA ConnectX-6")
        pid = started.welcome.pid
        started.client.close()
        assert wait_gone(pid)
        n = len(server.commands())
        again = start_agent(ssh, host, 30)  # the same connection: the deployed copy is started at once
        assert again.deployment is not None and again.welcome.collie_version == __version__
        assert server.commands()[n:] == [deployed_command_line(__version__)]
        again.client.close()
    finally:
        ssh.close()


@pytest.mark.parametrize("speaks", ["older-version", "other-protocol"])
def test_a_host_with_another_collie_gets_this_version_deployed(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path, speaks: str) -> None:
    require("debian-python")
    welcome = {"v": PROTOCOL_VERSION, "type": "welcome", "collie_version": "0.0.1", "protocol": PROTOCOL_VERSION,
               "capabilities": ["ping"], "time": 0.0, "python": platform.python_version(), "hostname": "old",
               "argv": []} if speaks == "older-version" else None
    old = fake_collie(tmp_path / "site", welcome)
    server, inventory = make_host("old", old, python3_bin(tmp_path / "bin"))
    ssh, host = launcher_for(inventory)
    try:
        if welcome is not None:  # the host's own collie is really there and answers as 0.0.1
            own = AgentClient(host, ssh.start(host), 30)
            assert own.hello(pings=0).collie_version == "0.0.1"
            own.close()
        started = start_agent(ssh, host, 30)
        assert started.welcome.collie_version == __version__
        assert started.deployment is not None and started.deployment.action is Action.UPLOADED
        assert started.welcome.python == host_python_version()
        assert len(started.client.sample()) == 2  # sim:cx6-200g's two hosts
        started.client.close()
    finally:
        ssh.close()
    code, row, err = check_json(inventory)
    assert code == 0, err
    assert (row["agent_version"], row["deployed"], row["deploy_action"]) == (__version__, __version__, "reused")
    allowed = {AGENT_COMMAND_LINE, server.sftp_command, deployed_command_line(__version__)}
    assert set(server.commands()) == allowed  # the fixed command lines and SFTP, nothing else, ever
    assert deployed_command_line(__version__) == f"cd .cache/collie/agent-{__version__} && exec {AGENT_COMMAND_LINE}"


def test_a_python3_without_the_agents_modules_is_one_sentence_naming_the_module(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path) -> None:
    require("debian-python")  # -S hides Debian's dist-packages (numpy, tomli-w) from it
    bare = python3_bin(tmp_path / "bin", "-S")
    empty = tmp_path / "nothing"
    empty.mkdir()
    server, inventory = make_host("nodeps", empty, bare)
    code, row, err = check_json(inventory)
    assert code == 1, err
    assert row["failure"] == "agent-deps" and row["status"] == "failed"
    assert row["problem"] == ("its python3 lacks the module 'numpy' that collie's agent needs; install it there "
                              "(pip install numpy, or Debian's python3-numpy)")
    assert server.commands() == [AGENT_COMMAND_LINE, server.sftp_command, deployed_command_line(__version__)]
    table = run_cli("hosts", "check", "--inventory", str(inventory))
    assert table.returncode == 1 and table.stderr == "" and "'numpy'" in table.stdout

    # collie installed, but its python3 lacks numpy: nothing is deployed (it would not run either)
    with_collie, inventory2 = make_host("installed", ROOT, bare)
    code, row, err = check_json(inventory2)
    assert code == 1 and row["failure"] == "agent-deps" and "'numpy'" in str(row["problem"]), err
    assert with_collie.commands() == [AGENT_COMMAND_LINE] and deployments(with_collie) == []


def test_an_upload_cut_mid_way_is_never_used_and_the_next_one_completes(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("debian-python")
    empty = tmp_path / "nothing"
    empty.mkdir()
    server, inventory = make_host("cut", empty, python3_bin(tmp_path / "bin"))
    written: list[str] = []
    real_write = deploy_module._write

    def write_then_cut(sftp: paramiko.SFTPClient, path: str, data: bytes) -> None:
        written.append(path)
        if len(written) == 40:  # the connection drops mid-upload: kill the host's SSH session processes
            for pid in server.sessions():
                os.kill(pid, signal.SIGKILL)
        real_write(sftp, path, data)

    monkeypatch.setattr(deploy_module, "_write", write_then_cut)
    ssh, host = launcher_for(inventory)
    try:
        with pytest.raises(HostError) as cut:
            start_agent(ssh, host, 30)
        assert cut.value.failure is Failure.DEPLOY
        assert str(cut.value).startswith(f"host 'cut': cannot deploy collie to ~/{FOLDER}: uploading ")
    finally:
        ssh.close()
    left = deployments(server)
    assert f"agent-{__version__}" not in left  # nothing half-installed where the agent is started from
    assert all(name.startswith(f".agent-{__version__}.tmp-") for name in left)
    for name in left:
        assert not (server.home / ".cache" / "collie" / name / MARKER).exists()
    assert server.commands() == [AGENT_COMMAND_LINE, server.sftp_command]  # the deployed agent never started

    monkeypatch.setattr(deploy_module, "_write", real_write)
    ssh, host = launcher_for(inventory)
    try:
        started = start_agent(ssh, host, 30)
        assert started.deployment is not None and started.deployment.action is Action.UPLOADED
        assert started.welcome.collie_version == __version__
        started.client.close()
    finally:
        ssh.close()
    assert (server.home / FOLDER / MARKER).exists()


def test_a_stray_incomplete_folder_in_the_deployments_place_is_refused_not_started(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path) -> None:
    require("debian-python")
    empty = tmp_path / "nothing"
    empty.mkdir()
    server, inventory = make_host("stray", empty, python3_bin(tmp_path / "bin"))
    stray = server.home / FOLDER / "collie"
    stray.mkdir(parents=True)
    (stray / "__init__.py").write_text('__version__ = "0.0.1"\n')  # a half copy made by hand
    code, row, err = check_json(inventory)
    assert code == 1, err
    assert row["failure"] == "deploy"
    assert row["problem"] == (f"cannot deploy collie to ~/{FOLDER}: it exists but is not a complete deployment "
                              f"of collie {__version__} (no {MARKER}); remove it on the host")
    assert deployments(server) == [f"agent-{__version__}"]  # our temporary copy was removed
    assert deployed_command_line(__version__) not in server.commands()

    (server.home / ".cache" / "collie").rename(server.home / ".cache" / "moved")
    (server.home / ".cache" / "collie").write_text("a file where a folder should be")
    code, row, err = check_json(inventory)
    assert code == 1 and row["failure"] == "deploy", err
    assert row["problem"] == (f"cannot deploy collie to ~/{FOLDER}: creating ~/.cache/collie "
                              f"(~/.cache/collie is not a folder)")


def test_hosts_sharing_one_account_are_deployed_to_once_concurrently(
        make_host: Callable[..., tuple[Sshd, Path]], tmp_path: Path) -> None:
    require("debian-python")
    empty = tmp_path / "nothing"
    empty.mkdir()
    server, _ = make_host("shared", empty, python3_bin(tmp_path / "bin"))
    names = ["one", "two", "three"]
    inventory = SshdFarm(server.client_key, [server] * 3).inventory(tmp_path / "three.toml", names)
    out = run_cli("hosts", "check", "--inventory", str(inventory), "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["host"] for r in rows] == names and {r["deployed"] for r in rows} == {__version__}
    assert sorted(r["deploy_action"] for r in rows) == ["reused", "reused", "uploaded"]
    assert deployments(server) == [f"agent-{__version__}"]
    assert server.commands().count(deployed_command_line(__version__)) == 3
