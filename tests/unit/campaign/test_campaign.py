"""The campaign loop through its library API: determinism, truth-blindness, failures, resume."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from simhelpers import paper_space

from collie.calibrate import calibration_workloads
from collie.campaign import AnomalyRecord, Campaign, CampaignSummary
from collie.campaign import budget as budget_module
from collie.events import AnomalyFound, KnownAnomaly, MfsFinished, TrialFinished, Warned
from collie.mfs import MFS, Condition
from collie.minimize import off_edges
from collie.model.features import features
from collie.model.space import load_space
from collie.model.workload import Workload
from collie.preset import Preset, load_preset
from collie.storage.campaign import CampaignStore
from collie.storage.case import HitKind, read_case_folder
from collie.storage.corpus import load_corpus
from collie.storage.records import CampaignConfig
from collie.targets.base import RunResult, TargetInfo
from collie.targets.sim import SimTarget


class Wrapped:
    """A target around the simulator that can drop ground truth, fail every n-th run, or say every m-th run was
    engine-bound (as a verbs target whose engine limited it would)."""

    def __init__(self, seed: int = 0, strip_truth: bool = False, fail_every: int = 0,
                 engine_bound_every: int = 0) -> None:
        self.sim = SimTarget("cx6-200g-amd", seed=seed)
        self.strip_truth = strip_truth
        self.fail_every = fail_every
        self.engine_bound_every = engine_bound_every
        self.runs = 0

    def __enter__(self) -> Wrapped:
        self.sim.__enter__()
        return self

    def __exit__(self, a: type[BaseException] | None, b: BaseException | None, c: TracebackType | None) -> None:
        self.sim.__exit__(a, b, c)

    def describe(self) -> TargetInfo:
        return self.sim.describe()

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        self.runs += 1
        if self.fail_every and self.runs > len(calibration_workloads()) and self.runs % self.fail_every == 0:
            raise RuntimeError("NIC went away")
        r = self.sim.run(workload, duration, repetition=repetition)
        if self.engine_bound_every and self.runs % self.engine_bound_every == 0:
            r = dataclasses.replace(r, engine_bound=True)
        return dataclasses.replace(r, truth=()) if self.strip_truth else r


def config(seed: int = 0, budget: int = 250) -> CampaignConfig:
    return CampaignConfig(target="test", seed=seed, budget=budget, preset="collie", strategy="anneal")


def _campaign(tmp: Path, target: Any, budget: int = 250, seed: int = 3, resume: bool = False) -> Campaign:
    store = CampaignStore.open(tmp) if resume else CampaignStore.create(tmp, config(seed, budget))
    return Campaign(targets=[target], space=load_space(), preset=load_preset("collie"), store=store, seed=seed,
                    budget=budget, resume=resume)


def _journal(tmp: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp / "trials.jsonl").read_text().splitlines()]


def test_campaign_finds_minimizes_and_saves_replayable_cases(tmp_path: Path) -> None:
    summary = _campaign(tmp_path, Wrapped()).run()
    assert summary.experiments == 250
    assert summary.calibration == len(calibration_workloads())
    assert summary.anomalies, "the AMD-host profile has common anomalies that 250 experiments must meet"
    # the last ones (one being minimized and any met meanwhile) may have been cut short by the budget: then they
    # are saved unminimized
    minimized = [a.mfs is not None for a in summary.anomalies]
    assert minimized == sorted(minimized, reverse=True) and minimized[0]
    for a in summary.anomalies:
        folder = tmp_path / "anomalies" / a.anomaly_id
        case = Workload.load(folder / "case.toml")
        assert (a.mfs is not None and a.mfs.matches(case)) or not a.confirmed
        record = read_case_folder(folder)
        assert record.evidence is not None and record.original is not None
        assert record.evidence.point == a.point and record.workload.flows == load_space().build(a.point).flows
        for point, verdict in ((record.original.point, record.original.verdict),
                               (record.evidence.point, record.evidence.verdict)):
            assert set(verdict.evidence["hosts"]) == set(load_space().build(point).hosts)  # every end measured
    records = _journal(tmp_path)
    assert [r["trial"] for r in records if r["status"] != "RUNNING"] == list(range(1, len(records) // 2 + 1))


def test_ground_truth_is_never_read(tmp_path: Path) -> None:
    with_truth = _campaign(tmp_path / "a", Wrapped()).run()
    without = _campaign(tmp_path / "b", Wrapped(strip_truth=True)).run()
    assert [(a.anomaly_id, a.mfs, a.point) for a in with_truth.anomalies] == \
           [(a.anomaly_id, a.mfs, a.point) for a in without.anomalies]
    strip = [{k: v for k, v in r.items() if k != "time"} for r in _journal(tmp_path / "a")]
    assert strip == [{k: v for k, v in r.items() if k != "time"} for r in _journal(tmp_path / "b")]


def test_a_find_near_the_end_leaves_the_budget_kept_for_finishing_edges(tmp_path: Path) -> None:
    # a find's confirmation and minimization may not spend what finishing the earlier open edges needs: the
    # earlier MFSs are finished, and what finishing did not need goes to the find that waited, then to exploring
    events: list[Any] = []
    campaign = _campaign(tmp_path, Wrapped(), budget=260)  # at 255-270 a find waits, then fits in what is left
    campaign.listener = events.append
    summary = campaign.run()
    assert summary.experiments == 260
    waited = next(e for e in events if isinstance(e, Warned) and "once they are finished" in e.message)
    trial = int(waited.message.split(":")[0].removeprefix("trial "))
    found = next(e for e in events if isinstance(e, AnomalyFound) and e.trial == trial)
    between = events[events.index(waited):events.index(found)]
    finished = {e.anomaly_id: e.mfs for e in between if isinstance(e, MfsFinished)}
    assert finished and not [e for e in between if isinstance(e, Warned) and "finishing" in e.message]
    assert all(a.mfs is not None and a.mfs.describe() == finished[a.anomaly_id]
               for a in summary.anomalies if a.anomaly_id in finished)
    assert found.mfs  # what finishing left was enough to minimize the find that waited


def test_a_find_that_reaches_the_kept_experiments_waits_for_the_edges_to_be_finished(tmp_path: Path) -> None:
    # a find whose recording reaches what finishing the open edges may take is not given up at once: the edges
    # are finished first, and it is recorded with what finishing left, its runs so far kept (saved as found if
    # that was too little); try budgets until one ends the search with such a find
    for budget in range(120, 320, 10):
        events: list[Any] = []
        campaign = _campaign(tmp_path / str(budget), Wrapped(), budget=budget)
        campaign.listener = events.append
        summary = campaign.run()
        waited = [e for e in events if isinstance(e, Warned) and "once they are finished" in e.message]
        if waited:
            break
    else:
        raise AssertionError("no budget made a find wait for the open edges")
    assert summary.experiments == budget
    trial = int(waited[0].message.split(":")[0].removeprefix("trial "))
    at = events.index(waited[0])
    found = next(i for i, e in enumerate(events) if isinstance(e, AnomalyFound) and e.trial == trial)
    name = events[found].anomaly_id
    finishing = [i for i, e in enumerate(events) if isinstance(e, MfsFinished)]
    assert finishing and at < min(finishing) and finishing[0] < found  # the edges first, then the find
    record = read_case_folder(tmp_path / str(budget) / "anomalies" / name)
    assert record.evidence is not None and len(record.evidence.runs) >= 2  # its find's runs, and the later ones
    if record.mfs is None:
        assert any(isinstance(e, Warned) and "saved as found" in e.message and name in e.message for e in events)


def test_the_strategy_sees_each_minimized_anomaly_as_a_region_around_its_case(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, Wrapped(), budget=250)
    summary = campaign.run()
    regions = campaign.strategies[0]._regions()  # type: ignore[attr-defined]
    minimized = [a for a in summary.anomalies if a.mfs is not None and a.mfs.conditions and a.point]
    assert len(minimized) >= 2 and [r.point for r in regions] == [a.point for a in minimized]
    rng = np.random.default_rng(0)
    space = load_space()
    for region, anomaly in zip(regions, minimized, strict=True):
        assert anomaly.mfs is not None and region.misses(region.point) == 0  # its case lies inside
        for _ in range(20):
            p = space.sample(rng)
            f = features(space.build(p))
            assert region.misses(p) == len(anomaly.mfs.broken(f))


def test_the_exclusion_counts_the_known_regions_a_point_is_in(tmp_path: Path) -> None:
    # a repair steps out of overlapping regions one at a time, so it needs how many hold a point, not whether
    campaign = _campaign(tmp_path, Wrapped())
    reads = MFS("pause@receiver", (Condition("opcode", "==", "READ"),))
    small_mtu = MFS("pause@receiver", (Condition("mtu", "<=", 1024),))
    campaign.registry.known += [AnomalyRecord("A001-pause", "pause@receiver", reads, {}, 1, True),
                       AnomalyRecord("A002-pause", "pause@receiver", small_mtu, {}, 2, True),
                       AnomalyRecord("A003-pause", "pause@receiver", None, {}, 3, False)]  # unminimized
    exclude = campaign.strategies[0]._exclude  # type: ignore[attr-defined]
    space = load_space()
    simplest = {**space.simplest(), "op": "RC_WRITE", "mtu": 4096}
    assert exclude(simplest) == 0
    assert exclude({**simplest, "op": "RC_READ"}) == 1 and exclude({**simplest, "mtu": 512}) == 1
    assert exclude({**simplest, "op": "RC_READ", "mtu": 512}) == 2


def test_target_failures_are_recorded_and_the_campaign_goes_on(tmp_path: Path) -> None:
    summary = _campaign(tmp_path, Wrapped(fail_every=7), budget=120).run()
    failed = [r for r in _journal(tmp_path) if r["status"] == "FAILED"]
    assert failed and all("NIC went away" in r["reason"] for r in failed)
    assert summary.failed == len(failed) and summary.experiments == 120


def test_the_summary_counts_the_engine_bound_runs_as_the_journal_records_them(tmp_path: Path) -> None:
    summary = _campaign(tmp_path, Wrapped(engine_bound_every=5), budget=60).run()
    bound = [r for r in _journal(tmp_path) if r.get("result", {}).get("engine_bound")]
    assert summary.engine_bound == len(bound) > 0
    phases = {r["phase"] for r in bound}
    assert "calibrate" in phases and phases & {"explore", "confirm", "minimize"}  # every phase's runs count
    assert all(not r["verdict"]["anomalous"] for r in bound if "verdict" in r)  # never judged
    resumed = _campaign(tmp_path, Wrapped(), budget=60, resume=True).run()  # every run read back from the journal
    assert resumed.engine_bound == summary.engine_bound


def _rows(tmp: Path) -> list[dict[str, Any]]:
    """The journal less timestamps and durations."""
    rows = _journal(tmp)
    for r in rows:
        r.pop("time")
        if "result" in r:
            r["result"].pop("setup_s")
    return rows


def test_resume_from_a_cut_journal_writes_the_uncut_campaigns_journal(tmp_path: Path) -> None:
    full = _campaign(tmp_path / "full", Wrapped(), budget=150).run()
    lines = (tmp_path / "full" / "trials.jsonl").read_text().splitlines()
    # a crash mid-trial (the RUNNING record of the next trial plus half of its COMPLETE line), and a crash
    # while a trial ran (its RUNNING record last); each resumed campaign's journal is the uncut one's
    third = len(lines) // 3 // 2 * 2  # a number of whole trials' rows
    for keep, torn in ((third + 1, lines[third + 1][:40]), (2 * third + 1, "")):
        assert json.loads(lines[keep - 1])["status"] == "RUNNING"
        cut = tmp_path / f"cut-{keep}"
        shutil.copytree(tmp_path / "full", cut)
        (cut / "trials.jsonl").write_text("\n".join(lines[:keep]) + "\n" + torn)
        shutil.rmtree(cut / "anomalies")
        resumed = _campaign(cut, Wrapped(), budget=150, resume=True).run()
        assert resumed.anomalies == full.anomalies
        assert resumed.experiments == full.experiments
        assert _rows(cut) == _rows(tmp_path / "full")


SIDE_PROFILE = """
name = "side-findings"
description = "two made-up anomalies one direction apart: a bidirectional READ pauses, a one-way READ crawls"
dialect = "mlx5"
hosts = ["a", "b"]
quirks = []

