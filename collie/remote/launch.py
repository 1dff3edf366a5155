"""How an agent is started: one small interface, "start one agent on one host and hand back its channel".

A :class:`Launcher` starts ``python3 -m collie.agent`` on a host (SSH today, :class:`~collie.remote.ssh.SshLauncher`;
a cluster's own launcher such as ``srun`` or ``kubectl exec`` can be added without touching the protocol) and
returns an :class:`AgentChannel`: a byte pipe to the agent's stdin and from its stdout, read line by line with a
deadline. :class:`LocalLauncher` starts the agent as a child process of this one (tests, and a host that is this
machine).

Invariants:
    * the agent's command line is :data:`AGENT_COMMAND`, or for a collie deployed to the host by the controller
      (:mod:`~collie.remote.deploy`) :func:`deployed_command_line` of the controller's own version: constants;
      nothing from an inventory or a workload is ever part of them (all data travels in the protocol);
    * :meth:`AgentChannel.read_line` returns one whole line or raises :class:`ChannelTimeout` (nothing arrived in
      time; the channel stays open) or :class:`ChannelClosed` (the agent's stdout ended: it exited or the
      connection dropped), never a partial line;
    * closing a channel closes the agent's stdin, and an agent exits when its stdin ends.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import IO, Final, Protocol

from collie.remote.inventory import Host
from collie.remote.protocol import MAX_LINE

#: The one command line every launcher runs on a host (a tuple: it is never built from data).
AGENT_COMMAND: Final = ("python3", "-m", "collie.agent", "--stdio")
#: The same as one string, for launchers that take a command string (SSH's exec request).
AGENT_COMMAND_LINE: Final = " ".join(AGENT_COMMAND)
_STDERR_TAIL: Final = 4096
#: Where a controller deploys collie on a host, relative to the login folder (the user's home, where both an
#: SSH command and SFTP start): one folder per version, ``agent-<version>``.
DEPLOY_ROOT: Final = ".cache/collie"
_PLAIN_VERSION: Final = re.compile(r"[0-9][0-9A-Za-z.+-]{0,63}")


def plain_version(version: str) -> str:
    """``version`` itself when it is a plain version string (``0.1.0``, ``1.2rc1``, ``0.3.dev4+g1a2b``): digits,
    letters, dots, ``+`` and ``-`` only, starting with a digit, so it can name a folder in a command line.

    Raises:
        ValueError: any other string (it is never put into a command line).
    """
    if not _PLAIN_VERSION.fullmatch(version):
        raise ValueError(f"collie version {version!r} is not a plain version string (digits, letters, '.', '+', "
                         f"'-'); it cannot name a deployment folder")
    return version


def deployed_folder(version: str) -> str:
    """The folder (relative to the login folder) holding collie ``version`` deployed by a controller."""
    return f"{DEPLOY_ROOT}/agent-{plain_version(version)}"


def deployed_command_line(version: str) -> str:
    """The command line that starts the agent of collie ``version`` deployed in :func:`deployed_folder`: a constant
    per version (``python3 -m`` puts the working folder first on ``sys.path``, ahead of any ``PYTHONPATH`` or
    installed collie, and the host's own site-packages still provide numpy and the rest)."""
    return f"cd {deployed_folder(version)} && exec {AGENT_COMMAND_LINE}"


class ChannelTimeout(Exception):
    """Nothing (or no whole line) arrived before the deadline."""


class ChannelClosed(Exception):
    """The agent's output ended.

    Attributes:
        exit_status: the agent's exit status when known, else None (killed by a signal, connection lost).
        stderr: the last lines the agent wrote on stderr (may be empty).
    """

    def __init__(self, exit_status: int | None, stderr: str) -> None:
        super().__init__(f"agent exited (status {exit_status})")
        self.exit_status = exit_status
        self.stderr = stderr


class AgentChannel(Protocol):
    """A byte pipe to one agent."""

    description: str

    def send(self, data: bytes, timeout: float) -> None:
        """Write ``data`` to the agent's stdin.

        Raises:
            ChannelClosed: the agent is gone.
            ChannelTimeout: the agent does not read its input.
        """
        ...

    def read_line(self, timeout: float) -> bytes:
        """One whole line from the agent's stdout (with its ``\\n``); see the module invariants."""
        ...

    def close(self) -> None:
        """Close the agent's stdin and release the channel (idempotent)."""
        ...


class Launcher(Protocol):
    """Starts agents; one launcher serves many hosts and may keep one connection per host."""

    def start(self, host: Host, timeout: float | None = None) -> AgentChannel:
        """Start ``python3 -m collie.agent`` on ``host`` and hand back its channel.

        Raises:
            HostError: the host cannot be reached, refuses us, or the agent cannot be started.
        """
        ...

    def close(self) -> None:
        """Close every channel and connection this launcher opened (idempotent)."""
        ...


class LineBuffer:
    """Splits a byte stream into lines; ``fill(timeout)`` reads the next chunk (``b""`` at end of stream).

    Args:
        fill: reads what is available within ``timeout`` seconds; raises :class:`ChannelTimeout` when nothing
            came, returns ``b""`` when the stream ended.
        closed: builds the :class:`ChannelClosed` raised at end of stream.
    """

    def __init__(self, fill: Callable[[float], bytes], closed: Callable[[], ChannelClosed]) -> None:
        self._fill = fill
        self._closed = closed
        self._buf = bytearray()
        self._eof = False

    def read_line(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[: nl + 1])
                del self._buf[: nl + 1]
                return line
            if self._eof:
                raise self._closed()
            if len(self._buf) > MAX_LINE:
                raise ChannelClosed(None, f"the agent sent a line longer than {MAX_LINE} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout()
            chunk = self._fill(remaining)
            if not chunk:
                self._eof = True
            self._buf += chunk


class StderrTail:
    """Keeps the last few KiB an agent wrote on stderr, for the message when it dies."""

    def __init__(self) -> None:
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0

    def add(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size > _STDERR_TAIL and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        return b"".join(self._chunks)[-_STDERR_TAIL:].decode("utf-8", "replace").strip()


class LocalChannel:
    """An agent running as a child process of this one."""

    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes], description: str) -> None:
        self.description = description
        self._proc = proc
        self._stderr = stderr
        assert proc.stdout is not None and proc.stdin is not None
        self._out_fd = proc.stdout.fileno()
        self._stdin = proc.stdin
        self._lines = LineBuffer(self._fill, self._closed)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _fill(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self._out_fd], [], [], timeout)
        if not ready:
            raise ChannelTimeout()
        return os.read(self._out_fd, 65536)

    def _closed(self) -> ChannelClosed:
        try:
            status = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = None
        self._stderr.seek(0)
        tail = StderrTail()
        tail.add(self._stderr.read())
        return ChannelClosed(status if status is not None and status >= 0 else None, tail.text())

    def send(self, data: bytes, timeout: float) -> None:
        try:
            self._stdin.write(data)
            self._stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._closed() from None

    def read_line(self, timeout: float) -> bytes:
        return self._lines.read_line(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()


class LocalLauncher:
    """Starts each agent as a child process of this one, with this Python (for tests and this machine).

    Args:
        env: extra environment variables for the agents (e.g. ``PYTHONPATH`` of a checkout).
        cwd: the agents' working folder (default: this process's).
    """

    def __init__(self, env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        self._env = {**os.environ, **(env or {})}
        self._cwd = cwd
        self._channels: list[LocalChannel] = []

    def start(self, host: Host, timeout: float | None = None) -> LocalChannel:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (the channel owns it and closes it)
        proc = subprocess.Popen([sys.executable, *AGENT_COMMAND[1:]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr, env=self._env, cwd=self._cwd)
        channel = LocalChannel(proc, stderr, f"local process {proc.pid}")
        self._channels.append(channel)
        return channel

    def close(self) -> None:
        for c in self._channels:
            c.close()
        self._channels.clear()
