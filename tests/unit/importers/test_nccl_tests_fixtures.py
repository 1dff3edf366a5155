"""The real nccl-tests logs of tests/fixtures/nccl_tests, read back field by field against values typed from them.

Every expected value below was copied by hand from the log file named by the test (see SOURCES.md there); the
line numbers are the file's own.
"""

from __future__ import annotations

from pathlib import Path

from collie.importers.nccl_tests import (
    NcclCollective,
    NcclParams,
    NcclRank,
    NcclResult,
    NcclRow,
    NcclTestsLog,
    parse_nccl_tests,
)
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "nccl_tests"
NEW_COLUMNS = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
               "#wrong")
#: 32 MiB to 16 GiB (the sweep stopped at the reduced maxBytes)
H100_SIZES = [2 ** k for k in range(25, 35)]


def _read(name: str) -> NcclTestsLog:
    return parse_nccl_tests((FIXTURES / name).read_text(encoding="utf-8"), name)


def _row(size: int, count: int, type_: str, redop: str | None, root: int | None, oop: tuple[float, ...],
         ip: tuple[float, ...], line: int, wrong: tuple[int | None, int | None] = (0, 0)) -> NcclRow:
    return NcclRow(size, count, type_, redop, root, NcclResult(*oop, wrong[0]), NcclResult(*ip, wrong[1]), None, line)


def _params(line: int, **fields: int | None) -> NcclParams:
    values: dict[str, int | None] = {"n_threads": 1, "n_gpus": 1, "min_bytes": 33554432, "max_bytes": 68719476736,
                                     "warmup_iters": 5, "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0,
                                     "unalign": None}
    values.update(fields)
    text = {"nThread": values["n_threads"], "nGpus": values["n_gpus"], "minBytes": values["min_bytes"],
            "maxBytes": values["max_bytes"], "step": "2(factor)", "warmup iters": values["warmup_iters"],
            "iters": values["iters"], "agg iters": values["agg_iters"], "validation": values["validation"],
            "graph": values["graph"], "unalign": values["unalign"]}
    return NcclParams(values["n_threads"], values["n_gpus"], values["min_bytes"], values["max_bytes"], 2, "factor",
                      values["warmup_iters"], values["iters"], values["agg_iters"], values["validation"],
                      values["graph"], values["unalign"], {k: str(v) for k, v in text.items() if v is not None}, line)


def _check_h100_section(c: NcclCollective, name: str, line: int, first_pid: int) -> None:
    assert (c.name, c.name_from, c.tests_version, c.nccl_version, c.line) == (name, "banner", "2.17.8", "22902", line)
    assert c.params == _params(line + 2)
    assert c.max_bytes_reduced_to == 26549638485
    assert c.columns == NEW_COLUMNS
    assert len(c.ranks) == 10
    assert c.ranks[0] == NcclRank(0, 0, first_pid, "cnode3-002", 0, "0000:1b:00", "NVIDIA H100 80GB HBM3", line + 5)
    assert [(r.rank, r.host) for r in c.ranks] == [(i, f"cnode3-{i + 2:03d}") for i in range(10)]
    assert (c.out_of_bounds, c.out_of_bounds_ok, c.complete) == (0, True, True)
    assert len(c.rows) == 10


