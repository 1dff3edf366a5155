"""Real OpenSSH servers on 127.0.0.1 for the remote tests: each its own port, host key and authorized key.

Each server is Debian's ``/usr/sbin/sshd -D -e -f CONFIG`` started as a child of the test process and stopped by
its PID (its session processes too), so nothing outlives the tests. The config:

* listens on 127.0.0.1 only, on a free port, with its own ed25519 host key;
* accepts the one client key the tests use (``authorized_keys`` of that server), no passwords;
* ``SetEnv`` gives sessions ``PYTHONPATH`` = this checkout (agents run the collie under test; ``pythonpath``
  changes it), ``COLLIE_TEST_PATH`` (this Python's folder first, so ``python3`` is the interpreter running the
  tests; ``path`` changes it) and ``COLLIE_TEST_HOME``, the server's own home folder (``home``);
* ``ForceCommand`` runs :data:`RECORDER`, which appends the command line the client asked for
  (``$SSH_ORIGINAL_COMMAND``, exactly as sshd received it) to ``commands.log`` and then runs it with
  ``/bin/sh -c`` in ``home`` (``HOME`` too) as sshd itself would in the user's home: the tests read which remote
  command lines were ever requested, and nothing is written to the real user's home;
* SFTP is :data:`SFTP_SERVER` started in ``home`` (through the recorder too: its command line is recorded).

Without OpenSSH the tests that need it skip, except under CI, where they fail (``tests/system_components.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.system_components import require

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
RECORDER = """#!/bin/sh
printf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> "$COLLIE_TEST_LOG"
PATH="$COLLIE_TEST_PATH"; export PATH
HOME="$COLLIE_TEST_HOME"; export HOME
cd "$HOME" || exit 1
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


def keygen(path: Path) -> Path:
    """A new passphrase-less ed25519 key pair at ``path`` (private) and ``path.pub``."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    """One running sshd (see the module docstring)."""

    folder: Path
    client_key: Path
    port: int = 0
    pythonpath: str = str(ROOT)
    path: str = ""
    proc: subprocess.Popen[bytes] | None = None
    _log_file: object = field(default=None, repr=False)

    @property
    def host_key(self) -> Path:
        return self.folder / "host_ed25519"

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def sftp_command(self) -> str:
        """The command line sshd runs for the SFTP subsystem (recorded in ``commands.log``)."""
        return f"{SFTP_SERVER} -d {self.home}"

    @property
    def log(self) -> Path:
        return self.folder / "sshd.log"

    @property
    def commands_log(self) -> Path:
        return self.folder / "commands.log"

    def commands(self) -> list[str]:
        """Every command line a client asked this server to run, in order."""
        return self.commands_log.read_text().splitlines() if self.commands_log.exists() else []

    def known_hosts_line(self) -> str:
        pub = (self.folder / "host_ed25519.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n"

    def write_config(self) -> Path:
        recorder = self.folder / "recorder.sh"
        recorder.write_text(RECORDER)
        recorder.chmod(0o755)
        (self.folder / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        path_value = self.path or f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
        self.home.mkdir(exist_ok=True)
        config = self.folder / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            "PidFile none",
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}",
            "StrictModes no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "UseDNS no",
            "LogLevel VERBOSE",
            f"SetEnv PYTHONPATH={self.pythonpath} COLLIE_TEST_PATH={path_value} COLLIE_TEST_LOG={self.commands_log} "
            f"COLLIE_TEST_HOME={self.home}",
            f"ForceCommand {recorder}",
            f"Subsystem sftp {self.sftp_command}",
            "",
        ]))
        return config

    def start(self) -> Sshd:
        if not self.host_key.exists():
            keygen(self.host_key)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        fixed = self.port
        for _ in range(5):
            self.port = fixed or free_port()
            config = self.write_config()
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=log)
            if self._wait_listening():
                return self
            self.stop()
        raise RuntimeError(f"sshd did not start; see {self.log}")

    def _wait_listening(self) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.settimeout(2)
                    return s.recv(4).startswith(b"SSH-")
            except OSError:
                time.sleep(0.02)
        return False

    def sessions(self) -> list[int]:
        """PIDs of this server's session processes (its children)."""
        if self.proc is None:
            return []
        return children(self.proc.pid)

    def stop(self) -> None:
        """Stop the server and its sessions, by PID."""
        if self.proc is None:
            return
        for pid in self.sessions():
            _kill(pid, signal.SIGTERM)
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def swap_host_key(self) -> None:
        """Restart with a new host key (what a reinstalled host, or a man in the middle, looks like)."""
        self.stop()
        for suffix in ("", ".pub"):
            Path(f"{self.host_key}{suffix}").unlink()
        keygen(self.host_key)
        self.start()  # on the same port: the same [127.0.0.1]:PORT, another key


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


