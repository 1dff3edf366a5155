"""The controller <-> agent protocol: versioned JSON lines over the agent's stdin and stdout.

Every message is one line of UTF-8 JSON, an object with ``v`` (the protocol version), ``id`` (the request's
number; a reply carries its request's), ``type`` and the message's own fields. The controller sends one request
at a time and the agent answers each with exactly one reply: the request's own reply type, or ``error``.

Requests and their replies:

====================  ==================  ===========================================================
request               reply               what
====================  ==================  ===========================================================
``hello``             ``welcome``         who the agent is for (host name, tags, target, netdev, NUMA,
                                          seed); the agent answers its versions, capabilities, pid and
                                          clock (``time``, for the skew), and opens nothing yet
``ping``              ``pong``            the agent's clock now (``time``); a few of these, after hello,
                                          measure the clock skew (the round trip of hello includes the
                                          agent's start-up, so its ``time`` only gives a coarse skew)
``describe``          ``described``       the host's target fingerprint (a ``TargetInfo``)
``sample``            ``sampled``         every counter the host can read now, one snapshot per port
                                          (verbs: the host collector; sim: the simulator's running totals)
``run``               ``ran``             run one workload on the host's own target; a ``RunResult``
``prepare``           ``prepared``        one run of a remote target (a ``RunPlan``): the agent builds a
                                          session for it (aborting any earlier one) and answers its
                                          endpoints' connection data
``connect``           ``connected``       the other agents' endpoints; the session connects to them
``start``             ``started``         begin the warm-up at ``at`` (the agent's clock); answered at once
``finish``            ``finished``        wait for the run's end; what this host measured (a ``HostPart``)
``abort``             ``aborted``         stop and free the session (idempotent; also without one)
``inspect``           ``inspected``       the state of the host's RDMA port (verbs hosts; none for sim):
                                          link state, the GID at the target's index and its type, MTU
``bye``               ``farewell``        the agent closes its target and exits
====================  ==================  ===========================================================

Invariants:
    * :data:`PROTOCOL_VERSION` changes whenever a message changes incompatibly; an agent answers a request of
      another version with an ``error`` of kind ``version`` (one sentence naming both versions) and nothing else;
    * :func:`decode` never raises anything but :class:`ProtocolError`, whatever bytes it is given; a field that
      is missing, mistyped or unknown is the codec's one sentence (``'hello' message: seed: expected an
      integer, got 'x'``);
    * each message class declares its type name once (``@message("prepare")``) and a request its reply once
      (``Prepare(Request[Prepared])``); encode and decode go through :mod:`collie.codec`;
    * a message's fields are JSON data only: nothing in them is ever executed or passed to a shell.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final, Generic, Self, TypeVar, cast, get_args

from collie.codec import Custom, Reader, encode_fields
from collie.codec import decode as decode_fields
from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.model.workload import Workload
from collie.targets.base import RunResult, TargetInfo
from collie.targets.session import HostPart, RunPlan

PROTOCOL_VERSION: Final = 3
#: The longest line either side accepts (a RunResult of a big workload is well below it).
MAX_LINE: Final = 16 * 1024 * 1024


class ProtocolError(Exception):
    """A line that is not a message of this protocol (``str(exc)`` says what is wrong)."""


class ErrorKind(Enum):
    """Why an agent refused or failed a request."""

    VERSION = "version"  # the request speaks another protocol version
    PROTOCOL = "protocol"  # not a message, unknown type, bad field, out of order
    UNSUPPORTED = "unsupported"  # the target cannot run this workload (the trial is pruned)
    INPUT = "input"  # a value the target rejected (bad workload, missing device)
    TARGET = "target"  # the target failed (device error, collector error)
    INTERNAL = "internal"  # a bug in the agent


#: How the fields of types other modules own and read with a reader of their own are read off the wire (their
#: errors adopted). The records with a ``from_dict(data, reader)`` (``TargetInfo``, ``RunResult``, ``Snapshot``,
#: ``PortStatus``, ...) are read by :func:`collie.codec.decode` with the message's reader: their sentences are
#: the protocol's.
_FOREIGN: Final[Custom] = {
    Workload: lambda v, r: r.adopt(lambda: Workload.from_dict(v, r.location)),
}


class Message:
    """A message of the protocol: a frozen dataclass whose fields are the line's fields besides ``v``, ``id``
    and ``type``. ``TYPE`` is its type name on the wire (set by :func:`message`)."""

    TYPE: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The message's own fields, JSON-ready."""
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Self:
        """Read the message's own fields (every one checked; raises ``reader``'s error)."""
        return decode_fields(cls, data, reader, _FOREIGN)


