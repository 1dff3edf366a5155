"""A perftest row in collie's terms: the workload its run's header states, and its result in Gb/s and µs
(values typed from the real logs of tests/fixtures/perftest)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from collie.importers.perftest import PerftestRun, parse_perftest
from collie.importers.shape import measured, opcode_of, shape_problem
from collie.model.flow import Endpoint, Flow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "perftest"


def run_of(prefix: str) -> PerftestRun:
    path = next(FIXTURES.glob(f"{prefix}-*"))
    return parse_perftest(path.read_text(), path.name).runs[0]


def test_a_post_list_run_is_a_flow_of_that_batch() -> None:
    (row,) = measured(run_of("09"))  # TX depth 256, Post List 128, CQ Moderation 128, Mtu 4096, RC
    assert row.workload is not None and row.workload.flows == (
        Flow(Endpoint("a"), Endpoint("b"), transport="RC", opcodes=("WRITE",), sizes=(8,), qps=1, batch=128,
             sq_depth=256, rq_depth=256, mtu=4096, mr_size=65536, inline=0, signal_every=128),)
    assert (row.gbps, row.msg_rate_mpps) == (0.48, 7.498617)


def test_mib_and_mb_are_two_to_the_twenty_bytes() -> None:
    (row,) = measured(run_of("12"))  # "65536  5000  11030.78  11030.45  0.176487" (MiB/sec)
    assert row.gbps == pytest.approx(11030.45 * 8 * 2 ** 20 / 1e9) and row.msg_rate_mpps == 0.176487
    assert measured(run_of("04"))[0].gbps == pytest.approx(9.90 * 8 * 2 ** 20 / 1e9)  # "2  20000  10.17  9.90"


def test_an_atomic_run_is_a_fetch_and_add_flow_of_8_bytes() -> None:
    run = run_of("03")
    assert opcode_of(run) == "ATOMIC_FA"
    (row,) = measured(run)
    assert row.workload is not None and row.workload.flows[0].opcodes == ("ATOMIC_FA",)
    assert row.workload.flows[0].sizes == (8,)


def test_a_latency_run_has_its_percentiles_and_one_outstanding_message() -> None:
    rows = measured(run_of("01"))  # "2  20000  0.88  6.84  0.98  1.03  0.20  1.21  5.42"
    first = rows[0]
    assert first.lat_us == (("min", 0.88), ("typical", 0.98), ("avg", 1.03), ("p99", 1.21), ("p99.9", 5.42),
                            ("max", 6.84))
    assert first.gbps is None and first.workload is not None and first.workload.flows[0].sq_depth == 1
    assert len(rows) == 23 and rows[-1].size == 8388608


def test_what_collie_cannot_express_is_said_in_one_sentence() -> None:
    run = run_of("07")
    dc = replace(run, header=replace(run.header, connection="DC"))
    assert shape_problem(dc) == "connection type DC is not one collie runs (RC, UC, UD)"
    assert all(m.workload is None for m in measured(dc))
    odd = replace(run, header=replace(run.header, mtu=1500))
    assert shape_problem(odd) == "MTU 1500 is not a verbs path MTU (256, 512, 1024, 2048, 4096)"
    assert shape_problem(replace(run, verb=None)) == "the log names no verb (no test title)"
    bidirectional = measured(replace(run, bidirectional=True))[0].workload
    assert bidirectional is not None and [(f.client.host, f.server.host) for f in bidirectional.flows] == \
        [("a", "b"), ("b", "a")]
