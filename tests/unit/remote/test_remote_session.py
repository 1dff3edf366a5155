"""One run of a remote target, as the agents take part in it: SimSession, the v2 session messages, the agent's
session handling (one at a time, aborted on a new prepare, on bye and on end of input) and the client's steps."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from collie import __version__
from collie.model.workload import Workload
from collie.remote.agent import Agent, serve
from collie.remote.client import AgentClient
from collie.remote.inventory import Host, parse_host_target
from collie.remote.launch import LocalLauncher
from collie.remote.protocol import (
    Abort,
    Aborted,
    Bye,
    Connect,
    Connected,
    Error,
    ErrorKind,
    Finish,
    Finished,
    Hello,
    Prepare,
    Prepared,
    Start,
    Started,
    decode,
    encode,
)
from collie.targets.base import Unsupported
from collie.targets.session import HostPart, RunPlan
from collie.targets.sim import SimTarget
from collie.targets.sim.session import SimSession
from tests.conftest import EXAMPLES, ROOT

WORKLOAD = Workload.load(EXAMPLES / "rc-write-64k.toml")
BIDI = Workload.load(EXAMPLES / "bi-rc-read-80qp.toml")
INCAST = Workload.load(EXAMPLES / "incast-loopback-remote.toml")


def plan(workload: Workload, roles: tuple[str, ...], repetition: int | None = 0, run: int = 1) -> RunPlan:
    return RunPlan(run=run, workload=workload, roles=roles, warmup=0.25, duration=1.0, repetition=repetition)


def hello(target: str = "sim:cx6-200g", seed: int = 0) -> Hello:
    return Hello(host="h", target=target, controller_version=__version__, seed=seed)


def host(name: str = "h") -> Host:
    return Host(name=name, address="127.0.0.1", port=22, user="u", target=parse_host_target("sim:cx6-200g", "t"))


@pytest.mark.parametrize("profile", ["cx6-200g", "fleet8-cx6"])
@pytest.mark.parametrize("workload", [WORKLOAD, BIDI, INCAST], ids=["oneway", "bidirectional", "incast"])
def test_two_sim_sessions_split_exactly_the_local_result(workload: Workload, profile: str) -> None:
    """On a two-host profile, and on a fleet whose first two hosts play the roles."""
    local = SimTarget(profile, seed=7).run(workload, 1.0, repetition=2)
    parts = []
    for roles in (("a",), ("b",)):
        s = SimSession(SimTarget(profile, seed=7))
        assert s.prepare(plan(workload, roles, repetition=2)) == []
        s.connect([])
        s.start(100.0)
        parts.append(s.finish())
        s.abort()
        s.abort()  # idempotent
    a, b = parts
    assert [h.host for h in a.hosts] == ["a"] and [h.host for h in b.hosts] == ["b"]
    assert sorted(a.flows + b.flows, key=lambda f: f.flow) == sorted(local.flows, key=lambda f: f.flow)
    assert all(f.client == "a" for f in a.flows) and all(f.client == "b" for f in b.flows)
    assert a.hosts + b.hosts == local.hosts and a.truth == local.truth == b.truth
    assert a.interval == (100.25, 101.25)


def test_a_sim_session_refuses_what_the_simulator_cannot_run_at_prepare() -> None:
    far = Workload.from_dict({"flows": [{"client": "a", "server": "zz", "transport": "RC", "opcode": "WRITE"}]})
    with pytest.raises(Unsupported):
        SimSession(SimTarget()).prepare(plan(far, ("a",)))
    with pytest.raises(Exception, match="finish before prepare"):
        SimSession(SimTarget()).finish()


def test_session_messages_round_trip() -> None:
    p = plan(BIDI, ("a", "b"), repetition=None, run=9)
    back = decode(encode(Prepare(p), 3)).message
    assert isinstance(back, Prepare) and back.plan == p
    peers = ({"flow": 0, "qpn": 17, "gid": "fe80::1", "side": "server"},)
    assert decode(encode(Connect(peers), 4)).message == Connect(peers)
    assert decode(encode(Start(1234.5), 5)).message == Start(1234.5)
    s = SimSession(SimTarget(seed=1))
    s.prepare(p)
    s.start(5.0)
    hp = s.finish()
    finished = decode(encode(Finished(hp), 6)).message
    assert isinstance(finished, Finished) and finished.part == hp
    assert decode(encode(Prepared(peers), 7)).message == Prepared(peers)
    for m in (Finish(), Abort(), Connected(), Started(), Aborted()):
        assert decode(encode(m, 8)).message == m


@pytest.mark.parametrize(("line", "match"), [
    (b'{"v": 3, "id": 1, "type": "prepare", "plan": 3}\n', "'prepare' message: plan: expected a table, got 3"),
    (b'{"v": 3, "id": 1, "type": "start", "at": "now"}\n', "'start' message: at: expected a number, got 'now'"),
    (b'{"v": 3, "id": 1, "type": "connect", "peers": [1]}\n',
     r"'connect' message: peers\[0\]: expected a table, got 1"),
])
def test_malformed_session_messages_are_protocol_errors(line: bytes, match: str) -> None:
    from collie.remote.protocol import ProtocolError

    with pytest.raises(ProtocolError, match=match):
        decode(line)


class Recording:
    """A HostSession that records the calls it gets."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def prepare(self, plan: RunPlan) -> list[dict[str, Any]]:
        self.log.append(f"{self.name}.prepare")
        return [{"flow": 0, "side": "client", "qpn": 1}]

    def connect(self, peers: Sequence[Mapping[str, Any]]) -> None:
        self.log.append(f"{self.name}.connect {len(peers)}")

    def start(self, at: float) -> None:
        self.log.append(f"{self.name}.start {at:g}")

    def finish(self) -> HostPart:
        self.log.append(f"{self.name}.finish")
        return HostPart(hosts=(), flows=(), setup_s=0.0)

    def abort(self) -> None:
        self.log.append(f"{self.name}.abort")


