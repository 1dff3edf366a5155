"""Is ``--resume`` exact? Kill a campaign with SIGKILL at random points, resume it until it is done, and compare
each journal with the one of an uninterrupted run of the same campaign.

    python bench/resume_exact.py [--target sim:cx6-200g-amd] [--budget 1500] [--seed 1] [--kills 20]
                                 [--rng 0] [--out DIR]

It runs ``python -m collie campaign`` with this interpreter (so the checkout that interpreter imports:
``PYTHONPATH=/path/to/checkout python bench/resume_exact.py``). First the uninterrupted campaign; then, per kill
point, the same campaign started afresh and killed (SIGKILL) once its journal holds a number of lines drawn at
random, then ``--resume`` until it exits 0. The journals are compared row by row without timestamps (``time``)
and durations (``setup_s``), as ``bench/journal_equivalence.py compare`` does, and so are the anomaly folders
(signature, MFS, case) and the ones left on disk. It prints one line per kill point and a total, and exits 1 if
any differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from journal_equivalence import _anomalies, _rows


def _cmd(target: str, seed: int, budget: int, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "collie", "campaign", "--target", target, "--seed", str(seed), "--budget",
            str(budget), "--out", str(out), "--no-live", "--format", "json", *extra]


def _lines(journal: Path) -> int:
    try:
        with open(journal, "rb") as fh:
            return fh.read().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_at(cmd: list[str], journal: Path, lines: int) -> int:
    """Start ``cmd`` and SIGKILL it once ``journal`` holds ``lines`` lines; returns the lines it held then (or
    -1 if the campaign ended first)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    while proc.poll() is None and _lines(journal) < lines:
        time.sleep(0.001)
    if proc.poll() is not None:
        return -1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return _lines(journal)


def _summary(out: Path, proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(proc.stdout)
    data.pop("out", None)
    return data


def _first_difference(a: list[Any], b: list[Any]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"row {i + 1} differs"
    return f"{len(a)} rows against {len(b)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="sim:cx6-200g-amd")
    ap.add_argument("--budget", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--rng", type=int, default=0, help="seed of the kill points")
    ap.add_argument("--out", type=Path, default=None, help="keep the campaign folders here")
    args = ap.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="resume-exact-"))
    base.mkdir(parents=True, exist_ok=True)
    full = base / "uninterrupted"
    started = time.time()
    proc = subprocess.run(_cmd(args.target, args.seed, args.budget, full), capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        sys.exit(f"the uninterrupted campaign failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    rows, anomalies, summary = _rows(full), _anomalies(full), _summary(full, proc)
    total = _lines(full / "trials.jsonl")
    print(f"uninterrupted: {args.target} seed {args.seed} budget {args.budget}: {total} journal rows, "
          f"{len(anomalies)} anomalies ({time.time() - started:.0f} s)")
    rng = random.Random(args.rng)
    points = sorted(rng.sample(range(1, total), args.kills))
    same = 0
    for i, point in enumerate(points, 1):
        out = base / f"kill-{i:02d}"
        cmd = _cmd(args.target, args.seed, args.budget, out)
        held = _kill_at(cmd, out / "trials.jsonl", point)
        if held < 0:
            print(f"kill {i:2d}: the campaign ended before its journal reached {point} lines; not counted")
            continue
        runs = 0
        while True:
            runs += 1
            resumed = subprocess.run(_cmd(args.target, args.seed, args.budget, out, "--resume"),
                                     capture_output=True, text=True, check=False)
            if resumed.returncode == 0 or runs == 3:
                break
        if resumed.returncode != 0:
            print(f"kill {i:2d}: at journal line {held}: --resume failed ({resumed.returncode}): "
                  f"{resumed.stderr.strip()[-300:]}")
            continue
        got_rows, got_anomalies = _rows(out), _anomalies(out)
        problems = []
        if got_rows != rows:
            problems.append(f"journal: {_first_difference(got_rows, rows)}")
        if got_anomalies != anomalies:
            problems.append(f"anomaly folders differ ({sorted(got_anomalies)} against {sorted(anomalies)})")
        if _summary(out, resumed) != summary:
            problems.append("summary differs")
        listed = sorted(a["anomaly"] for a in json.loads(resumed.stdout)["anomalies"])
        on_disk = sorted(p.name for p in (out / "anomalies").iterdir()) if (out / "anomalies").is_dir() else []
        if listed != on_disk:
            problems.append(f"folders on disk {on_disk} against the summary's {listed}")
        same += not problems
        verdict = "identical" if not problems else "DIFFERENT: " + "; ".join(problems)
        print(f"kill {i:2d}: at journal line {held:5d} of {total}, resumed in {runs} run(s): {len(got_rows)} rows, "
              f"{len(got_anomalies)} anomalies: {verdict}")
    print(f"total: {same} of {len(points)} killed-and-resumed campaigns identical to the uninterrupted one "
          f"(except timestamps and durations); {time.time() - started:.0f} s; folders in {base}")
    return 0 if same == len(points) else 1


if __name__ == "__main__":
    sys.exit(main())
