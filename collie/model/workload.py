"""The resolved description of one experiment: who sends what to whom, with which verbs resources.

A :class:`Workload` is a tuple of :class:`~collie.model.flow.Flow` records over named hosts (a flow, its ends and
its legal values are in :mod:`collie.model.flow`), or a collective :class:`~collie.model.patterns.Pattern` over
N ranks and the flows it expands into (its connections, :meth:`Workload.of_pattern`).

Invariants:
    * every record is a frozen dataclass; workloads are hashable and compare by value;
    * :meth:`Workload.key` depends only on the flows (not their order, name or description), so two files that
      describe the same experiment deduplicate; it is computed once per instance (the flows are frozen), and so
      is anything derived from the flows through :meth:`Workload.derived`;
    * ``Workload.from_toml(w.to_toml()) == w`` and likewise for JSON (lossless round trip);
    * a workload with a pattern has exactly the pattern's connections as flows (then its victim, if it has one),
      and its key is the pattern's (a workload of plain flows keeps the key it always had); changing its flows
      (:meth:`Workload.with_flows`) makes it a workload of plain flows.

The file format is documented in ``docs/workloads.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring_ascii as _str
from operator import attrgetter
from pathlib import Path
from typing import Any, Final, TypeVar

import tomli_w

from collie.codec import check_fields, expect_type
from collie.errors import InputError
from collie.model.constraints import validate_flows
from collie.model.flow import FLOW_DEFAULTS, OMITTED_AT_DEFAULT, Flow, flow_from_dict, flow_to_dict, hosts_of
from collie.model.patterns import Pattern, pattern_from_dict, pattern_to_dict
from collie.tomlio import parse_toml, read_text, read_toml

_T = TypeVar("_T")

#: A flow's canonical JSON keys in sorted order, each with the attribute it comes from (``opcode`` from
#: ``opcodes``): a dict built in this order serialises as ``json.dumps(..., sort_keys=True)`` would, unsorted.
_CANON_KEYS: Final = tuple(sorted(("opcode" if n == "opcodes" else n, n) for n in Flow.__dataclass_fields__))
_CANON: Final = json.JSONEncoder()
#: A flow's integer fields, read at once (what :func:`_canonical` writes as plain digits after checking them).
_INTS: Final = attrgetter("batch", "inline", "mr_size", "mrs", "mtu", "processes", "qps", "rq_depth", "sges",
                          "signal_every", "sq_depth", "recv_batch", "recv_sges", "recv_delay_us", "mr_churn",
                          "qp_churn")
_JUST_INT: Final = frozenset((int,))
_BOOL: Final = {True: "true", False: "false"}


def _canonical(f: Flow) -> str:
    """``json.dumps(flow_to_dict(f), sort_keys=True)``, written directly (keys in sorted order, the
    :data:`OMITTED_AT_DEFAULT` ones only when they differ from their default) when every field has its declared
    type; otherwise (a flow built in code with, say, a bool for an integer) by the JSON encoder itself."""
    tclass = f.tclass
    if {*map(type, _INTS(f)), *map(type, f.sizes)} != _JUST_INT or type(f.burst) is not bool or \
            (tclass is not None and type(tclass) is not int):
        return _canonical_json(f)
    try:  # str fields: encode_basestring_ascii is the JSON encoder's own (a TypeError: not a str)
        client, server = f.client, f.server
        ops = f.opcodes
        opcode = _str(ops[0]) if len(ops) == 1 else f"[{', '.join(map(_str, ops))}]"
        c_ep = f'{{"host": {_str(client.host)}, "memory": {_str(client.memory)}}}'
        s_ep = f'{{"host": {_str(server.host)}, "memory": {_str(server.memory)}}}'
        transport = _str(f.transport)
        victim = f', "victim": {_str(f.victim)}' if f.victim != "" else ""
    except TypeError:
        return _canonical_json(f)
    # (defaults of OMITTED_AT_DEFAULT: recv_batch = recv_sges = 1, tclass None, the others 0 / "")
    return (f'{{"batch": {f.batch}, "burst": {_BOOL[f.burst]}, "client": {c_ep}, "inline": {f.inline}, '
            + (f'"mr_churn": {f.mr_churn}, ' if f.mr_churn != 0 else "")
            + f'"mr_size": {f.mr_size}, "mrs": {f.mrs}, "mtu": {f.mtu}, "opcode": {opcode}, '
            f'"processes": {f.processes}, '
            + (f'"qp_churn": {f.qp_churn}, ' if f.qp_churn != 0 else "")
            + f'"qps": {f.qps}, '
            + (f'"recv_batch": {f.recv_batch}, ' if f.recv_batch != 1 else "")
            + (f'"recv_delay_us": {f.recv_delay_us}, ' if f.recv_delay_us != 0 else "")
            + (f'"recv_sges": {f.recv_sges}, ' if f.recv_sges != 1 else "")
            + f'"rq_depth": {f.rq_depth}, "server": {s_ep}, "sges": {f.sges}, "signal_every": {f.signal_every}, '
            f'"sizes": [{", ".join(map(str, f.sizes))}], "sq_depth": {f.sq_depth}, '
            + (f'"tclass": {tclass}, ' if tclass is not None else "")
            + f'"transport": {transport}{victim}}}')


def _canonical_json(f: Flow) -> str:
    """:func:`_canonical` by the JSON encoder, built from the flow's own ``__dict__`` (no
    ``dataclasses.asdict``): tuples serialise as lists, an endpoint's fields are in sorted order."""
    values = vars(f)
    d = {key: values[name] for key, name in _CANON_KEYS}
    d["client"] = vars(f.client)
    d["server"] = vars(f.server)
    ops = f.opcodes
    d["opcode"] = ops[0] if len(ops) == 1 else ops
    for name in OMITTED_AT_DEFAULT:
        if d[name] == FLOW_DEFAULTS[name]:
            del d[name]
    return _CANON.encode(d)


