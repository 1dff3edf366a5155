"""The controller's side of one agent: requests with a deadline each, failures as one :class:`HostError`.

Invariants:
    * one request at a time; every request has a deadline (the inventory's ``request_timeout`` unless given);
    * a reply is matched to its request by id; anything else is a protocol failure;
    * after a timeout, a dead channel or a protocol failure the client is broken: every later request fails at
      once with :attr:`Failure.BROKEN` (a late reply can never be taken for the answer to a later request);
    * an agent that refuses a workload as unsupported raises :class:`~collie.targets.base.Unsupported`, as a local
      target would.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from collie import __version__
from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.model.workload import Workload
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host
from collie.remote.launch import AGENT_COMMAND_LINE, AgentChannel, ChannelClosed, ChannelTimeout
from collie.remote.protocol import (
    PROTOCOL_VERSION,
    Abort,
    Bye,
    Connect,
    Describe,
    Error,
    ErrorKind,
    Finish,
    Hello,
    Inspect,
    Ping,
    Prepare,
    ProtocolError,
    Reply,
    Request,
    Run,
    Sample,
    Start,
    Welcome,
    decode,
    encode,
    peek_version,
)
from collie.targets.base import RunResult, TargetInfo, Unsupported
from collie.targets.session import HostPart, RunPlan

R = TypeVar("R", bound=Reply)


@dataclass(frozen=True)
class Clock:
    """The agent's clock against ours, from the fastest of a few ``ping`` round trips.

    Attributes:
        skew_s: agent clock minus ours at the midpoint of the round trip (positive: the agent is ahead).
        rtt_s: that round trip; the skew is known to within ``rtt_s / 2``.
    """

    skew_s: float
    rtt_s: float


def describe_exit(closed: ChannelClosed) -> str:
    """``exited with status 1`` / ``was killed by signal 9 (exit status 137)`` / ``was killed or lost its
    connection (no exit status)``, then the last line of its stderr in parentheses."""
    status = closed.exit_status
    if status is None:
        how = "was killed or lost its connection (no exit status)"
    elif status > 128:
        how = f"was killed by signal {status - 128} (exit status {status})"
    else:
        how = f"exited with status {status}"
    last = closed.stderr.strip().splitlines()[-1] if closed.stderr.strip() else ""
    return f"{how}{f' ({last})' if last else ''}"


class AgentClient:
    """Talks to one agent over its channel.

    Args:
        host: the inventory host the agent serves.
        channel: the channel a launcher handed back.
        request_timeout: default seconds allowed for one request.
    """

    def __init__(self, host: Host, channel: AgentChannel, request_timeout: float) -> None:
        self.host = host
        self.channel = channel
        self.request_timeout = request_timeout
        self.welcome: Welcome | None = None
        self.clock: Clock | None = None
        self._next_id = 1
        self._broken: str | None = None
        self._plan: RunPlan | None = None

    def _fail(self, failure: Failure, reason: str) -> HostError:
        if failure not in (Failure.AGENT_ERROR,):
            self._broken = reason
        return HostError(self.host.name, failure, reason)

    def request(self, message: Request[R], timeout: float | None = None, exited: Failure = Failure.AGENT_EXITED) -> R:
        """Send ``message`` and return its reply (of the type the request declares).

        Raises:
            HostError: timeout, agent gone, protocol or version failure, or an ``error`` reply (kind
                :attr:`Failure.AGENT_ERROR`; ``unsupported`` raises :class:`Unsupported` instead).
            Unsupported: the agent's target cannot run this workload.
        """
        what = message.TYPE
        if self._broken is not None:
            raise HostError(self.host.name, Failure.BROKEN,
                            f"cannot send {what}: the agent is unusable after an earlier failure ({self._broken})")
        limit = self.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        msg_id = self._next_id
        self._next_id += 1
        try:
            self.channel.send(encode(message, msg_id), limit)
            line = self.channel.read_line(max(0.0, deadline - time.monotonic()))
        except ChannelTimeout:
            raise self._fail(Failure.TIMEOUT, f"its agent did not answer {what} within {limit:g} s") from None
        except ChannelClosed as closed:
            if exited is Failure.AGENT_MISSING and closed.exit_status is not None:
                raise self._fail(exited, f"{AGENT_COMMAND_LINE} did not start there: it {describe_exit(closed)}; "
                                         f"install collie {__version__} on the host") from None
            raise self._fail(Failure.AGENT_EXITED, f"its agent {describe_exit(closed)} before answering "
                                                   f"{what}") from None
        return self._reply(line, msg_id, what, message.reply_type())

    def _reply(self, line: bytes, msg_id: int, what: str, expect: type[R]) -> R:
        version, _ = peek_version(line)
        if version is not None and version != PROTOCOL_VERSION:
            age = "older" if version < PROTOCOL_VERSION else "newer"
            raise self._fail(Failure.VERSION, f"its agent speaks the {age} collie protocol version {version} and "
                                              f"this collie ({__version__}) speaks version {PROTOCOL_VERSION}"
                                              f"{_their_words(line)}; install collie {__version__} on the host")
        try:
            envelope = decode(line)
        except ProtocolError as exc:
            raise self._fail(Failure.PROTOCOL, f"its agent's answer to {what} is not a protocol message: "
                                               f"{exc}") from None
        reply = envelope.message
        if isinstance(reply, Error) and reply.kind is ErrorKind.VERSION:
            raise self._fail(Failure.VERSION, f"its agent refused the protocol: {reply.message}")
        if envelope.id != msg_id:
            raise self._fail(Failure.PROTOCOL, f"its agent answered request {envelope.id} while {what} was request "
                                               f"{msg_id}")
        if isinstance(reply, Error):
            if reply.kind is ErrorKind.UNSUPPORTED:
                raise Unsupported(reply.message)
            if reply.kind in (ErrorKind.PROTOCOL, ErrorKind.INTERNAL):
                raise self._fail(Failure.PROTOCOL, f"its agent failed {what} ({reply.kind.value}): {reply.message}")
            raise HostError(self.host.name, Failure.AGENT_ERROR, f"{what} failed on the host: {reply.message}")
        if not isinstance(reply, expect):
            raise self._fail(Failure.PROTOCOL, f"its agent answered {what} with {reply.TYPE}")
        return reply

    def hello(self, seed: int = 0, pings: int = 3) -> Welcome:
        """Introduce the host to its agent, then measure its clock; records :attr:`welcome` and :attr:`clock`.

        Raises:
            HostError: as :meth:`request`.
        """
        h = self.host
        message = Hello(host=h.name, target=h.target.spec, controller_version=__version__, tags=h.tags,
                        netdev=h.netdev, numa=h.numa, seed=seed)
        t0 = time.time()
        welcome = self.request(message, exited=Failure.AGENT_MISSING)
        t1 = time.time()
        self.welcome = welcome
        self.clock = Clock(skew_s=welcome.time - (t0 + t1) / 2, rtt_s=t1 - t0)
        if pings > 0:
            self.clock = self.measure_clock(pings)
        return welcome

    def measure_clock(self, pings: int = 3) -> Clock:
        """The skew from the fastest of ``pings`` round trips (NTP's way: the shortest trip is the most
        symmetric)."""
        readings = []
        for _ in range(max(1, pings)):
            t0 = time.time()
            pong = self.request(Ping())
            t1 = time.time()
            readings.append(Clock(skew_s=pong.time - (t0 + t1) / 2, rtt_s=t1 - t0))
        return min(readings, key=lambda c: c.rtt_s)

    def describe(self) -> TargetInfo:
        return self.request(Describe()).info

    def sample(self) -> tuple[Snapshot, ...]:
        return self.request(Sample()).snapshots

    def inspect(self) -> PortStatus | None:
        """The host's RDMA port state (None for a sim host)."""
        return self.request(Inspect()).port

    def run(self, workload: Workload, duration: float, timeout: float | None = None) -> RunResult:
        """Run one workload on the host's target (``timeout`` defaults to the request timeout + duration)."""
        limit = timeout if timeout is not None else self.request_timeout + duration
        return self.request(Run(workload, duration), limit).result

    # ------------------------------------------------------------------ one run of a remote target, step by step

    def prepare(self, plan: RunPlan, timeout: float | None = None) -> list[Mapping[str, Any]]:
        """Build this host's session for ``plan``; its endpoints' connection data.

        Raises:
            Unsupported: the host's target cannot run the workload.
            HostError: as :meth:`request`.
        """
        self._plan = plan
        return list(self.request(Prepare(plan), timeout).endpoints)

    def connect(self, peers: Sequence[Mapping[str, Any]], timeout: float | None = None) -> None:
        """Give the session every other agent's endpoints."""
        self.request(Connect(tuple(peers)), timeout)

    def start(self, at: float, timeout: float | None = None) -> None:
        """Tell the session to begin its warm-up at ``at`` on the agent's clock (answered at once)."""
        self.request(Start(at), timeout)

    def finish(self, timeout: float | None = None) -> HostPart:
        """Wait for the run's end and return what the host measured. ``timeout`` must cover the rest of the run
        (the caller knows the time until the start); default: the last prepared plan's warm-up + duration + the
        request timeout."""
        if timeout is None:
            plan = self._plan
            timeout = self.request_timeout + (plan.warmup + plan.duration if plan is not None else 0.0)
        return self.request(Finish(), timeout).part

    def abort(self, timeout: float | None = None) -> None:
        """Stop and free the host's session (idempotent on the agent)."""
        self.request(Abort(), timeout)

    @property
    def broken(self) -> bool:
        """Whether an earlier failure (timeout, dead channel, protocol) left this client unusable."""
        return self._broken is not None

    def close(self, timeout: float = 5.0) -> None:
        """Say bye when the agent is healthy, then close the channel (idempotent; never raises HostError)."""
        if self._broken is None:
            with contextlib.suppress(HostError):
                self.request(Bye(), timeout)
            self._broken = "the channel was closed"
        self.channel.close()


def _their_words(line: bytes) -> str:
    try:
        message = json.loads(line).get("message")
    except (ValueError, AttributeError):
        return ""
    return f" (the agent says: {message})" if isinstance(message, str) else ""
