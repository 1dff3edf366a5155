"""Are a campaign's findings clean? Each anomaly saved once, each case at its MFS edges, each case replayable.

Reads campaign folders (recorded with ``bench/journal_equivalence.py record``, which runs ``python -m collie
campaign`` per profile and seed with the checkout ``PYTHONPATH`` names) and prints, per target:

* the anomalies saved, and the pairs of one campaign whose regions are equal or nested on the same leading
  symptom (``MFS.nests``: "the same anomaly", docs/search.md);
* the saved cases that do not sit at their MFS edges (:func:`collie.minimize.off_edges`);
* the further hits recorded in the case folders, by kind (``inside``: recognised before confirming, nothing
  spent; ``widened``; ``nested``: minimized, then joined), and what they cost, beside what the duplicates saved
  cost (the later anomaly of each nested pair: its confirming and minimizing);
* with ``--replay``, how many saved cases reproduce with plain ``collie replay`` (exit 1: it reproduces).

    PYTHONPATH=. python bench/journal_equivalence.py record OUT --profiles sim:cx6-200g,sim:cx6-200g-amd,\\
        sim:p2100g-100g --seeds 0-9 --budget 600
    python bench/findings.py OUT [--replay]

Asserts nothing; the tests hold the same properties on fewer seeds.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

from collie.minimize import off_edges
from collie.model.space import load_space
from collie.oracle import leading_symptom
from collie.storage.campaign import CONFIG, read_config
from collie.storage.case import CaseRecord, read_case_folder


def _anomalies(campaign: Path) -> list[CaseRecord]:
    folder = campaign / "anomalies"
    return [read_case_folder(p) for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")] \
        if folder.is_dir() else []


def _nested_pairs(cases: list[CaseRecord]) -> list[tuple[str, str]]:
    return [(a.anomaly_id, b.anomaly_id) for a, b in itertools.combinations(cases, 2)
            if a.mfs is not None and b.mfs is not None and leading_symptom(a.signature) == leading_symptom(b.signature)
            and a.mfs.nests(b.mfs)]


def _replays(folder: Path) -> bool:
    done = subprocess.run([sys.executable, "-m", "collie", "replay", str(folder)], capture_output=True, check=False)
    return done.returncode == 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="+", type=Path, help="folders holding campaign folders")
    ap.add_argument("--replay", action="store_true", help="replay every saved case with plain collie replay")
    args = ap.parse_args()
    campaigns = sorted(p.parent for out in args.out for p in out.glob(f"*/{CONFIG}"))
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    details: list[str] = []
    for campaign in campaigns:
        config = read_config(campaign)
        space = load_space(Path(config.space) if config.space else None)
        row = rows[config.target]
        cases = _anomalies(campaign)
        row["campaigns"] += 1
        row["saved"] += len(cases)
        pairs = _nested_pairs(cases)
        row["nested pairs"] += len(pairs)
        row["campaigns with nested pairs"] += bool(pairs)
        costs = {c.anomaly_id: c.minimize_experiments for c in cases}
        row["experiments on saved duplicates"] += sum(costs[b] for b in {b for _, b in pairs})
        details += [f"{campaign.name}: {a} ~ {b}" for a, b in pairs]
        for case in cases:
            row["minimize experiments"] += case.minimize_experiments
            for hit in case.hits:
                row[f"hits {hit.kind}"] += 1
                row["experiments on joined finds"] += hit.experiments
            if case.mfs is not None and case.evidence is not None:
                off = off_edges(space, case.mfs, case.evidence.point)
                row["cases off their edges"] += bool(off)
                details += [f"{campaign.name}/{case.anomaly_id}: off {c}" for c in off]
            if args.replay:
                row["replay reproduces"] += _replays(campaign / "anomalies" / case.anomaly_id)
    columns = ["campaigns", "saved", "nested pairs", "campaigns with nested pairs", "cases off their edges",
               "hits inside", "hits widened", "hits nested", "experiments on saved duplicates",
               "experiments on joined finds", "minimize experiments"] + \
        (["replay reproduces"] if args.replay else [])
    print("| target | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for target, row in sorted(rows.items()):
        print(f"| {target} | " + " | ".join(str(row[c]) for c in columns) + " |")
    if details:
        print()
        print("\n".join(details))


if __name__ == "__main__":
    main()
