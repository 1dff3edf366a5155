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
    * :func:`decode` never raises anything but :class:`ProtocolError`, whatever bytes it is given;
    * a message's fields are JSON data only: nothing in them is ever executed or passed to a shell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Final

from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.errors import InputError
from collie.model.workload import Workload
from collie.targets.base import FlowResult, HostResult, RunResult, TargetInfo
from collie.targets.session import HostPart, RunPlan

PROTOCOL_VERSION: Final = 2
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


# ----------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Hello:
    """First request: tells the agent which host of the inventory it serves (all data, never code)."""

    host: str
    target: str
    controller_version: str
    tags: tuple[str, ...] = ()
    netdev: str | None = None
    numa: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class Ping:
    """Ask for the agent's clock."""


@dataclass(frozen=True)
class Describe:
    """Ask for the target's fingerprint."""


@dataclass(frozen=True)
class Sample:
    """Ask for every counter the host can read now."""


@dataclass(frozen=True)
class Run:
    """Run one workload for ``duration`` measured seconds on the host's own target."""

    workload: Workload
    duration: float


@dataclass(frozen=True)
class Prepare:
    """Prepare this host's part of one run (the agent aborts any session it holds first)."""

    plan: RunPlan


@dataclass(frozen=True)
class Connect:
    """``peers``: every other agent's ``prepared`` endpoints, concatenated."""

    peers: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Start:
    """Begin the warm-up at ``at`` (the agent's ``time.time()`` scale)."""

    at: float


@dataclass(frozen=True)
class Finish:
    """Wait until the run has ended and report what this host measured."""


@dataclass(frozen=True)
class Abort:
    """Stop any traffic of the session and free it."""


@dataclass(frozen=True)
class Inspect:
    """Ask for the state of the host's RDMA port (link, GID, MTU)."""


@dataclass(frozen=True)
class Bye:
    """Close the target and exit."""


Request = Hello | Ping | Describe | Sample | Run | Prepare | Connect | Start | Finish | Abort | Inspect | Bye
REQUESTS: Final = (Hello, Ping, Describe, Sample, Run, Prepare, Connect, Start, Finish, Abort, Inspect, Bye)

# ------------------------------------------------------------------------------------------------ replies


@dataclass(frozen=True)
class Welcome:
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


@dataclass(frozen=True)
class Pong:
    """``time``: the agent's clock (``time.time()``) when it answered."""

    time: float


@dataclass(frozen=True)
class Described:
    info: TargetInfo


@dataclass(frozen=True)
class Sampled:
    """``snapshots``: one per RDMA port the host reads (a sim host: one per simulated host)."""

    snapshots: tuple[Snapshot, ...]


@dataclass(frozen=True)
class Ran:
    result: RunResult


@dataclass(frozen=True)
class Prepared:
    """``endpoints``: JSON-ready connection data of this host's endpoints (empty for a sim host)."""

    endpoints: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Connected:
    """The session is connected to its peers."""


@dataclass(frozen=True)
class Started:
    """The session will begin at the time it was told."""


@dataclass(frozen=True)
class Finished:
    part: HostPart


@dataclass(frozen=True)
class Aborted:
    """No session is left."""


@dataclass(frozen=True)
class Inspected:
    """``port``: the host's RDMA port state, or None for a sim host (it has no port)."""

    port: PortStatus | None


@dataclass(frozen=True)
class Farewell:
    """The agent's last message before it exits."""


@dataclass(frozen=True)
class Error:
    """The agent refused or failed the request; ``message`` is one sentence."""

    kind: ErrorKind
    message: str


Reply = (Welcome | Pong | Described | Sampled | Ran | Prepared | Connected | Started | Finished | Aborted | Inspected
         | Farewell | Error)

_TYPES: Final[Mapping[type, str]] = {
    Hello: "hello", Ping: "ping", Describe: "describe", Sample: "sample", Run: "run", Prepare: "prepare",
    Connect: "connect", Start: "start", Finish: "finish", Abort: "abort", Bye: "bye",
    Welcome: "welcome", Pong: "pong", Described: "described", Sampled: "sampled", Ran: "ran", Prepared: "prepared",
    Connected: "connected", Started: "started", Finished: "finished", Aborted: "aborted", Farewell: "farewell",
    Error: "error", Inspect: "inspect", Inspected: "inspected",
}
REPLY_TO: Final[Mapping[type, type]] = {Hello: Welcome, Ping: Pong, Describe: Described, Sample: Sampled, Run: Ran,
                                        Prepare: Prepared, Connect: Connected, Start: Started, Finish: Finished,
                                        Abort: Aborted, Inspect: Inspected, Bye: Farewell}