def _recording_agent(log: list[str]) -> Agent:
    agent = Agent()
    names = iter("xyz")
    agent._new_session = lambda: Recording(log, next(names))  # type: ignore[method-assign]
    return agent


def test_the_agent_holds_one_session_and_aborts_it_on_a_new_prepare_and_on_bye() -> None:
    log: list[str] = []
    agent = _recording_agent(log)
    agent.handle(hello())
    refused = agent.handle(Finish())
    assert isinstance(refused, Error) and refused.kind is ErrorKind.PROTOCOL and "prepare first" in refused.message
    assert agent.handle(Prepare(plan(WORKLOAD, ("a",)))) == Prepared(({"flow": 0, "side": "client", "qpn": 1},))
    assert isinstance(agent.handle(Connect(({"qpn": 2},))), Connected)
    assert isinstance(agent.handle(Start(7.0)), Started)
    assert isinstance(agent.handle(Finish()), Finished)
    assert isinstance(agent.handle(Prepare(plan(WORKLOAD, ("a",)))), Prepared)
    assert isinstance(agent.handle(Abort()), Aborted) and isinstance(agent.handle(Abort()), Aborted)
    assert isinstance(agent.handle(Prepare(plan(WORKLOAD, ("b",)))), Prepared)
    agent.handle(Bye())
    assert log == ["x.prepare", "x.connect 1", "x.start 7", "x.finish", "x.abort", "y.prepare", "y.abort",
                   "z.prepare", "z.abort"]


def test_end_of_input_aborts_the_session() -> None:
    log: list[str] = []
    out = io.BytesIO()
    serve(io.BytesIO(encode(hello(), 1) + encode(Prepare(plan(WORKLOAD, ("a",))), 2)), out, _recording_agent(log))
    assert [json.loads(x)["type"] for x in out.getvalue().splitlines()] == ["welcome", "prepared"]
    assert log == ["x.prepare", "x.abort"]


def test_a_verbs_host_without_the_verbs_session_module_is_one_error_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "collie.targets.verbs.session", None)  # the import fails as if it were absent
    agent = Agent()
    agent.handle(hello(target="verbs:rxe0:1:1"))
    reply = agent.handle(Prepare(plan(WORKLOAD, ("a", "b"))))
    assert isinstance(reply, Error) and reply.kind is ErrorKind.INPUT
    assert reply.message.startswith(f"this agent (collie {__version__}) cannot run a verbs host's part of a remote "
                                    f"run: ")
    assert "\n" not in reply.message


def test_a_sim_agent_session_feeds_its_running_counter_totals() -> None:
    agent = Agent()
    agent.handle(hello())
    agent.handle(Prepare(plan(WORKLOAD, ("a", "b"))))
    agent.handle(Start(1.0))
    done = agent.handle(Finish())
    assert isinstance(done, Finished)
    from collie.remote.protocol import Sample, Sampled

    sampled = agent.handle(Sample())
    assert isinstance(sampled, Sampled)
    name = "tx_vport_rdma_unicast_bytes"
    assert sampled.snapshots[0].values[name] == done.part.hosts[0].counters[name] > 0


@pytest.fixture
def local() -> Iterator[LocalLauncher]:
    launcher = LocalLauncher(env={"PYTHONPATH": str(ROOT)})
    yield launcher
    launcher.close()


def test_the_client_drives_a_child_agent_step_by_step(local: LocalLauncher) -> None:
    client = AgentClient(host(), local.start(host()), request_timeout=60)
    client.hello(seed=3)
    assert client.prepare(plan(BIDI, ("b",), repetition=1)) == []
    client.connect([])
    client.start(50.0)
    part = client.finish()  # deadline: the plan's warm-up + duration + the request timeout
    local_result = SimTarget("cx6-200g", seed=3).run(BIDI, 1.0, repetition=1)
    assert part.hosts == (local_result.host("b"),)
    assert part.flows == tuple(f for f in local_result.flows if f.client == "b")
    client.abort()
    with pytest.raises(Unsupported):
        client.prepare(plan(Workload.from_dict({"flows": [{"client": "a", "server": "q", "transport": "RC",
                                                           "opcode": "WRITE"}]}), ("a",)))
    client.close()
