"""sysfs readers: procfs mlx5_0 tree, rxe tree without ports/1/counters, N/A, permissions, grep dumps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collie.collectors import sysfs
from collie.collectors.catalog import load_catalog
from collie.collectors.sysfs import (
    device_netdevs,
    list_ports,
    parse_grep_dump,
    read_sysfs,
    read_sysfs_path,
)
from collie.errors import InputError


def test_procfs_mlx5_tree(mlx5_root: Path) -> None:
    [snap] = read_sysfs(mlx5_root)
    assert snap.device == "mlx5_0/1" and snap.source == "sysfs"
    v = snap.values
    assert v["port_xmit_data"] == 2880761508848  # octets/4, not scaled
    assert v["port_rcv_packets"] == 541889824
    assert v["duplicate_request"] == 41
    assert v["local_ack_timeout_err"] == 131
    assert v["lifespan"] == 10
    assert v["rx_read_requests"] == 175528982
    assert v["VL15_dropped"] == 0
    assert snap.problems == ()
    cat = load_catalog("mlx5")
    assert all(cat.lookup(n) is not None for n in v), [n for n in v if cat.lookup(n) is None]


def test_rxe_has_no_port_counters_dir(rxe_root: Path) -> None:
    [snap] = read_sysfs(rxe_root)
    assert snap.device == "rxe0/1"
    assert "port_xmit_data" not in snap.values  # absent, not 0
    assert snap.values["sent_pkts"] == 0 and "lifespan" in snap.values
    assert snap.problems == ()
    cat = load_catalog("rxe")
    assert all(cat.lookup(n) is not None for n in snap.values)


def test_na_no_pma_and_garbage_values_are_missing(tmp_path: Path) -> None:
    counters = tmp_path / "sys/class/infiniband/irdma0/ports/1/counters"
    counters.mkdir(parents=True)
    (counters / "port_xmit_data").write_text("N/A (no PMA)\n")
    (counters / "port_rcv_data").write_text("garbage\n")
    (counters / "symbol_error").write_text("7\n")
    [snap] = read_sysfs(tmp_path)
    assert snap.values == {"port_xmit_data": None, "port_rcv_data": None, "symbol_error": 7}
    assert any("N/A (no PMA)" in p and "port_xmit_data" in p for p in snap.problems)
    assert any("not a number" in p and "port_rcv_data" in p for p in snap.problems)


def test_unreadable_file_is_missing_with_a_problem(rxe_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = rxe_root / "sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts"
    if os.geteuid() == 0:  # root reads a mode-000 file anyway: make the read fail the way it does for users
        real = sysfs._read_file

        def deny(path: Path) -> str:
            if path == f:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(sysfs, "_read_file", deny)
    f.chmod(0)
    try:
        [snap] = read_sysfs(rxe_root)
    finally:
        f.chmod(0o644)
    assert snap.values["sent_pkts"] is None
    assert any("sent_pkts: permission denied" in p for p in snap.problems)
    assert snap.values["rcvd_pkts"] == 0


def test_name_collisions_are_kept_apart(tmp_path: Path) -> None:
    port = tmp_path / "sys/class/infiniband/dev0/ports/1"
    (port / "counters").mkdir(parents=True)
    (port / "hw_counters").mkdir()
    (tmp_path / "sys/class/infiniband/dev0/hw_counters").mkdir()
    (port / "counters/link_downed").write_text("1\n")
    (port / "hw_counters/link_downed").write_text("2\n")
    (tmp_path / "sys/class/infiniband/dev0/hw_counters/link_downed").write_text("3\n")
    [snap] = read_sysfs(tmp_path)
    assert snap.values == {"link_downed": 1, "hw:link_downed": 2, "dev:link_downed": 3}


def test_device_and_port_selection_and_errors(mlx5_root: Path, tmp_path: Path) -> None:
    assert [r.label for r in list_ports(mlx5_root)] == ["mlx5_0/1"]
    assert read_sysfs(mlx5_root, device="mlx5_0", port=1)[0].device == "mlx5_0/1"
    with pytest.raises(InputError, match="RDMA device 'mlx5_9' not found; devices here: mlx5_0"):
        read_sysfs(mlx5_root, device="mlx5_9")
    with pytest.raises(InputError, match="port 2 not found"):
        read_sysfs(mlx5_root, port=2)
    with pytest.raises(InputError, match="no RDMA devices found"):
        read_sysfs(tmp_path / "empty")
    assert device_netdevs(mlx5_root, "mlx5_0") == []


def test_grep_dump_from_the_byteps_excerpt(fixtures: Path) -> None:
    text = (fixtures / "hw_counters_and_ethtool_prio_byteps_issue179_EXCERPT.txt").read_text()
    block = text.split("```")[3]
    [snap] = parse_grep_dump(block, "excerpt")
    assert snap.device == "mlx5_0/1"
    assert snap.values == {"duplicate_request": 0, "implied_nak_seq_err": 0, "lifespan": 12,
                           "local_ack_timeout_err": 2705, "np_cnp_sent": 1333,
                           "np_ecn_marked_roce_packets": 0}


def test_grep_dump_rejects_garbage_and_whole_excerpt(fixtures: Path) -> None:
    with pytest.raises(InputError, match="line 1 is not a sysfs counter line"):
        read_sysfs_path(fixtures / "hw_counters_and_ethtool_prio_byteps_issue179_EXCERPT.txt")
    with pytest.raises(InputError, match="no counters found"):
        parse_grep_dump("\n\n", "empty")


def test_read_sysfs_path_accepts_root_class_dir_and_bare_dir(mlx5_root: Path) -> None:
    assert read_sysfs_path(mlx5_root)[0].device == "mlx5_0/1"
    assert read_sysfs_path(mlx5_root / "sys/class/infiniband")[0].device == "mlx5_0/1"
    bare = read_sysfs_path(mlx5_root / "sys/class/infiniband/mlx5_0/ports/1/hw_counters")
    assert bare[0].values["out_of_sequence"] == 1
    with pytest.raises(InputError, match="no such file or folder"):
        read_sysfs_path(mlx5_root / "nope")
    with pytest.raises(InputError, match="no counter files"):
        read_sysfs_path(mlx5_root / "sys/class/infiniband/mlx5_0/ports")
