"""The resolved description of one experiment: who sends what to whom, with which verbs resources.

A :class:`Workload` is a tuple of :class:`Flow` records over named hosts. Each flow has a client (the requester:
it posts WRITE/READ/SEND work requests) and a server (the responder) :class:`Endpoint`. A flow whose client and
server are the same host is loopback. ``qps`` and ``mrs`` count per flow and per side.

Invariants:
    * every record is a frozen dataclass; workloads are hashable and compare by value;
    * :meth:`Workload.key` depends only on the flows (not their order, name or description), so two files that
      describe the same experiment deduplicate;
    * ``Workload.from_toml(w.to_toml()) == w`` and likewise for JSON (lossless round trip).

The file format is documented in ``docs/workloads.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import tomli_w

from collie.codec import Reader, check_fields, expect_type
from collie.errors import InputError
from collie.model.units import parse_size
from collie.tomlio import parse_toml, read_text, read_toml

TRANSPORTS: Final = ("RC", "UC", "UD")
OPCODES: Final = ("WRITE", "WRITE_IMM", "READ", "SEND", "SEND_IMM", "ATOMIC_FA", "ATOMIC_CS")
MEMORY_PLACEMENTS: Final = ("local", "remote", "gpu")
MTUS: Final = (256, 512, 1024, 2048, 4096)
MAX_SIZES: Final = 8

#: Legal ranges of the integer fields of a flow (inclusive). These are what a workload file may say; the
#: search space's ranges (workloads/default.toml) are narrower.
FLOW_LIMITS: Final[Mapping[str, tuple[int, int]]] = {
    "qps": (1, 1 << 20),
    "batch": (1, 4096),
    "sges": (1, 32),
    "sq_depth": (1, 1 << 16),
    "rq_depth": (1, 1 << 16),
    "mrs": (1, 10_000_000),
    "mr_size": (1, 1 << 40),
    "inline": (0, 1024),
    "signal_every": (1, 1 << 16),
    "processes": (1, 256),
}
SIZE_LIMITS: Final = (1, 1 << 31)


@dataclass(frozen=True)
class Endpoint:
    """One end of a flow.

    Attributes:
        host: name of the host (a key of the target's inventory; ``a`` and ``b`` on the simulator).
        memory: where its buffers live: ``local`` (the NIC's NUMA node), ``remote`` (the other socket) or
            ``gpu`` (device memory, GPU-Direct).
    """

    host: str
    memory: str = "local"


@dataclass(frozen=True)
class Flow:
    """Traffic of one kind from a client endpoint to a server endpoint.

    Attributes:
        client: the requester.
        server: the responder.
        transport: ``RC``, ``UC`` or ``UD``.
        opcode: the verb the client posts (one of :data:`OPCODES`).
        sizes: request-size vector in bytes; work request *i* carries ``sizes[i % len(sizes)]`` bytes.
        qps: queue pairs of this flow (each side has as many).
        batch: work requests per post (a post list of this length).
        sges: scatter/gather entries per work request; a message is split evenly over them.
        sq_depth: send-queue depth (max outstanding WQEs per QP).
        rq_depth: receive-queue depth (only meaningful for SEND opcodes).
        mtu: path MTU in bytes.
        mrs: memory regions registered per side.
        mr_size: size of each memory region in bytes.
        inline: max inline data size requested (0 = no inline).
        signal_every: one signalled completion every this many work requests.
        burst: traffic in on/off bursts instead of a steady stream.
        processes: worker processes driving this flow's QPs on each host.
    """

    client: Endpoint
    server: Endpoint
    transport: str = "RC"
    opcode: str = "WRITE"
    sizes: tuple[int, ...] = (65536,)
    qps: int = 1
    batch: int = 1
    sges: int = 1
    sq_depth: int = 128
    rq_depth: int = 128
    mtu: int = 4096
    mrs: int = 1
    mr_size: int = 65536
    inline: int = 0
    signal_every: int = 1
    burst: bool = False
    processes: int = 1

    @property
    def loopback(self) -> bool:
        """True when client and server are the same host."""
        return self.client.host == self.server.host

    @property
    def receiver_is_client(self) -> bool:
        """Which end the payload flows into: a READ moves payload from the server to the client; every other
        opcode (WRITE, SEND, their ``_IMM`` forms, and the atomics, whose operands travel in the request) from
        the client to the server. The one place this rule is written: :attr:`payload_receiver` and
        :attr:`payload_sender` follow it."""
        return self.opcode == "READ"

    @property
    def payload_receiver(self) -> Endpoint:
        """The end whose NIC receives the payload (see :attr:`receiver_is_client`)."""
        return self.client if self.receiver_is_client else self.server

    @property
    def payload_sender(self) -> Endpoint:
        """The end whose NIC sends the payload (see :attr:`receiver_is_client`)."""
        return self.server if self.receiver_is_client else self.client

    @property
    def max_size(self) -> int:
        return max(self.sizes)

    @property
    def min_size(self) -> int:
        return min(self.sizes)


@dataclass(frozen=True)
class Workload:
    """One experiment: flows over named hosts, plus a name and description that do not affect identity."""

    flows: tuple[Flow, ...]
    name: str = field(default="", compare=False)
    description: str = field(default="", compare=False)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host a flow touches, sorted."""
        return tuple(sorted({h for f in self.flows for h in (f.client.host, f.server.host)}))

    def key(self) -> str:
        """A stable 16-hex-digit identity of the experiment (flows only, order-independent)."""
        canon = sorted(json.dumps(_flow_to_dict(f), sort_keys=True) for f in self.flows)
        return hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/TOML-ready form (the file format)."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        out["flows"] = [_flow_to_dict(f) for f in self.flows]
        return out

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "workload") -> Workload:
        """Build and validate a workload from its file form.

        Raises:
            InputError: unknown or missing field, wrong type, value out of range (the message names the field).
            ConstraintError: an illegal combination (e.g. UD with READ).
        """
        from collie.model.constraints import validate_workload

        expect_type(data, dict, source, "a table")
        check_fields(data, source, ("name", "description", "flows"), required=("flows",))
        flows_raw = expect_type(data["flows"], list, f"{source}: flows", "a list of [[flows]] tables")
        if not flows_raw:
            raise InputError(f"{source}: flows: a workload needs at least one [[flows]] table")
        flows = tuple(_flow_from_dict(f, f"{source}: flows[{i}]") for i, f in enumerate(flows_raw))
        name = expect_type(data.get("name", ""), str, f"{source}: name", "a string")
        desc = expect_type(data.get("description", ""), str, f"{source}: description", "a string")
        workload = cls(flows=flows, name=name, description=desc)
        validate_workload(workload, source)
        return workload

    @classmethod
    def from_toml(cls, text: str, source: str = "<toml>") -> Workload:
        return cls.from_dict(parse_toml(text, source), source)

    @classmethod
    def from_json(cls, text: str, source: str = "<json>") -> Workload:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source}: malformed JSON: {exc}") from None
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        """Read a workload file; ``.json`` files are JSON, everything else TOML."""
        p = Path(path)
        if p.suffix.lower() == ".json":
            return cls.from_json(read_text(p, "a JSON workload file"), str(p))
        return cls.from_dict(read_toml(p), str(p))

    def with_flows(self, flows: tuple[Flow, ...]) -> Workload:
        return replace(self, flows=flows)