def test_01_five_collectives_of_one_slurm_job() -> None:
    log = _read("01-all5collectives-v2.17.8-10node-H100.txt")
    assert log.warnings == ()
    assert [c.name for c in log.collectives] == ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                                                 "alltoall_perf", "sendrecv_perf"]
    reduce, gather, scatter, alltoall, sendrecv = log.collectives

    _check_h100_section(reduce, "all_reduce_perf", 1, 2614280)
    assert reduce.ranks[2] == NcclRank(2, 0, 19363, "cnode3-004", 0, "0000:1b:00", "NVIDIA H100 80GB HBM3", 8)
    assert reduce.avg_bus_bandwidth == 47.8165
    assert [r.size for r in reduce.rows] == H100_SIZES
    assert reduce.rows[0] == _row(33554432, 4194304, "double", "sum", -1, (1405.25, 23.88, 42.98),
                                  (1406.35, 23.86, 42.95), 22)
    assert reduce.rows[7] == _row(4294967296, 536870912, "double", "sum", -1, (158724, 27.06, 48.71),
                                  (159087, 27.00, 48.60), 29)  # times without decimals
    assert reduce.rows[-1] == _row(17179869184, 2147483648, "double", "sum", -1, (632480, 27.16, 48.89),
                                   (632577, 27.16, 48.89), 31)

    _check_h100_section(gather, "all_gather_perf", 38, 2618557)
    assert gather.avg_bus_bandwidth == 46.7949
    assert [r.size for r in gather.rows][:3] == [33554400, 67108800, 134217600]  # not powers of 2
    assert gather.rows[0] == _row(33554400, 419430, "double", "none", -1, (721.94, 46.48, 41.83),
                                  (687.61, 48.80, 43.92), 59)
    assert gather.rows[-1] == _row(17179869120, 214748364, "double", "none", -1, (321112, 53.50, 48.15),
                                   (317424, 54.12, 48.71), 68)

    _check_h100_section(scatter, "reduce_scatter_perf", 75, 2621044)
    assert scatter.avg_bus_bandwidth == 47.1335
    assert scatter.rows[0] == _row(33554400, 419430, "double", "sum", -1, (710.67, 47.21, 42.49),
                                   (684.49, 49.02, 44.12), 96)
    assert scatter.rows[-1] == _row(17179869120, 214748364, "double", "sum", -1, (316586, 54.27, 48.84),
                                    (317130, 54.17, 48.76), 105)

    _check_h100_section(alltoall, "alltoall_perf", 112, 2623794)
    assert alltoall.avg_bus_bandwidth == 43.6048
    assert alltoall.rows[0] == _row(33554400, 419430, "double", "none", -1, (792.60, 42.33, 38.10),
                                    (762.45, 44.01, 39.61), 133, wrong=(0, None))
    assert alltoall.rows[-1] == _row(17179869120, 214748364, "double", "none", -1, (346210, 49.62, 44.66),
                                     (345521, 49.72, 44.75), 142, wrong=(0, None))

    _check_h100_section(sendrecv, "sendrecv_perf", 149, 2625088)
    assert sendrecv.avg_bus_bandwidth == 24.7624
    assert [r.size for r in sendrecv.rows] == H100_SIZES
    assert sendrecv.rows[0] == _row(33554432, 4194304, "double", "sum", -1, (1400.87, 23.95, 23.95),
                                    (1373.59, 24.43, 24.43), 170, wrong=(0, None))
    assert sendrecv.rows[-1] == _row(17179869184, 2147483648, "double", "sum", -1, (691104, 24.86, 24.86),
                                     (690729, 24.87, 24.87), 179, wrong=(0, None))


def test_02_degraded_pair_with_scientific_times_and_na_in_place() -> None:
    log = _read("02-alltoall+sendrecv-v2.17.6-degraded-pair.txt")
    assert log.warnings == ()
    alltoall, sendrecv = log.collectives
    for c, name, line in ((alltoall, "alltoall_perf", 1), (sendrecv, "sendrecv_perf", 27)):
        assert (c.name, c.name_from, c.tests_version, c.nccl_version, c.line, c.complete) == \
            (name, "banner", "2.17.6", "22807", line, True)
        assert c.params == _params(line + 2, max_bytes=17179869184)
        assert c.max_bytes_reduced_to is None
        assert [r.host for r in c.ranks] == ["cnode2-001", "cnode2-004"]
        assert [r.bus_id for r in c.ranks] == ["0000:52:00", "0000:9d:00"]
        assert [r.size for r in c.rows] == H100_SIZES
        assert all(r.in_place.wrong is None and r.out_of_place and r.out_of_place.wrong == 0 for r in c.rows)
    assert alltoall.ranks[1] == NcclRank(1, 0, 386370, "cnode2-004", 0, "0000:9d:00", "NVIDIA H100 80GB HBM3", 7)
    assert alltoall.avg_bus_bandwidth == 5.76435
    assert alltoall.rows[0] == _row(33554432, 2097152, "double", "none", -1, (1866.52, 17.98, 8.99),
                                    (1945.94, 17.24, 8.62), 12, wrong=(0, None))
    assert alltoall.rows[-1] == _row(17179869184, 1073741824, "double", "none", -1, (9527230, 1.80, 0.90),
                                     (1.0e7, 1.69, 0.84), 21, wrong=(0, None))
    assert sendrecv.avg_bus_bandwidth == 5.05954
    assert sendrecv.rows[0] == _row(33554432, 4194304, "double", "sum", -1, (5108.01, 6.57, 6.57),
                                    (5143.44, 6.52, 6.52), 38, wrong=(0, None))
    assert sendrecv.rows[-1] == _row(17179869184, 2147483648, "double", "sum", -1, (1.8e7, 0.97, 0.97),
                                     (1.7e7, 0.99, 0.99), 47, wrong=(0, None))
    # the anomaly the log shows: busbw falls as the size grows
    assert [r.out_of_place.busbw for r in alltoall.rows if r.out_of_place][::3] == [8.99, 7.54, 4.96, 0.90]


