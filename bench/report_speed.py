"""Seconds to render each report format of a 1,500-trial simulator campaign (goal: HTML under 5 s).

Runs ``collie campaign --target sim:cx6-200g-amd --budget 1500`` once (into a temporary folder, or ``--campaign``
to reuse one), then renders every format in this process, the way ``collie report`` does: read the folder, build
the frames and the facts, render. The first render pays for importing pandas, jinja2 and matplotlib: the table
shows that cold time and the best of ``--repeat`` warm renders, in wall-clock seconds and in CPU seconds of this
process (on a machine shared with other work, the CPU time is the steadier number). It asserts nothing.

    PYTHONPATH=. python bench/report_speed.py [--budget 1500] [--repeat 3] [--campaign DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collie.report import FORMATS, build_report, render


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--campaign", type=Path, default=None, help="reuse this campaign folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.campaign
        if folder is None:
            folder = Path(tmp) / "campaign"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "collie", "campaign", "--target", "sim:cx6-200g-amd", "--budget",
                            str(args.budget), "--seed", str(args.seed), "--out", str(folder)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"campaign: {time.perf_counter() - t0:.1f} s")
        t0, c0 = time.perf_counter(), time.process_time()
        report = build_report(folder)
        read, read_cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"{len(report.trials)} trials, {len(report.anomalies)} anomalies; reading the folder and building the "
              f"frames: {read:.2f} s ({read_cpu:.2f} CPU s)")
        print(f"{'format':8s} {'cold s':>8s} {'cold cpu':>9s} {'warm s':>8s} {'warm cpu':>9s} {'bytes':>10s}")
        for fmt in FORMATS:
            t0, c0 = time.perf_counter(), time.process_time()
            text = render(report, fmt)
            cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
            warm, warm_cpu = [], []
            for _ in range(args.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                render(report, fmt)
                warm.append(time.perf_counter() - t0)
                warm_cpu.append(time.process_time() - c0)
            print(f"{fmt:8s} {cold:8.2f} {cold_cpu:9.2f} {min(warm):8.2f} {min(warm_cpu):9.2f} "
                  f"{len(text.encode()):10d}")


if __name__ == "__main__":
    main()
