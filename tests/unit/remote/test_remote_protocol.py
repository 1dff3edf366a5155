"""The protocol: every message round-trips; any bytes decode to a message or a ProtocolError, nothing else."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collie.collectors.port import PortStatus
from collie.collectors.snapshot import Snapshot
from collie.model.workload import Workload
from collie.remote.protocol import (
    PROTOCOL_VERSION,
    Bye,
    Describe,
    Described,
    Error,
    ErrorKind,
    Farewell,
    Hello,
    Inspect,
    Inspected,
    Ping,
    Pong,
    ProtocolError,
    Ran,
    Run,
    Sample,
    Sampled,
    Welcome,
    decode,
    encode,
    peek_version,
)
from collie.targets.sim import SimTarget
from tests.conftest import EXAMPLES

WORKLOAD = Workload.load(EXAMPLES / "rc-write-64k.toml")


def _messages() -> list[object]:
    sim = SimTarget("cx6-200g", seed=3)
    result = sim.run(WORKLOAD, 1.0)
    return [
        Hello(host="h; $(x)\n'\"", target="sim:cx6-200g", controller_version="0.1.0", tags=("a;b",), netdev="eth0",
              numa=1, seed=7),
        Ping(), Pong(12.5), Describe(), Sample(), Run(WORKLOAD, 0.5), Bye(), Farewell(),
        Welcome(collie_version="0.1.0", protocol=PROTOCOL_VERSION, capabilities=("sample",), host="h", time=1.5,
                pid=42, python="3.11.7", hostname="n", argv=("python3", "-m", "collie.agent", "--stdio")),
        Described(sim.describe()),
        Sampled((Snapshot(1.0, {"x": 3, "y": None}, "sim", "sim:cx6-200g/a", sources={"x": "sim"}),)),
        Ran(result),
        Error(ErrorKind.UNSUPPORTED, "qps 20000 > max_qp 16384"),
        Inspect(), Inspected(None),
        Inspected(PortStatus("mlx5_0", 1, "DOWN", "Disabled", "Ethernet", 3, "fe80::1", "RoCE v2", "ens1f0", 9000,
                             4096, ("port 1 is DOWN",), ("a note",))),
    ]


@pytest.mark.parametrize("message", _messages(), ids=lambda m: type(m).__name__)
def test_every_message_round_trips_as_one_line(message: object) -> None:
    line = encode(message, 9)  # type: ignore[arg-type]
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    envelope = decode(line)
    assert (envelope.version, envelope.id) == (PROTOCOL_VERSION, 9)
    assert envelope.message == message


def test_a_run_result_keeps_everything_including_truth() -> None:
    result = SimTarget("cx6-200g", seed=1).run(WORKLOAD, 1.0)
    back = decode(encode(Ran(result), 1)).message
    assert isinstance(back, Ran)
    assert back.result.to_dict(include_truth=True) == result.to_dict(include_truth=True)


@pytest.mark.parametrize(("line", "match"), [
    (b"not json\n", "not a JSON line"),
    (b"[1, 2]\n", "expected a JSON object"),
    (b'{"v": 1, "id": 1, "type": "ping"}\n', "protocol version 1 is not this side's version 3"),
    (b'{"v": true, "id": 1, "type": "ping"}\n', "protocol version True"),
    (b'{"v": 3, "id": "1", "type": "ping"}\n',
     r"a protocol line: id: expected an integer \(the request's number\), got '1'"),
    (b'{"v": 3, "id": 1, "type": "rm -rf"}\n', "unknown message type 'rm -rf'"),
    (b'{"v": 3, "id": 1, "type": "hello"}\n', r"'hello' message: host: missing \(a string\)"),
    (b'{"v": 3, "id": 1, "type": "hello", "host": 3, "target": "sim", "controller_version": "x"}\n',
     "'hello' message: host: expected a string, got 3"),
    (b'{"v": 3, "id": 1, "type": "run", "workload": {}, "duration": 1}\n',
     "'run' message: workload: a workload needs either"),
    (b'{"v": 3, "id": 1, "type": "run", "workload": {}, "duration": -1}\n', "'run' message: workload: a workload"),
    (b'{"v": 3, "id": 1, "type": "run", "workload": {"flows": [{"client": "a", "server": "b"}]}, "duration": -1}\n',
     "'run' message: duration: must be a positive number of seconds, got -1"),
    (b'{"v": 3, "id": 1, "type": "error", "kind": "nope", "message": "x"}\n',
     "'error' message: kind: 'nope' is not allowed"),
])
def test_malformed_lines_are_protocol_errors(line: bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode(line)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["v", "id", "type", "host", "target", "duration", "workload", "kind", "message", "time"]),
        inner, max_size=6),
    max_leaves=20).map(lambda v: json.dumps(v).encode()))
def test_decode_raises_only_protocol_errors(line: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode(line)
    version, _ = peek_version(line)
    assert version is None or isinstance(version, int)
