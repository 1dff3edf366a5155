"""``collie hosts check`` and the SSH launcher against real OpenSSH servers on 127.0.0.1 (tests/sshd_fixture.py).

Every server records the command lines clients asked it to run (``Sshd.commands``): the tests check that it was
only ever the fixed agent command. Each test has its own HOME (``ssh_home``): the real user's known_hosts is never
read or written.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collie import __version__
from collie.remote.client import AgentClient
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import load_inventory
from collie.remote.launch import AGENT_COMMAND_LINE
from collie.remote.protocol import PROTOCOL_VERSION
from collie.remote.ssh import KnownHosts, SshLauncher
from tests.conftest import run_cli
from tests.sshd_fixture import SshdFarm, keygen, ssh_home, sshd_farm, sshd_one, toml_str, wait_gone

__all__ = ["ssh_home", "sshd_farm", "sshd_one"]  # fixtures (a conftest.py here would shadow tests/conftest.py)


def ssh_fingerprint(pub: Path) -> str:
    """``SHA256:...`` of a public key file, as OpenSSH's own ssh-keygen prints it."""
    out = subprocess.run(["ssh-keygen", "-l", "-f", str(pub)], capture_output=True, text=True, check=True)
    return out.stdout.split()[1]


def check_json(inventory: Path, *extra: str) -> tuple[int, list[dict[str, object]], str]:
    out = run_cli("hosts", "check", "--inventory", str(inventory), "--format", "json", *extra)
    return out.returncode, json.loads(out.stdout) if out.stdout.strip() else [], out.stderr


def sessions_end(farm: SshdFarm) -> None:
    """Every agent and session those servers ran has ended (nothing is left running on the 'hosts')."""
    for server in farm.servers:
        for pid in server.sessions():
            assert wait_gone(pid), f"session {pid} of sshd {server.port} is still running"


def test_three_sim_hosts_check_out_as_usable_in_table_and_json(sshd_farm: SshdFarm, ssh_home: Path,
                                                               tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["alpha", "beta", "gamma"])
    before = [len(s.commands()) for s in sshd_farm.servers]
    code, rows, err = check_json(inventory)
    assert code == 0, err
    assert [r["host"] for r in rows] == ["alpha", "beta", "gamma"]
    for row, server in zip(rows, sshd_farm.servers, strict=True):
        assert row["status"] == "ok" and row["problem"] == "" and row["failure"] is None
        assert row["port"] == server.port
        assert row["host_key"] == f"ssh-ed25519 {ssh_fingerprint(server.host_key.with_suffix('.pub'))}"
        assert row["host_key_state"] == "known" and row["host_key_file"] == str(inventory.with_suffix(".known_hosts"))
        assert (row["agent_version"], row["protocol"]) == (__version__, PROTOCOL_VERSION)
        assert row["target"] == "sim:cx6-200g" and "ConnectX-6" in str(row["nic_model"])
        assert isinstance(row["counters"], int) and row["counters"] > 50 and row["sources"] == ["sim"]
        # one clock on both sides: the measured skew can only be the round trip's uncertainty
        assert abs(float(row["clock_skew_ms"])) <= float(row["rtt_ms"]) / 2 + 1.0  # type: ignore[arg-type]
    table = run_cli("hosts", "check", "--inventory", str(inventory))
    assert table.returncode == 0, table.stderr
    assert "3 of 3 host(s) usable" in table.stdout
    for name in ("alpha", "beta", "gamma"):
        assert name in table.stdout
    for server, n in zip(sshd_farm.servers, before, strict=True):
        assert server.commands()[n:] == [AGENT_COMMAND_LINE] * 2
    assert not (ssh_home / ".ssh" / "known_hosts").exists()
    sessions_end(sshd_farm)