OLD_PARAMS = {"n_gpus": 8, "min_bytes": 1, "max_bytes": 8589934592, "agg_iters": None, "validation": 0,
              "graph": None}
OLD_SIZES = [0, 0, *[2 ** k for k in range(2, 34)]]


def _check_old_a100(c: NcclCollective, pid: int, name: str) -> None:
    assert (c.name, c.name_from, c.tests_version, c.nccl_version, c.line, c.complete) == \
        (name, "inferred", None, None, 1, True)
    assert c.params == _params(1, **OLD_PARAMS)
    assert c.ranks == tuple(NcclRank(i, None, pid, "localhost", i, "0x00", "A100-SXM4-40GB", 4 + i) for i in range(8))
    assert (c.out_of_bounds, c.out_of_bounds_ok) == (0, True)
    assert all(r.in_place.wrong is None and r.out_of_place and r.out_of_place.wrong is None for r in c.rows)


def test_03_old_all_reduce_layout_with_error_column_and_an_info_line_in_the_table() -> None:
    log = _read("03-all_reduce_perf-old-error-col-8xA100-superbench.txt")
    assert log.warnings == ()
    (c,) = log.collectives
    _check_old_a100(c, 112424, "all_reduce_perf")
    assert c.columns == ("size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw",
                         "busbw", "error")
    assert c.avg_bus_bandwidth == 68.4048
    assert [r.size for r in c.rows] == OLD_SIZES
    assert c.rows[0] == _row(0, 0, "float", "sum", None, (35.20, 0.00, 0.00), (34.05, 0.00, 0.00), 17,
                             wrong=(None, None))
    assert c.rows[31] == _row(2147483648, 536870912, "float", "sum", None, (16215, 132.44, 231.76),
                              (16203, 132.53, 231.93), 48, wrong=(None, None))
    assert c.rows[-1] == _row(8589934592, 2147483648, "float", "sum", None, (63896, 134.44, 235.26),
                              (63959, 134.30, 235.03), 50, wrong=(None, None))


def test_04_old_alltoall_layout_with_a_blank_redop() -> None:
    log = _read("04-alltoall_perf-old-error-col-8xA100-superbench.txt")
    assert log.warnings == ()
    (c,) = log.collectives
    _check_old_a100(c, 167261, "alltoall_perf")
    assert c.columns[3] == "redop"
    assert c.avg_bus_bandwidth == 58.6481
    assert [r.size for r in c.rows] == [0] * 5 + [2 ** k for k in range(5, 34)]
    assert {r.redop for r in c.rows} == {None}
    assert c.rows[0] == _row(0, 0, "float", None, None, (1.63, 0.00, 0.00), (1.38, 0.00, 0.00), 16,
                             wrong=(None, None))
    assert c.rows[-1] == _row(8589934592, 268435456, "float", None, None, (33508, 256.36, 224.31),
                              (33234, 258.47, 226.16), 49, wrong=(None, None))