@dataclass(frozen=True)
class Envelope:
    """A decoded line: its protocol version, request id and message."""

    version: int
    id: int
    message: Request | Reply = field()


def type_name(message: Request | Reply) -> str:
    return _TYPES[type(message)]


def encode(message: Request | Reply, msg_id: int, version: int = PROTOCOL_VERSION) -> bytes:
    """One line (ending in ``\\n``) carrying ``message`` as request or reply number ``msg_id``."""
    body: dict[str, Any] = {"v": version, "id": msg_id, "type": type_name(message)}
    body.update(_fields(message))
    return (json.dumps(body, separators=(",", ":"), allow_nan=False) + "\n").encode()


def _fields(m: Request | Reply) -> dict[str, Any]:
    if isinstance(m, Hello):
        return {"host": m.host, "target": m.target, "controller_version": m.controller_version,
                "tags": list(m.tags), "netdev": m.netdev, "numa": m.numa, "seed": m.seed}
    if isinstance(m, Run):
        return {"workload": m.workload.to_dict(), "duration": m.duration}
    if isinstance(m, Prepare):
        p = m.plan
        return {"plan": {"run": p.run, "workload": p.workload.to_dict(), "roles": list(p.roles), "warmup": p.warmup,
                         "duration": p.duration, "repetition": p.repetition}}
    if isinstance(m, Connect):
        return {"peers": [dict(x) for x in m.peers]}
    if isinstance(m, Start):
        return {"at": m.at}
    if isinstance(m, Prepared):
        return {"endpoints": [dict(x) for x in m.endpoints]}
    if isinstance(m, Finished):
        return {"part": part_to_dict(m.part)}
    if isinstance(m, Welcome):
        return {"collie_version": m.collie_version, "protocol": m.protocol, "capabilities": list(m.capabilities),
                "host": m.host, "time": m.time, "pid": m.pid, "python": m.python, "hostname": m.hostname,
                "argv": list(m.argv)}
    if isinstance(m, Pong):
        return {"time": m.time}
    if isinstance(m, Described):
        return {"info": m.info.to_dict()}
    if isinstance(m, Sampled):
        return {"snapshots": [s.to_dict() for s in m.snapshots]}
    if isinstance(m, Ran):
        return {"result": m.result.to_dict(include_truth=True)}
    if isinstance(m, Inspected):
        return {"port": m.port.to_dict() if m.port is not None else None}
    if isinstance(m, Error):
        return {"kind": m.kind.value, "message": m.message}
    return {}


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
    if not isinstance(raw, dict):
        raise ProtocolError(f"expected a JSON object, got {line[:80]!r}")
    version, msg_id, kind = raw.get("v"), raw.get("id"), raw.get("type")
    if version != PROTOCOL_VERSION or isinstance(version, bool):
        raise ProtocolError(f"protocol version {version!r} is not this side's version {PROTOCOL_VERSION}")
    if not isinstance(msg_id, int) or isinstance(msg_id, bool):
        raise ProtocolError(f"message id {msg_id!r} is not an integer")
    try:
        return Envelope(version, msg_id, _message(kind, raw))
    except ProtocolError:
        raise
    except (InputError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"malformed {kind!r} message: {exc}") from None


def _message(kind: Any, d: Mapping[str, Any]) -> Request | Reply:
    if kind == "hello":
        return Hello(host=_str(d, "host"), target=_str(d, "target"), controller_version=_str(d, "controller_version"),
                     tags=tuple(_str_list(d, "tags")), netdev=_opt_str(d, "netdev"), numa=_opt_int(d, "numa"),
                     seed=_int(d, "seed"))
    if kind == "ping":
        return Ping()
    if kind == "pong":
        return Pong(float(d["time"]))
    if kind == "describe":
        return Describe()
    if kind == "sample":
        return Sample()
    if kind == "run":
        duration = d["duration"]
        if isinstance(duration, bool) or not isinstance(duration, int | float) or not duration > 0:
            raise ProtocolError(f"run: duration {duration!r} is not a positive number of seconds")
        return Run(workload=Workload.from_dict(d["workload"], "run.workload"), duration=float(duration))
    if kind == "prepare":
        return Prepare(_plan(d["plan"]))
    if kind == "connect":
        return Connect(_objects(d, "peers"))
    if kind == "start":
        return Start(_number(d, "at"))
    if kind == "finish":
        return Finish()
    if kind == "abort":
        return Abort()
    if kind == "bye":
        return Bye()
    if kind == "inspect":
        return Inspect()
    if kind == "inspected":
        port = d.get("port")
        if port is not None and not isinstance(port, dict):
            raise ProtocolError("inspected: port is not an object")
        return Inspected(PortStatus.from_dict(port) if port is not None else None)
    if kind == "welcome":
        return Welcome(collie_version=_str(d, "collie_version"), protocol=_int(d, "protocol"),
                       capabilities=tuple(_str_list(d, "capabilities")), host=_str(d, "host"),
                       time=float(d["time"]), pid=_int(d, "pid"), python=_str(d, "python"),
                       hostname=_str(d, "hostname"), argv=tuple(_str_list(d, "argv")))
    if kind == "described":
        return Described(TargetInfo.from_dict(d["info"]))
    if kind == "sampled":
        snaps = d["snapshots"]
        if not isinstance(snaps, list):
            raise ProtocolError("sampled: snapshots is not a list")
        return Sampled(tuple(Snapshot.from_dict(s, "sampled.snapshot") for s in snaps))
    if kind == "ran":
        return Ran(RunResult.from_dict(d["result"]))
    if kind == "prepared":
        return Prepared(_objects(d, "endpoints"))
    if kind == "connected":
        return Connected()
    if kind == "started":
        return Started()
    if kind == "finished":
        return Finished(part_from_dict(d["part"]))
    if kind == "aborted":
        return Aborted()
    if kind == "farewell":
        return Farewell()
    if kind == "error":
        return Error(ErrorKind(d["kind"]), _str(d, "message"))
    raise ProtocolError(f"unknown message type {kind!r}")


