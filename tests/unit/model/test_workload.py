from __future__ import annotations

import hashlib
import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

from collie.errors import ConstraintError, InputError
from collie.model.flow import OPCODES, Endpoint, Flow, flow_to_dict
from collie.model.space import load_space
from collie.model.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "examples"


def flow(**kw: object) -> Flow:
    return Flow(client=Endpoint("a"), server=Endpoint("b"), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.stem)
def test_examples_round_trip_losslessly(path: Path) -> None:
    w = Workload.load(path)
    assert Workload.from_toml(w.to_toml()) == w
    assert Workload.from_json(w.to_json()) == w
    assert Workload.from_toml(w.to_toml()).key() == w.key()
    assert Workload.from_toml(w.to_toml()).name == w.name


def test_key_ignores_flow_order_name_and_description() -> None:
    f1, f2 = flow(), Flow(client=Endpoint("b"), server=Endpoint("a"))
    assert Workload((f1, f2), name="x").key() == Workload((f2, f1), description="y").key()
    assert Workload((f1,)).key() != Workload((flow(qps=2),)).key()
    assert len(Workload((f1,)).key()) == 16


def test_sizes_accept_units_and_single_values() -> None:
    w = Workload.from_toml('[[flows]]\nclient = "a"\nserver = "b"\nsizes = "4K"\nmr_size = "1MiB"\n')
    assert w.flows[0].sizes == (4096,)
    assert w.flows[0].mr_size == 1 << 20


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[[flows]]\nclient = "a"\nserver = "b"\nqpz = 3\n', "unknown field 'qpz'"),
        ('[[flows]]\nclient = "a"\n', "server: missing (a required field)"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nqps = 0\n', "qps: 0 is out of range; allowed is 1"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nqps = "many"\n', "qps: expected an integer"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nmtu = 1500\n', "mtu: 1500 is not allowed; use one of 256"),
        ('[[flows]]\nclient = "a"\nserver = "b"\ntransport = "XRC"\n', "transport: 'XRC' is not allowed"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nsizes = []\n', "has 0 sizes; allowed is 1 to 8"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nsizes = ["big"]\n', "not a byte size"),
        ('[[flows]]\nclient = { host = "a", memory = "hbm" }\nserver = "b"\n', "not a memory placement"),
        ('flows = []\n', "needs at least one [[flows]]"),
        ('name = 3\n[[flows]]\nclient = "a"\nserver = "b"\n', "name: expected a string"),
        ('[[flows]\n', "malformed TOML"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nburst = 1\n', "burst: expected true or false"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nopcode = []\n', "opcode: has 0 opcodes; allowed is 1 to 8"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nopcode = ["READ", "FETCH"]\n', "opcode[1]: 'FETCH' is not allowed"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nopcode = 3\n', "opcode: expected an opcode or a list"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nrecv_batch = 0\n', "recv_batch: 0 is out of range"),
        ('[[flows]]\nclient = "a"\nserver = "b"\nrecv_delay_us = -1\n', "recv_delay_us: -1 is out of range"),
    ],
)
def test_bad_input_names_the_field(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as err:
        Workload.from_toml(text, "w.toml")
    assert fragment in str(err.value)
    assert str(err.value).startswith("w.toml")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("extra", "constraint"),
    [
        ('transport = "UD"\nopcode = "READ"\nsizes = [512]', "legal_opcode"),
        ('transport = "UC"\nopcode = "READ"', "legal_opcode"),
        ('transport = "UD"\nopcode = "SEND"\nsizes = [8192]\nmtu = 4096', "ud_msg_le_mtu"),
        ("batch = 64\nsq_depth = 32", "depth_ge_batch"),
        ('opcode = "ATOMIC_FA"\nsizes = [16]', "atomics_8b"),
        ("sges = 4\nsizes = [2]", "sges_le_min_size"),
        ('sizes = ["1M"]\nmr_size = "64K"', "msg_fits_mr"),
        ("signal_every = 256\nsq_depth = 128", "signal_within_depth"),
        ('opcode = "READ"\ninline = 64', "inline_needs_write_or_send"),
        ('mrs = 100000\nmr_size = "1M"\nsizes = [4096]', "pinned_memory"),
        ('transport = "UC"\nopcode = ["WRITE", "READ"]', "legal_opcode"),
        ('transport = "UD"\nopcode = ["SEND", "WRITE_IMM"]\nsizes = [512]', "legal_opcode"),
        ('opcode = ["READ", "ATOMIC_FA"]\ninline = 64', "inline_needs_write_or_send"),
        ('opcode = "SEND"\nrecv_batch = 64\nrq_depth = 32', "recv_depth_ge_batch"),
        ('opcode = "SEND"\nrecv_sges = 4\nsizes = [2]', "recv_sges_le_min_size"),
    ],
)
def test_illegal_combinations_are_named(extra: str, constraint: str) -> None:
    with pytest.raises(ConstraintError) as err:
        Workload.from_toml(f'[[flows]]\nclient = "a"\nserver = "b"\n{extra}\n', "w.toml")
    assert err.value.constraint == constraint