@dataclass
class SshdFarm:
    """Several sshd servers standing for several hosts, and the client key they accept."""

    client_key: Path
    servers: list[Sshd]

    def inventory(self, path: Path, names: list[str] | None = None, *, target: str = "sim:cx6-200g",
                  extra_top: str = "", known_hosts: bool = True, connect_timeout: float = 10,
                  request_timeout: float = 30, tags: list[str] | None = None, identity: bool = True) -> Path:
        """Write an inventory of these servers at ``path`` (and, with ``known_hosts``, its known_hosts file)."""
        names = names or [f"h{i}" for i in range(len(self.servers))]
        lines = []
        if known_hosts:
            kh = path.with_suffix(".known_hosts")
            kh.write_text("".join(s.known_hosts_line() for s in self.servers))
            lines.append(f"known_hosts = {kh.name!r}")
        lines += [f"connect_timeout = {connect_timeout}", f"request_timeout = {request_timeout}", extra_top, ""]
        for name, s in zip(names, self.servers, strict=True):
            lines += ["[[host]]", f"name = {toml_str(name)}", 'address = "127.0.0.1"', f"port = {s.port}",
                      'user = "root"' if os.geteuid() == 0 else f"user = {toml_str(os.environ.get('USER', ''))}",
                      f"identity = {toml_str(str(self.client_key))}" if identity else "",
                      f"target = {toml_str(target)}",
                      f"tags = [{', '.join(toml_str(t) for t in (tags or []))}]", ""]
        path.write_text("\n".join(lines))
        return path


def toml_str(text: str) -> str:
    """A TOML basic string holding ``text`` exactly (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text)


def start_farm(folder: Path, n: int) -> SshdFarm:
    folder.mkdir(parents=True, exist_ok=True)
    client = keygen(folder / "client_ed25519")
    servers: list[Sshd] = []
    try:
        for i in range(n):
            d = folder / f"sshd{i}"
            d.mkdir()
            servers.append(Sshd(d, client).start())
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return SshdFarm(client, servers)


@pytest.fixture(scope="session")
def sshd_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    """Three sshd servers for the whole session (tests must not change them; see :func:`sshd_one`)."""
    require("sshd")
    farm = start_farm(tmp_path_factory.mktemp("sshd-farm"), 3)
    try:
        yield farm
    finally:
        for s in farm.servers:
            s.stop()


@contextlib.contextmanager
def own_farm(folder: Path, n: int) -> Iterator[SshdFarm]:
    """``n`` sshd servers in ``folder`` for one test, which it may change (stop one, swap a key); stopped after."""
    require("sshd")
    farm = start_farm(folder, n)
    try:
        yield farm
    finally:
        for s in farm.servers:
            s.stop()


@pytest.fixture
def sshd_one(tmp_path: Path) -> Iterator[SshdFarm]:
    """One sshd of this test's own, which it may change (swap its host key, stop it)."""
    with own_farm(tmp_path / "sshd", 1) as farm:
        yield farm


@pytest.fixture
def ssh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of this test's own (an empty ~/.ssh), and no SSH agent: nothing of the real user's is read or
    written."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home
