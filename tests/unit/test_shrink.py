"""The general shrinker on a space of plain integer dimensions, with a made-up property (no RDMA anywhere)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import collie
from collie.model.dimensions import Dimension, IntRange
from collie.shrink import MinimizeSettings, Seen, Shrinker, ladder

ROOT = Path(collie.__file__).resolve().parents[1]
#: the only collie modules the shrinker may import (generic ones, like the strategies')
ALLOWED = {"collie.model.dimensions", "collie.model.points"}


class Toy:
    """A space of integer dimensions ``a``..``h`` (1..1024, simplest 1), every point legal but ``a == 3``."""

    def __init__(self) -> None:
        self.dims = {n: IntRange(n, 1, 1024, "log2", 1) for n in "abcdefgh"}

    def is_valid(self, point: Mapping[str, Any]) -> bool:
        return point.get("a") != 3

    def dimension(self, name: str) -> Dimension:
        return self.dims[name]


def shrinker(judge: Callable[[Mapping[str, Any]], Seen | None], settings: MinimizeSettings | None = None,
             explained: Callable[[Mapping[str, Any]], bool] = lambda p: False) -> Shrinker[str]:
    return Shrinker(Toy(), judge, settings or MinimizeSettings(), explained)


def test_the_shrinker_imports_nothing_of_rdma() -> None:
    tree = ast.parse((ROOT / "collie" / "shrink.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in imported if m.startswith("collie")} == ALLOWED
    code = "import sys, collie.shrink; print('\\n'.join(m for m in sys.modules if m.startswith('collie')))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert set(proc.stdout.split()) == {"collie", "collie.model", "collie.shrink", *ALLOWED}


def test_group_probes_adopt_free_dimensions_together_and_hand_single_ones_to_the_policy() -> None:
    def judge(point: Mapping[str, Any]) -> Seen:
        return Seen(point["c"] >= 16 and point["d"] >= 16)

    s = shrinker(judge)
    current = {n: 64 for n in "abcdefgh"}
    singles: list[str] = []

    def single(d: Dimension) -> list[str]:
        """The policy's move for one dimension: its simplest value if that keeps the property."""
        singles.append(d.name)
        if current[d.name] != d.simplest() and s.still({**current, d.name: d.simplest()}, d.name):
            current[d.name] = d.simplest()
        return [] if current[d.name] == d.simplest() else [d.name]

    assert s.group([Toy().dims[n] for n in "bcdefgh"], current, single) == ["c", "d"]
    assert current == {"a": 64, "b": 1, "c": 64, "d": 64, "e": 1, "f": 1, "g": 1, "h": 1}
    assert sorted(singles) == list("bcdefgh")
    # e..h were adopted by one probe, not one each
    assert [step["why"] for step in s.steps if step["kept"]] == ["b", "e -> 1, f -> 1, g -> 1, h -> 1"]


def test_a_loss_is_rechecked_unless_it_is_clear_and_a_settled_point_is_never_run_again() -> None:
    runs: list[int] = []

    def judge(point: Mapping[str, Any]) -> Seen:
        runs.append(point["b"])
        return Seen(False, level=0.95 if point["b"] == 2 else 0.5)

    s = shrinker(judge)
    assert s.test({"a": 1, "b": 2}, "near the threshold") is False and runs == [2, 2]  # rechecked
    assert s.test({"a": 1, "b": 4}, "far below it") is False and runs == [2, 2, 4]  # a clear loss: once
    assert s.settled({"a": 1, "b": 2}) and s.settled({"a": 1, "b": 4})
    assert s.test({"a": 1, "b": 2}, "again") is False and len(runs) == 3  # settled: not run
    assert s.experiments == 3


def test_a_grouped_probe_is_not_rechecked_but_counts_as_the_first_run_of_a_single_one() -> None:
    runs: list[Mapping[str, Any]] = []

    def judge(point: Mapping[str, Any]) -> Seen:
        runs.append(point)
        return Seen(False, level=0.95)

    s = shrinker(judge)
    assert s.test({"b": 2}, "grouped", recheck=False) is False and len(runs) == 1
    assert s.test({"b": 2}, "single") is False and len(runs) == 2  # one more run makes two
    assert s.settled({"b": 2})