def test_missing_file_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        Workload.load(tmp_path / "nope.toml")
    bad = tmp_path / "w.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="malformed JSON"):
        Workload.load(bad)
    good = tmp_path / "ok.json"
    w = Workload.load(EXAMPLES / "rc-write-64k.toml")
    good.write_text(w.to_json())
    assert Workload.load(good) == w
    assert json.loads(w.to_json())["flows"][0]["sizes"] == [65536]


@pytest.mark.parametrize("opcode", sorted(OPCODES))
def test_payload_flows_from_server_to_client_only_for_a_read(opcode: str) -> None:
    f = Flow(Endpoint("a"), Endpoint("b", "gpu"), opcodes=(opcode,))
    assert f.receiver_is_client == (opcode == "READ")
    if opcode == "READ":
        assert (f.payload_sender, f.payload_receiver) == (Endpoint("b", "gpu"), Endpoint("a"))
    else:  # WRITE, SEND, their _IMM forms and the atomics: the client's request carries the payload
        assert (f.payload_sender, f.payload_receiver) == (Endpoint("a"), Endpoint("b", "gpu"))


def test_loopback_and_hosts() -> None:
    w = Workload.load(EXAMPLES / "incast-loopback-remote.toml")
    assert w.hosts == ("a", "b")
    assert [f.loopback for f in w.flows] == [False, True]


def test_opcode_patterns_round_trip_and_cycle_with_sizes() -> None:
    text = ('[[flows]]\nclient = "a"\nserver = "b"\nopcode = ["READ", "WRITE", "ATOMIC_CS"]\n'
            'sizes = [129, 4097]\nrecv_batch = 4\nrq_depth = 16\nrecv_delay_us = 100\nmr_size = "8K"\n')
    w = Workload.from_toml(text)
    f = w.flows[0]
    assert f.opcodes == ("READ", "WRITE", "ATOMIC_CS") and f.opcode == "MIXED" and f.mixed and f.atomic
    assert Workload.from_toml(w.to_toml()) == w and Workload.from_json(w.to_json()) == w
    assert Workload.from_json(w.to_json()).key() == w.key()
    # six requests make one cycle of both patterns; an atomic operates on 8 B whatever the size pattern says
    assert f.requests() == (("READ", 129), ("WRITE", 4097), ("ATOMIC_CS", 8), ("READ", 4097), ("WRITE", 129),
                            ("ATOMIC_CS", 8))
    assert not f.receiver_is_client  # READs mixed with WRITEs: the payload goes both ways
    assert Workload.from_toml(w.to_toml().replace("ATOMIC_CS", "SEND")).flows[0].consumes_receives


def test_key_of_a_workload_without_the_newer_fields_is_what_it_always_was() -> None:
    """Keys recorded in journals and cases before opcode patterns and the receive side existed still name the
    same workloads: a flow that uses neither is written exactly as before."""
    old_form = {"client": {"host": "a", "memory": "local"}, "server": {"host": "b", "memory": "local"},
                "transport": "RC", "opcode": "SEND", "sizes": [4096], "qps": 2, "batch": 1, "sges": 1,
                "sq_depth": 128, "rq_depth": 128, "mtu": 4096, "mrs": 1, "mr_size": 65536, "inline": 0,
                "signal_every": 1, "burst": False, "processes": 1}
    expected = hashlib.sha256(json.dumps(old_form, sort_keys=True).encode()).hexdigest()[:16]
    w = Workload((flow(opcodes=("SEND",), sizes=(4096,), qps=2),))
    assert w.key() == expected
    assert Workload((flow(opcodes=("SEND",), sizes=(4096,), qps=2, recv_batch=2),)).key() != expected


