"""The agent: ``python3 -m collie.agent --stdio``, one per host, serving that host's device target.

It reads requests of :mod:`collie.remote.protocol` on stdin, one JSON line each, and writes exactly one reply
line per request on stdout. It opens its target (``sim:PROFILE`` in-process, or ``verbs:DEV:PORT:GID``) on the
first request that needs it, and reads counters with the host collector (verbs) or the simulator's running totals
(sim).

Invariants:
    * stdout carries protocol lines only: anything else the process or a library writes on file descriptor 1
      goes to stderr;
    * the agent exits when stdin ends (the controller closed the channel or the connection dropped) or after
      ``bye``, and closes its target either way;
    * a request it cannot serve gets an ``error`` reply and the agent goes on serving; a request of another
      protocol version gets an ``error`` of kind ``version`` in a reply readable by any version;
    * nothing a request carries is ever executed: names and tags are echoed or ignored, workloads are run by the
      target's own code.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO, Final

from collie import __version__
from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.errors import CollieError
from collie.remote.protocol import (
    PROTOCOL_VERSION,
    Abort,
    Aborted,
    Bye,
    Connect,
    Connected,
    Describe,
    Described,
    Error,
    ErrorKind,
    Farewell,
    Finish,
    Finished,
    Hello,
    Inspect,
    Inspected,
    Ping,
    Pong,
    Prepare,
    Prepared,
    ProtocolError,
    Ran,
    Reply,
    Request,
    Run,
    Sample,
    Sampled,
    Start,
    Started,
    Welcome,
    decode,
    encode,
    peek_version,
)
from collie.targets.base import Target, Unsupported
from collie.targets.kind import TargetSpec
from collie.targets.registry import open_session, open_target, parse_target
from collie.targets.session import HostSession
from collie.targets.sim.kind import SimSpec
from collie.targets.sim.target import SimTarget
from collie.targets.sim.totals import SimTotals
from collie.targets.verbs.spec import VerbsSpec


def capabilities() -> tuple[str, ...]:
    """What this agent can do: the requests it serves and the target kinds it can open."""
    kinds = ["sim"]
    if importlib.util.find_spec("pyverbs") is not None:
        kinds.append("verbs")
    return ("ping", "describe", "sample", "run", "session", "inspect", *(f"target:{k}" for k in kinds))


class Agent:
    """Serves requests for one host (see the module docstring).

    Args:
        open_target: opens a target from its spec and seed (default :func:`collie.targets.open_target`).
        collector: builds the host collector's snapshot for a verbs target ``(device, port, netdev)``.
        argv: the command line to report in ``welcome``.
        inspector: reads a verbs target's port state ``(device, port, gid_index, netdev)`` (default: this
            host's sysfs, :func:`collie.collectors.port.read_port_status`).
    """

    def __init__(self, open_target: Callable[[str, int], Target] | None = None,
                 collector: Callable[[str, int, str | None], Snapshot] | None = None,
                 argv: Sequence[str] = (),
                 inspector: Callable[[str, int, int, str | None], PortStatus] | None = None) -> None:
        self._open_target = open_target or _open_target
        self._collect = collector or _collect
        self._inspect = inspector or _inspect
        self._argv = tuple(argv)
        self.hello: Hello | None = None
        self._spec: TargetSpec | None = None
        self._target: Target | None = None
        self._sim: SimTotals | None = None
        self._session: HostSession | None = None
        self.done = False

    def handle(self, request: Request[Reply]) -> Reply:
        """The reply to one request (never raises for anything a request or its target does)."""
        try:
            return self._handle(request)
        except Unsupported as exc:
            return Error(ErrorKind.UNSUPPORTED, str(exc))
        except CollieError as exc:
            return Error(ErrorKind.INPUT, str(exc))
        except (OSError, RuntimeError, ValueError) as exc:
            return Error(ErrorKind.TARGET, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # an agent bug must not kill the agent: the controller gets a sentence
            return Error(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}")

    def _handle(self, request: Request[Reply]) -> Reply:
        serve = _HANDLERS.get(type(request))
        if serve is None:
            return Error(ErrorKind.PROTOCOL, f"{type(request).__name__} is not a request")
        if self.hello is None and not isinstance(request, Hello | Bye):
            return Error(ErrorKind.PROTOCOL, "the first request must be hello")
        return serve(self, request)

    def _on_hello(self, request: Hello) -> Reply:
        if self.hello is not None:
            return Error(ErrorKind.PROTOCOL, "hello was already received; send it once, first")
        self.hello = request
        return Welcome(collie_version=__version__, protocol=PROTOCOL_VERSION, capabilities=capabilities(),
                       host=request.host, time=time.time(), pid=os.getpid(),
                       python=platform.python_version(), hostname=socket.gethostname(), argv=self._argv)

    def _on_bye(self, request: Bye) -> Reply:
        self.close()
        self.done = True
        return Farewell()

    def _on_ping(self, request: Ping) -> Reply:
        return Pong(time.time())

    def _on_describe(self, request: Describe) -> Reply:
        return Described(self._target_open().describe())

    def _on_sample(self, request: Sample) -> Reply:
        return Sampled(self._sample())

    def _on_run(self, request: Run) -> Reply:
        result = self._target_open().run(request.workload, request.duration)
        if self._sim is not None:
            self._sim.add(result)
        return Ran(result)

    def _on_inspect(self, request: Inspect) -> Reply:
        return Inspected(self._port())

    def _on_abort(self, request: Abort) -> Reply:
        self.abort_session()
        return Aborted()

    def _on_prepare(self, request: Prepare) -> Reply:
        self.abort_session()
        session = self._new_session()
        self._session = session
        return Prepared(tuple(session.prepare(request.plan)))

    def _held(self, request: Request[Reply]) -> HostSession | Error:
        """The session a connect, start or finish acts on, or the error of having none."""
        if self._session is None:
            return Error(ErrorKind.PROTOCOL, f"{request.TYPE} without a session; send prepare first")
        return self._session

    def _on_connect(self, request: Connect) -> Reply:
        session = self._held(request)
        if isinstance(session, Error):
            return session
        session.connect(request.peers)
        return Connected()

    def _on_start(self, request: Start) -> Reply:
        session = self._held(request)
        if isinstance(session, Error):
            return session
        session.start(request.at)
        return Started()

    def _on_finish(self, request: Finish) -> Reply:
        session = self._held(request)
        if isinstance(session, Error):
            return session
        part = session.finish()
        if self._sim is not None:
            self._sim.add_hosts(part.hosts)
        return Finished(part)

    def _new_session(self) -> HostSession:
        """A session of the hello's target kind (:func:`~collie.targets.registry.open_session`): a sim host's
        runs on this agent's simulator."""
        assert self.hello is not None
        return open_session(self._target_spec(), target=self._target_open, seed=self.hello.seed,
                            netdev=self.hello.netdev)

    def abort_session(self) -> None:
        """Abort the session this agent holds, if any (idempotent; an abort that fails still drops it)."""
        session, self._session = self._session, None
        if session is not None:
            session.abort()

    def _target_open(self) -> Target:
        assert self.hello is not None
        if self._target is None:
            target = self._open_target(self.hello.target, self.hello.seed)
            self._target = target.__enter__()
            if isinstance(self._target_spec(), SimSpec):
                assert isinstance(self._target, SimTarget)
                self._sim = SimTotals.for_target(self._target)
        return self._target

    def _target_spec(self) -> TargetSpec:
        """The hello's target, parsed on first use."""
        assert self.hello is not None
        if self._spec is None:
            self._spec = parse_target(self.hello.target)
        return self._spec

    def _sample(self) -> tuple[Snapshot, ...]:
        assert self.hello is not None
        spec = self._target_spec()
        if not isinstance(spec, VerbsSpec):
            self._target_open()
            assert self._sim is not None, f"{spec} is not a device target with counters"
            return self._sim.snapshots()
        return (self._collect(spec.device, spec.port, self.hello.netdev),)

    def _port(self) -> PortStatus | None:
        assert self.hello is not None
        spec = self._target_spec()
        if not isinstance(spec, VerbsSpec):
            return None
        return self._inspect(spec.device, spec.port, spec.gid_index, self.hello.netdev)

    def close(self) -> None:
        """Abort the session and close the target (idempotent)."""
        with contextlib.suppress(Exception):  # closing goes on: the target still has to be closed
            self.abort_session()
        target, self._target = self._target, None
        if target is not None:
            target.__exit__(None, None, None)


