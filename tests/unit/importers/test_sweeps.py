"""Published sweeps of the simulator's NICs (tests/fixtures/sweeps, for holding the profiles to them: #32): every
one is read, and the rows the fidelity comparison rests on are read exactly (values typed from the logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from collie.importers.perftest import BandwidthRow, parse_perftest

SWEEPS = Path(__file__).resolve().parents[2] / "fixtures" / "sweeps"


def rows(name: str) -> list[BandwidthRow]:
    path = next(SWEEPS.glob(name))
    (run, *_) = parse_perftest(path.read_text(), path.name).runs
    return [r for r in run.rows if isinstance(r, BandwidthRow)]


@pytest.mark.parametrize("path", sorted(SWEEPS.rglob("*.txt")), ids=lambda p: f"{p.parent.name}/{p.name[:2]}")
def test_every_published_sweep_is_read(path: Path) -> None:
    assert parse_perftest(path.read_text(), path.name).runs


def test_the_connectx6_sweeps_plateau_near_hdr_line_rate() -> None:
    write = rows("cx6-200g/01-*")  # Gb/sec: "2  5000  0.045656  0.045526  2.845402" ... "8388608  5000  196.56  196.55"
    assert len(write) == 23 and (write[0].size, write[0].bw_average, write[0].msg_rate) == (2, 0.045526, 2.845402)
    assert (write[-1].size, write[-1].bw_peak, write[-1].bw_average) == (8388608, 196.56, 196.55)
    send = rows("cx6-200g/04-*")  # MB/sec: "2  1000  4.85  4.80  2.518597" ... "8388608  1000  23401.80  23396.08"
    assert len(send) == 23 and (send[0].bw_average, send[0].msg_rate) == (4.80, 2.518597)
    assert (send[-1].size, send[-1].bw_average, send[-1].msg_rate) == (8388608, 23396.08, 0.002925)


def test_the_soft_roce_sweeps_are_read_to_their_last_row() -> None:
    assert [(r.size, r.bw_average) for r in rows("rxe/02-*")][-1] == (524288, 255.54)  # two VMs, virtio-net
    assert [(r.size, r.bw_average) for r in rows("rxe/04-*")][-1] == (8388608, 110.37)  # 1 GbE, after the patch
