"""One flow of a workload: its client and server :class:`Endpoint` and the verbs resources between them, the
legal values of each field, and the flow's file form.

A flow's client is the requester (it posts WRITE/READ/SEND/atomic work requests, one opcode pattern cycled over
them like the size pattern), its server the responder; a flow whose client and server are the same NIC is
loopback. An endpoint names its host, and on a host with more than one NIC which of them: the address
``h3/1`` is NIC 1 of host ``h3``, and ``h3`` alone its NIC 0 (:func:`nic_address`, :func:`split_address`), so
the workloads and results of one-NIC hosts read as before NICs were counted. ``qps`` and ``mrs`` count per flow
and per side. Which end receives the payload is :attr:`Flow.receiver_is_client`, written once here.

Invariants:
    * every record is a frozen dataclass, hashable and compared by value;
    * ``flow_from_dict(flow_to_dict(f), where) == f`` (lossless round trip);
    * the file form of a flow that uses none of the newer fields (an opcode pattern, the receive side apart
      from the send side, churn, a victim's name, a traffic class) is what it was before they existed, so a
      workload's key never changes under it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from collie.codec import Reader, check_fields, expect_type
from collie.errors import InputError
from collie.model.units import parse_size

TRANSPORTS: Final = ("RC", "UC", "UD")
OPCODES: Final = ("WRITE", "WRITE_IMM", "READ", "SEND", "SEND_IMM", "ATOMIC_FA", "ATOMIC_CS")
ATOMIC_OPCODES: Final = frozenset(("ATOMIC_FA", "ATOMIC_CS"))
#: Opcodes whose every request consumes a receive WQE at the responder.
RECV_CONSUMING: Final = frozenset(("SEND", "SEND_IMM", "WRITE_IMM"))
#: Opcodes that can carry inline data.
INLINE_OPCODES: Final = frozenset(("WRITE", "WRITE_IMM", "SEND", "SEND_IMM"))
#: Bytes an atomic request operates on, whatever the size pattern says.
ATOMIC_BYTES: Final = 8
#: What a flow's :attr:`Flow.opcode` is when its requests use more than one opcode.
MIXED: Final = "MIXED"
MAX_OPCODES: Final = 8
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
    "recv_batch": (1, 4096),
    "recv_sges": (1, 32),
    "recv_delay_us": (0, 1_000_000),
    "mr_churn": (0, 1_000_000),
    "qp_churn": (0, 100_000),
}
#: Fields written to the file form only when they differ from their default (added after workload keys were
#: first recorded: leaving them out keeps those keys).
OMITTED_AT_DEFAULT: Final = ("recv_batch", "recv_sges", "recv_delay_us", "mr_churn", "qp_churn", "victim", "tclass")
#: A traffic class is a byte: the DSCP in its upper six bits, ECN in the lower two.
TCLASS_LIMITS: Final = (0, 255)
SIZE_LIMITS: Final = (1, 1 << 31)
#: Most NICs one host may have (an endpoint's NIC is 0 to MAX_NICS - 1).
MAX_NICS: Final = 16
_ADDRESS: Final = re.compile(r"(.+)/([1-9][0-9]?)")


@dataclass(frozen=True)
class Endpoint:
    """One end of a flow.

    Attributes:
        host: the address of its NIC: the host's name (a key of the target's inventory; ``a`` and ``b`` on the
            simulator) for its NIC 0, ``host/i`` for its NIC ``i`` (see the module docstring).
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
        opcodes: the opcode pattern: work request *i* uses ``opcodes[i % len(opcodes)]`` (each one of
            :data:`OPCODES`); :attr:`opcode` is the one opcode of a uniform pattern.
        sizes: request-size vector in bytes; work request *i* carries ``sizes[i % len(sizes)]`` bytes (an atomic
            request always operates on :data:`ATOMIC_BYTES`).
        qps: queue pairs of this flow (each side has as many).
        batch: work requests per post (a post list of this length).
        sges: scatter/gather entries per work request; a message is split evenly over them.
        sq_depth: send-queue depth (max outstanding WQEs per QP).
        rq_depth: receive-queue depth (meaningful when an opcode consumes receive WQEs: :data:`RECV_CONSUMING`).
        mtu: path MTU in bytes.
        mrs: memory regions registered per side.
        mr_size: size of each memory region in bytes.
        inline: max inline data size requested (0 = no inline).
        signal_every: one signalled completion every this many work requests.
        burst: traffic in on/off bursts instead of a steady stream.
        processes: worker processes driving this flow's QPs on each host.
        recv_batch: receive WQEs per post (a receive post list of this length).
        recv_sges: scatter/gather entries per receive WQE.
        recv_delay_us: the responder waits this long (microseconds) before it reposts a receive post list on a
            QP (0: as soon as it has polled the completions), so a receiver slower than its sender runs out of
            receive WQEs (RNR).
        mr_churn: memory regions of ``mr_size`` bytes each side registers and deregisters per second during the
            measured interval, apart from the data path (0: none).
        qp_churn: queue pairs each side creates and destroys per second during the measured interval, apart
            from the data path (0: none).
        victim: the name of the tenant this flow is (``latency``, say) when it is the victim of an isolation
            experiment, whose other flows are its aggressors; ``""``: not a victim. The oracle compares a victim
            with the same flow run alone (:meth:`~collie.model.workload.Workload.solo`).
        tclass: the traffic class its QPs put in each packet's header (the IP header's DSCP and ECN byte of
            RoCEv2, as perftest's ``--tclass``): the fabric's switches queue, pause or drop it by the priority
            its DSCP maps to. None: the class the host gives a QP that sets none (its administrator's default,
            e.g. mlx5's ``tc/1/traffic_class``), which collie leaves alone.
    """

    client: Endpoint
    server: Endpoint
    transport: str = "RC"
    opcodes: tuple[str, ...] = ("WRITE",)
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
    recv_batch: int = 1
    recv_sges: int = 1
    recv_delay_us: int = 0
    mr_churn: int = 0
    qp_churn: int = 0
    victim: str = ""
    tclass: int | None = None

    @property
    def opcode(self) -> str:
        """The opcode every request uses, or :data:`MIXED` when the pattern has several."""
        first = self.opcodes[0]
        return first if all(o == first for o in self.opcodes) else MIXED

    @property
    def verbs(self) -> str:
        """The opcode pattern for people: ``WRITE``, or ``READ/WRITE`` for a pattern that alternates them."""
        return "/".join(self.opcodes)

    @property
    def mixed(self) -> bool:
        """Whether requests of this flow use more than one opcode."""
        return self.opcode == MIXED

    @property
    def atomic(self) -> bool:
        """Whether any request of this flow is an atomic."""
        return any(o in ATOMIC_OPCODES for o in self.opcodes)

    @property
    def consumes_receives(self) -> bool:
        """Whether any request of this flow consumes a receive WQE at the responder."""
        return any(o in RECV_CONSUMING for o in self.opcodes)

    def request(self, i: int) -> tuple[str, int]:
        """Opcode and payload bytes of work request ``i`` (an atomic operates on :data:`ATOMIC_BYTES`)."""
        op = self.opcodes[i % len(self.opcodes)]
        return op, ATOMIC_BYTES if op in ATOMIC_OPCODES else self.sizes[i % len(self.sizes)]

    def requests(self) -> tuple[tuple[str, int], ...]:
        """One full cycle of the opcode and size patterns: ``lcm(len(opcodes), len(sizes))`` requests."""
        ops, sizes = self.opcodes, self.sizes
        n_ops, n_sizes = len(ops), len(sizes)
        cycle = []
        for i in range(math.lcm(n_ops, n_sizes)):  # request(i) for each i, written out
            op = ops[i % n_ops]
            cycle.append((op, ATOMIC_BYTES if op in ATOMIC_OPCODES else sizes[i % n_sizes]))
        return tuple(cycle)

    @property
    def loopback(self) -> bool:
        """True when client and server are the same NIC (two NICs of one host talk through their switch)."""
        return self.client.host == self.server.host

    @property
    def receiver_is_client(self) -> bool:
        """Which end the payload flows into: a READ moves payload from the server to the client; every other
        opcode (WRITE, SEND, their ``_IMM`` forms, and the atomics, whose operands travel in the request) from
        the client to the server. A pattern that mixes READ with other opcodes moves payload both ways; its
        *main* receiver is the client only when READs are all it posts. The one place this rule is written:
        :attr:`payload_receiver` and :attr:`payload_sender` follow it."""
        return self.opcode == "READ"

    @property
    def payload_receiver(self) -> Endpoint:
        """The end whose NIC receives the payload (see :attr:`receiver_is_client`)."""
        return self.client if self.receiver_is_client else self.server

    @property
    def payload_sender(self) -> Endpoint:
        """The end whose NIC sends the payload (see :attr:`receiver_is_client`)."""
        return self.server if self.receiver_is_client else self.client

    def moved(self, names: Mapping[str, str]) -> Flow:
        """This flow between the hosts ``names`` gives its client's and its server's hosts (each end keeps its
        NIC and memory placement)."""
        return replace(self, client=replace(self.client, host=moved_address(self.client.host, names)),
                       server=replace(self.server, host=moved_address(self.server.host, names)))

    @property
    def max_size(self) -> int:
        return max(self.sizes)

    @property
    def min_size(self) -> int:
        return min(self.sizes)


_FILE_FIELDS: Final = tuple("opcode" if n == "opcodes" else n for n in Flow.__dataclass_fields__)
#: Each field's default (what :data:`OMITTED_AT_DEFAULT` fields are compared with).
FLOW_DEFAULTS: Final[Mapping[str, Any]] = {n: f.default for n, f in Flow.__dataclass_fields__.items()}


def hosts_of(flows: Iterable[Flow]) -> tuple[str, ...]:
    """Every host one of ``flows`` touches (either end), sorted."""
    return tuple(sorted({h for f in flows for h in (f.client.host, f.server.host)}))


def flow_to_dict(flow: Flow) -> dict[str, Any]:
    """The file form of ``flow`` (plain JSON/TOML-ready values)."""
    d: dict[str, Any] = {}
    for name, value in asdict(flow).items():
        if name == "opcodes":
            d["opcode"] = value[0] if len(value) == 1 else list(value)
        elif name == "sizes":
            d[name] = list(value)
        elif name not in OMITTED_AT_DEFAULT or value != FLOW_DEFAULTS[name]:
            d[name] = value
    return d


def _endpoint_from(value: Any, where: str) -> Endpoint:
    if isinstance(value, str):
        return Endpoint(host=address_name(value, where))
    expect_type(value, dict, where, 'a host name or a table like { host = "a", memory = "local" }')
    check_fields(value, where, ("host", "memory"), required=("host",))
    host = address_name(expect_type(value["host"], str, f"{where}.host", "a host name"), f"{where}.host")
    memory = value.get("memory", "local")
    if memory not in MEMORY_PLACEMENTS:
        raise InputError(f"{where}.memory: {memory!r} is not a memory placement; use one of "
                         f"{', '.join(MEMORY_PLACEMENTS)}")
    return Endpoint(host=host, memory=memory)


def host_name(name: str, where: str) -> str:
    """``name`` when it can name a host (letters, digits, ``-``, ``_``, ``.``); else :class:`InputError`."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise InputError(f"{where}: {name!r} is not a host name (letters, digits, '-', '_', '.')")
    return name


def nic_address(host: str, nic: int) -> str:
    """The address of NIC ``nic`` of ``host``: the host's name for NIC 0, ``host/nic`` for any other."""
    return host if nic == 0 else f"{host}/{nic}"


def split_address(address: str) -> tuple[str, int]:
    """``(host, nic)`` of a NIC's address (:func:`nic_address`'s inverse; a plain host name is its NIC 0)."""
    found = _ADDRESS.fullmatch(address)
    return (found[1], int(found[2])) if found else (address, 0)


def moved_address(address: str, names: Mapping[str, str]) -> str:
    """``address`` with its host renamed by ``names`` (KeyError when ``names`` has no name for it), NIC kept."""
    host, nic = split_address(address)
    return nic_address(names[host], nic)


def nic_problem(addresses: Iterable[str], nics: int = 1) -> str | None:
    """Why a target whose hosts have ``nics`` NICs each cannot run flows between ``addresses``: the first that
    names a NIC beyond them, in a sentence that names no target (a remote fleet of simulated hosts and the
    simulator say the same); None when none does."""
    for address in addresses:
        host, nic = split_address(address)
        if nic >= nics:
            use = "the hosts' NIC 0 (a pattern's nics = 1)" if nics == 1 else \
                f"NICs 0 to {nics - 1} (a pattern's nics <= {nics})"
            return (f"{address} is NIC {nic} of host {host}, and this target's hosts have {nics} NIC"
                    f"{'s' if nics > 1 else ''} each: use {use}")
    return None


def address_name(name: str, where: str) -> str:
    """``name`` when it can address a NIC (a host name, or ``host/i`` with ``i`` from 1 to :data:`MAX_NICS` - 1);
    else :class:`InputError`."""
    host, nic = split_address(name)
    if "/" in host or nic >= MAX_NICS:
        raise InputError(f"{where}: {name!r} is not a host or a host's NIC (a host name for its NIC 0, or "
                         f"host/i for its NIC i from 1 to {MAX_NICS - 1})")
    host_name(host, where)
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
    check_fields(raw, where, _FILE_FIELDS, required=("client", "server"))
    kwargs: dict[str, Any] = {
        "client": _endpoint_from(raw["client"], f"{where}.client"),
        "server": _endpoint_from(raw["server"], f"{where}.server"),
    }
    if "transport" in raw:
        kwargs["transport"] = Reader(f"{where}.transport").one_of(raw["transport"], TRANSPORTS)
    if "opcode" in raw:
        kwargs["opcodes"] = _opcodes(raw["opcode"], f"{where}.opcode")
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
    if "tclass" in raw:
        kwargs["tclass"] = _bounded_int(raw["tclass"], *TCLASS_LIMITS, f"{where}.tclass")
    if "victim" in raw:
        kwargs["victim"] = victim_name(expect_type(raw["victim"], str, f"{where}.victim", "a tenant's name"),
                                       f"{where}.victim")
    return Flow(**kwargs)


def victim_name(name: str, where: str) -> str:
    """``name`` when it can name a victim (letters, digits, ``_``, ``-``; not ``none``, which means no victim).

    Raises:
        InputError: it cannot (the message names ``where``).
    """
    if not name.replace("-", "").replace("_", "").isalnum() or name == "none":
        raise InputError(f"{where}: {name!r} is not a victim's name (letters, digits, '-', '_'; not 'none')")
    return name


def _size(value: Any, where: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None


def _opcodes(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    expect_type(value, list, where, f"an opcode or a list of 1 to {MAX_OPCODES} opcodes")
    if not 1 <= len(value) <= MAX_OPCODES:
        raise InputError(f"{where}: has {len(value)} opcodes; allowed is 1 to {MAX_OPCODES}")
    return tuple(Reader(f"{where}[{i}]" if len(value) > 1 else where).one_of(v, OPCODES)
                 for i, v in enumerate(value))


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