def test_an_illegal_or_explained_point_is_not_run_and_cannot_be_tested() -> None:
    runs: list[Mapping[str, Any]] = []

    def judge(point: Mapping[str, Any]) -> Seen:
        runs.append(point)
        return Seen(True)

    s = shrinker(judge, explained=lambda p: p.get("b") == 8)
    assert s.test({"a": 3}, "illegal") is None
    assert s.test({"b": 8}, "explained") is None and s.masked({"b": 8})
    assert runs == [] and s.steps[-1]["runs"] == 0


def test_bisection_finds_the_edge_and_refines_it_between_wide_rungs() -> None:
    def judge(point: Mapping[str, Any]) -> Seen:
        return Seen(point["b"] >= 36)

    values = ladder(Toy().dims["b"])
    s = shrinker(judge)
    # 32 lost and 45 kept on the sqrt(2) ladder: the refine probe at 38 keeps too
    assert s.bisect("b", values, 1, 1024, {"b": 1024}, lambda e, case: [f"b >= {e}"]) == (38, ["b >= 38"])
    s = shrinker(judge, MinimizeSettings(refine=False))
    assert s.bisect("b", values, 1, 1024, {"b": 1024}, lambda e, case: [f"b >= {e}"]) == (45, ["b >= 45"])


def test_a_deferred_edge_stands_wide_until_it_is_finished() -> None:
    def judge(point: Mapping[str, Any]) -> Seen:
        return Seen(point["b"] >= 40)

    s = shrinker(judge)
    s.defer = True
    edge, wide = s.bisect("b", ladder(Toy().dims["b"]), 1, 1024, {"b": 1024}, lambda e, case: [f"b >= {e}"],
                          places_case=True)
    assert len(s.open) == 1 and s.open_cost() >= 1
    assert judge({"b": edge}).kept and wide != [f"b >= {edge}"]
    conditions, case = s.finish_edges(["x", *wide], {"b": edge})
    assert conditions == ["x", "b >= 45"] and case == {"b": 45} and not s.open


def test_far_checks_are_grouped_and_a_lost_one_yields_its_conditions() -> None:
    from collie.shrink import Check

    def judge(point: Mapping[str, Any]) -> Seen:
        return Seen(point["c"] <= 64)

    s = shrinker(judge)
    for name in "bcd":
        s.far.append(Check(name, 1024, lambda current, name=name: [f"{name} edge"]))
    assert s.check_far({"b": 1, "c": 1, "d": 1}) == ["c edge"]
    assert any("," in step["why"] for step in s.steps)  # one grouped probe first


def test_a_far_check_that_cannot_run_falls_back_and_one_that_decides_nothing_is_not_left_free() -> None:
    from collie.shrink import retreating

    def judge(point: Mapping[str, Any]) -> Seen | None:  # the target runs no more than 256 of c
        return None if point["c"] > 256 else Seen(point["c"] <= 64)

    def lost(v: int) -> Callable[[dict[str, Any]], list[str]]:
        return lambda current: [f"c edge from {v}"]

    s = shrinker(judge)
    s.far.append(retreating("c", [1024, 512, 256, 128], lost))
    assert s.check_far({n: 1 for n in "abcdefgh"}) == ["c edge from 256"]  # 1024 and 512 cannot run: 256 decides
    known = shrinker(lambda point: Seen(True), explained=lambda point: point["d"] >= 512)
    known.far.append(retreating("d", [1024, 512, 256], lambda v: lambda current: [f"d edge from {v}"]))
    # a known anomaly explains 1024: that side decides nothing, so it is not claimed
    assert known.check_far({n: 1 for n in "abcdefgh"}) == ["d edge from 1024"]


def test_confirmation_counts_a_probe_that_already_kept_the_case() -> None:
    runs: list[Mapping[str, Any]] = []

    def judge(point: Mapping[str, Any]) -> Seen:
        runs.append(point)
        return Seen(True)

    s = shrinker(judge, MinimizeSettings(runs=3, required=2))
    assert s.test({"b": 1}, "kept") is True
    assert s.confirm({"b": 1}) and len(runs) == 2
