"""The host collector: sysfs, ethtool and netlink merged with a source per counter, on real dumps; and the path
from two snapshots of a port through the verbs target to a pause verdict."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from collie.calibrate import catalog_of
from collie.collectors.ethtool import ethtool_snapshot, parse_ethtool
from collie.collectors.host import HostCollector, SourceUse, dialect_of
from collie.collectors.rdma_stat import parse_rdma_stat
from collie.collectors.snapshot import Snapshot
from collie.collectors.sysfs import PortRef, port_netdev
from collie.errors import InputError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.oracle import Ceilings, Oracle, Verdict
from collie.targets.verbs import VerbsTarget
from collie.targets.verbs.job import Share, Timing, WorkerJob
from collie.targets.verbs.spec import VerbsSpec, parse_spec
from collie.targets.verbs.worker import run_job
from collie.targets.verbs.workers import Gathered
from tests.conftest import COUNTER_FIXTURES, ttar_tree
from tests.unit.targets.verbs.fakeverbs import fake
from tests.unit.targets.verbs.test_verbs_device import fake_pyverbs

MLX5_DUMP = (COUNTER_FIXTURES / "ethtool_S_mlx5_core_connectx4lx.txt").read_text()
BNXT_DUMP = (COUNTER_FIXTURES / "ethtool_S_bnxt_en.txt").read_text()
#: PFC on for priority 3, as mlx5_core prints it (the fixture's port had PFC off, so it has no such lines)
MLX5_PRIO3 = ("rx_prio3_pause: {rx}\nrx_prio3_pause_duration: {rx_us}\nrx_prio3_pause_transition: {rx}\n"
              "tx_prio3_pause: {tx}\ntx_prio3_pause_duration: {tx_us}\n")
CEIL = Ceilings({"oneway": 100e9, "bidirectional": 100e9, "loopback": 100e9},
                {"oneway": 50e6, "bidirectional": 50e6, "loopback": 50e6}, 0.0)
W = Workload((Flow(Endpoint("a"), Endpoint("b"), sizes=(4096,)),))


@dataclass
class Dumps:
    """An ``ethtool -S`` that prints each of ``texts`` in turn (and remembers which netdev it was asked for)."""

    texts: list[str]
    asked: list[str] = field(default_factory=list)

    def __call__(self, netdev: str) -> Snapshot:
        self.asked.append(netdev)
        return ethtool_snapshot(parse_ethtool(self.texts.pop(0), "fixture"), netdev)


def mlx5_texts(tx_us_moved: int) -> list[str]:
    before = MLX5_DUMP + MLX5_PRIO3.format(rx=10, rx_us=400, tx=900, tx_us=1_000_000)
    after = MLX5_DUMP + MLX5_PRIO3.format(rx=10, rx_us=400, tx=900 + tx_us_moved // 300,
                                          tx_us=1_000_000 + tx_us_moved)
    return [before, after]


def bnxt_texts(tx_us_moved: int) -> list[str]:
    after = BNXT_DUMP.replace("pfc_pri3_tx_duration_us: 0", f"pfc_pri3_tx_duration_us: {tx_us_moved}")
    assert after != BNXT_DUMP
    return [BNXT_DUMP, after]


def no_netlink(link: str) -> list[Snapshot]:
    raise InputError("the 'rdma' tool (iproute2) is not installed")


@pytest.fixture
def mlx5_root(tmp_path: Path) -> Path:
    root: Path = ttar_tree.extract_ttar(COUNTER_FIXTURES / "sysfs_infiniband_mlx5_0_procfs_fixture.ttar", tmp_path)
    ndevs = root / "sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs"
    ndevs.mkdir(parents=True)
    (ndevs / "0").write_text("enp1s0f0\n")
    (ndevs / "1").write_text("enp1s0f0\n")
    return root


@pytest.fixture
def bnxt_root(tmp_path: Path) -> Path:
    port = tmp_path / "sys/class/infiniband/bnxt_re0/ports/1"
    (port / "hw_counters").mkdir(parents=True)
    for name, value in {"tx_pkts": 10, "rx_pkts": 10, "tx_bytes": 10, "rx_bytes": 10, "out_of_sequence": 0,
                        "duplicate_request": 0, "local_ack_timeout_err": 0}.items():
        (port / "hw_counters" / name).write_text(f"{value}\n")
    (port / "gid_attrs/ndevs").mkdir(parents=True)
    (port / "gid_attrs/ndevs/0").write_text("ens1f0np0\n")
    return tmp_path


def test_one_snapshot_merges_every_source_with_its_name(mlx5_root: Path) -> None:
    stat = '[{"ifindex":0,"ifname":"mlx5_0","port":1,"duplicate_request":99,"np_cnp_sent":1333}]'
    dumps = Dumps([MLX5_DUMP])
    c = HostCollector("mlx5_0", 1, root=str(mlx5_root), ethtool_reader=dumps,
                      netlink_reader=lambda link: parse_rdma_stat(stat, link))
    snap = c.snapshot()
    assert dumps.asked == ["enp1s0f0"]  # the netdev behind the port, from its GID table
    assert snap.values["duplicate_request"] == 41 and snap.sources["duplicate_request"] == "hw"  # sysfs first
    assert snap.sources["port_xmit_data"] == "port"
    assert snap.values["np_cnp_sent"] == 1333 and snap.sources["np_cnp_sent"] == "rdma-stat"  # netlink only
    assert snap.values["rdma-stat:duplicate_request"] == 99  # the same counter read again over netlink
    assert snap.sources["rdma-stat:duplicate_request"] == "rdma-stat"
    assert snap.values["tx_pci_signal_integrity"] == 34 and snap.sources["tx_pci_signal_integrity"] == "ethtool"
    assert set(snap.sources) == set(snap.values) and snap.unreadable == {}
    assert c.dialect(snap) == "mlx5" and c.catalog(snap) is not None


def test_a_source_the_host_lacks_is_named_and_its_counters_are_missing(mlx5_root: Path) -> None:
    c = HostCollector("mlx5_0", 1, root=str(mlx5_root), netdev="eth7",
                      ethtool_reader=lambda nd: (_ for _ in ()).throw(InputError(f"ethtool -S {nd} failed: no "
                                                                                  "such device")),
                      netlink_reader=no_netlink)
    snap = c.snapshot()
    assert snap.unreadable == {"ethtool": "ethtool -S eth7 failed: no such device",
                               "rdma-stat": "the 'rdma' tool (iproute2) is not installed"}
    assert "tx_pci_signal_integrity" not in snap.values and snap.values["duplicate_request"] == 41
    required = replace(c, ethtool=SourceUse.REQUIRED)
    with pytest.raises(InputError, match="no such device"):
        required.snapshot()
    off = replace(c, ethtool=SourceUse.OFF, netlink=SourceUse.OFF).snapshot()
    assert off.unreadable == {} and set(off.sources.values()) == {"port", "hw"}


def test_netdev_of_a_port_from_gid_table_parent_or_device(tmp_path: Path) -> None:
    root = ttar_tree.make_rxe_tree(tmp_path)
    rxe = PortRef("rxe0", 1)
    assert port_netdev(root, rxe) is None
    (root / "sys/class/infiniband/rxe0/parent").write_text("dum0\n")
    assert port_netdev(root, rxe) == "dum0"
    c = HostCollector("rxe0", 1, root=str(root), netlink=SourceUse.OFF,
                      ethtool_reader=lambda nd: (_ for _ in ()).throw(InputError(
                          f"ethtool -S {nd} failed: Operation not supported")))
    assert c.snapshot().unreadable == {"ethtool": "ethtool -S dum0 failed: Operation not supported"}
    assert dialect_of(str(root), "rxe0") == "rxe"
    (root / "sys/class/infiniband/rxe0/parent").unlink()
    assert "no netdev backs rxe0/1" in c.snapshot().unreadable["ethtool"]


def test_delta_honours_kinds_and_keeps_sources(mlx5_root: Path) -> None:
    c = HostCollector("mlx5_0", 1, root=str(mlx5_root), ethtool_reader=Dumps(mlx5_texts(300_000)),
                      netlink=SourceUse.OFF)
    a, b = c.snapshot(), c.snapshot()
    d = c.delta(a, b, 1.0)
    assert d.values["tx_prio3_pause_duration"] == 300_000 and d.sources["tx_prio3_pause_duration"] == "ethtool"
    assert d.values["duplicate_request"] == 0 and d.sources["duplicate_request"] == "hw"
    assert "lifespan" not in d.values  # a setting, not a counter


def _judge_through_the_verbs_target(device: str, collector: HostCollector) -> Verdict:
    """Run the real engine on the fake device with ``collector`` reading the port at the interval's edges, let
    the verbs target turn the report into a RunResult, and judge it."""
    flow = W.flows[0]
    job = WorkerJob(worker=0, spec=VerbsSpec(device), shares=(Share(0, flow, flow.qps, flow.mrs, 0),),
                    timing=Timing(0.01, 0.1, 2.0), verify=False, seed=1, collector=collector)
    report = run_job(fake(), job)
    assert report.counters_before is not None and report.counters_after is not None
    with VerbsTarget(parse_spec(device), pyverbs=fake_pyverbs([device])) as target:
        run = target._result(W, 0.1, Gathered(reports=(report,), setup_s=0.0))
        oracle = Oracle(catalog_of(target.describe()), CEIL)
    run = replace(run, duration_s=report.counter_seconds)
    return oracle.judge(run, W)


@pytest.mark.parametrize("driver", ["mlx5", "bnxt"])
def test_pause_counters_moved_in_ethtool_give_a_pause_verdict(driver: str, mlx5_root: Path,
                                                              bnxt_root: Path) -> None:
    root, device, texts, counter = (
        (mlx5_root, "mlx5_0", mlx5_texts(300_000), "tx_prio3_pause_duration") if driver == "mlx5" else
        (bnxt_root, "bnxt_re0", bnxt_texts(300_000), "pfc_pri3_tx_duration_us"))
    collector = HostCollector(device, 1, root=str(root), ethtool_reader=Dumps(texts), netlink_reader=no_netlink)
    v = _judge_through_the_verbs_target(device, collector)
    pause = [s for s in v.symptoms if s.kind == "pause"]
    assert pause and v.shows("pause@receiver"), v.signature
    assert pause[0].counter == counter and pause[0].source == "ethtool" and not pause[0].estimate
    b = v.evidence["hosts"]["b"]
    assert b["pause_readable"] and b["pause_basis"]["tx"] == "duration"
    # 300 ms of pause in an interval of about 0.1 s (longer on a loaded machine): far above the 0.1 % threshold
    assert b["pause_ratio_tx"]["3"] > 0.05
    assert b["counters"][counter] == {"delta": 300_000, "source": "ethtool"}
    assert all(c["source"] in ("port", "hw", "ethtool") for c in b["counters"].values()), b["counters"]
    assert b["unreadable"] == {"rdma-stat": "the 'rdma' tool (iproute2) is not installed"}

    blind = replace(collector, ethtool=SourceUse.OFF, ethtool_reader=Dumps(texts[:]))
    v = _judge_through_the_verbs_target(device, blind)
    assert not any(s.kind == "pause" for s in v.symptoms)
    assert not v.evidence["hosts"]["b"]["pause_readable"]
    assert any(n.startswith("b: pause counters were not readable") for n in v.evidence["notes"])


def test_the_traffic_loop_never_waits_for_a_counter_read(mlx5_root: Path) -> None:
    """ethtool and rdma are processes that take a while (far longer under emulation): the engine reads the
    counters in a thread of its own, so its traffic loop does not stall at the interval's edges."""
    import threading

    readers: list[str] = []

    def slow(netdev: str) -> Snapshot:
        readers.append(threading.current_thread().name)
        return ethtool_snapshot(parse_ethtool(MLX5_DUMP, "fixture"), netdev)

    flow = W.flows[0]
    collector = HostCollector("mlx5_0", 1, root=str(mlx5_root), ethtool_reader=slow, netlink=SourceUse.OFF)
    job = WorkerJob(worker=0, spec=VerbsSpec("mlx5_0"), shares=(Share(0, flow, flow.qps, flow.mrs, 0),),
                    timing=Timing(0.01, 0.05, 2.0), verify=False, seed=1, collector=collector)
    report = run_job(fake(), job)
    assert report.counters_before is not None and report.counters_after is not None
    assert len(readers) == 2 and threading.main_thread().name not in readers, readers
