"""K search chains at once (``--parallel K``) through the library: one class runs one chain inline and K in
threads, the chains share the anomaly set, the journal numbers trials uniquely and names each one's chain, and a
campaign stopped with trials in flight resumes to the uninterrupted campaign's result."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from simhelpers import paper_space

from collie.campaign import AnomalyRegistry, Campaign, CampaignInterrupted, CampaignSummary, chain_seed
from collie.campaign.turns import Turns
from collie.events import AnomalyFound, Event, KnownAnomaly, TrialFinished
from collie.model.features import features
from collie.model.workload import Workload
from collie.oracle import leading_symptom
from collie.preset import Preset, load_preset
from collie.storage.campaign import CampaignStore
from collie.storage.case import read_case_folder
from collie.storage.records import CampaignConfig
from collie.targets.base import RunResult
from tests.unit.campaign.test_campaign import Wrapped

PRESET = "quick"
SEED = 3


class Chained(Wrapped):
    """The simulator target, remembering which threads ran it; raises Ctrl-C at its ``interrupt_at``-th run."""

    def __init__(self, seed: int, interrupt_at: int = 0) -> None:
        super().__init__(seed=seed)
        self.interrupt_at = interrupt_at
        self.threads: set[str] = set()

    def run(self, workload: Workload, duration: float, *, repetition: int | None = None) -> RunResult:
        self.threads.add(threading.current_thread().name)
        if self.interrupt_at and self.runs + 1 == self.interrupt_at:
            raise KeyboardInterrupt()
        return super().run(workload, duration, repetition=repetition)


def _config(budget: int, parallel: int) -> CampaignConfig:
    return CampaignConfig(target="test", seed=SEED, budget=budget, preset=PRESET, strategy="anneal",
                          parallel=parallel)


def _parallel(folder: Path, targets: list[Chained], budget: int, events: list[Event] | None = None,
              resume: bool = False, preset: Preset | None = None) -> Campaign:
    store = CampaignStore.open(folder) if resume else CampaignStore.create(folder, _config(budget, len(targets)))
    return Campaign(targets=targets, space=paper_space(), preset=preset or load_preset(PRESET), store=store,
                            seed=SEED, budget=budget, listener=None if events is None else events.append,
                            resume=resume)


def _targets(k: int, interrupt_at: int = 0) -> list[Chained]:
    return [Chained(chain_seed(SEED, i), interrupt_at if i == 1 else 0) for i in range(k)]


def _rows(folder: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    for r in rows:
        r.pop("time")
        if "result" in r:
            r["result"].pop("setup_s")
    return rows


def _finished(folder: Path) -> list[dict[str, Any]]:
    return [r for r in _rows(folder) if r["status"] != "RUNNING"]


def _folders(folder: Path) -> dict[str, str]:
    return {p.name: (p / "mfs.json").read_text() if (p / "mfs.json").exists() else ""
            for p in sorted((folder / "anomalies").iterdir())} if (folder / "anomalies").is_dir() else {}


def test_one_class_runs_one_chain_inline_and_two_chains_in_threads(tmp_path: Path) -> None:
    budget = 80
    alone = Chained(SEED)
    one = _parallel(tmp_path / "one", [alone], budget).run()
    assert alone.threads == {"MainThread"}  # calibration and the search, inline
    assert all("chain" not in r for r in _rows(tmp_path / "one"))
    assert one.experiments == budget and one.calibration > 0 and one.anomalies
    assert (tmp_path / "one" / "campaign.toml").read_text().count("parallel") == 0
    pair = _targets(2)
    two = _parallel(tmp_path / "two", pair, budget).run()
    assert pair[0].threads == {"MainThread", "collie-chain-0"}  # calibration, then the chain's own thread
    assert pair[1].threads == {"collie-chain-1"}
    assert {r["chain"] for r in _rows(tmp_path / "two")} == {0, 1}
    assert two.experiments == budget and two.calibration == one.calibration
    # chain 0 of both searched with the campaign's seed on the same target: their first trials are the same
    first = [(r["trial"], r["phase"], r["key"]) for r in _finished(tmp_path / "one")][:one.calibration + 1]
    assert first == [(r["trial"], r["phase"], r["key"]) for r in _finished(tmp_path / "two")][:one.calibration + 1]


def _two_chains(folder: Path, budget: int, preset: Preset | None = None
                ) -> tuple[CampaignSummary, list[Event], list[Chained]]:
    """A campaign of two chains on the simulator; its summary, events and targets."""
    events: list[Event] = []
    targets = _targets(2)
    summary = _parallel(folder, targets, budget, events, preset=preset).run()
    return summary, events, targets


def test_two_chains_share_one_anomaly_set_one_budget_and_one_journal(tmp_path: Path) -> None:
    budget = 160
    summary, events, targets = _two_chains(tmp_path, budget)
    assert summary.experiments == budget  # the total over both chains
    # each chain ran its search trials on its own target, in its own thread
    assert targets[1].threads == {"collie-chain-1"} and "collie-chain-0" in targets[0].threads
    rows = _rows(tmp_path)
    finished = [r for r in rows if r["status"] != "RUNNING"]
    assert [r["trial"] for r in finished] == list(range(1, len(finished) + 1))  # unique, in order
    assert {r["chain"] for r in rows} == {0, 1}
    assert all(r["chain"] == 0 for r in rows if r["phase"] in ("calibrate", "replay"))
    per_chain = Counter(r["chain"] for r in finished if r["phase"] != "calibrate")
    assert min(per_chain.values()) > budget // 4, per_chain  # both chains searched
    for r in finished:  # every finished trial was journaled RUNNING by the same chain before
        started = [s for s in rows[:rows.index(r)] if s["trial"] == r["trial"] and s["status"] == "RUNNING"]
        assert started and started[-1]["chain"] == r["chain"]
    # one anomaly set: one folder per anomaly, found by one chain or the other; a chain's find that another
    # chain's anomaly explains is a known hit, never a second folder
    found = {e.anomaly_id: e.chain for e in events if isinstance(e, AnomalyFound)}
    assert set(found) == set(_folders(tmp_path)) == {a.anomaly_id for a in summary.anomalies}
    assert len(set(found.values())) == 2, found
    hits = [e for e in events if isinstance(e, KnownAnomaly)]
    assert summary.known_hits == len(hits)
    assert any(found.get(h.anomaly_id) not in (None, h.chain) for h in hits), (found, hits)
    assert all(isinstance(e.chain, int) for e in events if isinstance(e, TrialFinished))
    # no anomaly was found twice: no folder's original find lies inside the MFS of an earlier one of its symptom
    space = paper_space()
    records = [read_case_folder(tmp_path / "anomalies" / a.anomaly_id) for a in summary.anomalies]
    for i, later in enumerate(records):
        f = features(space.build(later.original.point))
        lead = leading_symptom(later.signature)
        assert not [e.anomaly_id for e in records[:i] if e.mfs is not None and e.mfs.holds(f)
                    and leading_symptom(e.signature) == lead], later.anomaly_id


def test_two_chains_journal_the_same_trials_every_time(tmp_path: Path) -> None:
    _two_chains(tmp_path / "a", 60)
    _two_chains(tmp_path / "b", 60)
    assert _rows(tmp_path / "a") == _rows(tmp_path / "b")


def test_a_campaign_stopped_with_trials_in_flight_resumes_every_chain(tmp_path: Path) -> None:
    budget = 120
    full, _, _ = _two_chains(tmp_path / "full", budget)
    cut = tmp_path / "cut"
    with pytest.raises(CampaignInterrupted):  # chain 1's target is interrupted at its 30th run
        _parallel(cut, _targets(2, interrupt_at=30), budget).run()
    rows = _rows(cut)
    finished = [r for r in rows if r["status"] != "RUNNING"]
    running = {r["trial"] for r in rows if r["status"] == "RUNNING"} - {r["trial"] for r in finished}
    assert running and len(finished) < len(_finished(tmp_path / "full"))
    resumed = _parallel(cut, _targets(2), budget, resume=True).run()
    assert _finished(cut) == _finished(tmp_path / "full")
    assert resumed.anomalies == full.anomalies and resumed.experiments == full.experiments
    assert _folders(cut) == _folders(tmp_path / "full")
    CampaignStore.open(cut).read_journal()  # the resumed journal reads back as a whole

    # a journal cut anywhere (a kill -9 between two rows) resumes too
    lines = (tmp_path / "full" / "trials.jsonl").read_text().splitlines()
    for keep in (len(lines) // 2, len(lines) // 2 + 1):
        again = tmp_path / f"cut-{keep}"
        shutil.copytree(tmp_path / "full", again)
        (again / "trials.jsonl").write_text("\n".join(lines[:keep]) + "\n")
        shutil.rmtree(again / "anomalies")
        _parallel(again, _targets(2), budget, resume=True).run()
        assert _finished(again) == _finished(tmp_path / "full")
        assert _folders(again) == _folders(tmp_path / "full")


def test_chain_seeds_are_the_campaign_seed_for_chain_0_and_distinct_for_the_others() -> None:
    assert chain_seed(7, 0) == 7
    seeds = [chain_seed(7, i) for i in range(1, 9)]
    assert len(set(seeds)) == 8 and 7 not in seeds and seeds == [chain_seed(7, i) for i in range(1, 9)]


def test_a_find_waits_while_another_chain_minimizes_one_of_its_symptom() -> None:
    registry = AnomalyRegistry(paper_space(), [])
    registry.hold(0, "pause@receiver+low_throughput@receiver")
    assert registry.held_elsewhere(1, "pause@receiver")  # the same leading symptom: maybe the same anomaly
    assert not registry.held_elsewhere(1, "low_throughput@receiver")
    assert not registry.held_elsewhere(0, "pause@receiver")  # its own
    registry.release(0)
    assert not registry.held_elsewhere(1, "pause@receiver")


def test_turns_go_round_in_chain_order_and_skip_chains_that_left() -> None:
    turns = Turns([0, 1, 2])
    order: list[int] = []
    lock = threading.Lock()

    def chain(i: int, steps: int) -> None:
        for _ in range(steps):
            turns.wait(i)
            with lock:
                order.append(i)
            turns.pass_on(i)
        turns.wait(i)
        turns.leave(i)

    threads = [threading.Thread(target=chain, args=(i, n)) for i, n in ((0, 3), (1, 1), (2, 2))]
    for t in reversed(threads):
        t.start()
    for t in threads:
        t.join(30)
    assert order == [0, 1, 2, 0, 2, 0]


def test_a_parallel_campaign_extended_by_resume_re_walks_each_budget_and_resumes_from_a_cut(tmp_path: Path) -> None:
    def extend(folder: Path, budget: int) -> CampaignSummary:
        store = CampaignStore.open(folder)
        config = store.config().resumed(str(folder / "campaign.toml"), budget=budget)
        store.stage(config)
        return Campaign(targets=_targets(2), space=paper_space(), preset=load_preset(PRESET), store=store,
                                seed=SEED, budget=config.budget, resume=True,
                                earlier_budgets=config.earlier_budgets).run()

    full = tmp_path / "full"
    _parallel(full, _targets(2), 50).run()
    whole = extend(full, 90)
    assert whole.experiments == 90
    lines = (full / "trials.jsonl").read_text().splitlines()
    cut = tmp_path / "cut"
    shutil.copytree(full, cut)
    (cut / "trials.jsonl").write_text("\n".join(lines[:len(lines) * 3 // 4]) + "\n")
    shutil.rmtree(cut / "anomalies")
    again = extend(cut, 90)
    assert _finished(cut) == _finished(full) and again.anomalies == whole.anomalies
