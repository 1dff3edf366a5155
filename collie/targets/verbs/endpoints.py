"""Connection data of one QP end of a cross-host flow, as hosts exchange it (pure: no pyverbs needed).

An endpoint is named by ``(flow, worker, qp, side)``: flow index in the workload, the worker share of the flow
(both hosts split a flow's QPs over its ``processes`` the same way), the QP's index within that share, and
``client`` or ``server``. Client QP ``(f, w, i)`` is connected to server QP ``(f, w, i)`` on the other host.

What a peer needs: the QPN, the PSN its first packet carries, the port's GID, and for UD the Q_Key. Only the
first QP (``qp == 0``) of a server share carries the share's MRs (``rkey``, ``address``), which every client
QP of the share targets (client WR slot ``j`` targets MR ``j % mrs`` as on a local run); the list is not
repeated per QP.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from collie.errors import TargetError

Key = tuple[int, int, int, str]


@dataclass(frozen=True)
class EndpointData:
    """One QP end (see the module docstring). ``side`` is ``"client"`` or ``"server"``."""

    flow: int
    worker: int
    qp: int
    side: str
    qpn: int
    psn: int
    gid: str
    qkey: int = 0
    mrs: tuple[tuple[int, int], ...] = ()

    @property
    def key(self) -> Key:
        return (self.flow, self.worker, self.qp, self.side)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``mrs``: a list of ``{"rkey", "address"}``, only when there are any)."""
        d: dict[str, Any] = {"flow": self.flow, "worker": self.worker, "qp": self.qp, "side": self.side,
                             "qpn": self.qpn, "psn": self.psn, "gid": self.gid, "qkey": self.qkey}
        if self.mrs:
            d["mrs"] = [{"rkey": r, "address": a} for r, a in self.mrs]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EndpointData:
        """Parse a peer's entry.

        Raises:
            TargetError: a field is missing or has the wrong type (one sentence naming it).
        """
        def num(name: str, src: Mapping[str, Any] = d) -> int:
            v = src.get(name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise TargetError(f"peer endpoint {dict(d)!r}: {name} is not a non-negative integer")
            return v

        side = d.get("side")
        if side not in ("client", "server"):
            raise TargetError(f"peer endpoint {dict(d)!r}: side is not 'client' or 'server'")
        gid = d.get("gid")
        if not isinstance(gid, str) or not gid:
            raise TargetError(f"peer endpoint {dict(d)!r}: gid is not a GID string")
        raw = d.get("mrs", [])
        if not isinstance(raw, list) or not all(isinstance(m, Mapping) for m in raw):
            raise TargetError(f"peer endpoint {dict(d)!r}: mrs is not a list of {{rkey, address}}")
        mrs = tuple((num("rkey", m), num("address", m)) for m in raw)
        return cls(flow=num("flow"), worker=num("worker"), qp=num("qp"), side=side, qpn=num("qpn"),
                   psn=num("psn"), gid=gid, qkey=num("qkey") if "qkey" in d else 0, mrs=mrs)


def index(peers: Iterable[Mapping[str, Any]]) -> dict[Key, EndpointData]:
    """The peers' endpoints by key (entries of hosts not faced are kept too; lookups ignore them)."""
    out: dict[Key, EndpointData] = {}
    for d in peers:
        if not isinstance(d, Mapping):
            raise TargetError(f"peer endpoint {d!r} is not an object")
        e = EndpointData.from_dict(d)
        out[e.key] = e
    return out


def peer_of(peers: Mapping[Key, EndpointData], flow: int, worker: int, qp: int, side: str) -> EndpointData:
    """The endpoint facing this host's ``side`` end ``(flow, worker, qp)``.

    Raises:
        TargetError: no peer sent it (the hosts disagree on the workload or a host left).
    """
    want = "server" if side == "client" else "client"
    e = peers.get((flow, worker, qp, want))
    if e is None:
        raise TargetError(f"no peer sent the {want} end of flow {flow} worker {worker} QP {qp}; every host of "
                          "a run must be prepared with the same workload")
    return e
