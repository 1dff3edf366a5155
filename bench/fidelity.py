"""The simulator held to published measurements: per built-in profile and size row, the simulated figure beside
the published one (tests/fixtures/sweeps, each with its source in SOURCES.md).

Each published perftest row becomes the workload its run's header states (``collie import``'s reading,
:mod:`collie.importers.shape`), run once on the profile whose NIC published it; a bandwidth row compares Gb/s (the
flows' payload), a latency row the typical latency (the simulated median). A sweep whose published text lacks its
header says here what its source's command line was.

    PYTHONPATH=. python bench/fidelity.py [--profile cx6-200g] [--margin 0.10]

No sweep found is on a profile's exact set-up: the ConnectX-6 ones run InfiniBand HDR (no Ethernet, IP and UDP
headers, so about 4 % more payload at 4 KiB MTU than RoCEv2 on the same link), on AMD or unstated hosts; the
soft-RoCE ones on other machines and links than the profile's. The table says which rows are off; the docs say why.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from collie.importers.perftest import parse_perftest
from collie.importers.shape import sweep_rows
from collie.targets.sim import SimTarget
from collie.targets.sim.fit import Unit

SWEEPS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sweeps"


@dataclass(frozen=True)
class Sweep:
    """A published sweep and the profile it is held to; ``verb``: what its source's command line says when the
    published text has no title (its connection and QPs are then perftest's defaults, RC and one QP, as the
    sources' command lines have them)."""

    path: str
    profile: str
    verb: str | None = None


SET: tuple[Sweep, ...] = (
    Sweep("cx6-200g/01-*", "cx6-200g", verb="WRITE"),  # ib_write_bw -a -F --report_gbits -q 1 (rdma_test.sh)
    Sweep("cx6-200g/02-*", "cx6-200g", verb="READ"),  # ib_read_bw, the same script
    Sweep("cx6-200g/03-*", "cx6-200g", verb="READ"),  # ib_read_lat, the same script
    Sweep("cx6-200g/04-*", "cx6-200g"),  # ib_send_bw -a -F, full header
    Sweep("rxe/01-*", "rxe"),  # ib_send_bw -a, rxe on a 100G ConnectX-4, bare metal
    Sweep("rxe/02-*", "rxe"),  # ib_send_bw -a, rxe between two VMs on virtio-net
    Sweep("rxe/04-*", "rxe"),  # ib_read_bw -a, rxe over 1 GbE
    Sweep("rxe/05-*", "rxe", verb="WRITE"),  # ib_write_lat, rxe loopback
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default=None, help="only the sweeps of this profile")
    ap.add_argument("--margin", type=float, default=0.10, help="a row is within when |sim/published - 1| <= this")
    args = ap.parse_args()
    within = total = 0
    for sweep in SET:
        if args.profile not in (None, sweep.profile):
            continue
        path = next(SWEEPS.glob(sweep.path))
        target = SimTarget(sweep.profile, seed=1)
        log = parse_perftest(path.read_text(), path.name)
        rows = [r for r in sweep_rows(log, sweep.verb) if r.run == 0 and r.workload is not None]
        run = log.runs[0]
        print(f"\n{path.parent.name}/{path.name} on sim:{sweep.profile}: {rows[0].test if rows else '-'}, "
              f"{run.header.qps or 1} QP, MTU {run.header.mtu or '(not shown)'}")
        print(f"{'bytes':>9} {'published':>10} {'simulated':>10} {'sim/pub':>8}")
        for row in rows:
            assert row.workload is not None
            result = target.run(row.workload, 1.0)
            simulated = result.payload_gbps if row.unit is Unit.GBPS else result.lat_p50_us
            published = row.published or 0.0
            ratio = simulated / published if published else float("nan")
            ok = abs(ratio - 1.0) <= args.margin
            within += ok
            total += 1
            print(f"{row.size:>9} {published:>10.3f} {simulated:>10.3f} {ratio:>8.2f} {row.unit.value}"
                  f"{'' if ok else '  off'}")
    print(f"\n{within} of {total} rows within {args.margin:.0%}")


if __name__ == "__main__":
    main()
