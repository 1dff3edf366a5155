"""The verbs target's counter reads on a fake sysfs tree laid out like rxe's (names from COUNTERS.md)."""

from __future__ import annotations

from pathlib import Path

from collie.collectors.host import HostCollector, SourceUse
from collie.collectors.snapshot import Snapshot
from collie.targets.verbs.counters import counter_delta

RXE = ["sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err",
       "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err",
       "send_err", "link_downed", "rdma_sends", "rdma_recvs"]


def read_counters(device: str, port: int, root: Path) -> Snapshot:
    """sysfs only: the tree has no netdev, and the host's own tools must not be asked about it."""
    return HostCollector(device, port, str(root), ethtool=SourceUse.OFF, netlink=SourceUse.OFF).snapshot()


def counter_deltas(a: Snapshot, b: Snapshot, seconds: float, dialect: str) -> dict[str, float]:
    d = counter_delta(a, b, seconds, dialect)
    assert set(d.sources.values()) <= {"hw"}
    return d.counters()


def tree(root: Path, values: dict[str, str]) -> None:
    hw = root / "sys/class/infiniband/rxe0/ports/1/hw_counters"
    hw.mkdir(parents=True, exist_ok=True)
    for name, v in values.items():
        (hw / name).write_text(v + "\n")


def test_rxe_deltas_skip_lifespan_and_keep_missing_missing(tmp_path: Path) -> None:
    tree(tmp_path, {**{n: "100" for n in RXE}, "lifespan": "10"})
    a = read_counters("rxe0", 1, tmp_path)
    tree(tmp_path, {**{n: "100" for n in RXE}, "sent_pkts": "1100", "completer_retry_err": "107",
                    "lifespan": "10"})
    (tmp_path / "sys/class/infiniband/rxe0/ports/1/hw_counters/rdma_recvs").unlink()
    b = read_counters("rxe0", 1, tmp_path)
    d = counter_deltas(a, b, 2.0, "rxe")
    assert d["sent_pkts"] == 1000 and d["completer_retry_err"] == 7 and d["rcvd_pkts"] == 0
    assert "lifespan" not in d
    assert "rdma_recvs" not in d  # missing in the second read: absent, never 0


def test_without_a_catalog_everything_is_monotonic(tmp_path: Path) -> None:
    tree(tmp_path, {"sent_pkts": "5", "odd_counter": "9"})
    a = read_counters("rxe0", 1, tmp_path)
    tree(tmp_path, {"sent_pkts": "8", "odd_counter": "3"})
    d = counter_deltas(a, read_counters("rxe0", 1, tmp_path), 1.0, "nosuchdriver")
    assert d == {"sent_pkts": 3}  # a counter that went backwards was reset: unknown, so absent
