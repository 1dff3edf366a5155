from __future__ import annotations

from pathlib import Path

from collie.features import FEATURE_NAMES, features
from collie.workload import Endpoint, Flow, Workload

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"


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
    w = Workload((Flow(Endpoint("a"), Endpoint("b"), opcode="READ"), Flow(Endpoint("a"), Endpoint("a"))))
    assert features(w).incast  # a reads from b (data into a) while a writes to itself


def test_mixed_flows_and_size_mix() -> None:
    w = Workload((
        Flow(Endpoint("a"), Endpoint("b", "remote"), sizes=(128, 65536), mtu=1024, mr_size=65536),
        Flow(Endpoint("a"), Endpoint("b", "gpu"), transport="UC", opcode="SEND", sizes=(512,)),
    ))
    f = features(w)
    assert f.transport == "MIXED" and f.opcode == "MIXED"
    assert f.size_mix and f.min_msg == 128 and f.max_msg == 65536 and f.mtu == 1024
    assert f.remote_numa and f.gpu
    assert set(f.as_dict()) == set(FEATURE_NAMES)