#: The handler of each request type (the agent serves exactly these).
_HANDLERS: Final[Mapping[type[Request[Reply]], Callable[[Agent, Any], Reply]]] = {
    Hello: Agent._on_hello, Bye: Agent._on_bye, Ping: Agent._on_ping, Describe: Agent._on_describe,
    Sample: Agent._on_sample, Run: Agent._on_run, Inspect: Agent._on_inspect, Abort: Agent._on_abort,
    Prepare: Agent._on_prepare, Connect: Agent._on_connect, Start: Agent._on_start, Finish: Agent._on_finish,
}


def _open_target(spec: str, seed: int) -> Target:
    return open_target(parse_target(spec), seed=seed)


def _collect(device: str, port: int, netdev: str | None) -> Snapshot:
    from collie.collectors.host import HostCollector

    return HostCollector(device, port, netdev=netdev).snapshot()


def _inspect(device: str, port: int, gid_index: int, netdev: str | None) -> PortStatus:
    from collie.collectors.port import read_port_status

    return read_port_status("/", device, port, gid_index, netdev)


def serve(stdin: BinaryIO, stdout: BinaryIO, agent: Agent) -> int:
    """Answer requests from ``stdin`` on ``stdout`` until ``bye`` or end of input; returns the exit status."""
    try:
        while not agent.done:
            line = stdin.readline()
            if not line:
                break
            if not line.strip():
                continue
            stdout.write(_answer(agent, line))
            stdout.flush()
    except BrokenPipeError:
        pass
    finally:
        agent.close()
    return 0


def _answer(agent: Agent, line: bytes) -> bytes:
    version, msg_id = peek_version(line)
    if version is not None and version != PROTOCOL_VERSION:
        reply: Reply = Error(ErrorKind.VERSION, f"the controller speaks collie protocol version {version} and this "
                                                f"agent (collie {__version__}) speaks version {PROTOCOL_VERSION}; "
                                                f"run the same collie version on both sides")
        return encode(reply, msg_id)
    try:
        envelope = decode(line)
    except ProtocolError as exc:
        return encode(Error(ErrorKind.PROTOCOL, str(exc)), msg_id)
    message = envelope.message
    if not isinstance(message, Request):
        return encode(Error(ErrorKind.PROTOCOL, f"{type(message).__name__} is a reply, not a request"), msg_id)
    return encode(agent.handle(message), envelope.id)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python3 -m collie.agent``; the only accepted command line is ``--stdio``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["--stdio"]:
        print("usage: python3 -m collie.agent --stdio  (speaks collie's JSON-lines protocol on stdin/stdout; "
              "started by the collie controller)", file=sys.stderr)
        return 2
    # keep fd 1 for the protocol: whatever else writes on stdout (a library, a child process) goes to stderr
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.stdin.buffer, out, Agent(argv=sys.orig_argv))
