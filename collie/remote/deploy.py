"""Deploying the running collie to a host that lacks it or runs another version, over SFTP.

When ``python3 -m collie.agent`` does not start on a host because collie is not installed there, or its agent
runs another collie version (or protocol), :func:`start_agent` uploads this controller's collie (the package and
the data folders it reads, in the wheel's layout: ``collie/`` and ``collie/_data/<folder>``) to
``~/.cache/collie/agent-<version>/`` and starts it from there with the fixed command line
:func:`~collie.remote.launch.deployed_command_line`. The host's own python3 runs it, with the host's numpy and
tomli-w; a host whose python3 lacks one of those, or is too old, is one :attr:`Failure.AGENT_DEPS` sentence
naming the module.

Invariants:
    * the upload goes to a fresh temporary folder beside the target (``.agent-<version>.tmp-<random>``) and a
      completeness marker (:data:`MARKER`) is its last file; only then is the folder renamed into place in one
      atomic SFTP rename. A broken upload (connection lost, disk full, permission denied) is never renamed, so
      ``agent-<version>`` is either absent or complete, and only a complete one is ever started;
    * a complete ``agent-<version>`` is reused, never uploaded again (a second campaign, a second agent on the
      host, another controller of the same version); concurrent deployers on one connection take turns, and
      between controllers the rename decides (the loser discards its copy and reuses the winner's);
    * nothing from an inventory or a workload is part of a path or a command: folder names come from this
      collie's own version (:func:`~collie.remote.launch.plain_version`) and a random suffix;
    * every SFTP operation has the launcher's connect timeout; every failure is a :class:`HostError`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import secrets
import stat
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Final

import paramiko

import collie
from collie import __version__
from collie.data import DATA_FOLDERS, data_dir
from collie.remote.client import AgentClient
from collie.remote.deps import AGENT_MODULES, advice, missing_from
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host
from collie.remote.launch import DEPLOY_ROOT, Launcher, deployed_folder, plain_version
from collie.remote.protocol import Welcome
from collie.remote.ssh import SshConnection, SshLauncher

#: The completeness marker, the last file written into a deployment (JSON: version, digest, files).
MARKER: Final = ".collie-deployed"
#: A temporary folder older than this is a dead controller's broken upload, removed by the next deployment.
STALE_S: Final = 3600.0
_SKIP_DIRS: Final = frozenset({"__pycache__"})
_SKIP_SUFFIXES: Final = (".pyc", ".pyo")


@dataclass(frozen=True)
class Bundle:
    """The files of the running collie that a host needs, in the wheel's layout.

    Attributes:
        version: this collie's version (a plain version string).
        files: ``(path relative to the deployment folder, content)``, sorted by path; paths use ``/``.
        digest: SHA-256 over every path and content, recorded in the marker.
    """

    version: str
    files: tuple[tuple[str, bytes], ...]
    digest: str

    @property
    def size(self) -> int:
        return sum(len(data) for _, data in self.files)

    def folders(self) -> tuple[str, ...]:
        """Every folder the files need, parents before children."""
        found = {"/".join(rel.split("/")[:i]) for rel, _ in self.files for i in range(1, rel.count("/") + 1)}
        return tuple(sorted(found, key=lambda f: (f.count("/"), f)))


def _walk(root: Path, skip_top: frozenset[str] = frozenset()) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if (rel.parts[0] in skip_top or any(p in _SKIP_DIRS or p.startswith(".") for p in rel.parts)
                or path.suffix in _SKIP_SUFFIXES or not path.is_file()):
            continue
        yield rel.as_posix(), path


@functools.cache
def bundle() -> Bundle:
    """The running collie: its package (without bytecode) and its data folders, found as :func:`data_dir` finds
    them (``collie/_data`` in a wheel, the checkout's top-level folders otherwise), placed as in a wheel.

    Raises:
        ValueError: this collie's version is not a plain version string.
    """
    version = plain_version(__version__)
    package = Path(collie.__file__).resolve().parent
    files = [(f"collie/{rel}", path.read_bytes()) for rel, path in _walk(package, frozenset({"_data"}))]
    for name in DATA_FOLDERS:
        files += [(f"collie/_data/{name}/{rel}", path.read_bytes()) for rel, path in _walk(data_dir(name))]
    files.sort()
    digest = hashlib.sha256()
    for rel, data in files:
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return Bundle(version, tuple(files), digest.hexdigest())


class Action(Enum):
    """What a deployment did."""

    UPLOADED = "uploaded"  # this controller uploaded it now
    REUSED = "reused"  # a complete deployment of this version was already there


@dataclass(frozen=True)
class Deployment:
    """Collie deployed on one host.

    Attributes:
        version: the deployed collie version (this controller's).
        folder: where, relative to the login folder (``.cache/collie/agent-<version>``).
        action: uploaded now, or reused.
        files, size: how many files and bytes it holds.
    """

    version: str
    folder: str
    action: Action
    files: int
    size: int


_locks: weakref.WeakKeyDictionary[SshConnection, threading.Lock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def deploy(conn: SshConnection, timeout: float, what: Bundle | None = None) -> Deployment:
    """Make sure ``conn``'s host holds a complete deployment of ``what`` (default: the running collie).

    Args:
        conn: a verified connection (:meth:`SshLauncher.connection`).
        timeout: seconds allowed for each SFTP operation.
        what: the files to deploy.

    Raises:
        HostError: :attr:`Failure.DEPLOY`, with the SFTP failure in one sentence (or why this collie cannot be
            deployed: its version is not a plain version string); nothing incomplete is left in the deployment's
            place.
    """
    try:
        b = what or bundle()
        final = deployed_folder(b.version)
    except (ValueError, OSError) as exc:  # a version that cannot name a folder, an unreadable installation
        raise HostError(conn.host.name, Failure.DEPLOY, f"this collie cannot be deployed: {exc}") from None
    with _locks_guard:
        lock = _locks.setdefault(conn, threading.Lock())
    with lock:
        try:
            sftp = _open_sftp(conn, timeout)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise _deploy_error(conn.host, final, "the server refused SFTP", exc) from None
        try:
            return _deploy(sftp, b, final, conn.host)
        finally:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                sftp.close()


def _open_sftp(conn: SshConnection, timeout: float) -> paramiko.SFTPClient:
    transport = conn.client.get_transport()
    if transport is None or not transport.is_active():
        raise EOFError("the connection is closed")
    chan = transport.open_session(timeout=timeout)
    chan.settimeout(timeout)
    chan.invoke_subsystem("sftp")
    return paramiko.SFTPClient(chan)


def _deploy_error(host: Host, final: str, what: str, exc: BaseException) -> HostError:
    detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        detail = "no answer in time"
    return HostError(host.name, Failure.DEPLOY, f"cannot deploy collie to ~/{final}: {what} ({detail})")


def _complete(sftp: paramiko.SFTPClient, folder: str, version: str) -> bool:
    try:
        with sftp.open(f"{folder}/{MARKER}", "rb") as f:
            marker = json.loads(f.read(65536))
    except FileNotFoundError:
        return False
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(marker, dict) and marker.get("version") == version


def _deploy(sftp: paramiko.SFTPClient, b: Bundle, final: str, host: Host) -> Deployment:
    done = Deployment(b.version, final, Action.REUSED, len(b.files), b.size)
    step = f"reading ~/{final}"
    tmp: str | None = None
    try:
        if _complete(sftp, final, b.version):
            return done
        step = f"creating ~/{DEPLOY_ROOT}"
        _makedirs(sftp, DEPLOY_ROOT)
        _remove_stale(sftp, b.version)
        tmp = f"{DEPLOY_ROOT}/.agent-{b.version}.tmp-{secrets.token_hex(6)}"
        step = f"creating ~/{tmp}"
        sftp.mkdir(tmp, 0o700)
        for folder in b.folders():
            sftp.mkdir(f"{tmp}/{folder}", 0o755)
        step = f"uploading {len(b.files)} files to ~/{tmp}"
        for rel, data in b.files:
            _write(sftp, f"{tmp}/{rel}", data)
        _write(sftp, f"{tmp}/{MARKER}", json.dumps({"version": b.version, "digest": b.digest,
                                                     "files": len(b.files)}).encode())
        sftp.chmod(tmp, 0o755)
        step = f"renaming ~/{tmp} to ~/{final}"
        try:
            sftp.posix_rename(tmp, final)
        except OSError:
            if not _complete(sftp, final, b.version):  # not another controller's finished deployment
                raise
            _rmtree(sftp, tmp)  # another controller renamed its complete copy into place first
            return done
        tmp = None
        return Deployment(b.version, final, Action.UPLOADED, len(b.files), b.size)
    except (OSError, EOFError, paramiko.SSHException) as exc:
        if isinstance(exc, OSError) and step.startswith("renaming") and _exists(sftp, final):
            raise HostError(host.name, Failure.DEPLOY, f"cannot deploy collie to ~/{final}: it exists but is not a "
                                                       f"complete deployment of collie {b.version} (no {MARKER}); "
                                                       f"remove it on the host") from None
        raise _deploy_error(host, final, step, exc) from None
    finally:
        if tmp is not None:  # a broken upload: remove what we can (a lost connection leaves it, never used)
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                _rmtree(sftp, tmp)


def _write(sftp: paramiko.SFTPClient, path: str, data: bytes) -> None:
    with sftp.open(path, "wb") as f:
        f.set_pipelined(True)
        f.write(data)


def _exists(sftp: paramiko.SFTPClient, path: str) -> bool:
    try:
        sftp.lstat(path)
    except (OSError, EOFError, paramiko.SSHException):
        return False
    return True


def _makedirs(sftp: paramiko.SFTPClient, path: str) -> None:
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        try:
            attrs = sftp.stat(sub)
        except FileNotFoundError:
            sftp.mkdir(sub, 0o700)
            continue
        if attrs.st_mode is None or not stat.S_ISDIR(attrs.st_mode):
            raise NotADirectoryError(20, f"~/{sub} is not a folder")


def _remove_stale(sftp: paramiko.SFTPClient, version: str) -> None:
    """Remove temporary folders of this version older than :data:`STALE_S` (a dead controller's upload)."""
    prefix = f".agent-{version}.tmp-"
    with contextlib.suppress(OSError):
        for entry in sftp.listdir_attr(DEPLOY_ROOT):
            if entry.filename.startswith(prefix) and time.time() - (entry.st_mtime or 0) > STALE_S:
                _rmtree(sftp, f"{DEPLOY_ROOT}/{entry.filename}")


def _rmtree(sftp: paramiko.SFTPClient, path: str) -> None:
    for entry in sftp.listdir_attr(path):
        sub = f"{path}/{entry.filename}"
        if entry.st_mode is not None and stat.S_ISDIR(entry.st_mode):
            _rmtree(sftp, sub)
        else:
            sftp.remove(sub)
    sftp.rmdir(path)


# ---------------------------------------------------------------------------------------------- starting


@dataclass(frozen=True)
class Started:
    """An agent that answered hello with this collie's version.

    Attributes:
        client: its client (the caller closes it).
        welcome: its hello answer.
        deployment: the deployment it runs from, or None when the host's own collie answered.
    """

    client: AgentClient
    welcome: Welcome
    deployment: Deployment | None


def _deps_error(host: Host, reason: str) -> HostError | None:
    """The :attr:`Failure.AGENT_DEPS` error an agent's exit reason shows, if it shows one."""
    missing = missing_from(reason)
    if missing is None or missing.split(".")[0] == "collie":
        return None
    if missing == "python":
        line = reason[reason.find("collie's agent needs"):].split(")")[0]
        return HostError(host.name, Failure.AGENT_DEPS, f"its python3 is too old: {line}; {advice(missing)}")
    return HostError(host.name, Failure.AGENT_DEPS, f"its python3 lacks the module {missing!r} that collie's agent "
                                                    f"needs; {advice(missing)}")


#: Connections whose host runs the deployed collie: later agents on them start it directly.
_deployed_on: weakref.WeakKeyDictionary[SshConnection, Deployment] = weakref.WeakKeyDictionary()


def start_agent(launcher: Launcher, host: Host, request_timeout: float, seed: int = 0,
                pings: int = 3) -> Started:
    """Start ``host``'s agent and say hello; deploy this collie first when the host's is missing or another version.

    The host's own ``python3 -m collie.agent`` is tried first. When it is not there (its python3 cannot find
    collie), or answers with another collie or protocol version, and ``launcher`` is an :class:`SshLauncher`,
    this collie is deployed (:func:`deploy`) and started from there. Later agents on the same connection start
    the deployed copy directly (one round trip, no SFTP).

    Raises:
        HostError: as :meth:`AgentClient.hello`; :attr:`Failure.AGENT_DEPS` when the host's python3 lacks a
            module the agent needs (or is too old); :attr:`Failure.DEPLOY` when the upload failed;
            :attr:`Failure.VERSION` when even the deployed agent answers another version.
    """
    if isinstance(launcher, SshLauncher):
        conn = launcher.connection(host)
        known = _deployed_on.get(conn)
        if known is not None:
            try:
                return _start_deployed(launcher, host, known, request_timeout, seed, pings)
            except HostError as exc:
                if exc.failure not in (Failure.AGENT_MISSING, Failure.VERSION):
                    raise
                _deployed_on.pop(conn, None)  # removed on the host meanwhile: look again from the start
    client = AgentClient(host, launcher.start(host), request_timeout)
    try:
        welcome = client.hello(seed, pings)
        if welcome.collie_version == __version__:
            return Started(client, welcome, None)
        other = HostError(host.name, Failure.VERSION, f"its agent runs collie {welcome.collie_version} and this "
                                                      f"controller runs {__version__}; install collie {__version__} "
                                                      f"on the host")
    except HostError as exc:
        other = exc
    client.close()
    if other.failure is Failure.AGENT_MISSING:
        missing = missing_from(other.reason)
        if missing is None:
            raise other  # not a missing module (no python3 at all, a crash): deploying would not help
        deps = _deps_error(host, other.reason)
        if deps is not None and missing.split(".")[0] in (*AGENT_MODULES, "python"):
            raise deps from None  # collie is there but its python3 cannot run it: neither could a deployed one
    elif other.failure not in (Failure.VERSION, Failure.PROTOCOL):
        raise other
    if not isinstance(launcher, SshLauncher):
        raise other
    conn = launcher.connection(host)
    deployment = deploy(conn, launcher.connect_timeout)
    started = _start_deployed(launcher, host, deployment, request_timeout, seed, pings)
    _deployed_on[conn] = replace(deployment, action=Action.REUSED)
    return started


def _start_deployed(launcher: SshLauncher, host: Host, deployment: Deployment, request_timeout: float, seed: int,
                    pings: int) -> Started:
    client = AgentClient(host, launcher.start(host, deployed=deployment.version), request_timeout)
    where = f"collie {deployment.version} deployed to ~/{deployment.folder}"
    try:
        welcome = client.hello(seed, pings)
    except HostError as exc:
        client.close()
        deps = _deps_error(host, exc.reason) if exc.failure is Failure.AGENT_MISSING else None
        raise deps or HostError(host.name, exc.failure, f"{where}: {exc.reason}") from None
    if welcome.collie_version != __version__:
        client.close()
        raise HostError(host.name, Failure.VERSION, f"{where} answers as collie {welcome.collie_version}; remove "
                                                    f"~/{deployment.folder} on the host")
    return Started(client, welcome, deployment)
