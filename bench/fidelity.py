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
from dataclasses import dataclass, replace
from pathlib import Path

from collie.importers.perftest import PerftestHeader, PerftestRun, parse_perftest
from collie.importers.shape import measured
from collie.targets.sim import SimTarget

SWEEPS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sweeps"


@dataclass(frozen=True)
class Sweep:
    """A published sweep and the profile it is held to; ``verb``/``connection``/``qps``: what its source's command
    line says when the published text has no title and header."""

    path: str
    profile: str
    verb: str | None = None
    connection: str = "RC"
    qps: int = 1


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


def _completed(run: PerftestRun, sweep: Sweep) -> PerftestRun:
    """``run`` with what its source's command line says where the published text leaves it out."""
    if run.verb is not None:
        return run
    header: PerftestHeader = replace(run.header, connection=run.header.connection or sweep.connection,
                                     qps=run.header.qps or sweep.qps)
    return replace(run, verb=sweep.verb, header=header)


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
        run = _completed(parse_perftest(path.read_text(), path.name).runs[0], sweep)
        print(f"\n{path.parent.name}/{path.name} on sim:{sweep.profile}: {run.title or sweep.verb} "
              f"{run.header.connection or sweep.connection}, {run.header.qps or sweep.qps} QP, MTU "
              f"{run.header.mtu or '(not shown)'}")
        print(f"{'bytes':>9} {'published':>10} {'simulated':>10} {'sim/pub':>8}")
        for m in measured(run):
            if m.workload is None:
                continue
            result = target.run(m.workload, 1.0)
            if m.gbps is not None:
                published, simulated, unit = m.gbps, sum(f.bps for f in result.flows) / 1e9, "Gb/s"
            else:
                published, simulated, unit = dict(m.lat_us).get("typical", 0.0), result.flows[0].lat_p50_us, "us"
            ratio = simulated / published if published else float("nan")
            ok = abs(ratio - 1.0) <= args.margin
            within += ok
            total += 1
            print(f"{m.size:>9} {published:>10.3f} {simulated:>10.3f} {ratio:>8.2f} {unit}{'' if ok else '  off'}")
    print(f"\n{within} of {total} rows within {args.margin:.0%}")


if __name__ == "__main__":
    main()
