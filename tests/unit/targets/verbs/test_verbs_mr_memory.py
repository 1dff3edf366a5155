"""The memory a run's MRs take, pages and bookkeeping included, against the host's available memory (#33: 200,000
MRs of 4 KiB pinned 800 MiB, under half of a 2 GiB guest's available memory, and the OOM killer ended the run)."""

from __future__ import annotations

from dataclasses import replace

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.verbs.limits import (
    MAX_MR_MEMORY_FRACTION,
    MR_OVERHEAD_BYTES,
    PAGE_BYTES,
    DeviceLimits,
    check_workload,
    mr_memory_bytes,
    registered_bytes,
)

A, B = Endpoint("a"), Endpoint("b")
GUEST = DeviceLimits(max_qp=1048560, max_qp_wr=1048576, max_sge=32, max_sge_rd=32, max_cq=1048576, max_cqe=32767,
                     max_mr=524287, max_pd=1048576, max_mr_size=(1 << 64) - 1, max_qp_rd_atom=128, atomics=True,
                     active_mtu=4096, max_mtu=4096, available_memory_bytes=1801 << 20)


def wl(**kw: object) -> Workload:
    return Workload(flows=(Flow(A, B, sizes=(64,), **kw),))  # type: ignore[arg-type]


def test_every_mr_takes_whole_pages_and_its_overhead() -> None:
    assert mr_memory_bytes(wl(mrs=3, mr_size=64)) == 2 * 3 * (PAGE_BYTES + MR_OVERHEAD_BYTES)
    assert mr_memory_bytes(wl(mrs=1, mr_size=4097)) == 2 * (2 * PAGE_BYTES + MR_OVERHEAD_BYTES)
    ud = Workload(flows=(Flow(A, B, transport="UD", opcodes=("SEND",), sizes=(64,), mtu=1024, mr_size=4096),))
    # the server's UD MR has room for the GRH: two pages
    assert mr_memory_bytes(ud) == (PAGE_BYTES + MR_OVERHEAD_BYTES) + (2 * PAGE_BYTES + MR_OVERHEAD_BYTES)
    assert mr_memory_bytes(ud, ("a",)) == PAGE_BYTES + MR_OVERHEAD_BYTES
    churn = wl(mrs=2, mr_size=4096, mr_churn=10)
    assert mr_memory_bytes(churn) == 2 * 12 * (PAGE_BYTES + MR_OVERHEAD_BYTES)
    # large MRs: the overhead is small beside their bytes
    big = wl(mrs=4, mr_size=1 << 20)
    assert registered_bytes(big) < mr_memory_bytes(big) < 1.01 * registered_bytes(big)


def test_what_ran_in_the_guest_fits_and_what_the_oom_killer_ended_is_refused() -> None:
    assert check_workload(wl(mrs=50_000, mr_size=4096), GUEST) == []  # 100,000 MRs: ran, 1.3 GiB
    (reason,) = check_workload(wl(mrs=100_000, mr_size=4096), GUEST)  # 200,000 MRs: killed
    assert reason.startswith("200000 MRs take about 2.48 GiB with their pages and bookkeeping")
    assert reason.endswith(f"> {MAX_MR_MEMORY_FRACTION:.0%} of the host's available memory 1801 MiB")
    assert registered_bytes(wl(mrs=100_000, mr_size=4096)) < 0.5 * (1801 << 20)  # the pinned check let it by


def test_the_bound_is_inclusive_churn_is_named_and_unknown_memory_never_refuses() -> None:
    w = wl(mrs=10, mr_size=4096)
    need = mr_memory_bytes(w)
    assert check_workload(w, replace(GUEST, available_memory_bytes=int(need / MAX_MR_MEMORY_FRACTION) + 1)) == []
    assert check_workload(w, replace(GUEST, available_memory_bytes=int(need / MAX_MR_MEMORY_FRACTION) - 1)) != []
    assert check_workload(wl(mrs=100_000, mr_size=4096), replace(GUEST, available_memory_bytes=None)) == []
    reasons = check_workload(wl(mrs=60_000, mr_size=4096, mr_churn=40_000), GUEST)
    assert any(r.startswith("120000 MRs and a second of mr_churn take about") for r in reasons), reasons
