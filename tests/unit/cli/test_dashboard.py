"""The live dashboard: the same events drawn as plain lines on a non-terminal console and as a live layout on a
recording terminal console; its state, sparklines and modes."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from simhelpers import paper_space

from collie.campaign import Campaign
from collie.cli.dashboard import Dashboard, Mode, choose_mode
from collie.cli.dashboard.state import DashboardState
from collie.cli.dashboard.view import BLOCKS, sparkline
from collie.events import AnomalyFound, Event, MfsFinished, PhaseStarted, SearchStep, TrialFinished, Warned
from collie.preset import load_preset
from collie.storage.campaign import CampaignStore
from collie.storage.records import CampaignConfig
from collie.targets.sim import SimTarget


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """Every event of a short real campaign on the simulator (it finds anomalies within 60 experiments). It searches
    the paper's space: in the whole default space its finds take the budget to confirm and minimize, so the explore
    phase's progress lines and live view are never drawn."""
    out: list[Event] = []
    preset = load_preset("quick")
    config = CampaignConfig.new(target="sim:cx6-200g", seed=0, budget=60, preset="quick", strategy=preset.strategy)
    store = CampaignStore.prepare(tmp_path_factory.mktemp("dash") / "c", config)
    Campaign(targets=[SimTarget("cx6-200g")], space=paper_space(), preset=preset, store=store, seed=0, budget=60,
             listener=out.append).run()
    assert any(isinstance(e, AnomalyFound) for e in out)
    return out


def _play(events: list[Event], console: Console, mode: Mode) -> Dashboard:
    view = Dashboard(console, mode, title="collie campaign on sim:cx6-200g", total=60, every=10)
    with view:
        for e in events:
            view(e)
    return view


def test_a_non_terminal_console_gets_plain_lines(events: list[Event]) -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=100)
    mode = choose_mode(console)
    assert mode is Mode.PLAIN
    _play(events, console, mode)
    text = buf.getvalue()
    lines = text.splitlines()
    assert lines[0] == "== calibrate: ceilings per direction kind"
    assert any(line.startswith("== explore: anneal, budget 60") for line in lines)
    assert any(line.startswith("!! A001-") and re.search(r"found at trial \d+ \(experiment \d+\)", line)
               for line in lines)
    assert "   60 experiments" in lines
    assert "\x1b[" not in text and "╭" not in text and "driven counters" not in text


def test_a_terminal_console_gets_the_live_layout(events: list[Event]) -> None:
    console = Console(file=io.StringIO(), force_terminal=True, record=True, width=140, height=60)
    view = _play(events, console, Mode.LIVE)
    text = console.export_text()
    assert "collie campaign on sim:cx6-200g" in text and "60/60 experiments" in text and "ETA" in text
    for section in ("phase", "trial", "temperature", "driven counters", "anomalies", "last verdicts", "hosts"):
        assert section in text, section
    assert "throughput" in text and "diag:" in text and any(b in text for b in BLOCKS)
    first = view.state.anomalies[0]
    assert first.anomaly_id in text and f"{first.score:.3g}x" in text and first.mfs.split(" and ")[0] in text
    # what must stay in the scrollback is printed above the live view as well
    assert f"!! {first.anomaly_id}" in text


def test_quiet_keeps_only_warnings() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False)
    assert choose_mode(console, quiet=True) is Mode.QUIET
    _play([PhaseStarted("explore", "x"), Warned("the budget ran out"),
           AnomalyFound("A001-pause", "pause@receiver", "", 3, 0, False)], console, Mode.QUIET)
    assert buf.getvalue() == "warning: the budget ran out\n"
    assert choose_mode(console, no_live=True) is Mode.PLAIN


def test_state_follows_the_search(events: list[Event]) -> None:
    state = DashboardState()
    for e in events:
        state.apply(e)
    steps = [e for e in events if isinstance(e, SearchStep)]
    assert steps and state.temperature == steps[-1].temperature and state.objectives == steps[-1].objectives
    found = [e for e in events if isinstance(e, AnomalyFound)]
    assert [a.anomaly_id for a in state.anomalies] == [e.anomaly_id for e in found]
    # the magnitude is the score of the verdict that found it
    by_experiment = {e.experiments: e.verdict.score for e in events
                     if isinstance(e, TrialFinished) and e.verdict is not None and e.verdict.anomalous}
    assert state.anomalies[0].score == by_experiment[found[0].found_at] > 1.0
    finished = [e for e in events if isinstance(e, MfsFinished)]
    for f in finished:
        assert next(a for a in state.anomalies if a.anomaly_id == f.anomaly_id).mfs == f.mfs
    assert state.experiments == 60 and next(n for n, _ in state.driven_series()) == "throughput"


def test_sparkline() -> None:
    assert sparkline([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == BLOCKS
    assert sparkline([2.0, 2.0]) == BLOCKS[4] * 2
    assert sparkline([]) == ""
    assert len(sparkline([float(i) for i in range(100)], width=40)) == 40


def test_a_workload_string_is_never_markup() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, record=True, width=120)
    with Dashboard(console, Mode.LIVE, title="[bold]x[/bold]") as view:
        view(PhaseStarted("explore", "[red]not markup[/red]"))
    text = console.export_text()
    assert "[red]not markup[/red]" in text and "[bold]x[/bold]" in text


def test_a_parallel_campaigns_lines_and_live_view_name_each_trials_chain(events: list[Event]) -> None:
    import dataclasses

    from collie.events import KnownAnomaly, TrialStarted

    chained: list[Event] = []
    for e in events:  # the same events, as if two chains had taken turns
        if isinstance(e, TrialStarted | TrialFinished | AnomalyFound | KnownAnomaly):
            e = dataclasses.replace(e, chain=e.trial % 2 if not isinstance(e, AnomalyFound) else 1)
        chained.append(e)
    buf = io.StringIO()
    _play(chained, Console(file=buf, force_terminal=False, width=100), Mode.PLAIN)
    lines = buf.getvalue().splitlines()
    assert any(line.startswith("!! A001-") and "(chain 1)" in line for line in lines)
    assert any(line.startswith("   ") and line.endswith(("experiments (chain 0)", "experiments (chain 1)"))
               for line in lines)
    console = Console(file=io.StringIO(), force_terminal=True, record=True, width=140, height=60)
    view = _play(chained, console, Mode.LIVE)
    text = console.export_text()
    finished = [e for e in chained if isinstance(e, TrialFinished)]
    assert view.state.per_chain == {c: sum(e.chain == c for e in finished) for c in (0, 1)}
    assert f"chain 0: {view.state.per_chain[0]} trials, chain 1: {view.state.per_chain[1]} trials" in text
    assert "(chain " in text
