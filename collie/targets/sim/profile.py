"""Simulated subsystem profiles: a TOML file describing a NIC, its PCIe link, its hosts, caches and quirks.

Built-in profiles live in ``collie/targets/sim/profiles/NAME.toml``; any other file is loaded by path. The
schema is documented field by field in ``docs/sim-profiles.md``; :func:`load_profile` validates it and raises
:class:`~collie.errors.InputError` with one sentence naming the file, the line when it can be found, and the
field.

Invariants:
    * a :class:`Profile` is immutable and fully resolved (quirk ids replaced by :class:`Quirk` objects);
    * ``active_quirks`` holds the listed quirks whose ``requires`` the subsystem meets; the rest are in
      ``inactive_quirks`` with the reason (e.g. ``f09`` on a host with relaxed ordering enabled);
    * loading is cached: a profile file is parsed once per process.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any, Final

from collie.codec import Reader, check_fields, expect_type
from collie.errors import InputError
from collie.model.flow import MAX_NICS, nic_address
from collie.model.rocev2 import PRIORITIES
from collie.targets.sim.quirks import GPU_PLACEMENTS, Conditions, Quirk, parse_quirks
from collie.tomlio import parse_toml

PROFILE_DIR: Final = Path(__file__).resolve().parent / "profiles"
LIBRARY_PATH: Final = Path(__file__).resolve().parent / "quirks.toml"
DEFAULT_PROFILE: Final = "cx6-200g"
DIALECTS: Final = {"mlx5": "mlx5", "bnxt_re": "bnxt_re", "bnxt": "bnxt_re", "rxe": "rxe"}
CPU_VENDORS: Final = ("intel", "amd", "arm", "other")
PCIE_GT: Final = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Nic:
    """The NIC (fields as in docs/sim-profiles.md)."""

    model: str
    firmware: str
    driver: str
    line_rate_gbps: float
    msg_rate_mpps: float
    loopback_gbps: float
    base_latency_us: float
    max_qp: int
    max_mr: int
    max_sge: int
    max_qp_wr: int
    max_rd_atomic: int
    atomic_mops: float
    max_inline: int
    qp_wr_ns: float = 0.0
    doorbell_ns: float = 0.0


@dataclass(frozen=True)
class Pcie:
    gen: int
    width: int
    relaxed_ordering: bool
    mps: int
    partial_write_bytes: int

    @property
    def gbps(self) -> float:
        """Usable TLP bandwidth per direction in Gb/s (line encoding, DLLP and flow control removed)."""
        enc = 0.8 if self.gen <= 2 else 128 / 130
        return PCIE_GT[self.gen] * self.width * enc * 0.95


@dataclass(frozen=True)
class HostSpec:
    """What every host of the profile is.

    ``nics``: its NICs, each as ``[nic]`` says, each with its own PCIe link, switch port and counters (NIC ``i``
    of host ``h`` is addressed ``h/i``, NIC 0 ``h``); ``shared_pcie_gbps``: what those NICs' PCIe traffic
    shares on its way to the host's memory, each way (the two ports of a dual-port NIC in one slot, NICs behind
    one PCIe switch uplink); 0: each NIC's own link is all it crosses.
    """

    cpu_vendor: str
    cpu_model: str
    sockets: int
    nic_numa_node: int
    kernel: str
    gpu: str
    nics: int = 1
    shared_pcie_gbps: float = 0.0


@dataclass(frozen=True)
class Caches:
    qpc_entries: int
    mpt_entries: int
    mtt_entries: int
    rx_wqe_entries: int
    miss_ns: float
    residency_ms: float


@dataclass(frozen=True)
class ModelParams:
    noise: float
    wqe_overhead: float
    setup_base_s: float
    setup_qp_us: float
    setup_mr_us: float
    setup_pin_gbps: float
    setup_pause_us: float
    recv_poll_us: float
    rnr_timer_us: float
    fw_cmd_us: float


class FaultKind(Enum):
    """What a declared fault does to its host (each scales the capacity of some of its resources)."""

    #: the host's switch port (its link) runs at ``factor`` of line rate: wire TX and RX
    PORT_SPEED = "port_speed"
    #: a narrower or older PCIe link (Gen3 x8 in a Gen4 x16 fleet: 0.25): DMA reads and writes
    PCIE = "pcie"
    #: the NIC's buffers on the far NUMA node: DMA reads and writes cross the socket link
    FAR_NUMA = "far_numa"
    #: a lossy link (a dirty fibre, a bad cable): each packet in or out of the host arrives with probability
    #: ``factor``; RC resends what follows a lost packet (go-back-N), counted as loss and retransmission
    LOSSY_LINK = "lossy_link"
    #: a mis-set MTU: the host's switch port carries RoCE payloads of at most ``factor`` x 4096 bytes (0.25: 1024)
    #: and drops larger packets; a flow whose packets are larger loses them, and RC resends them in vain
    MTU = "mtu"
    #: a flapping link (a marginal transceiver, a loose cable): the host's link goes down and retrains, up a
    #: fraction ``factor`` of the time in outages of 0.1 s each; an RC flow across it also waits out its
    #: retransmission timeout after each outage and resends its window; the port counts each outage
    FLAPPING_LINK = "flapping_link"


@dataclass(frozen=True)
class Fault:
    """One host of a fleet, or one NIC of a host, that is not like the others (ground truth for tests and
    benchmarks only).

    Attributes:
        host: the address of the NIC it is on (``h3``, or ``h3/1`` for NIC 1 of a host with several NICs; a
            fault the profile declares for a host, not a NIC, is one fault per NIC of the host).
        kind: what is wrong with it.
        factor: the fraction of their capacity its affected resources keep, in (0, 1] (a flapping link: of the
            time it is up; a lossy link: the
            fraction of packets that arrive).
    """

    host: str
    kind: FaultKind
    factor: float

    @property
    def id(self) -> str:
        """How ``RunResult.truth`` names it when it shaped a run: ``fault:h3:port_speed``, ``fault:h3/1:pcie``."""
        return f"fault:{self.host}:{self.kind.value}"


@dataclass(frozen=True)
class Fabric:
    """The switches under a fleet (a profile's ``[fabric]`` table; see :mod:`collie.targets.sim.fabric`).

    Attributes:
        hosts_per_leaf: hosts on each leaf switch, in the profile's host order (every host: one switch).
        spines: spine switches; every leaf has one uplink to each.
        uplink_gbps: each uplink's speed, each way.
        pfc: lossless (PFC): a congested port pauses the ports feeding it; False: it drops what it cannot carry.
        xoff_kib: what a congested queue holds (before it sends XOFF, or drops) without a shared buffer: the
            queueing delay it adds.
        lossless: the priorities PFC protects (``[3]``: only the priority RoCE's usual traffic class 106 maps to);
            a congested port drops what it cannot carry of any other priority. None: every priority with ``pfc``
            (:attr:`protected` says which).
        buffer_mib: each switch's buffer, shared by the queues of all its ports (0: none; every congested queue
            holds ``xoff_kib``). A congested queue holds its dynamic threshold, ``alpha`` (a lossless priority's)
            or ``lossy_alpha`` (another's) times the buffer its switch has free.
        slow_links: faults of links between switches (ground truth for tests and benchmarks only): each
            ``(leaf, spine, factor)``, the link between them running at ``factor`` x ``uplink_gbps`` both ways.
    """

    hosts_per_leaf: int
    spines: int
    uplink_gbps: float
    pfc: bool
    xoff_kib: float
    slow_links: tuple[tuple[int, int, float], ...] = ()
    lossless: frozenset[int] | None = None
    buffer_mib: float = 0.0
    alpha: float = 0.125
    lossy_alpha: float = 1.0

    @property
    def protected(self) -> frozenset[int]:
        """The priorities PFC protects (:attr:`lossless`; every one with ``pfc`` when it names none)."""
        if not self.pfc:
            return frozenset()
        return frozenset(range(PRIORITIES)) if self.lossless is None else self.lossless

    @staticmethod
    def link_id(leaf: int, spine: int) -> str:
        """How ``RunResult.truth`` names a slow link between switches that shaped a run."""
        return f"fault:leaf{leaf}-spine{spine}:link_speed"


#: Most hosts a profile may declare (a fleet).
MAX_HOSTS: Final = 4096


def host_names(n: int) -> tuple[str, ...]:
    """The names of a fleet of ``n`` hosts: ``h0`` .. ``h{n-1}``, zero-padded so they sort in order."""
    width = len(str(n - 1))
    return tuple(f"h{i:0{width}d}" for i in range(n))


@dataclass(frozen=True)
class Profile:
    """A fully resolved simulated subsystem."""

    name: str
    description: str
    source: str
    dialect: str
    hosts: tuple[str, ...]
    nic: Nic
    pcie: Pcie
    host: HostSpec
    cache: Caches
    model: ModelParams
    active_quirks: tuple[Quirk, ...]
    inactive_quirks: tuple[tuple[Quirk, str], ...] = ()
    faults: tuple[Fault, ...] = ()
    fabric: Fabric | None = None

    @functools.cached_property
    def nodes(self) -> tuple[str, ...]:
        """The address of every NIC of every host, host by host (the hosts themselves when each has one NIC)."""
        return tuple(nic_address(h, i) for h in self.hosts for i in range(self.host.nics))

    def has_node(self, address: str) -> bool:
        """Whether ``address`` is a NIC of this profile (see :attr:`nodes`)."""
        return address in self._node_set

    @functools.cached_property
    def _node_set(self) -> frozenset[str]:
        return frozenset(self.nodes)

    @functools.cached_property
    def conditions(self) -> Conditions:
        """The active quirks' conditions, compiled once (see :class:`~collie.targets.sim.quirks.Conditions`)."""
        return Conditions(self.active_quirks)

    def without_quirks(self) -> Profile:
        """The same subsystem with every quirk removed (the base model alone)."""
        return replace(self, name=f"{self.name}-noquirks", active_quirks=(), inactive_quirks=())

    def with_quirks(self, quirks: tuple[Quirk, ...]) -> Profile:
        return replace(self, active_quirks=quirks, inactive_quirks=())


# ---------------------------------------------------------------------------------------------------- loading

_TOP: Final = ("name", "description", "dialect", "hosts", "quirks", "nic", "pcie", "host", "cache", "model",
               "quirk", "faults", "fabric")
_NIC: Final = {
    "model": (str, None), "firmware": (str, ""), "driver": (str, None),
    "line_rate_gbps": (float, None), "msg_rate_mpps": (float, None), "loopback_gbps": (float, 0.0),
    "base_latency_us": (float, 2.0), "max_qp": (int, 262144), "max_mr": (int, 16777216),
    "max_sge": (int, 30), "max_qp_wr": (int, 32768), "max_rd_atomic": (int, 16), "atomic_mops": (float, 50.0),
    "max_inline": (int, 256), "qp_wr_ns": (float, 0.0), "doorbell_ns": (float, 0.0),
}
_PCIE: Final = {"gen": (int, 4), "width": (int, 16), "relaxed_ordering": (bool, True), "mps": (int, 256),
                "partial_write_bytes": (int, 88)}
_HOST: Final = {
    "cpu_vendor": (str, "intel"), "cpu_model": (str, ""), "sockets": (int, 2), "nic_numa_node": (int, 0),
    "kernel": (str, "6.1.0-18-amd64"), "gpu": (str, "none"), "nics": (int, 1),
    "shared_pcie_gbps": (float, 0.0),
}
_CACHE: Final = {"qpc_entries": (int, 512), "mpt_entries": (int, 8192), "mtt_entries": (int, 65536),
                 "rx_wqe_entries": (int, 4096), "miss_ns": (float, 100.0), "residency_ms": (float, 50.0)}
#: The cache capacities (the other [cache] fields are costs and may be 0).
_CACHE_ENTRIES: Final = ("qpc_entries", "mpt_entries", "mtt_entries", "rx_wqe_entries")
_MODEL: Final = {
    "noise": (float, 0.02), "wqe_overhead": (float, 0.05), "setup_base_s": (float, 0.05),
    "setup_qp_us": (float, 120.0), "setup_mr_us": (float, 15.0), "setup_pin_gbps": (float, 40.0),
    "setup_pause_us": (float, 60.0), "recv_poll_us": (float, 0.5), "rnr_timer_us": (float, 640.0),
    "fw_cmd_us": (float, 20.0),
}


def _key_line(text: str | None, section: str | None, key: str) -> int | None:
    """Line of ``key = ...`` inside ``[section]`` (or at the top level when section is None)."""
    if not text:
        return None
    lines = text.splitlines()
    start = 0
    if section is not None:
        hdr = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]\s*(#.*)?$")
        for i, ln in enumerate(lines):
            if hdr.match(ln):
                start = i + 1
                break
        else:
            return None
    pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start, len(lines)):
        if section is None and lines[i].lstrip().startswith("["):
            break
        if section is not None and i > start and lines[i].lstrip().startswith("[") and \
                not lines[i].lstrip().startswith("[["):
            break
        if pat.match(lines[i]):
            return i + 1
    return None


def _loc(source: str, text: str | None, section: str | None, key: str) -> str:
    line = _key_line(text, section, key)
    path = f"{section}.{key}" if section else key
    return f"{source}:{line}: {path}" if line else f"{source}: {path}"


def _table(data: dict[str, Any], section: str, spec: Mapping[str, tuple[type, Any]], source: str,
           text: str | None) -> dict[str, Any]:
    raw = data.get(section, {})
    expect_type(raw, dict, f"{source}: [{section}]", "a table")
    check_fields(raw, f"{source}: [{section}]", spec,
                 required=[k for k, (_, d) in spec.items() if d is None])
    out: dict[str, Any] = {}
    for key, (kind, default) in spec.items():
        value = raw.get(key, default)
        where = _loc(source, text, section, key)
        if kind is float:
            expect_type(value, (int, float), where, "a number")
            value = float(value)
            if value < 0:
                raise InputError(f"{where}: {value} must not be negative")
        elif kind is int:
            expect_type(value, int, where, "an integer")
            if value < 0:
                raise InputError(f"{where}: {value} must not be negative")
        elif kind is bool:
            expect_type(value, bool, where, "true or false")
        else:
            expect_type(value, str, where, "a string")
        out[key] = value
    return out


def _positive(value: float, where: str) -> None:
    if value <= 0:
        raise InputError(f"{where}: must be greater than 0, got {value}")


@functools.lru_cache(maxsize=1)
def library() -> dict[str, Quirk]:
    """The shared quirk library (``quirks.toml``), by id."""
    text = LIBRARY_PATH.read_text(encoding="utf-8")
    data = parse_toml(text, str(LIBRARY_PATH))
    check_fields(data, str(LIBRARY_PATH), ("quirk",), required=("quirk",))
    return {q.id: q for q in parse_quirks(data["quirk"], str(LIBRARY_PATH), text)}


def builtin_names() -> list[str]:
    """Names of the built-in profiles, sorted."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def load_profile(spec: str | None) -> Profile:
    """Resolve ``spec`` (None = the default, a built-in name, or a path to a ``.toml`` file).

    Raises:
        InputError: unknown name, unreadable file, or a malformed profile (one sentence naming the field).
    """
    if spec is None or spec == "":
        spec = DEFAULT_PROFILE
    if spec.endswith(".toml") or "/" in spec or "\\" in spec:
        path = Path(spec).expanduser()
        if not path.is_file():
            raise InputError(f"{spec}: no such simulator profile file")
        return _load_path(str(path.resolve()), spec, path.stat().st_mtime_ns)  # a file rewritten is read again
    if spec not in builtin_names():
        raise InputError(f"unknown simulator profile {spec!r}; built-in profiles are "
                         f"{', '.join(builtin_names())} (or give a path to a .toml file)")
    return _load_path(str(PROFILE_DIR / f"{spec}.toml"), spec)


@functools.lru_cache(maxsize=64)
def _load_path(path: str, shown: str, modified: int = 0) -> Profile:
    """The profile in the file at ``path``, parsed once per (path, modification time)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{shown}: cannot read the profile ({exc.__class__.__name__})") from None
    return parse_profile(text, shown)


def parse_profile(text: str, source: str) -> Profile:
    """Parse and validate profile text (``source`` names it in messages)."""
    data = parse_toml(text, source)
    check_fields(data, source, _TOP, required=("name", "dialect", "nic"))
    name = expect_type(data["name"], str, _loc(source, text, None, "name"), "a string")
    if not _NAME_RE.match(name):
        raise InputError(f"{_loc(source, text, None, 'name')}: {name!r} is not a profile name "
                         f"(letters, digits, '.', '_', '-')")
    description = expect_type(data.get("description", ""), str, _loc(source, text, None, "description"),
                              "a string")
    dialect_raw = expect_type(data["dialect"], str, _loc(source, text, None, "dialect"), "a string")
    if dialect_raw not in DIALECTS:
        raise InputError(f"{_loc(source, text, None, 'dialect')}: {dialect_raw!r} is not a counter dialect; "
                         f"use one of mlx5, bnxt_re, rxe")
    dialect = DIALECTS[dialect_raw]
    hosts_raw = data.get("hosts", ["a", "b"])
    where = _loc(source, text, None, "hosts")
    if isinstance(hosts_raw, int) and not isinstance(hosts_raw, bool):
        if not 2 <= hosts_raw <= MAX_HOSTS:
            raise InputError(f"{where}: a fleet of {hosts_raw} hosts is out of range; allowed is 2 to {MAX_HOSTS}")
        hosts_raw = list(host_names(hosts_raw))
    expect_type(hosts_raw, list, where, "a list of host names or a number of hosts")
    if not hosts_raw or not all(isinstance(h, str) and _NAME_RE.match(h) for h in hosts_raw) or \
            len(set(hosts_raw)) != len(hosts_raw):
        raise InputError(f"{where}: expected a list of distinct host names like [\"a\", \"b\"], "
                         f"got {hosts_raw!r}")

    nic_t = _table(data, "nic", _NIC, source, text)
    for key in ("line_rate_gbps", "msg_rate_mpps", "max_qp", "max_mr", "max_sge", "max_qp_wr", "max_rd_atomic",
                "atomic_mops"):
        _positive(nic_t[key], _loc(source, text, "nic", key))
    if nic_t["loopback_gbps"] == 0:
        nic_t["loopback_gbps"] = nic_t["line_rate_gbps"]
    nic = Nic(**nic_t)
    pcie_t = _table(data, "pcie", _PCIE, source, text)
    if pcie_t["gen"] not in PCIE_GT:
        raise InputError(f"{_loc(source, text, 'pcie', 'gen')}: {pcie_t['gen']} is not a PCIe generation; "
                         f"use 1 to 6")
    if pcie_t["width"] not in (1, 2, 4, 8, 16, 32):
        raise InputError(f"{_loc(source, text, 'pcie', 'width')}: x{pcie_t['width']} is not a PCIe width; "
                         f"use 1, 2, 4, 8, 16 or 32")
    if pcie_t["mps"] not in (128, 256, 512, 1024, 2048, 4096):
        raise InputError(f"{_loc(source, text, 'pcie', 'mps')}: {pcie_t['mps']} is not a max payload size; "
                         f"use 128, 256, 512, 1024, 2048 or 4096")
    pcie = Pcie(**pcie_t)
    host_t = _table(data, "host", _HOST, source, text)
    host_t["cpu_vendor"] = host_t["cpu_vendor"].lower()
    if host_t["cpu_vendor"] not in CPU_VENDORS:
        raise InputError(f"{_loc(source, text, 'host', 'cpu_vendor')}: {host_t['cpu_vendor']!r} is not "
                         f"allowed; use one of {', '.join(CPU_VENDORS)}")
    if host_t["gpu"] not in GPU_PLACEMENTS:
        raise InputError(f"{_loc(source, text, 'host', 'gpu')}: {host_t['gpu']!r} is not allowed; use one of "
                         f"{', '.join(GPU_PLACEMENTS)}")
    if not 1 <= host_t["sockets"] <= 8:
        raise InputError(f"{_loc(source, text, 'host', 'sockets')}: {host_t['sockets']} is out of range; "
                         f"allowed is 1 to 8")
    if not 1 <= host_t["nics"] <= MAX_NICS:
        raise InputError(f"{_loc(source, text, 'host', 'nics')}: {host_t['nics']} NICs per host is out of range; "
                         f"allowed is 1 to {MAX_NICS}")
    if host_t["shared_pcie_gbps"] < 0 or (host_t["shared_pcie_gbps"] and host_t["nics"] == 1):
        raise InputError(f"{_loc(source, text, 'host', 'shared_pcie_gbps')}: {host_t['shared_pcie_gbps']} is not "
                         "allowed; the PCIe bandwidth a host's NICs share is positive, and needs nics of 2 or more")
    if host_t["nic_numa_node"] >= host_t["sockets"]:
        raise InputError(f"{_loc(source, text, 'host', 'nic_numa_node')}: node {host_t['nic_numa_node']} "
                         f"does not exist on a host with {host_t['sockets']} socket(s)")
    host = HostSpec(**host_t)
    cache_t = _table(data, "cache", _CACHE, source, text)
    for key in _CACHE_ENTRIES:
        _positive(cache_t[key], _loc(source, text, "cache", key))
    cache = Caches(**cache_t)
    model_t = _table(data, "model", _MODEL, source, text)
    if model_t["noise"] > 0.1:
        raise InputError(f"{_loc(source, text, 'model', 'noise')}: {model_t['noise']} is too large; "
                         f"allowed is 0 to 0.1 (a few percent)")
    if model_t["wqe_overhead"] > 0.1:
        raise InputError(f"{_loc(source, text, 'model', 'wqe_overhead')}: {model_t['wqe_overhead']} is too "
                         f"large; allowed is 0 to 0.1 (larger losses are quirks, not the base model)")
    for key in ("setup_pin_gbps", "rnr_timer_us"):
        _positive(model_t[key], _loc(source, text, "model", key))
    model = ModelParams(**model_t)

    inline = parse_quirks(data.get("quirk", []), source, text)
    lib = library()
    inline_ids = {q.id for q in inline}
    for q in inline:
        if q.id in lib:
            raise InputError(f"{source}: quirk {q.id!r} is already in the shared library; reference it in "
                             f"'quirks' instead of redeclaring it, or give it another id")
    ids_where = _loc(source, text, None, "quirks")
    ids = expect_type(data.get("quirks", []), list, ids_where, "a list of quirk ids")
    chosen: list[Quirk] = []
    for qid in ids:
        if not isinstance(qid, str):
            raise InputError(f"{ids_where}: expected quirk ids (strings), got {qid!r}")
        if qid in lib:
            chosen.append(lib[qid])
        elif qid not in inline_ids:
            declared = f" and this file declares {', '.join(sorted(inline_ids))}" if inline_ids else ""
            raise InputError(f"{ids_where}: unknown quirk {qid!r}; the library has "
                             f"{', '.join(lib)}{declared}")
    if len(set(ids)) != len(ids):
        raise InputError(f"{ids_where}: a quirk is listed twice")
    # inline quirks are part of the profile whether or not 'quirks' lists them
    chosen.extend(inline)
    if dialect == "rxe" and any(q.symptom.pause > 0 for q in chosen):
        raise InputError(f"{ids_where}: the rxe dialect has no PFC pause counters, so a quirk with a pause "
                         f"symptom cannot be seen; use mlx5 or bnxt_re, or quirks without pause")
    active: list[Quirk] = []
    inactive: list[tuple[Quirk, str]] = []
    for q in chosen:
        why = _unmet(q, pcie, host)
        if why:
            inactive.append((q, why))
        else:
            active.append(q)
    faults = _faults(data.get("faults", []), tuple(hosts_raw), host.nics, _loc(source, text, None, "faults"))
    fabric = _fabric(data, len(hosts_raw), nic.line_rate_gbps, source, text) if "fabric" in data else None
    return Profile(name=name, description=description, source=source, dialect=dialect,
                   hosts=tuple(hosts_raw), nic=nic, pcie=pcie, host=host, cache=cache, model=model,
                   active_quirks=tuple(active), inactive_quirks=tuple(inactive), faults=faults, fabric=fabric)


def _fabric(data: dict[str, Any], hosts: int, line_gbps: float, source: str, text: str | None) -> Fabric:
    """The ``[fabric]`` table: a leaf of every host and one spine, uplinks at line rate and PFC unless it says
    otherwise."""
    spec = {"hosts_per_leaf": (int, hosts), "spines": (int, 1), "uplink_gbps": (float, line_gbps),
            "pfc": (bool, True), "xoff_kib": (float, 256.0), "buffer_mib": (float, 0.0), "alpha": (float, 0.125),
            "lossy_alpha": (float, 1.0)}
    raw = data["fabric"]
    expect_type(raw, dict, f"{source}: [fabric]", "a table")
    t = _table({"fabric": {k: v for k, v in raw.items() if k not in ("slow_links", "lossless")}}, "fabric", spec,
               source, text)
    line = _key_line(text, "fabric", "lossless")
    lossless = _lossless(raw, t["pfc"], Reader(f"{source}:{line}" if line else source, path=("fabric.lossless",)))
    for key in ("hosts_per_leaf", "spines", "uplink_gbps", "alpha", "lossy_alpha"):
        _positive(t[key], _loc(source, text, "fabric", key))
    leaves = -(-hosts // t["hosts_per_leaf"])
    reader = Reader(f"{source}: fabric.slow_links")
    slow: list[tuple[int, int, float]] = []
    for i, item in enumerate(reader.items(raw.get("slow_links", []), "a list of [[fabric.slow_links]] tables")):
        lt = reader.at(i).table(item, ("leaf", "spine", "factor"), ("leaf", "spine", "factor"))
        leaf, spine, factor = lt.integer("leaf"), lt.integer("spine"), lt.number("factor")
        if not 0 <= leaf < leaves:
            lt.at("leaf").fail(f"leaf {leaf} does not exist; the fabric has leaves 0 to {leaves - 1}")
        if not 0 <= spine < t["spines"]:
            lt.at("spine").fail(f"spine {spine} does not exist; the fabric has spines 0 to {t['spines'] - 1}")
        if not 0 < factor <= 1:
            lt.at("factor").fail(f"the fraction of its speed left must be in (0, 1], got {factor}")
        if any((leaf, spine) == (a, b) for a, b, _ in slow):
            lt.at("leaf").fail(f"the link between leaf {leaf} and spine {spine} is already slow")
        slow.append((leaf, spine, factor))
    return Fabric(**t, slow_links=tuple(slow), lossless=lossless)


def _lossless(raw: Mapping[str, Any], pfc: bool, reader: Reader) -> frozenset[int] | None:
    """``[fabric] lossless``: distinct priorities 0 to 7, only with ``pfc``; None when the table has none."""
    if "lossless" not in raw:
        return None
    if not pfc:
        reader.fail("lossless priorities need pfc = true (without PFC every priority drops)")
    found: set[int] = set()
    for i, value in enumerate(reader.items(raw["lossless"], "a list of priorities 0 to 7")):
        p = reader.at(i).integer(value, "a priority 0 to 7")
        if not 0 <= p < PRIORITIES or p in found:
            reader.at(i).fail(f"priority {p} is listed twice" if p in found else f"{p} is not a priority 0 to 7")
        found.add(p)
    return frozenset(found)


def _faults(raw: Any, hosts: tuple[str, ...], nics: int, where: str) -> tuple[Fault, ...]:
    """The ``[[faults]]`` tables: each a host of the profile, a kind, a factor in (0, 1] and optionally ``nic``,
    one of the host's NICs (without it, the fault is on every NIC of the host); a NIC at most once per kind."""
    items = Reader(where).items(raw, "a list of [[faults]] tables")
    out: list[Fault] = []
    for i, item in enumerate(items):
        t = Reader(where).at(i).table(item, ("host", "kind", "factor", "nic"), ("host", "kind", "factor"))
        host = t.text("host")
        if host not in hosts:
            t.at("host").fail(f"{host!r} is not a host of this profile")
        kind = t.choice("kind", FaultKind, "a fault kind")
        factor = t.number("factor")
        if not 0 < factor <= 1:
            t.at("factor").fail(f"the fraction of capacity left must be in (0, 1], got {factor}")
        on = range(nics)
        if "nic" in item:
            nic = t.integer("nic")
            if not 0 <= nic < nics:
                t.at("nic").fail(f"NIC {nic} does not exist; each host has NICs 0 to {nics - 1} ([host] nics)")
            on = range(nic, nic + 1)
        for nic in on:
            fault = Fault(nic_address(host, nic), kind, factor)
            if any(f.id == fault.id for f in out):
                t.at("host").fail(f"{fault.host} already has a {kind.value} fault")
            out.append(fault)
    return tuple(out)


def _unmet(q: Quirk, pcie: Pcie, host: HostSpec) -> str:
    """Why quirk ``q`` cannot happen on this subsystem, or ``""``."""
    req = q.requires
    if "relaxed_ordering" in req and pcie.relaxed_ordering != req["relaxed_ordering"]:
        return f"needs pcie.relaxed_ordering = {str(req['relaxed_ordering']).lower()}"
    if "cpu_vendor" in req and host.cpu_vendor != req["cpu_vendor"]:
        return f"needs host.cpu_vendor = {req['cpu_vendor']!r}"
    if "min_sockets" in req and host.sockets < req["min_sockets"]:
        return f"needs host.sockets >= {req['min_sockets']}"
    if "gpu" in req and host.gpu != req["gpu"]:
        return f"needs host.gpu = {req['gpu']!r}"
    return ""