class Reply(Message):
    """A message the agent sends, answering one request."""


R_co = TypeVar("R_co", bound=Reply, covariant=True)


class Request(Message, Generic[R_co]):
    """A message the controller sends; ``Request[X]`` is answered by an ``X`` (or an :class:`Error`)."""

    REPLY: ClassVar[type[Reply]]

    def reply_type(self) -> type[R_co]:
        """The reply this request expects."""
        return cast(type[R_co], self.REPLY)


#: Every message class by its type name.
MESSAGES: Final[dict[str, type[Message]]] = {}
M = TypeVar("M", bound=type[Message])


def message(name: str) -> Callable[[M], M]:
    """Register a message class under its type name ``name`` (a request's reply is its ``Request[...]``)."""

    def register(cls: M) -> M:
        if name in MESSAGES:
            raise ValueError(f"message type {name!r} is registered twice")
        cls.TYPE = name
        if issubclass(cls, Request):
            (reply,) = (get_args(base)[0] for base in getattr(cls, "__orig_bases__", ()) if get_args(base))
            cls.REPLY = reply
        MESSAGES[name] = cls
        return cls

    return register


# ------------------------------------------------------------------------------------------------ replies


@message("welcome")
@dataclass(frozen=True)
class Welcome(Reply):
    """The agent's answer to hello.

    Attributes:
        collie_version: the agent's collie version.
        protocol: the protocol version it speaks (equal to the request's, or it would have sent an error).
        capabilities: what it can do (``describe``, ``sample``, ``run``, the target kinds it runs).
        host: the host name it was told, echoed back unchanged.
        time: the agent's clock (``time.time()``) when it answered, for the clock skew.
        pid: the agent's process id on its host.
        python: the host's Python version.
        hostname: the host's own name (``socket.gethostname()``).
        argv: the agent's command line as its process received it.
    """

    collie_version: str
    protocol: int
    capabilities: tuple[str, ...]
    host: str
    time: float
    pid: int
    python: str
    hostname: str
    argv: tuple[str, ...] = ()


@message("pong")
@dataclass(frozen=True)
class Pong(Reply):
    """``time``: the agent's clock (``time.time()``) when it answered."""

    time: float


@message("described")
@dataclass(frozen=True)
class Described(Reply):
    info: TargetInfo


@message("sampled")
@dataclass(frozen=True)
class Sampled(Reply):
    """``snapshots``: one per RDMA port the host reads (a sim host: one per simulated host)."""

    snapshots: tuple[Snapshot, ...]


@message("ran")
@dataclass(frozen=True)
class Ran(Reply):
    """``result``: the run's result, ``truth`` included (the controller keeps it for tests only)."""

    result: RunResult

    def to_dict(self) -> dict[str, Any]:
        return {"result": self.result.to_dict(include_truth=True)}


@message("prepared")
@dataclass(frozen=True)
class Prepared(Reply):
    """``endpoints``: JSON-ready connection data of this host's endpoints (empty for a sim host)."""

    endpoints: tuple[Mapping[str, Any], ...]


@message("connected")
@dataclass(frozen=True)
class Connected(Reply):
    """The session is connected to its peers."""


@message("started")
@dataclass(frozen=True)
class Started(Reply):
    """The session will begin at the time it was told."""


@message("finished")
@dataclass(frozen=True)
class Finished(Reply):
    """``part``: what this host measured (``truth`` included: the controller keeps it for tests only)."""

    part: HostPart


@message("aborted")
@dataclass(frozen=True)
class Aborted(Reply):
    """No session is left."""


@message("inspected")
@dataclass(frozen=True)
class Inspected(Reply):
    """``port``: the host's RDMA port state, or None for a sim host (it has no port)."""

    port: PortStatus | None


@message("farewell")
@dataclass(frozen=True)
class Farewell(Reply):
    """The agent's last message before it exits."""


@message("error")
@dataclass(frozen=True)
class Error(Reply):
    """The agent refused or failed the request; ``message`` is one sentence."""

    kind: ErrorKind
    message: str


# ----------------------------------------------------------------------------------------------- requests


@message("hello")
@dataclass(frozen=True)
class Hello(Request[Welcome]):
    """First request: tells the agent which host of the inventory it serves (all data, never code)."""

    host: str
    target: str
    controller_version: str
    tags: tuple[str, ...] = ()
    netdev: str | None = None
    numa: int | None = None
    seed: int = 0


@message("ping")
@dataclass(frozen=True)
class Ping(Request[Pong]):
    """Ask for the agent's clock."""


@message("describe")
@dataclass(frozen=True)
class Describe(Request[Described]):
    """Ask for the target's fingerprint."""


