"""The SSH launcher (paramiko): one verified connection per host, an agent per exec channel.

Host keys are checked against the user's ``~/.ssh/known_hosts`` and the inventory's own known_hosts file:

* a key recorded for the host and equal to the server's: accepted;
* a key recorded for the host and different: refused (:attr:`Failure.HOST_KEY_CHANGED`) with both fingerprints,
  always, whatever ``accept_new`` says;
* no key recorded: refused (:attr:`Failure.HOST_KEY_UNKNOWN`) with the server's fingerprint, unless
  ``accept_new``, which records it (in the inventory's known_hosts when it has one, else the user's).

Invariants:
    * the remote command is :data:`~collie.remote.launch.AGENT_COMMAND_LINE`, or
      :func:`~collie.remote.launch.deployed_command_line` of this collie's version (a constant per version); no
      inventory or workload string is ever part of a command;
    * at most one SSH connection per host and launcher; agents are exec channels on it;
    * TCP connect, SSH banner, handshake and authentication each have the launcher's connect timeout; opening a
      channel has it too;
    * every failure is a :class:`HostError` with one sentence; paramiko's exceptions never escape.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import threading
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host
from collie.remote.launch import (
    AGENT_COMMAND_LINE,
    ChannelClosed,
    ChannelTimeout,
    LineBuffer,
    StderrTail,
    deployed_command_line,
)

# paramiko's transport threads log their failures (a banner that never came, a closed socket); with no handler
# configured, Python would print them on stderr. Those failures reach the caller as HostError sentences instead.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's form: ``ssh-ed25519 SHA256:<base64 without padding>``."""
    digest = base64.b64encode(hashlib.sha256(key.asbytes()).digest()).decode().rstrip("=")
    return f"{key.get_name()} SHA256:{digest}"


def known_hosts_name(address: str, port: int) -> str:
    """How known_hosts names a host: ``address`` on port 22, else ``[address]:port``."""
    return address if port == 22 else f"[{address}]:{port}"


class KeyState(Enum):
    """How a host's key was accepted."""

    KNOWN = "known"  # recorded before
    RECORDED = "recorded"  # new, recorded now (``accept_new``)


@dataclass(frozen=True)
class HostKey:
    """The key a host showed, and how it was accepted.

    Attributes:
        fingerprint: ``type SHA256:...``.
        state: known or newly recorded.
        file: the known_hosts file that holds it.
    """

    fingerprint: str
    state: KeyState
    file: Path


@dataclass(frozen=True)
class KnownHosts:
    """Where host keys are looked up and recorded.

    Attributes:
        user_file: the user's known_hosts (``~/.ssh/known_hosts``); read, and written only when ``local_file``
            is None.
        local_file: the inventory's own known_hosts, or None.
        accept_new: record the key of a host that has none (never replaces a changed key).
    """

    user_file: Path
    local_file: Path | None = None
    accept_new: bool = False

    @classmethod
    def default(cls, local_file: Path | None = None, accept_new: bool = False) -> KnownHosts:
        return cls(Path.home() / ".ssh" / "known_hosts", local_file, accept_new)

    @property
    def record_file(self) -> Path:
        return self.local_file if self.local_file is not None else self.user_file

    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.user_file, self.local_file) if p is not None)


_record_lock = threading.Lock()