def test_a_changed_host_key_is_refused_with_both_fingerprints_even_with_accept_new(
        sshd_one: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = sshd_one.inventory(tmp_path / "hosts.toml", ["node"])
    server = sshd_one.servers[0]
    old = ssh_fingerprint(server.host_key.with_suffix(".pub"))
    server.swap_host_key()
    new = ssh_fingerprint(server.host_key.with_suffix(".pub"))
    known = inventory.with_suffix(".known_hosts")
    recorded = known.read_text()
    for extra in ((), ("--accept-new-host-keys",)):
        code, rows, _ = check_json(inventory, *extra)
        assert code == 1
        (row,) = rows
        assert row["status"] == "failed" and row["failure"] == "host-key-changed"
        problem = str(row["problem"])
        assert f"the server offers ssh-ed25519 {new}" in problem and f"records ssh-ed25519 {old}" in problem
        assert "CHANGED" in problem and "never accepted automatically" in problem and "\n" not in problem
        assert row["agent_version"] == ""  # nothing ran on a host we could not trust
    assert known.read_text() == recorded
    assert server.commands() == []
    table = run_cli("hosts", "check", "--inventory", str(inventory), columns=120)
    assert table.returncode == 1, table.stderr
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    # the problem reads as a paragraph under the table (6 lines), not a few letters per line in a cell (40)
    problem = next(i for i, line in enumerate(lines) if line.startswith("node  problem  "))
    assert len(lines) - problem <= 8
    assert f"ssh-ed25519 {new}" in " ".join(line.strip() for line in lines[problem:])


def test_an_unknown_host_key_is_refused_then_recorded_with_accept_new(sshd_one: SshdFarm, ssh_home: Path,
                                                                      tmp_path: Path) -> None:
    inventory = sshd_one.inventory(tmp_path / "hosts.toml", ["node"], known_hosts=False,
                                   extra_top='known_hosts = "lab.known_hosts"')
    known = tmp_path / "lab.known_hosts"
    server = sshd_one.servers[0]
    fp = ssh_fingerprint(server.host_key.with_suffix(".pub"))
    code, rows, _ = check_json(inventory)
    assert code == 1 and rows[0]["failure"] == "host-key-unknown"
    assert f"[127.0.0.1]:{server.port} (ssh-ed25519 {fp}) is not in" in str(rows[0]["problem"])
    assert "--accept-new-host-keys" in str(rows[0]["problem"])
    assert not known.exists() and server.commands() == []

    code, rows, err = check_json(inventory, "--accept-new-host-keys")
    assert code == 0, err
    assert (rows[0]["host_key_state"], rows[0]["host_key_file"]) == ("recorded", str(known))
    assert known.read_text() == server.known_hosts_line()
    assert not (ssh_home / ".ssh" / "known_hosts").exists()  # recorded in the inventory's file only

    code, rows, err = check_json(inventory)
    assert code == 0, err
    assert rows[0]["host_key_state"] == "known"
    assert known.read_text() == server.known_hosts_line()  # recorded once


def test_without_an_identity_the_ssh_agent_authenticates(sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", identity=False)
    code, rows, _ = check_json(inventory)  # no identity, no key in ~/.ssh, no agent: refused
    assert code == 1 and {r["failure"] for r in rows} == {"auth"}
    assert "with the SSH agent and the default keys" in str(rows[0]["problem"])
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
    try:
        assert wait_for(sock.exists)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        subprocess.run(["ssh-add", "-q", str(sshd_farm.client_key)], check=True, capture_output=True)
        code, rows, err = check_json(inventory)
        assert code == 0, err
        assert {r["status"] for r in rows} == {"ok"}
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word (a hung host)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join()
    for s in held:
        s.close()
    listener.close()


def test_silent_refusing_and_auth_failing_hosts_are_one_sentence_each_and_the_good_host_still_checks(
        sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path, silent_port: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = int(s.getsockname()[1])
    stranger = keygen(tmp_path / "stranger")
    good = sshd_farm.servers[0]
    (tmp_path / "h.known_hosts").write_text(good.known_hosts_line())
    text = ('known_hosts = "h.known_hosts"\nconnect_timeout = 1.5\n\n[defaults]\ntarget = "sim"\n'
            f'user = "root"\nidentity = {toml_str(str(sshd_farm.client_key))}\n\n'
            f'[[host]]\nname = "good"\naddress = "127.0.0.1"\nport = {good.port}\n\n'
            f'[[host]]\nname = "silent"\naddress = "127.0.0.1"\nport = {silent_port}\n\n'
            f'[[host]]\nname = "refused"\naddress = "127.0.0.1"\nport = {closed_port}\n\n'
            f'[[host]]\nname = "stranger"\naddress = "127.0.0.1"\nport = {good.port}\n'
            f'identity = {toml_str(str(stranger))}\n\n'
            f'[[host]]\nname = "keyless"\naddress = "127.0.0.1"\nport = {good.port}\n'
            f'identity = {toml_str(str(tmp_path / "no-such-key"))}\n')
    inventory = tmp_path / "h.toml"
    inventory.write_text(text)
    code, rows, err = check_json(inventory)
    assert code == 1, err
    by = {r["host"]: r for r in rows}
    assert by["good"]["status"] == "ok"
    assert by["silent"]["failure"] == "timeout"
    assert by["silent"]["problem"] == (f"127.0.0.1:{silent_port} accepted the connection but sent no SSH greeting "
                                       f"within 1.5 s; is an SSH server listening there?")
    assert by["refused"]["failure"] == "unreachable"
    assert by["refused"]["problem"] == f"cannot connect to 127.0.0.1:{closed_port}: Connection refused"
    assert by["stranger"]["failure"] == "auth"
    assert str(by["stranger"]["problem"]).startswith(f"root@127.0.0.1:{good.port} refused authentication as 'root' "
                                                     f"with key {stranger}")
    assert by["keyless"]["failure"] == "auth"
    assert by["keyless"]["problem"] == f"identity file {tmp_path / 'no-such-key'} does not exist"
    for row in rows:
        assert "\n" not in str(row["problem"])
    table = run_cli("hosts", "check", "--inventory", str(inventory))
    assert table.returncode == 1 and "1 of 5 host(s) usable" in table.stdout
    assert table.stdout.count(" failed ") == 4 and table.stderr == ""


@pytest.fixture
def launcher(sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path) -> Iterator[tuple[SshLauncher, SshdFarm, Path]]:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml")
    inv = load_inventory(inventory)
    ssh = SshLauncher(KnownHosts.default(inv.known_hosts), inv.connect_timeout)
    yield ssh, sshd_farm, inventory
    ssh.close()


def test_one_connection_per_host_serves_several_agents(launcher: tuple[SshLauncher, SshdFarm, Path]) -> None:
    ssh, _farm, inventory = launcher
    host = load_inventory(inventory).hosts[0]
    first, second = (AgentClient(host, ssh.start(host), 30) for _ in range(2))
    assert first.hello().pid != second.hello().pid
    assert ssh.connection(host) is ssh.connection(host)
    transport = ssh.connection(host).client.get_transport()
    first.close()
    second.close()
    assert transport is ssh.connection(host).client.get_transport() and transport is not None
    assert transport.is_active()


def test_an_agent_that_hangs_times_out_and_one_killed_mid_request_is_reported(
        launcher: tuple[SshLauncher, SshdFarm, Path]) -> None:
    ssh, _farm, inventory = launcher
    host = load_inventory(inventory).hosts[1]
    hung = AgentClient(host, ssh.start(host), 30)
    pid = hung.hello().pid
    os.kill(pid, signal.SIGSTOP)  # the host hangs: the agent can read nothing and answer nothing
    try:
        with pytest.raises(HostError) as err:
            hung.request_timeout = 0.5
            hung.describe()
        assert err.value.failure is Failure.TIMEOUT
        assert str(err.value) == f"host {host.name!r}: its agent did not answer describe within 0.5 s"
        with pytest.raises(HostError, match="unusable after an earlier failure") as broken:
            hung.sample()
        assert broken.value.failure is Failure.BROKEN
    finally:
        os.kill(pid, signal.SIGKILL)  # a stopped process dies of SIGKILL too (and may be gone at once)
    hung.close()
    assert wait_gone(pid)

    victim = AgentClient(host, ssh.start(host), 30)
    pid = victim.hello().pid
    os.kill(pid, signal.SIGSTOP)  # it cannot answer the next request before it dies
    killer = threading.Timer(0.3, lambda: os.kill(pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(HostError) as died:
        victim.sample()
    killer.join()
    assert died.value.failure is Failure.AGENT_EXITED
    assert str(died.value).startswith(f"host {host.name!r}: its agent was killed")
    assert str(died.value).endswith("before answering sample")
    victim.close()
    assert wait_gone(pid)


def test_closing_the_channel_ends_the_agent_and_its_session(launcher: tuple[SshLauncher, SshdFarm, Path]) -> None:
    ssh, _farm, inventory = launcher
    host = load_inventory(inventory).hosts[2]
    client = AgentClient(host, ssh.start(host), 30)
    pid = client.hello().pid
    client.channel.close()  # no bye: end of input alone must end the agent
    assert wait_gone(pid)


def test_hostile_inventory_strings_never_reach_a_shell(sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    marks = [tmp_path / f"pwned{i}" for i in range(6)]
    names = [f"x; touch {marks[0]}", f"$(touch {marks[1]})", f"`touch {marks[2]}`'\"\n; touch {marks[3]} #"]
    tags = [f"a;touch {marks[4]}", f"$(touch {marks[5]})", "'\"\\"]
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", names, tags=tags)
    before = [len(s.commands()) for s in sshd_farm.servers]
    code, rows, err = check_json(inventory)
    assert code == 0, err
    assert [r["host"] for r in rows] == names  # the names travelled as data, unchanged
    inv = load_inventory(inventory)
    ssh = SshLauncher(KnownHosts.default(inv.known_hosts), inv.connect_timeout)
    try:
        for host in inv.hosts:
            client = AgentClient(host, ssh.start(host), 30)
            welcome = client.hello()
            assert welcome.host == host.name  # echoed by the agent: it got the exact bytes over the protocol
            assert welcome.argv[1:] == ("-m", "collie.agent", "--stdio")
            cmdline = Path(f"/proc/{welcome.pid}/cmdline").read_bytes().split(b"\0")[:-1]
            assert [c.decode() for c in cmdline[1:]] == ["-m", "collie.agent", "--stdio"]
            client.close()
    finally:
        ssh.close()
    for mark in marks:
        assert not mark.exists()
    for server, n in zip(sshd_farm.servers, before, strict=True):
        assert server.commands()[n:] == [AGENT_COMMAND_LINE] * 2  # the only command line sshd ever got


def test_a_verbs_host_whose_device_is_absent_is_a_port_failure(
        sshd_farm: SshdFarm, ssh_home: Path, tmp_path: Path) -> None:
    inventory = sshd_farm.inventory(tmp_path / "hosts.toml", ["v0", "v1", "v2"], target="verbs:nosuch0:1:1")
    code, rows, err = check_json(inventory)
    assert code == 1, err
    for row in rows:
        assert row["failure"] == "port" and row["agent_version"] == __version__
        assert str(row["problem"]).startswith("RDMA device 'nosuch0' not found on the host; ")
        assert row["port_state"] == "" and row["gid_index"] == 1 and row["nic_model"] == ""
    table = run_cli("hosts", "check", "--inventory", str(inventory))
    assert table.returncode == 1 and "0 of 3 host(s) usable" in table.stdout and table.stderr == ""
    sessions_end(sshd_farm)
