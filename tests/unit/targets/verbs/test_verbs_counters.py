"""The verbs target's counter reads on a fake sysfs tree laid out like rxe's (names from COUNTERS.md)."""

from __future__ import annotations

from pathlib import Path

from collie.targets.verbs.counters import counter_deltas, read_counters

RXE = ["sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err",
       "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err",
       "send_err", "link_downed", "rdma_sends", "rdma_recvs"]


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
