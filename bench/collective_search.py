"""Searching collective patterns: collie's strategy against random search on simulated fleets with one faulty host.

For each seed, a fleet of ``fleet8-cx6``'s eight hosts gets one fault on a host drawn from h1 .. h7 (its port at
half speed, or its PCIe link at half its bandwidth). Both strategies run the campaign ``collie campaign --space
workloads/collective.toml --budget B`` on it, with confirmation and minimization (``--preset collie``, and
``--strategy random`` for the baseline), and the same on the fault-free fleet. Per strategy it prints:

* **found**: campaigns with a confirmed anomaly whose minimal case runs on the faulty host (the simulator's ground
  truth, read here only, never by the search);
* **first**: budgeted experiments until the first anomalous run on the faulty host (median over the campaigns
  that had one);
* **fewest**: minimal cases on the faulty host whose hosts are the fewest that hold it (``r0`` .. ``rk`` for a
  fault on ``hk``; one more for a pairwise of an odd count), of all such cases;
* **anomalies**: anomalies saved per campaign (one faulty host: the fewer, the less duplication), and **false**:
  confirmed anomalies whose case does not touch the faulty host, summed, with the fault-free fleet's in brackets;
* **s/campaign**: wall time per campaign.

With ``--fault link`` the fleet is ``fleet8-cx6-fabric`` (two leaves of four hosts, two spines, PFC) and the fault
one link between a leaf and a spine at a quarter of its speed, drawn per seed: only traffic between the leaves
whose QPs ECMP puts on that spine meets it, so a pattern needs five hosts or more and the right QPs. "found" and
"first" are as above for that link; "fewest" does not apply; "false" counts the fabric's other anomalies (an
incast's pause, ...), which are real, beside the ones of the fabric without the slow link in brackets.

    PYTHONPATH=. python bench/collective_search.py --seeds 6 --budget 200
    PYTHONPATH=. python bench/collective_search.py --seeds 6 --budget 200 --fault link
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from collie.model.space import load_space
from collie.storage.case import read_case_folder
from collie.targets.sim import SimTarget
from collie.targets.sim.profile import PROFILE_DIR

ROOT = Path(__file__).resolve().parents[1]
SPACE_FILE = ROOT / "workloads" / "collective.toml"
STRATEGIES = {"collie": ("--preset", "collie"), "random": ("--preset", "collie", "--strategy", "random")}
KINDS = (("port_speed", 0.5), ("pcie", 0.5))


@dataclass
class Tally:
    found: int = 0
    first: list[int] = field(default_factory=list)
    fewest: int = 0
    on_fault: int = 0
    anomalies: list[int] = field(default_factory=list)
    false: int = 0
    false_clean: int = 0
    seconds: list[float] = field(default_factory=list)


def fleet_profile(folder: Path, fault: tuple[str, str, float] | None, seed: int = 0) -> Path:
    """The fleet's profile file, one per draw (profiles are loaded once per path)."""
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8").replace('name = "fleet8-cx6"',
                                                                                'name = "bench-fleet"')
    if fault is not None:
        host, kind, factor = fault
        text += f'\n[[faults]]\nhost = "{host}"\nkind = "{kind}"\nfactor = {factor}\n'
    path = folder / (f"faulty-{seed}.toml" if fault else "clean.toml")
    path.write_text(text, encoding="utf-8")
    return path


def fabric_profile(folder: Path, link: tuple[int, int] | None, seed: int = 0) -> Path:
    """``fleet8-cx6-fabric`` with one slow link between a leaf and a spine (a quarter of its speed), or none."""
    text = (PROFILE_DIR / "fleet8-cx6-fabric.toml").read_text(encoding="utf-8").replace(
        'name = "fleet8-cx6-fabric"', 'name = "bench-fabric"')
    if link is not None:
        text += f"\n[[fabric.slow_links]]\nleaf = {link[0]}\nspine = {link[1]}\nfactor = 0.25\n"
    path = folder / (f"slow-link-{seed}.toml" if link else "fabric.toml")
    path.write_text(text, encoding="utf-8")
    return path


def campaign(profile: Path, out: Path, seed: int, budget: int, strategy: tuple[str, ...]) -> float:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "collie", "campaign", "--target", f"sim:{profile}", "--seed",
                           str(seed), "--space", str(SPACE_FILE), "--budget", str(budget), "--out", str(out),
                           "--no-live", *strategy], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"campaign failed: {done.stderr}")
    return time.monotonic() - t0


