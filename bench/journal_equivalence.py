"""Does a change alter what campaigns do? Record campaigns with one checkout, record them again with another,
and compare the two sets of campaign folders.

    python bench/journal_equivalence.py record OUT [--profiles sim:cx6-200g-amd,sim:p2100g-100g]
                                                 [--seeds 1-3] [--budget 600] [--extra-args "--parallel 2"]
    python bench/journal_equivalence.py compare OLD NEW

``record`` runs ``python -m collie campaign`` with this interpreter, so it runs the checkout that interpreter
imports (the installed one, or the one ``PYTHONPATH`` names: ``PYTHONPATH=/path/to/checkout python
bench/journal_equivalence.py record OUT``), once per profile (any ``--target``, e.g. ``remote:hosts.toml``) and
seed into ``OUT/<profile>-s<seed>`` (the profile with every run of other characters than letters, digits, ``.``,
``_`` and ``-`` made one ``-``), with ``--extra-args`` (split as a shell would) added to every command line.
``compare`` checks, per campaign: every ``trials.jsonl`` row equal after removing timestamps (``time``) and
durations (``setup_s``); the calibrated ceilings and baseline of ``campaign.toml``; and each anomaly folder's
signature, MFS and case. It prints one line per campaign and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

VOLATILE = frozenset({"time", "setup_s", "created"})


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(s) for s in lo.split(",")]


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def record(out: Path, profiles: list[str], seeds: list[int], budget: int, extra: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for profile in profiles:
        for seed in seeds:
            folder = out / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', profile).strip('-')}-s{seed}"
            cmd = [sys.executable, "-m", "collie", "campaign", "--target", profile, "--seed", str(seed),
                   "--budget", str(budget), "--out", str(folder), "--no-live", "--format", "json", *extra]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
            print(f"recorded {folder.name}")


def _rows(folder: Path) -> list[Any]:
    lines = (folder / "trials.jsonl").read_text(encoding="utf-8").splitlines()
    return [_strip(json.loads(line)) for line in lines if line.strip()]


def _anomalies(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not (folder / "anomalies").is_dir():  # a campaign that found nothing
        return out
    for case in sorted((folder / "anomalies").iterdir()):
        mfs = case / "mfs.json"
        evidence = json.loads((case / "evidence.json").read_text(encoding="utf-8"))
        out[case.name] = {
            "signature": evidence.get("signature"),
            "mfs": json.loads(mfs.read_text(encoding="utf-8")) if mfs.exists() else None,
            "case": (case / "case.toml").read_text(encoding="utf-8"),
        }
    return out


def _calibration(folder: Path) -> Any:
    cfg = tomllib.loads((folder / "campaign.toml").read_text(encoding="utf-8"))
    return {"ceilings": cfg.get("ceilings"), "baseline": cfg.get("baseline")}


def differences(old: Path, new: Path) -> Iterator[str]:
    """One sentence per difference between two campaign folders (none: they are equivalent)."""
    a, b = _rows(old), _rows(new)
    if len(a) != len(b):
        yield f"{len(a)} journal rows against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            yield f"journal row {i} (trial {x.get('trial')}, {x.get('status')}) differs in {', '.join(keys)}"
            break
    if _calibration(old) != _calibration(new):
        yield "calibrated ceilings or baseline differ"
    ea, eb = _anomalies(old), _anomalies(new)
    if ea != eb:
        yield f"anomalies differ: {sorted(ea)} against {sorted(eb)}"


def compare(old_root: Path, new_root: Path) -> int:
    names = sorted(p.name for p in old_root.iterdir() if (p / "trials.jsonl").exists())
    if not names:
        sys.exit(f"{old_root}: no campaign folders")
    failed = 0
    for name in names:
        if not (new_root / name).exists():
            print(f"{name}: missing in {new_root}")
            failed += 1
            continue
        diffs = list(differences(old_root / name, new_root / name))
        rows = len(_rows(old_root / name))
        anomalies = len(_anomalies(old_root / name))
        print(f"{name}: {rows} journal rows, {anomalies} anomalies: "
              + ("identical except timestamps and durations" if not diffs else "; ".join(diffs)))
        failed += bool(diffs)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--profiles", default="sim:cx6-200g-amd,sim:p2100g-100g")
    rec.add_argument("--seeds", default="1-3")
    rec.add_argument("--budget", type=int, default=600)
    rec.add_argument("--extra-args", default="", help="more options for every campaign, e.g. '--parallel 2'")
    cmp = sub.add_parser("compare")
    cmp.add_argument("old", type=Path)
    cmp.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.profiles.split(","), _seeds(args.seeds), args.budget, shlex.split(args.extra_args))
    else:
        sys.exit(compare(args.old, args.new))


if __name__ == "__main__":
    main()
