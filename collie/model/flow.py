"""One flow of a workload: its client and server :class:`Endpoint` and the verbs resources between them, the
legal values of each field, and the flow's file form.

A flow's client is the requester (it posts WRITE/READ/SEND work requests), its server the responder; a flow
whose client and server are the same host is loopback. ``qps`` and ``mrs`` count per flow and per side. Which end
receives the payload is :attr:`Flow.receiver_is_client`, written once here.

Invariants:
    * every record is a frozen dataclass, hashable and compared by value;
    * ``flow_from_dict(flow_to_dict(f), where) == f`` (lossless round trip).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from collie.codec import Reader, check_fields, expect_type
from collie.errors import InputError
from collie.model.units import parse_size

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


_FLOW_FIELDS: Final = tuple(Flow.__dataclass_fields__)


def hosts_of(flows: Iterable[Flow]) -> tuple[str, ...]:
    """Every host one of ``flows`` touches (either end), sorted."""
    return tuple(sorted({h for f in flows for h in (f.client.host, f.server.host)}))


def flow_to_dict(flow: Flow) -> dict[str, Any]:
    """The file form of ``flow`` (plain JSON/TOML-ready values)."""
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


def flow_from_dict(raw: Any, where: str) -> Flow:
    """Read one flow of a workload file (``where`` names it in every error).

    Raises:
        InputError: unknown or missing field, wrong type, value out of range (the message names the field).
    """
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