@message("sample")
@dataclass(frozen=True)
class Sample(Request[Sampled]):
    """Ask for every counter the host can read now."""


@message("run")
@dataclass(frozen=True)
class Run(Request[Ran]):
    """Run one workload for ``duration`` measured seconds (> 0) on the host's own target."""

    workload: Workload
    duration: float

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Self:
        run = super().from_dict(data, reader)
        if not run.duration > 0:
            reader.at("duration").fail(f"must be a positive number of seconds, got {run.duration:g}")
        return run


@message("prepare")
@dataclass(frozen=True)
class Prepare(Request[Prepared]):
    """Prepare this host's part of one run (the agent aborts any session it holds first).

    Invariants of ``plan``: at least one role, ``duration`` > 0, ``warmup`` >= 0, ``repetition`` None or >= 0.
    """

    plan: RunPlan

    @classmethod
    def from_dict(cls, data: Any, reader: Reader) -> Self:
        prepare = super().from_dict(data, reader)
        plan, at = prepare.plan, reader.at("plan")
        if plan.repetition is not None and plan.repetition < 0:
            at.at("repetition").fail(f"must be 0 or more, got {plan.repetition}")
        if not plan.duration > 0:
            at.at("duration").fail(f"must be a positive number of seconds, got {plan.duration:g}")
        if plan.warmup < 0:
            at.at("warmup").fail(f"must be 0 or more seconds, got {plan.warmup:g}")
        if not plan.roles:
            at.at("roles").fail("is empty; an agent plays at least one role")
        return prepare


@message("connect")
@dataclass(frozen=True)
class Connect(Request[Connected]):
    """``peers``: every other agent's ``prepared`` endpoints, concatenated."""

    peers: tuple[Mapping[str, Any], ...]


@message("start")
@dataclass(frozen=True)
class Start(Request[Started]):
    """Begin the warm-up at ``at`` (the agent's ``time.time()`` scale)."""

    at: float


@message("finish")
@dataclass(frozen=True)
class Finish(Request[Finished]):
    """Wait until the run has ended and report what this host measured."""


@message("abort")
@dataclass(frozen=True)
class Abort(Request[Aborted]):
    """Stop any traffic of the session and free it."""


@message("inspect")
@dataclass(frozen=True)
class Inspect(Request[Inspected]):
    """Ask for the state of the host's RDMA port (link, GID, MTU)."""


@message("bye")
@dataclass(frozen=True)
class Bye(Request[Farewell]):
    """Close the target and exit."""


# ------------------------------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class Envelope:
    """A decoded line: its protocol version, request id and message."""

    version: int
    id: int
    message: Message = field()


def encode(message: Message, msg_id: int, version: int = PROTOCOL_VERSION) -> bytes:
    """One line (ending in ``\\n``) carrying ``message`` as request or reply number ``msg_id``."""
    body: dict[str, Any] = {"v": version, "id": msg_id, "type": message.TYPE}
    body.update(message.to_dict())
    return (json.dumps(body, separators=(",", ":"), allow_nan=False) + "\n").encode()


def peek_version(line: bytes) -> tuple[int | None, int]:
    """The ``(v, id)`` of a line, as far as it can be read (``None`` version when it cannot); never raises."""
    try:
        raw = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, 0
    if not isinstance(raw, dict):
        return None, 0
    v, i = raw.get("v"), raw.get("id")
    return (v if isinstance(v, int) and not isinstance(v, bool) else None,
            i if isinstance(i, int) and not isinstance(i, bool) else 0)


def decode(line: bytes) -> Envelope:
    """Parse one line of the current protocol version.

    Raises:
        ProtocolError: not JSON, not an object, another version, unknown type or a malformed field.
    """
    if len(line) > MAX_LINE:
        raise ProtocolError(f"a line of {len(line)} bytes is longer than the limit of {MAX_LINE}")
    try:
        raw = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"not a JSON line ({exc}): {line[:80]!r}") from None
    envelope = Reader("a protocol line", ProtocolError)
    fields = envelope.table(raw, what="a JSON object").data
    version = fields.pop("v", None)
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version!r} is not this side's version {PROTOCOL_VERSION}")
    msg_id = envelope.at("id").integer(fields.pop("id", None), "an integer (the request's number)")
    kind = fields.pop("type", None)
    cls = MESSAGES.get(kind) if type(kind) is str else None
    if cls is None:
        raise ProtocolError(f"unknown message type {kind!r}")
    return Envelope(version, msg_id, cls.from_dict(fields, Reader(f"{kind!r} message", ProtocolError)))