class _Policy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko for a host no file knows: refuse with the fingerprint, or record it."""

    def __init__(self, host: Host, known: KnownHosts) -> None:
        self.host = host
        self.known = known
        self.recorded: HostKey | None = None

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        fp = fingerprint(key)
        if not self.known.accept_new:
            files = " or ".join(str(f) for f in self.known.files())
            raise HostError(self.host.name, Failure.HOST_KEY_UNKNOWN,
                            f"the host key of {hostname} ({fp}) is not in {files}; check the fingerprint and run "
                            f"again with --accept-new-host-keys to record it")
        target = self.known.record_file
        with _record_lock:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with target.open("a", encoding="utf-8") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        self.recorded = HostKey(fp, KeyState.RECORDED, target)


def _recorded_in(known: KnownHosts, name: str) -> tuple[Path, paramiko.PKey] | None:
    for path in known.files():
        if path.is_file():
            keys = paramiko.HostKeys(str(path)).lookup(name)
            if keys:
                return path, next(iter(keys.values()))
    return None


class SshConnection:
    """One verified, authenticated SSH connection to one host."""

    def __init__(self, host: Host, client: paramiko.SSHClient, key: HostKey) -> None:
        self.host = host
        self.client = client
        self.key = key

    @property
    def alive(self) -> bool:
        t = self.client.get_transport()
        return t is not None and t.is_active()

    def close(self) -> None:
        self.client.close()


def connect(host: Host, known: KnownHosts, timeout: float) -> SshConnection:
    """Open and verify one SSH connection (see the module docstring).

    Raises:
        HostError: unreachable, no answer in time, host key unknown or changed, authentication refused.
    """
    name = known_hosts_name(host.address, host.port)
    if host.identity is not None and not host.identity.is_file():
        raise HostError(host.name, Failure.AUTH, f"identity file {host.identity} does not exist")
    client = paramiko.SSHClient()
    policy = _Policy(host, known)
    client.set_missing_host_key_policy(policy)
    try:
        if known.user_file.is_file():
            client.load_system_host_keys(str(known.user_file))
        if known.local_file is not None and known.local_file.is_file():
            client.load_host_keys(str(known.local_file))
        client.connect(host.address, port=host.port, username=host.user,
                       key_filename=str(host.identity) if host.identity is not None else None,
                       allow_agent=True, look_for_keys=host.identity is None, timeout=timeout,
                       banner_timeout=timeout, auth_timeout=timeout, channel_timeout=timeout)
    except HostError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        where = _recorded_in(known, name)
        raise HostError(host.name, Failure.HOST_KEY_CHANGED,
                        f"the host key of {name} CHANGED: the server offers {fingerprint(exc.key)} but "
                        f"{where[0] if where else 'known_hosts'} records {fingerprint(exc.expected_key)}; someone "
                        f"may be intercepting the connection, or the host was reinstalled (then check the new key "
                        f"and remove the old one with ssh-keygen -R '{name}'); a changed key is never accepted "
                        f"automatically") from None
    except paramiko.PasswordRequiredException:
        client.close()
        raise HostError(host.name, Failure.AUTH, f"identity file {host.identity} is encrypted; load it into "
                                                 f"ssh-agent (ssh-add) and run again") from None
    except paramiko.AuthenticationException as exc:
        client.close()
        raise _auth_error(host, str(exc)) from None
    except TimeoutError:
        client.close()
        raise HostError(host.name, Failure.TIMEOUT, f"no SSH answer from {host.address}:{host.port} within "
                                                    f"{timeout:g} s (connect timeout)") from None
    except paramiko.SSHException as exc:
        transport = client.get_transport()
        greeted = transport is not None and bool(transport.remote_version)
        client.close()
        text = str(exc)
        if "authentication methods" in text.lower():  # no key at all: no identity, no agent, no default key
            raise _auth_error(host, text) from None
        if not greeted:
            raise HostError(host.name, Failure.TIMEOUT, f"{host.address}:{host.port} accepted the connection but "
                                                        f"sent no SSH greeting within {timeout:g} s; is an SSH "
                                                        f"server listening there?") from None
        if "timeout" in text.lower() or "timed out" in text.lower() or "no existing session" in text.lower():
            raise HostError(host.name, Failure.TIMEOUT, f"the SSH handshake with {host.address}:{host.port} did "
                                                        f"not finish within {timeout:g} s") from None
        raise HostError(host.name, Failure.SSH, f"SSH to {host.address}:{host.port} failed: {text}") from None
    except OSError as exc:
        client.close()
        inner: Exception = next(iter(exc.errors.values()), exc) if isinstance(exc, NoValidConnectionsError) else exc
        reason = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
        raise HostError(host.name, Failure.UNREACHABLE, f"cannot connect to {host.address}:{host.port}: "
                                                        f"{reason}") from None
    transport = client.get_transport()
    assert transport is not None
    key = policy.recorded or HostKey(fingerprint(transport.get_remote_server_key()), KeyState.KNOWN,
                                     (_recorded_in(known, name) or (known.record_file,))[0])
    return SshConnection(host, client, key)


def _auth_error(host: Host, detail: str) -> HostError:
    tried = f"key {host.identity}" if host.identity is not None else "the SSH agent and the default keys"
    return HostError(host.name, Failure.AUTH, f"{host.endpoint} refused authentication as {host.user!r} with "
                                              f"{tried} ({detail}); add the public key to that user's "
                                              f"authorized_keys")


class SshChannel:
    """An agent behind one SSH exec channel."""

    def __init__(self, channel: paramiko.Channel, description: str) -> None:
        self.description = description
        self._chan = channel
        self._stderr = StderrTail()
        self._lines = LineBuffer(self._fill, self._closed)

    def _drain_stderr(self) -> None:
        while self._chan.recv_stderr_ready():
            self._stderr.add(self._chan.recv_stderr(65536))

    def _fill(self, timeout: float) -> bytes:
        self._chan.settimeout(timeout)
        try:
            data: bytes = self._chan.recv(65536)
        except TimeoutError:
            self._drain_stderr()
            raise ChannelTimeout() from None
        self._drain_stderr()
        return data

    def _closed(self) -> ChannelClosed:
        status = None
        if self._chan.status_event.wait(2.0):
            status = self._chan.exit_status if self._chan.exit_status >= 0 else None
        self._drain_stderr()
        return ChannelClosed(status, self._stderr.text())

    def send(self, data: bytes, timeout: float) -> None:
        if self._chan.closed or (self._chan.eof_received and self._chan.exit_status_ready()):
            raise self._closed()
        self._chan.settimeout(timeout)
        try:
            self._chan.sendall(data)
        except TimeoutError:
            raise ChannelTimeout() from None
        except (OSError, EOFError, paramiko.SSHException):
            raise self._closed() from None

    def read_line(self, timeout: float) -> bytes:
        return self._lines.read_line(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            self._chan.shutdown_write()
        self._chan.close()


class SshLauncher:
    """Starts agents over SSH, one connection per host, reused for every agent started on it.

    Args:
        known: where host keys are checked and recorded.
        connect_timeout: seconds for connecting, the handshake, authentication and opening a channel.
    """

    def __init__(self, known: KnownHosts, connect_timeout: float) -> None:
        self.known = known
        self.connect_timeout = connect_timeout
        self._connections: dict[tuple[str, int, str, Path | None], SshConnection] = {}
        self._lock = threading.Lock()
        self._host_locks: dict[tuple[str, int, str, Path | None], threading.Lock] = {}
        self._channels: list[SshChannel] = []

    def connection(self, host: Host) -> SshConnection:
        """The host's connection, opened and verified on first use (a dead one is reopened); hosts with the same
        address, port, user and identity share one."""
        k = (host.address, host.port, host.user, host.identity)
        with self._lock:
            lock = self._host_locks.setdefault(k, threading.Lock())
        with lock:
            conn = self._connections.get(k)
            if conn is None or not conn.alive:
                conn = connect(host, self.known, self.connect_timeout)
                self._connections[k] = conn
            return conn

    def start(self, host: Host, timeout: float | None = None, deployed: str | None = None) -> SshChannel:
        """Start ``python3 -m collie.agent --stdio`` on ``host``; with ``deployed`` (a collie version), the one a
        controller deployed there (:func:`~collie.remote.launch.deployed_command_line`).

        Raises:
            HostError: the connection failed (see :func:`connect`) or the server refused the channel.
            ValueError: ``deployed`` is not a plain version string.
        """
        command = AGENT_COMMAND_LINE if deployed is None else deployed_command_line(deployed)
        conn = self.connection(host)
        limit = self.connect_timeout if timeout is None else timeout
        transport = conn.client.get_transport()
        assert transport is not None
        try:
            chan = transport.open_session(timeout=limit)
            chan.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise HostError(host.name, Failure.SSH, f"{host.endpoint} refused to start the agent: "
                                                    f"{exc or type(exc).__name__}") from None
        channel = SshChannel(chan, f"ssh {host.endpoint}")
        with self._lock:
            self._channels.append(channel)
        return channel

    def close(self) -> None:
        with self._lock:
            channels, self._channels = self._channels, []
            conns, self._connections = list(self._connections.values()), {}
        for ch in channels:
            ch.close()
        for conn in conns:
            conn.close()