def test_05_old_broadcast_layout_with_root_and_no_redop() -> None:
    log = _read("05-broadcast_perf-old-root-col-8xA100-superbench.txt")
    assert log.warnings == ()
    (c,) = log.collectives
    _check_old_a100(c, 112528, "broadcast_perf")
    assert c.columns[:5] == ("size", "count", "type", "root", "time")
    assert c.avg_bus_bandwidth == 64.8653
    assert [r.size for r in c.rows] == OLD_SIZES
    assert c.rows[0] == _row(0, 0, "float", None, 0, (34.61, 0.00, 0.00), (34.33, 0.00, 0.00), 17,
                             wrong=(None, None))
    assert c.rows[-1] == _row(8589934592, 2147483648, "float", None, 0, (36896, 232.81, 232.81),
                              (36599, 234.70, 234.70), 50, wrong=(None, None))


def test_06_mpirun_tagged_output_with_nccl_info_lines() -> None:
    name = "06-all_reduce_perf-mpirun-tagged-NCCLINFO-efa-2xT4.txt"
    log = _read(name)
    # the log does not name its collective, and with 2 ranks all_reduce and sendrecv print the same figures
    assert log.warnings == (f"{name}:3: the collective of this section is not named in the log (no '# Collective "
                            "test starting' line or command line); it could be all_reduce_perf or sendrecv_perf",)
    (c,) = log.collectives
    assert (c.name, c.name_from, c.tests_version, c.nccl_version, c.line, c.complete) == \
        (None, None, None, "2.12.7+cuda11.4", 3, True)
    assert c.params == _params(3, min_bytes=1, max_bytes=1073741824, iters=100)
    assert c.ranks == (NcclRank(0, 0, 21, "test-nccl-efa-worker-0", 0, "0x35", "Tesla T4", 6),
                       NcclRank(1, 0, 21, "test-nccl-efa-worker-1", 0, "0xf5", "Tesla T4", 7))
    assert c.columns == NEW_COLUMNS
    assert (c.out_of_bounds, c.out_of_bounds_ok, c.avg_bus_bandwidth) == (0, True, 1.15327)
    assert [r.size for r in c.rows] == [0, 0, *[2 ** k for k in range(2, 31)]]
    assert c.rows[0] == _row(0, 0, "float", "sum", -1, (6.36, 0.00, 0.00), (6.40, 0.00, 0.00), 58)
    assert c.rows[16] == _row(65536, 16384, "float", "sum", -1, (115.8, 0.57, 0.57), (115.7, 0.57, 0.57), 74)
    assert c.rows[-1] == _row(1073741824, 268435456, "float", "sum", -1, (344981, 3.11, 3.11),
                              (344454, 3.12, 3.12), 88)


def test_07_gh200_all_reduce_with_unalign_parameter() -> None:
    log = _read("07-all_reduce_perf-v2.18.2-2xGH200-cscs.txt")
    assert log.warnings == ()
    (c,) = log.collectives
    assert (c.name, c.name_from, c.tests_version, c.nccl_version, c.line, c.complete) == \
        ("all_reduce_perf", "banner", "2.18.2", "23007", 1, True)
    assert c.params == _params(3, min_bytes=1048576, max_bytes=134217728, warmup_iters=1, unalign=0)
    assert c.ranks == (NcclRank(0, 0, 15784, "nid007106", 0, "0009:01:00", "NVIDIA GH200 120GB", 6),
                       NcclRank(1, 0, 24926, "nid007109", 0, "0009:01:00", "NVIDIA GH200 120GB", 7))
    assert (c.out_of_bounds, c.out_of_bounds_ok, c.avg_bus_bandwidth) == (0, True, 14.9966)
    assert [r.size for r in c.rows] == [2 ** k for k in range(20, 28)]
    assert c.rows[0] == _row(1048576, 262144, "float", "sum", -1, (339.61, 3.09, 3.09), (335.85, 3.12, 3.12), 12)
    assert c.rows[-1] == _row(134217728, 33554432, "float", "sum", -1, (5871.07, 22.86, 22.86),
                              (5867.43, 22.88, 22.88), 19)


def test_every_nccl_tests_fixture_is_covered_and_has_a_source() -> None:
    files = sorted(p.name for p in FIXTURES.iterdir() if p.name != "SOURCES.md")
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert [f for f in files if f"`{f}`" not in sources] == []
    tested = Path(__file__).read_text(encoding="utf-8")
    assert [f for f in files if f'"{f}"' not in tested] == []
    assert len(files) >= 3
