"""``collie counters`` end to end (subprocess): show, watch, diff, parse, on fixture trees and real dumps."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import COUNTER_FIXTURES, ttar_tree

FIXTURES = COUNTER_FIXTURES
SHARED_LOG = "not ethtool output\n# nccl-tests version 2.18.2\n"
Cli = Callable[..., Any]


@pytest.fixture
def mlx5_root(tmp_path: Path) -> Path:
    archive = FIXTURES / "sysfs_infiniband_mlx5_0_procfs_fixture.ttar"
    return ttar_tree.extract_ttar(archive, tmp_path)  # type: ignore[no-any-return]


def _one_sentence_exit_2(proc: Any, *fragments: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert err.startswith("collie: error: ") and "\n" not in err and "Traceback" not in err, err
    for f in fragments:
        assert f in err, err


def test_show_without_rdma_devices_is_one_sentence_exit_2(cli: Cli, tmp_path: Path) -> None:
    proc = cli("counters", "show", "--sysfs-root", str(tmp_path))
    _one_sentence_exit_2(proc, "no RDMA devices found")


def test_show_on_the_procfs_tree_json_and_csv(cli: Cli, mlx5_root: Path) -> None:
    proc = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["duplicate_request"]["value"] == 41
    assert rows["duplicate_request"]["role"] == "retransmission"
    assert rows["duplicate_request"]["kind"] == "wrap32"
    assert rows["port_xmit_data"]["unit"] == "octets/4"
    assert rows["lifespan"]["kind"] == "setting"
    assert rows["duplicate_request"]["source"] == "hw" and rows["port_xmit_data"]["source"] == "port"
    assert all(r["source"] in ("port", "hw") for r in rows.values())  # a copied tree: sysfs alone
    proc = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--role", "loss", "--format", "csv")
    names = {r["name"] for r in csv.DictReader(io.StringIO(proc.stdout))}
    assert names == {"out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err"}
    table = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--nonzero")
    assert table.returncode == 0 and "local_ack_timeout_err" in table.stdout
    assert "VL15_dropped" not in table.stdout


def test_show_rxe_tree_has_no_port_counters(cli: Cli, tmp_path: Path) -> None:
    root = ttar_tree.make_rxe_tree(tmp_path, {"sent_pkts": 7})
    proc = cli("counters", "show", "--sysfs-root", str(root), "--device", "rxe0", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["device"] for r in rows} == {"rxe0/1"}
    assert {r["name"] for r in rows} == set(ttar_tree.RXE_HW_COUNTERS)
    assert next(r for r in rows if r["name"] == "sent_pkts")["value"] == 7
    unknown = cli("counters", "show", "--sysfs-root", str(root), "--device", "mlx5_0")
    _one_sentence_exit_2(unknown, "RDMA device 'mlx5_0' not found; devices here: rxe0")


def test_show_warns_about_na_values(cli: Cli, tmp_path: Path) -> None:
    d = tmp_path / "sys/class/infiniband/irdma0/ports/1/counters"
    d.mkdir(parents=True)
    (d / "port_xmit_data").write_text("N/A (no PMA)\n")
    proc = cli("counters", "show", "--sysfs-root", str(tmp_path), "--driver", "irdma", "--format", "json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)[0]["value"] is None
    assert "warning" in proc.stderr and "N/A (no PMA)" in proc.stderr


def test_save_then_diff_raw_and_normalized(cli: Cli, mlx5_root: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("counters", "show", "--sysfs-root", str(mlx5_root), "--save", str(a)).returncode == 0
    hw = mlx5_root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters"
    (hw / "duplicate_request").write_text("61\n")
    (hw / "out_of_sequence").write_text("0\n")  # went down: reset, reported, not a huge number
    assert cli("counters", "show", "--sysfs-root", str(mlx5_root), "--save", str(b)).returncode == 0
    proc = cli("counters", "diff", str(a), str(b), "--seconds", "4", "--nonzero", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["duplicate_request"]["delta"] == 20 and rows["duplicate_request"]["per_s"] == 5
    assert "out_of_sequence" not in rows  # unknown (reset) is not a change
    assert "out_of_sequence went from 1 to 0: it was reset" in proc.stderr
    norm = cli("counters", "diff", str(a), str(b), "--seconds", "4", "--view", "normalized",
               "--format", "json")
    q = {r["quantity"]: r["value"] for r in json.loads(norm.stdout)}
    assert q["retransmission_per_s"] == 5.0
    assert q["bytes_tx_per_s"] == 0.0 and q["max_pause_ratio_tx"] is None


def test_diff_bad_input(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    _one_sentence_exit_2(cli("counters", "diff", str(bad), str(bad)), "not JSON")
    _one_sentence_exit_2(cli("counters", "diff", str(tmp_path / "none.json"), str(bad)), "no such file")


def test_watch_is_bounded(cli: Cli, mlx5_root: Path) -> None:
    proc = cli("counters", "watch", "--sysfs-root", str(mlx5_root), "--count", "2", "--interval", "0.05",
               "--all", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert {r["interval"] for r in rows} == {1, 2}
    dup = [r for r in rows if r["name"] == "duplicate_request"]
    assert [r["delta"] for r in dup] == [0, 0]
    table = cli("counters", "watch", "--sysfs-root", str(mlx5_root), "--count", "1", "--interval", "0.05",
                "--view", "normalized")
    assert table.returncode == 0 and "retransmission_per_s" in table.stdout


@pytest.mark.parametrize(("name", "expect"), [
    ("ethtool_S_mlx5_core_connectx4lx.txt", ("tx_pci_signal_integrity", 34, "mlx5")),
    ("ethtool_S_bnxt_en.txt", ("rx_buffer_passed_threshold", 417, "bnxt_re")),
])
def test_parse_real_ethtool_dumps(cli: Cli, name: str, expect: tuple[str, int, str]) -> None:
    counter, value, dialect = expect
    proc = cli("counters", "parse", str(FIXTURES / name), "--kind", "ethtool", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows[counter]["value"] == value and rows[counter]["role"] is not None
    table = cli("counters", "parse", str(FIXTURES / name), "--kind", "ethtool", "--nonzero")
    assert f"{name}: {dialect}" in table.stdout.splitlines()[0]
    queues = cli("counters", "parse", str(FIXTURES / name), "--kind", "ethtool", "--queues",
                 "--format", "json")
    assert any(r["queue"] == 3 for r in json.loads(queues.stdout))


def test_parse_sysfs_tree_grep_dump_and_rdma_stat(cli: Cli, mlx5_root: Path, tmp_path: Path) -> None:
    tree = cli("counters", "parse", str(mlx5_root), "--kind", "sysfs", "--format", "json")
    assert {r["name"]: r["value"] for r in json.loads(tree.stdout)}["rx_read_requests"] == 175528982
    excerpt = (FIXTURES / "hw_counters_and_ethtool_prio_byteps_issue179_EXCERPT.txt").read_text()
    dump = tmp_path / "grep.txt"
    dump.write_text(excerpt.split("```")[3])
    proc = cli("counters", "parse", str(dump), "--kind", "sysfs", "--format", "json")
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["np_cnp_sent"]["value"] == 1333 and rows["lifespan"]["kind"] == "setting"
    stat = tmp_path / "stat.json"
    stat.write_text(json.dumps([{"ifindex": 0, "ifname": "rxe0", "port": 1, "sent_pkts": 5,
                                 "rcvd_seq_err": 2}]))
    proc = cli("counters", "parse", str(stat), "--kind", "rdma-stat", "--format", "csv")
    assert proc.returncode == 0 and "rxe0/1,rcvd_seq_err,2,rdma-stat,monotonic,events,loss" in proc.stdout
    text = tmp_path / "stat.txt"
    text.write_text("link rxe0/1 sent_pkts 5 rcvd_pkts 4\n")
    assert "rcvd_pkts" in cli("counters", "parse", str(text), "--kind", "rdma-stat").stdout


@pytest.mark.parametrize("kind", ["ethtool", "sysfs", "rdma-stat"])
def test_garbage_input_is_one_sentence_exit_2(cli: Cli, tmp_path: Path, kind: str) -> None:
    junk = tmp_path / "junk.log"
    junk.write_text(SHARED_LOG)
    _one_sentence_exit_2(cli("counters", "parse", str(junk), "--kind", kind), "line 1 is not")
    binary = tmp_path / "junk.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    proc = cli("counters", "parse", str(binary), "--kind", kind)
    _one_sentence_exit_2(proc)


def test_parse_option_errors(cli: Cli) -> None:
    f = str(FIXTURES / "ethtool_S_bnxt_en.txt")
    _one_sentence_exit_2(cli("counters", "parse", f, "--kind", "ethtool", "--driver", "foo"),
                         "unknown counter dialect 'foo'")
    missing = cli("counters", "parse", f)
    assert missing.returncode == 2 and "--kind" in missing.stderr


def test_catalog_listing(cli: Cli) -> None:
    proc = cli("counters", "catalog", "--format", "json")
    dialects = {r["dialect"]: r for r in json.loads(proc.stdout)}
    assert {"mlx5", "bnxt_re", "irdma", "rxe"} <= set(dialects)
    proc = cli("counters", "catalog", "bnxt_re", "--role", "loss", "--format", "json")
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["local_ack_timeout_err"]["aliases"] == ["to_retransmits"]
    assert all(r["role"] == "loss" for r in rows.values())
    _one_sentence_exit_2(cli("counters", "catalog", "qlogic"), "unknown counter dialect 'qlogic'")


def _fake_tool(bindir: Path, name: str, script: str) -> None:
    bindir.mkdir(exist_ok=True)
    tool = bindir / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)


def test_show_with_netdev_and_netlink_through_the_real_tool_interfaces(
        cli: Cli, mlx5_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    dump = FIXTURES / "ethtool_S_mlx5_core_connectx4lx.txt"
    _fake_tool(bindir, "ethtool", f'[ "$1" = "-S" ] && [ "$2" = "eth9" ] && exec cat "{dump}"\n'
                                  'echo "netlink error: no device matches name (-19)" >&2; exit 1\n')
    stat = '[{"ifindex":0,"ifname":"mlx5_0","port":1,"duplicate_request":41,"np_cnp_sent":1333}]'
    _fake_tool(bindir, "rdma", f'[ "$*" = "-j statistic show link mlx5_0/1" ] && echo \'{stat}\' && exit 0\n'
                               'echo "unexpected arguments: $*" >&2; exit 1\n')
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    proc = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--netdev", "eth9", "--netlink",
               "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert {r["device"] for r in rows.values()} == {"mlx5_0/1"}
    assert rows["duplicate_request"]["value"] == 41  # sysfs
    assert rows["np_cnp_sent"]["value"] == 1333  # netlink only
    assert rows["tx_pci_signal_integrity"]["value"] == 34  # ethtool
    assert rows["outbound_pci_stalled_rd"]["kind"] == "gauge"
    bad = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--netdev", "eth0")
    _one_sentence_exit_2(bad, "ethtool -S eth0 failed: netlink error: no device matches name (-19)")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    missing = cli("counters", "show", "--sysfs-root", str(mlx5_root), "--netdev", "eth9")
    _one_sentence_exit_2(missing, "ethtool is not installed")


def test_watch_summary_sees_a_moving_counter(cli: Cli, mlx5_root: Path) -> None:
    import threading

    f = mlx5_root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters/rx_write_requests"
    stop = threading.Event()

    def tick() -> None:
        v = 742114
        while not stop.is_set():
            v += 100
            tmp = mlx5_root / "counter.tmp"  # outside the counter folder, renamed in atomically
            tmp.write_text(f"{v}\n")
            os.replace(tmp, f)
            stop.wait(0.005)

    writer = threading.Thread(target=tick)
    writer.start()
    try:
        proc = cli("counters", "watch", "--sysfs-root", str(mlx5_root), "--count", "3", "--interval", "0.1",
                   "--summary", "--format", "jsonl")
    finally:
        stop.set()
        writer.join()
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    summary = [r for r in rows if "mean_per_s" in r]
    assert [r["name"] for r in summary] == ["rx_write_requests"]
    assert summary[0]["samples"] == 3 and summary[0]["mean_per_s"] > 0 and summary[0]["min"] <= summary[0]["max"]
    _one_sentence_exit_2(cli("counters", "watch", "--sysfs-root", str(mlx5_root), "--summary"), "--summary needs")
