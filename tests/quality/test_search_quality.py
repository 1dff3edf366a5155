"""The search finds planted simulator anomalies and minimizes each to its planted conditions.

Ground truth (which quirk fired) is read here, by the test, only; the campaign never sees it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from collie.campaign import Campaign
from collie.events import AnomalyFound, Event, TrialFinished
from collie.mfs import MFS
from collie.model.features import features
from collie.model.space import load_space
from collie.preset import load_preset
from collie.storage.campaign import CampaignConfig, CampaignStore
from collie.targets.sim import SimTarget

SPACE = load_space()
PROFILE = "cx6-200g-amd"
#: The anomalies of PROFILE a random search rarely meets (throughput-only, or many conditions at once).
RARE = frozenset({"f04-bi-read-sge", "f06-rc-send-sge", "f07-write-many-mr", "f08-write-many-qp", "f10-bi-write-mix"})


def _campaign(tmp: Path, seed: int, budget: int) -> list[tuple[str, MFS]]:
    """(planted quirk, MFS) per recorded anomaly; the quirk is what the minimized case's last run fired."""
    last: list[tuple[str, ...]] = [()]
    found: dict[str, tuple[str, ...]] = {}

    def listen(e: Event) -> None:
        if isinstance(e, TrialFinished) and e.phase == "minimize" and e.verdict is not None \
                and e.verdict.anomalous and e.result is not None:
            last[0] = e.result.truth
        if isinstance(e, AnomalyFound) and e.confirmed:
            found[e.anomaly_id] = last[0]

    store = CampaignStore.create(tmp, CampaignConfig(f"sim:{PROFILE}", seed, budget, "collie", "anneal"))
    c = Campaign(targets=[SimTarget(PROFILE, seed=seed)], space=SPACE, preset=load_preset("collie"),
                 store=store, seed=seed, budget=budget, listener=listen)
    summary = c.run()
    # an anomaly that joined another as a further hit is no longer in the summary
    return [(found[a.anomaly_id][0], a.mfs) for a in summary.anomalies
            if a.confirmed and a.mfs is not None and len(found.get(a.anomaly_id, ())) == 1]


def _agreement(mfs: MFS, quirk: str, rng: np.random.Generator) -> tuple[float, float]:
    """Precision and recall of an MFS against a planted quirk's condition, over sampled points."""
    q = next(x for x in SimTarget(PROFILE).profile.active_quirks if x.id == quirk)
    inside = fires = both = 0
    for _ in range(6000):
        f = features(SPACE.build(SPACE.sample(rng)))
        m, fired = all(c.holds(f) for c in mfs.conditions), q.fires(f)
        inside += m
        fires += fired
        both += m and fired
    return (both / inside if inside else 0.0), (both / fires if fires else 1.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_campaign_finds_common_anomalies_with_exact_feature_sets(tmp_path: Path, seed: int) -> None:
    # 600, the default budget: in the whole space (victims included) READ at MTU 1K is found by 400 experiments in
    # 2 of seeds 0-3 only, by 600 in each
    results = _campaign(tmp_path / "c", seed, 600)
    quirks = {q for q, _ in results}
    # the four common anomalies of the AMD-host profile (GPU ACS, incast, cross-socket, READ at MTU 1K)
    assert {"f12-gpu-acs", "f13-loopback-incast", "f11-bi-remote-numa", "f03-read-mtu1k"} <= quirks
    rng = np.random.default_rng(seed)
    for quirk, mfs in results:
        if quirk in ("f12-gpu-acs", "f13-loopback-incast", "f11-bi-remote-numa", "f03-read-mtu1k"):
            precision, recall = _agreement(mfs, quirk, rng)
            assert precision >= 0.9 and recall >= 0.8, (quirk, mfs.describe(), precision, recall)


class _Reached(Exception):
    """Raised by a listener to end a campaign at its first find of a rare anomaly."""

    def __init__(self, quirk: str, experiments: int) -> None:
        super().__init__(quirk)
        self.quirk, self.experiments = quirk, experiments


def _first_rare_find(tmp: Path, seed: int, budget: int) -> _Reached | None:
    """The first rare planted anomaly the campaign records (confirmed, with an MFS), or None if its whole
    budget records none. The campaign ends at that find: it is deterministic for its seed, so the trials up to
    there are those of the full campaign, and what comes after cannot undo the find."""
    last: list[tuple[str, ...]] = [()]

    def listen(e: Event) -> None:
        if isinstance(e, TrialFinished) and e.phase == "minimize" and e.verdict is not None \
                and e.verdict.anomalous and e.result is not None:
            last[0] = e.result.truth
        if isinstance(e, AnomalyFound) and e.confirmed and e.mfs and len(last[0]) == 1 and last[0][0] in RARE:
            raise _Reached(last[0][0], e.experiments)

    c = Campaign(targets=[SimTarget(PROFILE, seed=seed)], space=SPACE, preset=load_preset("collie"),
                 store=CampaignStore.create(tmp, CampaignConfig(f"sim:{PROFILE}", seed, budget, "collie", "anneal")),
                 seed=seed, budget=budget, listener=listen)
    try:
        c.run()
    except _Reached as reached:
        return reached
    return None


def test_diagnostic_chains_reach_a_counter_only_anomaly(tmp_path: Path) -> None:
    """#7/#8 (throughput-only, found through translation / QP-context misses) and the other rare anomalies need
    several conditions at once; the annealer records one of them (minimized to fire it alone) within 1,500
    experiments on at least two of four seeds.

    In the whole space that is a margin, not a certainty: the starved receivers and churn of the base model take
    much of the budget, and the first rare find comes late (seeds 0-9 reach one on 6 of them, seeds 0, 1, 3, 5,
    7 and 9, after 453-1217 experiments, measured on 2026-12-07 with the simulator's fair shares;
    dev/search-experiments.md). Each seed's campaign stops at its first rare find: the
    same answer as running all of its budget, at a fraction of the cost."""
    reached = []
    for seed in range(4):
        found = _first_rare_find(tmp_path / f"c{seed}", seed, 1500)
        if found is not None:
            assert found.experiments <= 1500
            reached.append(seed)
        if len(reached) >= 2:
            break
    assert len(reached) >= 2, f"seeds {reached} of 0-3 recorded a rare anomaly (#4, #6, #7, #8, #10) in 1,500"
