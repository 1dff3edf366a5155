"""Search presets (``search/*.toml``): strategy and its options, budget, oracle thresholds, minimization."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from collie.codec import check_fields, expect_type
from collie.data import data_dir
from collie.errors import InputError
from collie.minimize import MinimizeSettings
from collie.oracle import Thresholds
from collie.strategies import STRATEGIES
from collie.tomlio import read_toml

DEFAULT_PRESET: Final = "collie"
_TOP: Final = ("name", "description", "strategy", "budget", "duration", "strategy_options", "oracle", "minimize")
#: ``[minimize]`` keys: two of the campaign's, then every :class:`MinimizeSettings` field with the type of its default
_MIN_TYPES: Final[dict[str, tuple[type, ...]]] = {
    k: (bool,) if isinstance(v, bool) else (int,) if isinstance(v, int) else (int, float)
    for k, v in vars(MinimizeSettings()).items()
}
_MIN: Final = ("enabled", "exclude_known", *_MIN_TYPES)
_WHAT: Final = {(bool,): "true or false", (int,): "an integer", (int, float): "a number"}


@dataclass(frozen=True)
class Preset:
    name: str
    strategy: str = "anneal"
    budget: int = 600
    duration: float = 5.0
    strategy_options: dict[str, Any] = field(default_factory=dict)
    thresholds: Thresholds = field(default_factory=Thresholds)
    minimize: MinimizeSettings | None = field(default_factory=MinimizeSettings)
    exclude_known: bool = True
    description: str = ""


def preset_path(name_or_path: str) -> Path:
    """A preset by built-in name (``collie``, ``random``, ``bayes``, ``quick``) or by file path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or "/" in name_or_path:
        return p
    return data_dir("search") / f"{name_or_path}.toml"


def same_preset(given: str, own: str) -> bool:
    """Whether two preset names or files name the same preset (``quick`` and its file are one)."""
    return given == own or preset_path(given).resolve() == preset_path(own).resolve()


def check_strategy(name: str, where: str) -> str:
    """``name`` if it is a strategy, else an :class:`InputError` at ``where`` (a file) naming the known ones."""
    if name not in STRATEGIES:
        raise InputError(f"{where}: strategy: {name!r} is not a strategy; use one of {', '.join(STRATEGIES)}")
    return name


def campaign_preset(preset: str, strategy: str, where: str) -> Preset:
    """The preset a campaign runs: its ``preset`` with the campaign's ``strategy`` (the preset's own options
    only when it is the preset's strategy); ``where`` names the campaign's file.

    Raises:
        InputError: the preset cannot be loaded, or ``strategy`` is not a strategy.
    """
    chosen = load_preset(preset)
    if check_strategy(strategy, where) != chosen.strategy:
        return replace(chosen, strategy=strategy, strategy_options={})
    return chosen


def load_preset(name_or_path: str = DEFAULT_PRESET) -> Preset:
    """Load and validate a preset.

    Raises:
        InputError: missing file, unknown field, bad value (one sentence naming the field).
    """
    p = preset_path(name_or_path)
    if not p.exists() and p.parent == data_dir("search"):
        names = sorted(x.stem for x in data_dir("search").glob("*.toml"))
        raise InputError(f"unknown preset {name_or_path!r}; use one of {', '.join(names)} or a .toml file")
    raw = read_toml(p)
    where = str(p)
    check_fields(raw, where, _TOP)
    strategy = check_strategy(raw.get("strategy", "anneal"), where)
    budget = expect_type(raw.get("budget", 600), int, f"{where}: budget", "a positive integer")
    if budget < 1:
        raise InputError(f"{where}: budget: must be at least 1, got {budget}")
    duration = float(expect_type(raw.get("duration", 5.0), (int, float), f"{where}: duration", "seconds"))
    if duration <= 0:
        raise InputError(f"{where}: duration: must be positive, got {duration}")
    opts = expect_type(raw.get("strategy_options", {}), dict, f"{where}: strategy_options", "a table")
    oracle_raw = expect_type(raw.get("oracle", {}), dict, f"{where}: oracle", "a table")
    check_fields(oracle_raw, f"{where}: oracle", Thresholds.__dataclass_fields__)
    for k, v in oracle_raw.items():
        expect_type(v, (int, float), f"{where}: oracle.{k}", "a number")
    thresholds = Thresholds(**{k: float(v) for k, v in oracle_raw.items()})
    for k in ("throughput_fraction", "straggler_margin"):  # fractions: a value outside (0, 1) judges nothing
        if not 0 < getattr(thresholds, k) < 1:
            raise InputError(f"{where}: oracle.{k}: must be between 0 and 1, got {getattr(thresholds, k)}")
    min_raw = expect_type(raw.get("minimize", {}), dict, f"{where}: minimize", "a table")
    check_fields(min_raw, f"{where}: minimize", _MIN)
    enabled = expect_type(min_raw.get("enabled", True), bool, f"{where}: minimize.enabled", "true or false")
    exclude = expect_type(min_raw.get("exclude_known", True), bool, f"{where}: minimize.exclude_known",
                          "true or false")
    settings = {k: v for k, v in min_raw.items() if k not in ("enabled", "exclude_known")}
    for k, v in settings.items():
        expect_type(v, _MIN_TYPES[k], f"{where}: minimize.{k}", _WHAT[_MIN_TYPES[k]])
    minimize = MinimizeSettings(**settings) if enabled else None
    for k in ("recheck_margin", "bisect_steps", "search_bisect_steps"):
        if minimize is not None and getattr(minimize, k) < 0:
            raise InputError(f"{where}: minimize: {k} ({getattr(minimize, k)}) must be 0 or more")
    if minimize is not None and not 1 <= minimize.required <= minimize.runs:
        raise InputError(f"{where}: minimize: required ({minimize.required}) must be between 1 and runs "
                         f"({minimize.runs})")
    return Preset(name=raw.get("name", p.stem), strategy=strategy, budget=budget, duration=duration,
                  strategy_options=dict(opts), thresholds=thresholds, minimize=minimize,
                  exclude_known=exclude and enabled, description=raw.get("description", ""))
