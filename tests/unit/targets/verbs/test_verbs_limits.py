"""Workload vs device limits, against a fake device-attributes record."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs.device import available_memory_bytes
from collie.targets.verbs.limits import DeviceLimits, check_workload, registered_bytes, send_cqes_per_qp

#: rxe's limits as `ibv_devinfo -v` printed them in the guest (SOFTROCE.md), active_mtu with a 9000 B netdev.
RXE = DeviceLimits(max_qp=1048560, max_qp_wr=1048576, max_sge=32, max_sge_rd=32, max_cq=1048576,
                   max_cqe=32767, max_mr=524287, max_pd=1048576, max_mr_size=(1 << 64) - 1,
                   max_qp_rd_atom=128, atomics=True,
                   active_mtu=4096, max_mtu=4096)
A, B = Endpoint("a"), Endpoint("b")


def wl(**kw: object) -> Workload:
    return Workload(flows=(Flow(A, B, **kw),))  # type: ignore[arg-type]


def test_plain_workload_fits() -> None:
    assert check_workload(wl(qps=64, sges=4, batch=32, sq_depth=256), RXE) == []
    # inline asked of a flow that posts nothing inline is not the device's business
    assert check_workload(wl(opcodes=("READ",), inline=1024), replace(RXE, max_inline_data=400)) == []


@pytest.mark.parametrize(("lim", "kw", "fragment"), [
    (replace(RXE, max_qp=100), {"qps": 51}, "qps 51 x 2 sides = 102 > device max_qp 100"),
    (replace(RXE, max_sge=4), {"sges": 8, "sizes": (4096,)}, "sges 8 > device max_sge 4"),
    (replace(RXE, max_sge_rd=2), {"sges": 4, "opcodes": ("READ",), "sizes": (4096,)}, "device max_sge_rd 2"),
    (replace(RXE, max_qp_wr=64), {"sq_depth": 128}, "sq_depth 128 > device max_qp_wr 64"),
    (replace(RXE, max_qp_wr=64), {"rq_depth": 128, "opcodes": ("SEND",)}, "rq_depth 128 > device max_qp_wr 64"),
    (replace(RXE, max_cqe=100), {"sq_depth": 128}, "CQ entries per QP > device max_cqe 100"),
    (replace(RXE, max_mr=10), {"mrs": 6}, "mrs 6 x 2 sides = 12 > device max_mr 10"),
    (replace(RXE, max_mr_size=1 << 20), {"mr_size": 1 << 21}, "mr_size 2 MiB > device max_mr_size 1 MiB"),
    (replace(RXE, active_mtu=1024), {"mtu": 4096}, "mtu 4096 > port active_mtu 1024"),
    (replace(RXE, atomics=False), {"opcodes": ("ATOMIC_FA",), "sizes": (8,)}, "IBV_ATOMIC_NONE"),
    (replace(RXE, memlock_bytes=1 << 20), {"mrs": 16, "mr_size": 65536}, "RLIMIT_MEMLOCK"),
    (replace(RXE, available_memory_bytes=1 << 30), {"mrs": 113, "mr_size": 8886518},
     "> 50% of the host's available memory 1 GiB"),
    (RXE, {"qps": 2, "processes": 4}, "processes 4 > qps 2"),
    (RXE, {"sizes": (32768, 256), "sges": 2, "mr_size": 16384}, "message 32 KiB > mr_size 16 KiB"),
    (RXE, {"sizes": (32768,), "sges": 4, "mr_size": 16384}, "a message lies in one MR, whatever its SGEs"),
    (replace(RXE, max_sge_rd=2), {"sges": 4, "opcodes": ("WRITE", "READ"), "sizes": (4096,)},
     "sges 4 > device max_sge_rd 2"),
    (replace(RXE, max_sge=4), {"recv_sges": 8, "opcodes": ("SEND",), "sizes": (4096,)},
     "recv_sges 8 > device max_sge 4"),
    (replace(RXE, max_inline_data=400), {"inline": 512, "sizes": (64,)}, "inline 512 > device max_inline_data 400"),
    (replace(RXE, max_inline_data=400), {"inline": 512, "opcodes": ("READ", "SEND_IMM"), "sizes": (64,)},
     "inline 512 > device max_inline_data 400"),
    (replace(RXE, atomics=False), {"opcodes": ("WRITE", "ATOMIC_CS"), "sizes": (8,)}, "ATOMIC_CS needs atomics"),
])
def test_each_limit_names_field_value_and_limit(lim: DeviceLimits, kw: dict[str, object],
                                                fragment: str) -> None:
    problems = check_workload(wl(**kw), lim)
    assert problems, kw
    assert any(fragment in p for p in problems), problems


def test_rq_depth_is_ignored_when_nothing_consumes_receives() -> None:
    lim = replace(RXE, max_qp_wr=64, max_cqe=1000)
    assert check_workload(wl(rq_depth=128, sq_depth=32, opcodes=("WRITE",)), lim) == []


def test_remote_memory_needs_two_numa_nodes_and_gpu_is_refused() -> None:
    w = Workload(flows=(Flow(Endpoint("a", "remote"), Endpoint("b", "gpu")),))
    problems = check_workload(w, RXE)
    assert any("client.memory remote needs a second NUMA node; this host has 1" in p for p in problems)
    assert any("server.memory gpu is not supported" in p for p in problems)
    assert not any("client.memory" in p for p in check_workload(w, replace(RXE, numa_nodes=2)))


def test_ud_message_beyond_active_mtu() -> None:
    problems = check_workload(wl(transport="UD", opcodes=("SEND",), sizes=(2048,), mtu=2048),
                              replace(RXE, active_mtu=1024))
    assert any("UD message 2048 B > port active_mtu 1024" in p for p in problems)


def test_totals_count_every_flow_and_name_the_flow() -> None:
    w = Workload(flows=(Flow(A, B, qps=30), Flow(B, A, qps=30, sges=8, sizes=(4096,))))
    problems = check_workload(w, replace(RXE, max_qp=100, max_sge=4))
    assert "qps 60 x 2 sides = 120 > device max_qp 100" in problems
    assert any(p.startswith("flows[1]: sges 8") for p in problems)


def test_send_cqes_and_registered_bytes() -> None:
    f = Flow(A, B, sq_depth=128, signal_every=16)
    assert send_cqes_per_qp(f) == 9
    ud = Workload(flows=(Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(512,), mrs=2, mr_size=4096),))
    assert registered_bytes(ud) == 2 * 4096 + 2 * (4096 + 40)


def test_a_host_of_a_cross_host_run_counts_only_its_ends() -> None:
    w = Workload(flows=(Flow(A, B, qps=60, mrs=2, mr_size=4096, sizes=(4096,)),
                        Flow(B, B, qps=10, sges=8, sizes=(4096,))))
    lim = replace(RXE, max_qp=100, max_sge=4)
    # locally both ends of both flows: 140 QPs; host a holds the client ends of flow 0 only: 60 QPs
    assert "qps 70 x 2 sides = 140 > device max_qp 100" in check_workload(w, lim)
    assert check_workload(w, lim, ("a",)) == []
    # host b: the server ends of flow 0 and both ends of flow 1 (60 + 20 QPs), and flow 1's SGEs
    assert check_workload(w, replace(lim, max_qp=79), ("b",)) == [
        "flows[1]: sges 8 > device max_sge 4", "qps of this host's flow ends 80 > device max_qp 79"]
    ud = Workload(flows=(Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(512,), mrs=2, mr_size=4096),))
    assert registered_bytes(ud, ("a",)) == 2 * 4096 and registered_bytes(ud, ("b",)) == 2 * (4096 + 40)


def test_pinning_half_the_available_memory_is_allowed_and_unknown_memory_never_refuses() -> None:
    w = wl(mrs=8, mr_size=1 << 20)  # 8 MiB per side, 16 MiB in a local run
    assert check_workload(w, replace(RXE, available_memory_bytes=32 << 20)) == []
    assert check_workload(w, replace(RXE, available_memory_bytes=(32 << 20) - 1)) != []
    assert check_workload(w, replace(RXE, available_memory_bytes=None)) == []


def test_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        2014744 kB\nMemFree:         1700000 kB\nMemAvailable:    1800000 kB\n")
    assert available_memory_bytes(str(meminfo)) == 1800000 * 1024
    meminfo.write_text("MemTotal:        2014744 kB\n")
    assert available_memory_bytes(str(meminfo)) is None
    assert available_memory_bytes(str(tmp_path / "absent")) is None