[nic]
model = "test NIC"
firmware = "1.0"
driver = "mlx5"
line_rate_gbps = 200
msg_rate_mpps = 150

[[quirk]]
id = "t-bidir-read-pause"
summary = "bidirectional READ on 64+ QPs pauses"
cause = "made up"
when = ["bidirectional", "opcode == READ", "qps_total >= 64"]
symptom = { pause = 0.2 }
diagnostics = ["sim_pkt_pipeline_stall"]

[[quirk]]
id = "t-oneway-read-slow"
summary = "one-way READ on 64+ QPs crawls"
cause = "made up"
when = ["not bidirectional", "opcode == READ", "qps_total >= 64"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_pkt_pipeline_stall"]
"""


class _FirstThen:
    """Asks the given points first, then whatever the wrapped strategy asks."""

    def __init__(self, first: list[dict[str, Any]], then: Any) -> None:
        self.first = list(first)
        self.then = then

    def ask(self) -> dict[str, Any]:
        return self.first.pop(0) if self.first else self.then.ask()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.then, name)


def _scripted(tmp: Path, profile_text: str, first: list[dict[str, Any]], budget: int,
              events: list[Any] | None = None, preset: Preset | None = None) -> CampaignSummary:
    """A campaign on a made-up profile whose search asks ``first`` (points of the paper's space) before
    anything else."""
    profile = tmp / "profile.toml"
    profile.write_text(profile_text)
    store = CampaignStore.create(tmp / "c", config(0, budget))
    campaign = Campaign(targets=[SimTarget(str(profile))], space=paper_space(), preset=preset or load_preset("collie"),
                        store=store, seed=0, budget=budget,
                        listener=None if events is None else events.append)
    campaign.strategies[0] = _FirstThen(first, campaign.strategies[0])
    return campaign.run()


def test_an_anomaly_met_while_minimizing_another_is_followed_up(tmp_path: Path) -> None:
    # the search first meets the pause (bidirectional READ); minimizing it tries direction -> oneway, which
    # shows the other anomaly (low throughput): that one is confirmed and minimized straight after
    first = {**paper_space().simplest(), "op": "RC_READ", "direction": "bidirectional", "qps": 100}
    summary = _scripted(tmp_path, SIDE_PROFILE, [first], budget=120)
    assert [a.signature.split("@")[0] for a in summary.anomalies[:2]] == ["pause", "low_throughput"]
    pause, slow = summary.anomalies[:2]
    assert pause.mfs is not None and slow.mfs is not None
    assert "bidirectional == True" in pause.mfs.describe() and "opcode == READ" in pause.mfs.describe()
    assert "opcode == READ" in slow.mfs.describe()
    phases = [r["phase"] for r in _journal(tmp_path / "c") if r["status"] != "RUNNING"]
    # explore (the pause), its confirmation and minimization, then the side finding's: no explore between
    second_confirm = [i for i in range(1, len(phases)) if phases[i - 1] == "minimize" and phases[i] == "confirm"]
    start = phases.index("explore")
    assert second_confirm and "explore" not in phases[start + 1:second_confirm[0]]


EDGE_PROFILE = SIDE_PROFILE.split("[[quirk]]")[0].replace('"side-findings"', '"edge"') + """
[[quirk]]
id = "t-read-100-qps"
summary = "READ on 100+ QPs crawls"
cause = "made up"
when = ["opcode == READ", "qps_total >= 100"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_qpc_cache_miss"]
"""


def _undeferred() -> Preset:
    """The collie preset with every edge bisected when its anomaly is found."""
    preset = load_preset("collie")
    assert preset.minimize is not None
    return dataclasses.replace(preset, minimize=dataclasses.replace(
        preset.minimize, search_bisect_steps=preset.minimize.bisect_steps))


def test_a_find_just_past_a_known_edge_widens_that_mfs(tmp_path: Path) -> None:
    # the minimizer's bisection stops on a ladder step (qps_total >= 128 for a true edge of 100); a later find
    # at 100 QPs is the same anomaly: confirmed and taken in by moving the edge, not minimized again
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    summary = _scripted(tmp_path, EDGE_PROFILE, [{**read, "qps": 181}, {**read, "qps": 100}], 60, events,
                        _undeferred())
    widened = [e for e in events if isinstance(e, KnownAnomaly) and e.widened]
    assert widened and "qps_total >= 128" not in widened[0].widened  # the edge moved, from 128 to 100
    slow = [a for a in summary.anomalies if a.signature.startswith("low_throughput")]
    assert len(slow) == 1 and slow[0].mfs is not None
    assert "qps_total >= 100" in slow[0].mfs.describe()
    saved = json.loads((tmp_path / "c" / "anomalies" / slow[0].anomaly_id / "mfs.json").read_text())
    assert saved["text"] == slow[0].mfs.describe()


TWO_EDGE_PROFILE = SIDE_PROFILE.split("[[quirk]]")[0].replace('"side-findings"', '"two-edges"') + """
[[quirk]]
id = "t-read-qps-batch"
summary = "READ on 50+ QPs with post lists of 12+ crawls"
cause = "made up"
when = ["opcode == READ", "qps_total >= 50", "batch >= 12"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_qpc_cache_miss"]
"""


def test_a_widened_mfs_takes_its_case_along_while_its_other_edges_are_open(tmp_path: Path) -> None:
    # the first find's edges are left open (deferred; its QP edge wide at 64, between 45 that lost and 181); a
    # find at 55 QPs widens it while its post-list edge is still open: the case moves to 55 QPs (its post list
    # moves when that edge is finished), so it sits at every edge of the finished MFS (it stayed at 181)
    read = {**paper_space().simplest(), "op": "RC_READ", "batch": 64}
    events: list[Any] = []
    summary = _scripted(tmp_path, TWO_EDGE_PROFILE, [{**read, "qps": 181}, {**read, "qps": 55}], 80, events)
    assert [e for e in events if isinstance(e, KnownAnomaly) and e.widened]
    (slow,) = [a for a in summary.anomalies if a.signature.startswith("low_throughput")]
    assert slow.mfs is not None and "qps_total >= 55" in slow.mfs.describe()
    assert off_edges(paper_space(), slow.mfs, slow.point) == [], (slow.mfs.describe(), slow.point)


NEIGHBOUR_PROFILE = EDGE_PROFILE.replace('"edge"', '"edge-neighbour"') + """
[[quirk]]
id = "t-read-batch-slow"
summary = "READ on 64+ QPs with deep post lists crawls"
cause = "made up"
when = ["opcode == READ", "qps_total >= 64", "batch >= 32"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_pkt_pipeline_stall"]
"""


def test_a_find_past_a_known_edge_from_another_anomaly_is_minimized_not_widened(tmp_path: Path) -> None:
    # the second find lies just past the first MFS's edge (80 QPs vs qps_total >= 128) with the same symptom,
    # but another anomaly (deep post lists) is why: the known minimal case moved to 80 QPs does not crawl, so
    # the find is minimized on its own instead of widening the first MFS to qps_total >= 80
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    summary = _scripted(tmp_path, NEIGHBOUR_PROFILE, [{**read, "qps": 181}, {**read, "qps": 80, "batch": 64}], 90,
                        events, _undeferred())
    assert not [e for e in events if isinstance(e, KnownAnomaly) and e.widened]
    described = [a.mfs.describe() for a in summary.anomalies if a.mfs is not None]
    assert len(described) >= 2 and "batch >= 32" in described[1], described
    assert all("qps_total >= 80" not in d for d in described[:1]), described


OVERLAP_PROFILE = SIDE_PROFILE.split("[[quirk]]")[0].replace('"side-findings"', '"overlap"') + """
[[quirk]]
id = "t-rc-many-qp-slow"
summary = "any RC verb on 64+ QPs crawls"
cause = "made up"
when = ["transport == RC", "qps_total >= 64"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_qpc_cache_miss"]

[[quirk]]
id = "t-rc-send-pause"
summary = "RC SEND on 64+ QPs also pauses (inside the region of the first)"
cause = "made up"
when = ["transport == RC", "opcode == SEND", "qps_total >= 64"]
symptom = { pause = 0.2 }
diagnostics = ["sim_rx_wqe_cache_miss"]
"""


def test_an_anomaly_inside_another_ones_region_is_kept_apart(tmp_path: Path) -> None:
    # minimizing the crawl from an RC WRITE, RC SEND shows it behind the second anomaly's pause: a masked run,
    # so RC READ decides (it crawls: the opcode is not necessary). The RC SEND point, inside the crawl's MFS
    # but leading with a pause, is the second anomaly, minimized on its own rather than taken as known
    write = {**paper_space().simplest(), "op": "RC_WRITE", "qps": 100}
    summary = _scripted(tmp_path, OVERLAP_PROFILE, [write], budget=120)
    by_kind = {a.signature.split("@")[0]: a for a in summary.anomalies}
    slow, pause = by_kind["low_throughput"], by_kind["pause"]
    assert slow.mfs is not None and pause.mfs is not None
    assert "transport == RC" in slow.mfs.describe() and "opcode" not in slow.mfs.describe()
    assert "opcode == SEND" in pause.mfs.describe()


def test_open_edges_are_finished_after_the_search_and_the_rest_of_the_budget_explored(tmp_path: Path) -> None:
    # the search goes on after a find with the MFS's edge at the wide end of its bracket (qps_total >= 91 for a
    # true edge of 100: wider); the campaign keeps what finishing can cost, finishes it after the search, saves
    # the finished MFS and explores with what finishing left over, so the whole budget is spent
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    summary = _scripted(tmp_path, EDGE_PROFILE, [{**read, "qps": 4096}], 120, events)
    found = [e for e in events if isinstance(e, AnomalyFound)]
    finished = [e for e in events if isinstance(e, MfsFinished)]
    assert len(found) == 1 and len(finished) == 1
    wide = _qps_edge(found[0].mfs)
    exact = _qps_edge(finished[0].mfs)
    assert wide < exact <= 128  # the true edge is 100; the ladder's rungs around it are 91 and 128
    slow = summary.anomalies[0]
    assert slow.mfs is not None and slow.mfs.describe() == finished[0].mfs
    folder = tmp_path / "c" / "anomalies" / slow.anomaly_id
    assert json.loads((folder / "mfs.json").read_text())["text"] == finished[0].mfs
    assert Workload.load(folder / "case.toml").description.endswith(f"MFS: {finished[0].mfs}")
    evidence = json.loads((folder / "evidence.json").read_text())
    assert evidence["minimize_experiments"] == found[0].minimize_experiments + finished[0].experiments
    assert summary.experiments == 120 and summary.minimize_experiments > finished[0].experiments > 0


def _qps_edge(mfs_text: str) -> int:
    return int(mfs_text.split("qps_total >= ")[1].split()[0])


def test_a_budget_spent_before_the_edges_are_finished_keeps_the_wide_mfs(tmp_path: Path) -> None:
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _scripted(tmp_path / "a", EDGE_PROFILE, [{**read, "qps": 4096}], 120, events)
    found = next(e for e in events if isinstance(e, AnomalyFound))
    # the same campaign, with a budget that ends one experiment after the find was minimized
    events = []
    summary = _scripted(tmp_path / "b", EDGE_PROFILE, [{**read, "qps": 4096}], found.experiments + 1, events)
    assert summary.experiments == found.experiments + 1
    warnings = [e.message for e in events if isinstance(e, Warned)]
    assert any("ran out while finishing the edges" in w for w in warnings)
    slow = summary.anomalies[0]
    assert slow.mfs is not None and slow.mfs.describe() == found.mfs  # wide, and still true of the anomaly
    assert first.anomalies[0].mfs != slow.mfs


def _with_corpus(tmp: Path, corpus: Path, budget: int, events: list[Any]) -> Campaign:
    store = CampaignStore.create(tmp, config(5, budget))
    campaign = Campaign(targets=[Wrapped()], space=load_space(), preset=load_preset("collie"), store=store, seed=5,
                        budget=budget, corpus=load_corpus(corpus), listener=events.append)
    campaign.run()
    return campaign


def test_a_corpus_is_replayed_first_and_keeps_the_search_out_of_its_regions(tmp_path: Path) -> None:
    first = _campaign(tmp_path / "a", Wrapped(), budget=250).run()
    minimized = {a.anomaly_id: a.mfs for a in first.anomalies if a.mfs is not None and a.mfs.conditions}
    assert len(minimized) >= 3
    events: list[Any] = []
    again = _with_corpus(tmp_path / "b", tmp_path / "a" / "anomalies", 250, events)
    assert again.summary.replayed == len(first.anomalies)
    reproduced = [Path(p).parent.name for p in again.summary.corpus_reproduced]
    assert len(reproduced) >= len(minimized) - 1  # a replay is one noisy run
    # each minimized case that reproduced is known before the search starts, with its MFS
    corpus_known = {a.anomaly_id: a.mfs for a in again.registry.known if a.anomaly_id.startswith("corpus:")}
    assert corpus_known == {f"corpus:{name}": minimized[name] for name in reproduced if name in minimized}
    # and nothing it explains is found again as new
    assert all(a.mfs is None or a.mfs not in corpus_known.values() for a in again.summary.anomalies)


def test_a_corpus_mfs_without_conditions_does_not_hide_the_whole_space(tmp_path: Path) -> None:
    first = _campaign(tmp_path / "a", Wrapped(), budget=120).run()
    folder = tmp_path / "a" / "anomalies" / first.anomalies[0].anomaly_id
    (folder / "mfs.json").write_text(json.dumps({"signature": first.anomalies[0].signature, "conditions": []}))
    events: list[Any] = []
    again = _with_corpus(tmp_path / "b", tmp_path / "a" / "anomalies", 200, events)
    assert any(isinstance(e, Warned) and "has no conditions" in e.message for e in events)
    assert again.summary.anomalies, "the search found nothing: the empty MFS kept it out of everything"


def test_a_find_left_unminimized_has_no_mfs_file(tmp_path: Path) -> None:
    # a budget that ends right after a find leaves it unminimized: try budgets until one does
    for budget in range(120, 320, 9):
        folder = tmp_path / str(budget)
        summary = _campaign(folder, Wrapped(), budget=budget, seed=0).run()
        for a in summary.anomalies:
            assert (folder / "anomalies" / a.anomaly_id / "mfs.json").is_file() == (a.mfs is not None)
        if any(a.mfs is None for a in summary.anomalies):
            return
    raise AssertionError("no budget left a find unminimized")


def test_a_known_anomaly_inside_a_later_finds_region_joins_it_as_a_further_hit(tmp_path: Path) -> None:
    # the first find (an incast of 54 QPs a side: 108 in all) cannot lose the incast without falling under the
    # 100-QP edge, so its MFS needs the incast's loopback flow (READ payloads go to both hosts: no incast into
    # one NIC, so no `incast == True`, which its own case breaks); the second (one way, 181 QPs) shows that any
    # READ on enough QPs crawls: a region around the first one's. One anomaly: the first joins the second as a
    # further hit
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    summary = _scripted(tmp_path, EDGE_PROFILE, [{**read, "qps": 54, "direction": "incast"}, {**read, "qps": 181}],
                        80, events)
    found = [e for e in events if isinstance(e, AnomalyFound)]
    assert "loopback == True" in found[0].mfs and "loopback" not in found[1].mfs
    joined = [e for e in events if isinstance(e, KnownAnomaly) and e.joined]
    assert [(e.joined, e.anomaly_id, e.kind) for e in joined] == [(found[0].anomaly_id, found[1].anomaly_id,
                                                                    HitKind.NESTED)]
    assert [a.anomaly_id for a in summary.anomalies] == [found[1].anomaly_id] and summary.known_hits == 1
    folders = sorted(p.name for p in (tmp_path / "c" / "anomalies").iterdir())
    assert folders == [found[1].anomaly_id]
    evidence = json.loads((tmp_path / "c" / "anomalies" / folders[0] / "evidence.json").read_text())
    first_trial = next(e.trial for e in events if isinstance(e, TrialFinished) and e.phase == "explore")
    # the hit costs what confirming and minimizing the first find did
    assert evidence["hits"] == [{"trial": first_trial, "kind": "nested", "signature": found[0].signature,
                                 "experiments": found[0].minimize_experiments}]


def test_minimizing_never_moves_a_find_into_a_known_region(tmp_path: Path) -> None:
    # a READ crawl known on 100+ QPs; a find of the deep-post-list crawl (80 QPs, batch 64) whose minimization
    # tries more QPs would land in the known region, where the crawl says nothing about this anomaly
    read = {**paper_space().simplest(), "op": "RC_READ"}
    events: list[Any] = []
    summary = _scripted(tmp_path, NEIGHBOUR_PROFILE, [{**read, "qps": 181}, {**read, "qps": 80, "batch": 64}], 90,
                        events, _undeferred())
    minimized = [e for e in events if isinstance(e, TrialFinished) and e.phase == "minimize"
                 and e.verdict is not None and e.verdict.anomalous and e.point.get("batch", 1) >= 32]
    known = summary.anomalies[0].mfs
    assert known is not None
    cases = [a for a in summary.anomalies if a.mfs is not None and "batch" in a.mfs.describe()]
    assert cases and all(not known.holds(features(load_space().build(a.point))) for a in cases)
    assert minimized  # the second anomaly was minimized, not taken for the first


TWO_SLOW_PROFILE = SIDE_PROFILE.split("[[quirk]]")[0].replace('"side-findings"', '"two-slow"') + """
[[quirk]]
id = "t-read-slow"
summary = "READ on 100+ QPs crawls"
cause = "made up"
when = ["opcode == READ", "qps_total >= 100"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_qpc_cache_miss"]

[[quirk]]
id = "t-write-sge-slow"
summary = "WRITE with 4+ SGEs on 100+ QPs crawls"
cause = "made up"
when = ["opcode == WRITE", "sges >= 4", "qps_total >= 100"]
symptom = { throughput = 0.3 }
diagnostics = ["sim_qpc_cache_miss"]
"""


def test_a_symptom_past_its_share_of_the_budget_is_minimized_without_far_sides(tmp_path: Path,
                                                                                monkeypatch: Any) -> None:
    # every experiment spent on a symptom's finds counts toward its share; once low throughput has spent more
    # than its share (none, here), its next find is minimized without far-side checks, and the campaign says so
    monkeypatch.setattr(budget_module, "SYMPTOM_SHARE", 0.0)
    simplest = paper_space().simplest()
    first = [{**simplest, "op": "RC_READ", "qps": 4096}, {**simplest, "op": "RC_WRITE", "sges": 8, "qps": 4096}]
    events: list[Any] = []
    _scripted(tmp_path, TWO_SLOW_PROFILE, first, 120, events)
    found = [e for e in events if isinstance(e, AnomalyFound)]
    coarse = [e.message for e in events if isinstance(e, Warned) and "without far-side checks" in e.message]
    assert len(found) >= 2 and found[0].signature.startswith("low_throughput")
    assert coarse and all(found[0].anomaly_id not in m for m in coarse) and found[1].anomaly_id in coarse[0]


def test_finds_spend_their_symptoms_share_of_the_budget(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, Wrapped(), budget=250)
    summary = campaign.run()
    shares = campaign.budget.shares
    assert {a.signature.split("@")[0] for a in summary.anomalies} <= set(shares)
    assert sum(shares.values()) >= summary.minimize_experiments > 0


def test_a_saved_case_keeps_its_pattern_and_gets_its_name() -> None:
    """A case is named after its anomaly and described by its signature; a pattern's case stays a pattern (its
    connections alone would be another experiment, with another key)."""
    from collie.campaign.chain import _described
    from collie.model.flow import Endpoint, Flow
    from collie.model.patterns import Pattern, PatternKind

    ring = Workload.of_pattern(Pattern(PatternKind.RING_ALLREDUCE, ("h0", "h1", "h2"), 1 << 20,
                                       flow=Flow(Endpoint("a"), Endpoint("b"), sizes=(65536,))))
    named = _described(ring, AnomalyRecord("A001-straggler", "straggler@host", None, {}, 1, True), None)
    assert named.pattern == ring.pattern and named.key() == ring.key()
    assert (named.name, named.description) == ("A001-straggler", "straggler@host; MFS: not minimized")
