"""The agent and its client, without SSH: in-process, and as a real child process behind the LocalLauncher."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from collie import __version__
from collie.collectors.snapshot import Snapshot
from collie.model.workload import Workload
from collie.remote.agent import Agent, serve
from collie.remote.client import AgentClient
from collie.remote.errors import Failure, HostError
from collie.remote.inventory import Host, parse_host_target
from collie.remote.launch import AGENT_COMMAND, ChannelClosed, LocalLauncher
from collie.remote.protocol import (
    PROTOCOL_VERSION,
    Describe,
    Described,
    Error,
    ErrorKind,
    Hello,
    Ran,
    Run,
    Sample,
    Sampled,
    Welcome,
    encode,
)
from collie.targets.base import Unsupported
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES, ROOT

WORKLOAD = Workload.load(EXAMPLES / "rc-write-64k.toml")
BIG = Workload.load(EXAMPLES / "bi-rc-read-80qp.toml")


def host(name: str = "h", target: str = "sim:cx6-200g") -> Host:
    return Host(name=name, address="127.0.0.1", port=22, user="u", target=parse_host_target(target, "t"))


def hello(target: str = "sim:cx6-200g", **kw: object) -> Hello:
    return Hello(host="h", target=target, controller_version=__version__, **kw)  # type: ignore[arg-type]


def test_requests_before_hello_are_refused_and_hello_comes_once() -> None:
    agent = Agent()
    reply = agent.handle(Describe())
    assert isinstance(reply, Error) and reply.kind is ErrorKind.PROTOCOL
    assert "first request must be hello" in reply.message
    assert isinstance(agent.handle(hello()), Welcome)
    again = agent.handle(hello())
    assert isinstance(again, Error) and "already" in again.message


def test_a_sim_host_runs_exactly_what_a_local_sim_target_runs() -> None:
    agent = Agent()
    agent.handle(hello(seed=5))
    local = SimTarget("cx6-200g", seed=5)
    for w in (WORKLOAD, BIG, WORKLOAD):
        ran = agent.handle(Run(w, 1.0))
        assert isinstance(ran, Ran)
        assert ran.result.to_dict(include_truth=True) == local.run(w, 1.0).to_dict(include_truth=True)
    described = agent.handle(Describe())
    assert isinstance(described, Described) and described.info == local.describe()


def test_sim_counters_are_running_totals_of_the_runs() -> None:
    agent = Agent()
    agent.handle(hello())
    before = agent.handle(Sample())
    assert isinstance(before, Sampled)
    assert [s.device for s in before.snapshots] == ["sim:cx6-200g/a", "sim:cx6-200g/b"]
    assert all(v == 0 for s in before.snapshots for v in s.values.values())
    assert {src for s in before.snapshots for src in s.sources.values()} == {"sim"}
    runs = [agent.handle(Run(WORKLOAD, 1.0)) for _ in range(2)]
    after = agent.handle(Sample())
    assert isinstance(after, Sampled)
    name = "tx_vport_rdma_unicast_bytes"
    sent = sum(r.result.host("a").counters[name] for r in runs if isinstance(r, Ran))
    assert sent > 0 and after.snapshots[0].values[name] == sent


def test_a_verbs_host_samples_its_host_collector_with_the_inventory_netdev() -> None:
    calls = []

    def collector(device: str, port: int, netdev: str | None) -> Snapshot:
        calls.append((device, port, netdev))
        return Snapshot(1.0, {"port_xmit_data": 7}, "host", f"{device}/{port}", sources={"port_xmit_data": "port"})

    agent = Agent(collector=collector)
    agent.handle(hello(target="verbs:mlx5_0:1:3", netdev="ens1f0"))
    reply = agent.handle(Sample())
    assert isinstance(reply, Sampled) and reply.snapshots[0].values == {"port_xmit_data": 7}
    assert calls == [("mlx5_0", 1, "ens1f0")]


def test_target_failures_are_error_replies_and_the_agent_goes_on() -> None:
    agent = Agent()
    agent.handle(hello(target="sim:nope"))
    reply = agent.handle(Describe())
    assert isinstance(reply, Error) and reply.kind is ErrorKind.INPUT and "nope" in reply.message
    agent2 = Agent()
    agent2.handle(hello())
    far = Workload.from_dict({"flows": [{"client": "a", "server": "zz", "transport": "RC", "opcode": "WRITE"}]})
    unsupported = agent2.handle(Run(far, 1.0))
    assert isinstance(unsupported, Error) and unsupported.kind is ErrorKind.UNSUPPORTED
    assert isinstance(agent2.handle(Run(WORKLOAD, 1.0)), Ran)


def _serve(*lines: bytes) -> list[dict[str, object]]:
    out = io.BytesIO()
    assert serve(io.BytesIO(b"".join(lines)), out, Agent()) == 0
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_serve_answers_each_line_and_stops_at_end_of_input() -> None:
    replies = _serve(encode(hello(), 1), b"\n", b"garbage\n", b'{"v": 9, "id": 4, "type": "ping"}\n',
                     encode(Sample(), 5))
    assert [(r["id"], r["type"]) for r in replies] == [(1, "welcome"), (0, "error"), (4, "error"), (5, "sampled")]
    assert replies[1]["kind"] == "protocol"
    assert replies[2]["kind"] == "version" and replies[2]["v"] == PROTOCOL_VERSION
    assert "controller speaks collie protocol version 9" in str(replies[2]["message"])


def test_serve_stops_after_bye_even_with_more_input() -> None:
    replies = _serve(encode(hello(), 1), b'{"v":3,"id":2,"type":"bye"}\n', encode(Sample(), 3))
    assert [r["type"] for r in replies] == ["welcome", "farewell"]


def test_a_reply_is_never_taken_for_a_request() -> None:
    replies = _serve(encode(hello(), 1), encode(Welcome("x", 1, (), "h", 1.0, 1, "3", "n"), 2))
    assert replies[1]["type"] == "error" and "is a reply, not a request" in str(replies[1]["message"])


@pytest.fixture
def local() -> Iterator[LocalLauncher]:
    launcher = LocalLauncher(env={"PYTHONPATH": str(ROOT)})
    yield launcher
    launcher.close()


def test_a_child_agent_serves_the_client_and_exits_when_its_stdin_closes(local: LocalLauncher) -> None:
    channel = local.start(host())
    client = AgentClient(host(), channel, request_timeout=60)
    welcome = client.hello(seed=2)
    assert (welcome.collie_version, welcome.protocol, welcome.host) == (__version__, PROTOCOL_VERSION, "h")
    assert welcome.pid == channel.pid and list(welcome.argv[1:]) == list(AGENT_COMMAND[1:])
    assert client.clock is not None and abs(client.clock.skew_s) <= client.clock.rtt_s / 2 + 1e-3
    assert client.describe().name == "sim:cx6-200g"
    result = client.run(WORKLOAD, 1.0)
    assert result.to_dict(include_truth=True) == SimTarget("cx6-200g", seed=2).run(WORKLOAD, 1.0).to_dict(
        include_truth=True)
    assert client.sample()[0].values["tx_vport_rdma_unicast_bytes"] > 0
    with pytest.raises(Unsupported):
        client.run(Workload.from_dict({"flows": [{"client": "a", "server": "q", "transport": "RC",
                                                  "opcode": "WRITE"}]}), 1.0)
    channel.close()  # no bye: the agent must exit on end of input alone
    assert channel._proc.returncode == 0


def test_the_agent_refuses_any_other_command_line() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "collie.agent", "--stdio; id"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False, timeout=60)
    assert out.returncode == 2 and "usage: python3 -m collie.agent --stdio" in out.stderr and out.stdout == ""


class FakeChannel:
    """A channel that answers with canned lines (for protocol failures a real agent never makes)."""

    description = "fake"

    def __init__(self, *lines: bytes) -> None:
        self.lines = list(lines)
        self.sent: list[bytes] = []

    def send(self, data: bytes, timeout: float) -> None:
        self.sent.append(data)

    def read_line(self, timeout: float) -> bytes:
        if not self.lines:
            raise ChannelClosed(137, "Killed")
        return self.lines.pop(0)

    def close(self) -> None:
        pass


#: What an agent of protocol version 2 (collie before churn figures and cross-host churn) answers this hello.
OLD_AGENTS_ANSWER = (b'{"v":2,"id":1,"type":"error","kind":"version","message":"the controller speaks collie '
                     b'protocol version 3 and this agent (collie 0.1.0) speaks version 2; run the same collie '
                     b'version on both sides"}\n')


def test_an_old_agents_answer_to_hello_is_one_sentence() -> None:
    with pytest.raises(HostError) as err:
        AgentClient(host(), FakeChannel(OLD_AGENTS_ANSWER), 1).hello()
    assert err.value.failure is Failure.VERSION
    assert str(err.value) == (
        f"host 'h': its agent speaks the older collie protocol version 2 and this collie ({__version__}) speaks "
        "version 3 (the agent says: the controller speaks collie protocol version 3 and this agent (collie 0.1.0) "
        f"speaks version 2; run the same collie version on both sides); install collie {__version__} on the host")
    newer = FakeChannel(b'{"v": 4, "id": 1, "type": "error", "kind": "version", "message": "I speak 4"}\n')
    with pytest.raises(HostError, match=r"its agent speaks the newer collie protocol version 4 and this collie "
                                        r"\(.*\) speaks version 3 \(the agent says: I speak 4\); install collie"):
        AgentClient(host(), newer, 1).hello()


def test_wrong_ids_and_wrong_types_break_the_client_for_good() -> None:
    client = AgentClient(host(), FakeChannel(encode(Sampled(()), 7)), 1)
    with pytest.raises(HostError, match="answered request 7 while sample was request 1") as err:
        client.sample()
    assert err.value.failure is Failure.PROTOCOL
    with pytest.raises(HostError, match="unusable after an earlier failure") as err2:
        client.describe()
    assert err2.value.failure is Failure.BROKEN
    typed = AgentClient(host(), FakeChannel(encode(Sampled(()), 1)), 1)
    with pytest.raises(HostError, match="answered describe with sampled"):
        typed.describe()


def test_an_agent_that_dies_is_reported_with_its_status_and_last_words() -> None:
    with pytest.raises(HostError) as err:
        AgentClient(host(), FakeChannel(), 1).describe()
    assert err.value.failure is Failure.AGENT_EXITED
    assert "its agent was killed by signal 9 (exit status 137) (Killed) before answering describe" in str(err.value)


def test_a_host_without_collie_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "collie").mkdir()
    (tmp_path / "collie" / "__init__.py").write_text("")  # a collie without an agent stands for none at all
    launcher = LocalLauncher(env={"PYTHONPATH": str(tmp_path)}, cwd=str(tmp_path))
    try:
        with pytest.raises(HostError) as err:
            AgentClient(host(), launcher.start(host()), 30).hello()
    finally:
        launcher.close()
    assert err.value.failure is Failure.AGENT_MISSING
    assert str(err.value) == ("host 'h': python3 -m collie.agent --stdio did not start there: it exited with status 1 "
                              "(/root/.pyenv/versions/3.11.7/bin/python: No module named collie.agent); install "
                              f"collie {__version__} on the host").replace("/root/.pyenv/versions/3.11.7/bin/python",
                                                                           sys.executable)