def part_to_dict(part: HostPart) -> dict[str, Any]:
    """A :class:`HostPart` as JSON-ready data (truth included: the controller keeps it for tests only)."""
    return {"hosts": [h.to_dict() for h in part.hosts], "flows": [asdict(f) for f in part.flows],
            "setup_s": part.setup_s, "errors": list(part.errors), "engine_bound": part.engine_bound,
            "truth": list(part.truth), "interval": list(part.interval)}


def part_from_dict(d: Mapping[str, Any]) -> HostPart:
    """The inverse of :func:`part_to_dict`."""
    interval = d.get("interval", [0.0, 0.0])
    if not isinstance(interval, list) or len(interval) != 2:
        raise ProtocolError(f"part: interval {interval!r} is not [start, end]")
    return HostPart(hosts=tuple(HostResult.from_dict(h) for h in d["hosts"]),
                    flows=tuple(FlowResult(**f) for f in d["flows"]), setup_s=float(d["setup_s"]),
                    errors=tuple(_str_list(d, "errors")), engine_bound=bool(d.get("engine_bound", False)),
                    truth=tuple(_str_list(d, "truth")), interval=(float(interval[0]), float(interval[1])))


def _plan(d: Any) -> RunPlan:
    if not isinstance(d, dict):
        raise ProtocolError(f"prepare: plan {d!r} is not an object")
    rep = d.get("repetition")
    if rep is not None and (isinstance(rep, bool) or not isinstance(rep, int) or rep < 0):
        raise ProtocolError(f"prepare: repetition {rep!r} is not a whole number >= 0")
    duration, warmup = _number(d, "duration"), _number(d, "warmup")
    if not duration > 0 or warmup < 0:
        raise ProtocolError(f"prepare: duration {duration!r} must be > 0 and warmup {warmup!r} >= 0")
    roles = tuple(_str_list(d, "roles"))
    if not roles:
        raise ProtocolError("prepare: roles is empty; an agent plays at least one role")
    return RunPlan(run=_int(d, "run"), workload=Workload.from_dict(d["workload"], "prepare.plan.workload"),
                   roles=roles, warmup=warmup, duration=duration, repetition=rep)


def _objects(d: Mapping[str, Any], key: str) -> tuple[Mapping[str, Any], ...]:
    v = d.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise ProtocolError(f"field {key!r} is not a list of objects")
    return tuple(v)


def _number(d: Mapping[str, Any], key: str) -> float:
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ProtocolError(f"field {key!r} is not a number: {v!r}")
    return float(v)


def _str(d: Mapping[str, Any], key: str) -> str:
    v = d[key]
    if not isinstance(v, str):
        raise ProtocolError(f"field {key!r} is not a string: {v!r}")
    return v


def _opt_str(d: Mapping[str, Any], key: str) -> str | None:
    return None if d.get(key) is None else _str(d, key)


def _int(d: Mapping[str, Any], key: str) -> int:
    v = d.get(key, 0)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ProtocolError(f"field {key!r} is not an integer: {v!r}")
    return v


def _opt_int(d: Mapping[str, Any], key: str) -> int | None:
    return None if d.get(key) is None else _int(d, key)


def _str_list(d: Mapping[str, Any], key: str) -> list[str]:
    v = d.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ProtocolError(f"field {key!r} is not a list of strings: {v!r}")
    return v