@dataclass(frozen=True)
class Workload:
    """One experiment: flows over named hosts (or a pattern's connections, with the pattern), plus a name and
    description that do not affect identity."""

    flows: tuple[Flow, ...]
    name: str = field(default="", compare=False)
    description: str = field(default="", compare=False)
    pattern: Pattern | None = None

    @classmethod
    def of_pattern(cls, pattern: Pattern, name: str = "", description: str = "") -> Workload:
        """The workload that runs ``pattern``: its connections as flows, then its victim if it has one."""
        victim = () if pattern.victim is None else (pattern.victim,)
        return cls(flows=(*pattern.connections(), *victim), name=name, description=description, pattern=pattern)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host a flow touches, sorted."""
        return hosts_of(self.flows)

    @property
    def isolation(self) -> bool:
        """Whether this is an isolation experiment: some flow is a victim (``Flow.victim``), the others its
        aggressors."""
        return any(f.victim for f in self.flows)

    def solo(self) -> Workload:
        """The victim flows alone, as plain flows: the experiment an isolation experiment's victims are compared
        with (its key is the victims' identity, whatever their aggressors). Only for :attr:`isolation`."""
        return Workload(flows=tuple(replace(f, victim="") for f in self.flows if f.victim),
                        name=f"{self.name} (victim alone)" if self.name else "")

    def key(self) -> str:
        """A stable 16-hex-digit identity of the experiment (flows only, order-independent): the SHA-256 of the
        flows' sorted canonical JSON forms (``json.dumps(flow_to_dict(f), sort_keys=True)``); for a pattern, of
        ``pattern`` and the pattern's canonical JSON form (its flows follow from it)."""
        memo = self.__dict__  # computed once, kept beside the (frozen) fields, as a cached property would
        key: str | None = memo.get("_key")
        if key is None:
            text = ("pattern " + json.dumps(pattern_to_dict(self.pattern), sort_keys=True)
                    if self.pattern is not None else "\n".join(sorted(map(_canonical, self.flows))))
            key = memo["_key"] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return key

    def derived(self, compute: Callable[[Workload], _T]) -> _T:
        """``compute(self)``, computed once per instance: ``compute`` must be a pure function of the flows (its
        result immutable), such as :func:`collie.model.features.features` (the simulator, the oracle and the
        campaign all ask for the features of the workload they hold)."""
        memo: dict[Callable[[Workload], Any], Any] | None = self.__dict__.get("_derived")
        if memo is None:
            memo = self.__dict__["_derived"] = {}
        if compute not in memo:
            memo[compute] = compute(self)
        return memo[compute]  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/TOML-ready form (the file format)."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        if self.pattern is not None:
            out["pattern"] = pattern_to_dict(self.pattern)
        else:
            out["flows"] = [flow_to_dict(f) for f in self.flows]
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
        expect_type(data, dict, source, "a table")
        check_fields(data, source, ("name", "description", "flows", "pattern"))
        name = expect_type(data.get("name", ""), str, f"{source}: name", "a string")
        desc = expect_type(data.get("description", ""), str, f"{source}: description", "a string")
        if ("flows" in data) == ("pattern" in data):
            raise InputError(f"{source}: a workload needs either [[flows]] tables or one [pattern] table"
                             + (", not both" if "flows" in data else ""))
        if "pattern" in data:
            pattern = pattern_from_dict(data["pattern"], f"{source}: pattern")
            w = cls.of_pattern(pattern, name, desc)
            validate_flows(w.flows, f"{source}: pattern")
            return w
        flows_raw = expect_type(data["flows"], list, f"{source}: flows", "a list of [[flows]] tables")
        if not flows_raw:
            raise InputError(f"{source}: flows: a workload needs at least one [[flows]] table")
        flows = tuple(flow_from_dict(f, f"{source}: flows[{i}]") for i, f in enumerate(flows_raw))
        validate_flows(flows, source)
        return cls(flows=flows, name=name, description=desc)

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
        """This workload with ``flows`` instead of its own: a workload of plain flows (no pattern)."""
        return replace(self, flows=flows, pattern=None)
