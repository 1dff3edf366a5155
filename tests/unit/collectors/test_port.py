"""The port state from a copied sysfs tree: prometheus/procfs's mlx5_0 dump (state, phys_state, link_layer, rate
as a real port shows them), with the GID table and the netdev's MTU written by each test in the kernel's formats
(``gids/N``: eight groups of four hex digits; ``gid_attrs/types/N``: ``RoCE v2`` or ``IB/RoCE v1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.codec import Reader
from collie.collectors.port import PortStatus, read_port_status, roce_mtu

V4_GID = "0000:0000:0000:0000:0000:ffff:c000:020a"
LINK_LOCAL = "fe80:0000:0000:0000:0202:c9ff:fe00:0001"
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"


def port_dir(root: Path) -> Path:
    return root / "sys/class/infiniband/mlx5_0/ports/1"


def roce(root: Path, *, state: str = "4: ACTIVE", phys: str = "5: LinkUp", mtu: int = 9000,
         gids: dict[int, tuple[str, str | None]] | None = None) -> Path:
    """Make the fixture's port a RoCE port on ens1f0np0 with ``gids`` (index -> (gid, type or None: unreadable))."""
    p = port_dir(root)
    (p / "state").write_text(f"{state}\n")
    (p / "phys_state").write_text(f"{phys}\n")
    (p / "link_layer").write_text("Ethernet\n")
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (p / sub).mkdir(parents=True, exist_ok=True)
    table = gids if gids is not None else {0: (LINK_LOCAL, "IB/RoCE v1"), 1: (LINK_LOCAL, "RoCE v2"),
                                           2: (V4_GID, "IB/RoCE v1"), 3: (V4_GID, "RoCE v2"), 4: (ZERO, None)}
    for i, (gid, kind) in table.items():
        (p / "gids" / str(i)).write_text(f"{gid}\n")
        if kind is not None:
            (p / "gid_attrs/types" / str(i)).write_text(f"{kind}\n")
            (p / "gid_attrs/ndevs" / str(i)).write_text("ens1f0np0\n")
    net = root / "sys/class/net/ens1f0np0"
    net.mkdir(parents=True, exist_ok=True)
    (net / "mtu").write_text(f"{mtu}\n")
    return root


def test_the_fixture_s_infiniband_port_reads_as_it_is(mlx5_root: Path) -> None:
    (port_dir(mlx5_root) / "gids").mkdir()
    (port_dir(mlx5_root) / "gids" / "0").write_text(f"{LINK_LOCAL}\n")
    st = read_port_status(mlx5_root, "mlx5_0", 1, 0)
    assert (st.state, st.phys_state, st.link_layer) == ("ACTIVE", "ACTIVE", "InfiniBand")
    assert st.gid == LINK_LOCAL and st.gid_type == "" and not st.rocev2
    assert st.active_mtu is None and st.netdev is None  # an IB port's MTU is not in sysfs; it has no netdev
    assert st.usable and st.problems == () and st.notes == ()


def test_an_active_rocev2_port_is_usable_with_its_mtu(mlx5_root: Path) -> None:
    st = read_port_status(roce(mlx5_root), "mlx5_0", 1, 3)
    assert st.usable and st.rocev2 and st.notes == ()
    assert (st.state, st.phys_state, st.link_layer) == ("ACTIVE", "LinkUp", "Ethernet")
    assert (st.gid, st.gid_type, st.netdev) == (V4_GID, "RoCE v2", "ens1f0np0")
    assert (st.netdev_mtu, st.active_mtu) == (9000, 4096)
    assert PortStatus.from_dict(st.to_dict(), Reader("p.json")) == st


def test_a_down_port_is_one_sentence_saying_how_to_bring_it_up(mlx5_root: Path) -> None:
    st = read_port_status(roce(mlx5_root, state="1: DOWN", phys="3: Disabled", mtu=1500), "mlx5_0", 1, 3)
    assert not st.usable and st.state == "DOWN" and st.active_mtu == 1024
    assert st.problems == ("mlx5_0 port 1 is DOWN (physical state Disabled), not ACTIVE; bring its link up "
                           "(ip link set ens1f0np0 up, check the cable and the switch port)",)


def test_an_empty_or_missing_gid_index_is_not_usable(mlx5_root: Path) -> None:
    roce(mlx5_root)
    empty = read_port_status(mlx5_root, "mlx5_0", 1, 4)
    assert empty.problems == ("GID index 4 of mlx5_0 port 1 holds no GID; give ens1f0np0 an IP address or choose "
                              "another index (verbs:mlx5_0:1:GID)",)
    assert empty.gid_type == ""  # the kernel refuses to show an unused entry's type
    beyond = read_port_status(mlx5_root, "mlx5_0", 1, 9)
    assert beyond.gid == "" and beyond.problems == ("GID index 9 of mlx5_0 port 1 is beyond its GID table; choose "
                                                    "an index that holds a GID (verbs:mlx5_0:1:GID)",)


def test_a_roce_v1_gid_is_a_note_not_a_problem(mlx5_root: Path) -> None:
    st = read_port_status(roce(mlx5_root), "mlx5_0", 1, 2)
    assert st.usable and not st.rocev2 and st.gid_type == "IB/RoCE v1"
    assert st.notes == ("GID index 2 of mlx5_0 port 1 is IB/RoCE v1, not RoCE v2; RoCE v2 (routable, UDP) is what "
                        "RoCE NICs and switches are set up for: choose its RoCE v2 index",)


def test_an_absent_device_or_port_is_one_sentence(mlx5_root: Path, tmp_path: Path) -> None:
    assert read_port_status(mlx5_root, "mlx5_1", 1, 0).problems == (
        "RDMA device 'mlx5_1' not found on the host; devices there: mlx5_0",)
    assert read_port_status(mlx5_root, "mlx5_0", 2, 0).problems == (
        "RDMA device mlx5_0 has no port 2; its ports: 1",)
    assert read_port_status(tmp_path / "empty", "rxe0", 1, 1).problems == (
        "RDMA device 'rxe0' not found on the host; it has no RDMA device at all",)


def test_the_inventory_s_netdev_is_the_one_whose_mtu_counts(mlx5_root: Path) -> None:
    roce(mlx5_root)
    (mlx5_root / "sys/class/net/bond0").mkdir(parents=True)
    (mlx5_root / "sys/class/net/bond0/mtu").write_text("4200\n")
    st = read_port_status(mlx5_root, "mlx5_0", 1, 3, netdev="bond0")
    assert (st.netdev, st.netdev_mtu, st.active_mtu) == ("bond0", 4200, 4096)


@pytest.mark.parametrize(("netdev_mtu", "ib_mtu"), [(1500, 1024), (9000, 4096), (4200, 4096), (4192, 4096),
                                                    (4191, 2048), (2144, 2048), (2143, 1024), (352, 256),
                                                    (351, None)])
def test_the_roce_mtu_is_the_largest_ib_mtu_that_fits_the_netdev_less_the_headers(netdev_mtu: int,
                                                                                     ib_mtu: int | None) -> None:
    assert roce_mtu(netdev_mtu) == ib_mtu
