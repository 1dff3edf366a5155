"""``collie import perftest|nccl-tests`` and ``collie report`` on the folder it makes, through the real CLI, on the
real logs of tests/fixtures: every row reaches the report in each format; every bad input is one sentence and
exit 2, and nothing is written."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

PERFTEST = ROOT / "tests" / "fixtures" / "perftest"
NCCL = ROOT / "tests" / "fixtures" / "nccl_tests"
SWEEP = PERFTEST / "07-ib_write_bw-a-report_gbits-client-roce-cx-nvidia-docs.txt"
LATENCY = PERFTEST / "01-ib_write_lat-a-sweep-mlx4-IB.txt"
OLD_JSON = PERFTEST / "08-ib_write_lat-out_json-MALFORMED-rxe-issue216.json"


def test_a_perftest_sweep_is_imported_and_reported_row_by_row(tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = run_cli("import", "perftest", str(SWEEP), str(LATENCY), str(OLD_JSON), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "RDMA_Write BW Test (23 rows)" in done.stdout and "RDMA_Write Latency Test (1 row)" in done.stdout
    assert "repaired: 28 unquoted keys quoted" in done.stderr and f"collie report {out}" in done.stderr
    assert (out / "logs" / SWEEP.name).read_bytes() == SWEEP.read_bytes()  # kept byte for byte
    rows = list(csv.DictReader(io.StringIO(run_cli("report", str(out), "--format", "csv").stdout)))
    assert len(rows) == 23 + 23 + 1
    first = rows[0]  # "2  5000  0.11  0.11  6.897...": the sweep's first row, its header's flow shape
    assert (first["size_bytes"], first["gbps"], first["connection"], first["qps"]) == ("2", "0.11", "RC", "1")
    assert first["workload"].startswith("RC WRITE of 2 B, 1 QP, batch 1, SQ depth 128")
    lat = [r for r in rows if r["log"] == LATENCY.name]
    assert (lat[0]["size_bytes"], lat[0]["lat_min_us"], lat[0]["lat_typical_us"]) == ("2", "0.88", "0.98")
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    assert doc["kind"] == "import" and doc["tool"] == "perftest" and len(doc["rows"]) == 47
    assert [log["name"] for log in doc["logs"]] == [SWEEP.name, LATENCY.name, OLD_JSON.name]
    md = run_cli("report", str(out)).stdout
    assert md.count("| 07-ib\\_write\\_bw") == 23 and "## Workloads" in md  # Markdown's specials escaped


def test_nccl_tests_logs_are_imported_collective_by_collective(tmp_path: Path) -> None:
    out = tmp_path / "imp"
    logs = sorted(p for p in NCCL.iterdir() if p.suffix == ".txt")
    done = run_cli("import", "nccl-tests", *map(str, logs), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "all_reduce_perf (10 sizes), all_gather_perf (10 sizes)" in done.stdout
    doc = json.loads(run_cli("report", str(out), "--format", "json").stdout)
    reduce = [r for r in doc["rows"] if r["log"].startswith("01-") and r["collective"] == "all_reduce_perf"]
    # "33554432  4194304  double  sum  -1  1405.25  23.88  42.98  0  1406.35  23.86  42.95  0"
    assert reduce[0] | {"line": 0} == {
        "log": logs[0].name, "line": 0, "collective": "all_reduce_perf", "ranks": 10, "size_bytes": 33554432,
        "count": 4194304, "type": "double", "redop": "sum", "root": -1, "oop_time_us": 1405.25,
        "oop_algbw_gbs": 23.88, "oop_busbw_gbs": 42.98, "oop_wrong": 0, "ip_time_us": 1406.35,
        "ip_algbw_gbs": 23.86, "ip_busbw_gbs": 42.95, "ip_wrong": 0}
    assert "it could be all_reduce_perf or sendrecv_perf" in run_cli("report", str(out)).stderr


def test_bad_input_is_one_sentence_and_nothing_is_written(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_text("this is no perftest output\n")
    cut = tmp_path / "cut.txt"
    cut.write_text(SWEEP.read_text().replace("65536      5000", "65536      5x00"))
    for args, says in (
            (["perftest", str(garbage)], "garbage.log:1: not perftest output"),
            (["perftest", str(tmp_path / "missing.txt")], "missing.txt: no such file"),
            (["perftest", str(tmp_path)], "is a folder, expected a log file"),
            (["perftest", str(cut)], "cut.txt:"),
            (["nccl-tests", str(SWEEP)], "column header"),
            (["perftest", str(SWEEP), str(SWEEP)], "two logs are named"),
    ):
        out = tmp_path / "out"
        done = run_cli("import", *args, "-o", str(out))
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not out.exists()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep me")
    done = run_cli("import", "perftest", str(SWEEP), "-o", str(taken))
    assert done.returncode == 2 and "is not empty" in done.stderr and (taken / "x").read_text() == "keep me"


def test_a_changed_or_damaged_import_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "imp"
    assert run_cli("import", "perftest", str(SWEEP), "-o", str(out)).returncode == 0
    assert run_cli("report", str(out), "--format", "junit").stderr.strip().endswith("not --format junit")
    log = out / "logs" / SWEEP.name
    log.write_text(log.read_text().replace("92.39", "99.99"))
    done = run_cli("report", str(out))
    assert done.returncode == 2 and "changed since it was imported" in done.stderr
    (out / "import.json").write_text("{")
    done = run_cli("report", str(out))
    assert done.returncode == 2 and "import.json: cannot be read as JSON" in done.stderr


@pytest.mark.parametrize("name", sorted(p.name for p in PERFTEST.iterdir() if p.name != "SOURCES.md"))
def test_every_real_perftest_log_imports(tmp_path: Path, name: str) -> None:
    done = run_cli("import", "perftest", str(PERFTEST / name), "-o", str(tmp_path / "imp"))
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("report", str(tmp_path / "imp"), "--format", "json").stdout)["rows"]
    assert rows and all(r["workload_key"] for r in rows), [r["workload"] for r in rows if not r["workload_key"]]


def test_two_imports_of_one_tool_are_compared_row_by_row(tmp_path: Path) -> None:
    """The client and the server side of one ib_write_bw run print the same row: one match, ratio 1; an nccl-tests
    log beside a copy of itself matches every row."""
    client, server = (next(PERFTEST.glob(f"{n}-*")) for n in ("12", "13"))
    for name, logs in (("a", [client, SWEEP]), ("b", [server])):
        assert run_cli("import", "perftest", *map(str, logs), "-o", str(tmp_path / name)).returncode == 0
    doc = json.loads(run_cli("report", "--compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format",
                             "json").stdout)
    assert (doc["only_old"], doc["only_new"]) == (23, 0)  # the sweep's rows have another flow shape (CQ moderation)
    (match,) = doc["matched"]
    assert (match["size_bytes"], match["figure"], match["ratio"]) == (65536, "Gb/s", 1.0)
    log = next(NCCL.glob("02-*"))
    for name in ("c", "d"):
        assert run_cli("import", "nccl-tests", str(log), "-o", str(tmp_path / name)).returncode == 0
    md = run_cli("report", "--compare", str(tmp_path / "c"), str(tmp_path / "d")).stdout
    assert "20 rows measured by both; 0 only in" in md and "| alltoall\\_perf over 2 ranks, double | 33554432 |" in md
    for other, says in ((tmp_path / "c", "holds perftest logs and"), (tmp_path, "is not an import folder")):
        done = run_cli("report", "--compare", str(tmp_path / "a"), str(other))
        assert done.returncode == 2 and says in done.stderr