def test_a_victim_round_trips_and_its_solo_is_the_victim_alone() -> None:
    w = Workload.load(EXAMPLES / "aggressor-victim.toml")
    aggressor, victim = w.flows
    assert victim.victim == "latency" and not aggressor.victim and w.isolation
    assert Workload.from_toml(w.to_toml()) == w and Workload.from_json(w.to_json()) == w
    solo = w.solo()
    assert solo.flows == (replace(victim, victim=""),) and not solo.isolation
    # the solo's key is the victim's identity, whatever its aggressor
    other = w.with_flows((replace(aggressor, qps=64), victim))
    assert other.key() != w.key() and other.solo().key() == solo.key()
    assert "victim" not in flow_to_dict(aggressor)  # left out at its default: older keys stay


@pytest.mark.parametrize(("value", "fragment"), [("none", "not a victim's name"), ("a b", "not a victim's name"),
                                                 ("", "not a victim's name"), ("7", None)])
def test_a_victims_name_is_an_identifier(value: str, fragment: str | None) -> None:
    text = (f'[[flows]]\nclient = "a"\nserver = "b"\n[[flows]]\nclient = "a"\nserver = "b"\nsizes = [64]\n'
            f'victim = "{value}"\n')
    if fragment is None:
        assert Workload.from_toml(text).flows[1].victim == value
        return
    with pytest.raises(InputError, match=fragment):
        Workload.from_toml(text)


@pytest.mark.parametrize(("flows", "constraint"), [
    ('[[flows]]\nclient = "a"\nserver = "b"\nvictim = "latency"\n', "victim_needs_aggressor"),
    ('[[flows]]\nclient = "a"\nserver = "b"\n[[flows]]\nclient = "a"\nserver = "c"\nvictim = "latency"\n',
     "victim_shares_hosts"),
])
def test_an_isolation_experiment_breaks_named_constraints(flows: str, constraint: str) -> None:
    with pytest.raises(ConstraintError) as err:
        Workload.from_toml(flows)
    assert err.value.constraint == constraint


def test_the_key_is_computed_once_per_workload_and_is_the_documented_hash() -> None:
    w = Workload((Flow(Endpoint("a"), Endpoint("b", "remote"), opcodes=("READ", "WRITE"), sizes=(1, 4097),
                       recv_delay_us=5, victim="lat"), Flow(Endpoint("b"), Endpoint("b"), mr_churn=10)))
    canon = sorted(json.dumps(flow_to_dict(f), sort_keys=True) for f in w.flows)
    assert w.key() == hashlib.sha256("\n".join(canon).encode()).hexdigest()[:16]
    assert w.key() is w.key()
    assert Workload(tuple(reversed(w.flows))).key() == w.key() and w.with_flows(w.flows[:1]).key() != w.key()


def test_a_derived_value_is_computed_once_per_workload() -> None:
    calls: list[Workload] = []

    def count(w: Workload) -> int:
        calls.append(w)
        return len(w.flows)

    w = Workload((Flow(Endpoint("a"), Endpoint("b")),))
    assert w.derived(count) == 1 and w.derived(count) == 1 and len(calls) == 1
    two = w.with_flows(w.flows * 2)
    assert two.derived(count) == 2 and len(calls) == 2  # a new workload computes afresh
    assert two == Workload(two.flows) and hash(two) == hash(Workload(two.flows))  # the memo is no part of it


def test_the_key_written_directly_is_the_json_encoders_for_every_field() -> None:
    # the key's fast writer names each field itself: a flow field it forgot (a new one) or wrote in another way
    # would make this differ from json.dumps(flow_to_dict(f), sort_keys=True)
    space, rng = load_space(), np.random.default_rng(5)
    flows = [f for _ in range(300) for f in space.build(space.sample(rng)).flows]
    every = flow(opcodes=("SEND", "WRITE_IMM"), sizes=(1, 65537), burst=True, recv_batch=3, recv_sges=2,
                 recv_delay_us=7, mr_churn=9, qp_churn=4, victim='la"t', tclass=106)
    # a bool built in code takes the encoder's own path
    for f in [*flows, every, flow(), flow(sizes=(True,)), flow(tclass=True)]:
        assert Workload((f,)).key() == hashlib.sha256(
            json.dumps(flow_to_dict(f), sort_keys=True).encode()).hexdigest()[:16], f
    assert set(flow_to_dict(every)) == {f.name for f in fields(Flow)} - {"opcodes"} | {"opcode"}