def cases(out: Path) -> list:  # type: ignore[type-arg]
    found = out / "anomalies"
    return [read_case_folder(p) for p in sorted(found.iterdir()) if p.is_dir()] if found.exists() else []


def first_hit(out: Path, truth: SimTarget, label: str) -> int | None:
    """Budgeted experiments until the first anomalous explore run that used the faulty host."""
    space = load_space(SPACE_FILE)
    experiments = 0
    for line in (out / "trials.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("status") != "COMPLETE" or row.get("phase") in ("calibrate", "replay"):
            continue
        experiments += 1
        if row.get("phase") == "explore" and row.get("verdict", {}).get("anomalous") and \
                label in truth.run(space.build(row["point"]), 1.0).truth:
            return experiments
    return None


def fewest_hosts(case_hosts: int, pattern: str, fault_index: int) -> bool:
    need = fault_index + 1
    if pattern == "pairwise" and need % 2:
        need += 1
    return case_hosts == need


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--fault", choices=("host", "link"), default="host",
                    help="a faulty host of fleet8-cx6, or a slow link between switches of fleet8-cx6-fabric")
    args = ap.parse_args()
    tallies = {name: Tally() for name in STRATEGIES}
    links = args.fault == "link"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clean = fabric_profile(folder, None) if links else fleet_profile(folder, None)
        for seed in range(1, args.seeds + 1):
            draw = random.Random(seed)
            index = draw.randrange(1, 8)
            kind, factor = draw.choice(KINDS)
            if links:
                leaf, spine = draw.randrange(2), draw.randrange(2)
                faulty = fabric_profile(folder, (leaf, spine), seed)
                label, kind, factor = f"fault:leaf{leaf}-spine{spine}:link_speed", "link", 0.25
            else:
                faulty = fleet_profile(folder, (f"h{index}", kind, factor), seed)
                label = f"fault:h{index}:{kind}"
            truth = SimTarget(str(faulty), seed=seed)
            for name, strategy in STRATEGIES.items():
                t = tallies[name]
                out = folder / f"{name}-{seed}"
                t.seconds.append(campaign(faulty, out, seed, args.budget, strategy))
                found = cases(out)
                t.anomalies.append(len(found))
                hit = False
                for case in found:
                    if not case.confirmed:
                        continue
                    on = label in truth.run(case.workload, 1.0).truth
                    if not on:
                        t.false += 1
                        continue
                    hit = True
                    p = case.workload.pattern
                    if case.mfs is not None and p is not None and not links:
                        t.on_fault += 1
                        t.fewest += fewest_hosts(len(p.hosts), p.kind.value, index)
                t.found += hit
                first = first_hit(out, truth, label)
                if first is not None:
                    t.first.append(first)
                if seed <= max(2, args.seeds // 2):
                    clean_out = folder / f"{name}-{seed}-clean"
                    campaign(clean, clean_out, seed, args.budget, strategy)
                    t.false_clean += sum(c.confirmed for c in cases(clean_out))
            print(f"seed {seed}: {label} x{factor}: "
                  + "; ".join(f"{n} {tallies[n].anomalies[-1]} anomalies" for n in STRATEGIES), flush=True)
    what = "on a fabric with one slow link between switches" if links else "with one faulty host"
    print(f"\n{args.seeds} fleets of 8 hosts {what}, budget {args.budget}, space {SPACE_FILE.name}")
    print(f"{'strategy':<8} {'found':>7} {'first':>7} {'fewest':>8} {'anomalies':>10} {'false':>9} {'s/campaign':>11}")
    for name, t in tallies.items():
        first = f"{statistics.median(t.first):.0f}" if t.first else "-"
        print(f"{name:<8} {t.found:>3}/{args.seeds:<3} {first:>7} {t.fewest:>3}/{t.on_fault:<4} "
              f"{statistics.mean(t.anomalies):>10.1f} {t.false:>4} ({t.false_clean}) "
              f"{statistics.mean(t.seconds):>10.1f}")
    c, r = tallies["collie"], tallies["random"]
    if c.first and r.first:
        print(f"\nexperiments to the first find, random / collie: "
              f"{statistics.median(r.first) / statistics.median(c.first):.2f}x")


if __name__ == "__main__":
    main()
