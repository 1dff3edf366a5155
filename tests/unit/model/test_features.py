from __future__ import annotations

import math
from pathlib import Path

from collie.model.features import FEATURE_NAMES, encode, features, point_encoder
from collie.model.flow import Endpoint, Flow
from collie.model.space import load_space
from collie.model.workload import Workload

EXAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "examples"


def test_bidirectional_read_example() -> None:
    f = features(Workload.load(EXAMPLES / "bi-rc-read-80qp.toml"))
    assert (f.transport, f.opcode) == ("RC", "READ")
    assert f.bidirectional and not f.loopback and not f.incast
    assert f.qps_total == 160 and f.qps_flow == 80 and f.qps_host == 160
    assert f.batch == 128 and f.sges == 4 and f.sge_bytes == 32
    assert f.mrs_host == 160 and f.mr_footprint == 160 * 65536


def test_incast_needs_loopback_and_remote_into_the_same_receiver() -> None:
    f = features(Workload.load(EXAMPLES / "incast-loopback-remote.toml"))
    assert f.loopback and f.incast and not f.bidirectional
    assert f.qps_host == 8 + 2 * 8  # remote flow's server end plus both ends of the loopback flow
    only_loop = Workload((Flow(Endpoint("b"), Endpoint("b")),))
    assert features(only_loop).loopback and not features(only_loop).incast
    # loopback into a, remote into b: two receivers, no incast
    split = Workload((Flow(Endpoint("a"), Endpoint("b")), Flow(Endpoint("a"), Endpoint("a"))))
    assert not features(split).incast


def test_read_receiver_is_the_client() -> None:
    w = Workload((Flow(Endpoint("a"), Endpoint("b"), opcodes=("READ",)), Flow(Endpoint("a"), Endpoint("a"))))
    assert features(w).incast  # a reads from b (data into a) while a writes to itself


def test_mixed_flows_and_size_mix() -> None:
    w = Workload((
        Flow(Endpoint("a"), Endpoint("b", "remote"), sizes=(128, 65536), mtu=1024, mr_size=65536),
        Flow(Endpoint("a"), Endpoint("b", "gpu"), transport="UC", opcodes=("SEND",), sizes=(512,)),
    ))
    f = features(w)
    assert f.transport == "MIXED" and f.opcode == "MIXED"
    assert f.size_mix and f.min_msg == 128 and f.max_msg == 65536 and f.mtu == 1024
    assert f.remote_numa and f.gpu
    assert set(f.as_dict()) == set(FEATURE_NAMES)


def test_encoding_is_log2_for_counts_flags_as_01_and_categories_one_hot() -> None:
    space = load_space()
    point = {**space.simplest(), "qps": 255, "op": "UD_SEND", "direction": "bidirectional"}
    row = encode(features(space.build(point)))
    assert row["qps_total"] == math.log2(1 + 2 * 255)  # one flow of 255 QPs per direction
    assert row["bidirectional"] == 1.0 and row["loopback"] == 0.0
    assert row["transport=UD"] == 1.0 and "transport=RC" not in row
    assert point_encoder(space.build)(point) == row


def test_the_victim_feature_names_the_victim() -> None:
    w = Workload.load(EXAMPLES / "aggressor-victim.toml")
    assert features(w).victim == "latency"
    assert features(w.solo()).victim == "none"
    assert features(Workload.load(EXAMPLES / "rc-write-64k.toml")).victim == "none"
    assert encode(features(w))["victim=latency"] == 1.0


def test_the_other_features_describe_the_aggressors_alone() -> None:
    w = Workload.load(EXAMPLES / "aggressor-victim.toml")
    aggressor = features(w.with_flows(w.flows[:1]))
    assert {**features(w).as_dict(), "victim": "none"} == aggressor.as_dict()
    assert features(w).opcode == "WRITE" and features(w).min_msg == 65536


def test_recv_gap_is_the_receivers_pace_per_request_of_its_sender() -> None:
    space = load_space()
    send = {**space.simplest(), "op": "RC_SEND", "qps": 4, "recv_batch": 2, "recv_delay_us": 100}
    gap = features(space.build(send)).recv_gap_ns
    assert gap == 100 * 1000 // (4 * 2)
    # a ratio: twice the QPs reposting at half the pace is the same receiver against the same sender
    assert features(space.build({**send, "qps": 8, "recv_delay_us": 200})).recv_gap_ns == gap
    # a WRITE between two SENDs consumes no receive: the receiver keeps up with twice the requests
    assert features(space.build({**send, "mix": ["WRITE"]})).recv_gap_ns == gap // 2
    assert features(space.build({**send, "recv_delay_us": 0})).recv_gap_ns == 0  # not paced
    assert features(space.build({**send, "op": "RC_WRITE"})).recv_gap_ns == 0  # takes no receives
    assert features(space.build({**send, "qps": 20000, "recv_batch": 128, "recv_delay_us": 1})).recv_gap_ns == 1