_FLOW_FIELDS: Final = tuple(Flow.__dataclass_fields__)


def _flow_to_dict(flow: Flow) -> dict[str, Any]:
    d = asdict(flow)
    d["sizes"] = list(flow.sizes)
    return d


def _endpoint_from(value: Any, where: str) -> Endpoint:
    if isinstance(value, str):
        return Endpoint(host=_host_name(value, where))
    expect_type(value, dict, where, 'a host name or a table like { host = "a", memory = "local" }')
    check_fields(value, where, ("host", "memory"), required=("host",))
    host = _host_name(expect_type(value["host"], str, f"{where}.host", "a host name"), f"{where}.host")
    memory = value.get("memory", "local")
    if memory not in MEMORY_PLACEMENTS:
        raise InputError(f"{where}.memory: {memory!r} is not a memory placement; use one of "
                         f"{', '.join(MEMORY_PLACEMENTS)}")
    return Endpoint(host=host, memory=memory)


def _host_name(name: str, where: str) -> str:
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise InputError(f"{where}: {name!r} is not a host name (letters, digits, '-', '_', '.')")
    return name


def _bounded_int(value: Any, lo: int, hi: int, where: str) -> int:
    expect_type(value, int, where, f"an integer from {lo} to {hi}")
    if not lo <= value <= hi:
        raise InputError(f"{where}: {value} is out of range; allowed is {lo} to {hi}")
    return int(value)


def _flow_from_dict(raw: Any, where: str) -> Flow:
    expect_type(raw, dict, where, "a table")
    check_fields(raw, where, _FLOW_FIELDS, required=("client", "server"))
    kwargs: dict[str, Any] = {
        "client": _endpoint_from(raw["client"], f"{where}.client"),
        "server": _endpoint_from(raw["server"], f"{where}.server"),
    }
    if "transport" in raw:
        kwargs["transport"] = Reader(f"{where}.transport").one_of(raw["transport"], TRANSPORTS)
    if "opcode" in raw:
        kwargs["opcode"] = Reader(f"{where}.opcode").one_of(raw["opcode"], OPCODES)
    if "mtu" in raw:
        kwargs["mtu"] = Reader(f"{where}.mtu").one_of(raw["mtu"], MTUS)
    if "sizes" in raw:
        kwargs["sizes"] = _sizes(raw["sizes"], f"{where}.sizes")
    for name, (lo, hi) in FLOW_LIMITS.items():
        if name in raw:
            value = raw[name]
            if name == "mr_size" and isinstance(value, str):
                value = _size(value, f"{where}.{name}")
            kwargs[name] = _bounded_int(value, lo, hi, f"{where}.{name}")
    if "burst" in raw:
        kwargs["burst"] = expect_type(raw["burst"], bool, f"{where}.burst", "true or false")
    return Flow(**kwargs)


def _size(value: Any, where: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def _sizes(value: Any, where: str) -> tuple[int, ...]:
    if isinstance(value, int | str) and not isinstance(value, bool):
        value = [value]
    expect_type(value, list, where, f"a list of 1 to {MAX_SIZES} byte sizes")
    if not 1 <= len(value) <= MAX_SIZES:
        raise InputError(f"{where}: has {len(value)} sizes; allowed is 1 to {MAX_SIZES}")
    lo, hi = SIZE_LIMITS
    out = []
    for i, v in enumerate(value):
        n = _size(v, f"{where}[{i}]")
        if not lo <= n <= hi:
            raise InputError(f"{where}[{i}]: {n} bytes is out of range; allowed is {lo} to {hi}")
        out.append(n)
    return tuple(out)
