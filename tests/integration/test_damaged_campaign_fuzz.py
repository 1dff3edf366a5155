"""Damaged-file fuzzing: ``campaign.toml`` and journal rows mutated at random, then ``collie campaign --resume``.

Every mutation (truncation, garbage bytes, missing keys, wrong types, rows deleted, repeated or swapped) must end
in exit 0 (perhaps with a warning) or in one sentence and exit 2; never a traceback, and never a silent loss of a
completed trial: after exit 0 the journal still begins with every whole row it held (less the trace of a crash:
a torn last line, the RUNNING row of the trial in flight), and no finished trial was run twice; after exit 2 the
journal is as it was (less that trace). Most mutations go through click's CliRunner in-process (fast); a few
through the real subprocess CLI.
"""

from __future__ import annotations

import json
import random
import shutil
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from click.testing import CliRunner

from collie.cli import main
from tests.conftest import run_cli

MUTATIONS = 520
SUBPROCESS_MUTATIONS = 6
_WRONG: tuple[Any, ...] = (None, "abc", 12345, -1, 1.5, True, [], {}, [1, "x"], {"x": 1})


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished campaign small enough to resume in milliseconds (it finds an anomaly, and warns of nothing)."""
    out = tmp_path_factory.mktemp("fuzz") / "c"
    # the default (whole) space, so the rows carry its new point fields (mix, rq_depth, churn...); seed 5 meets an
    # anomaly at its first experiment, which takes 12 more to confirm and minimize: a budget of 8 saved it unminimized
    r = CliRunner().invoke(main, ["campaign", "--budget", "16", "--preset", "quick", "--seed", "5", "--out", str(out),
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["anomalies"] and "warning" not in r.stderr, r.stderr
    return out


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON/TOML value (dict keys and list indexes)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _damage_tree(value: Any, rng: random.Random, wrong: tuple[Any, ...] = _WRONG) -> tuple[Any, str]:
    """Delete a key or give a node a wrong type (one of ``wrong``), somewhere in ``value`` (a dict)."""
    paths = _paths(value)
    path = rng.choice(paths)
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    old = parent[path[-1]]
    if isinstance(parent, dict) and rng.random() < 0.4:
        del parent[path[-1]]
        return value, f"deleted {'.'.join(map(str, path))}"
    new = rng.choice([w for w in wrong if type(w) is not type(old) or w != old])
    parent[path[-1]] = new
    return value, f"{'.'.join(map(str, path))} = {new!r}"


def _damage_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if not data:
        return b"\xff", "garbage in an empty file"
    at = rng.randrange(len(data))
    kind = rng.choice(["truncate", "truncate-at-a-line-end", "garbage", "cut-span"])
    if kind == "truncate":
        return data[:at], f"truncated at byte {at}"
    if kind == "truncate-at-a-line-end":  # where a crash most often stops: just before, on or after a newline
        ends = [i for i, b in enumerate(data) if b == ord("\n")] or [len(data) - 1]
        at = max(0, rng.choice(ends) + rng.choice((-1, 0, 1)))
        return data[:at], f"truncated at byte {at}, at a line's end"
    if kind == "garbage":
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return data[:at] + junk + data[at + len(junk):], f"garbage {junk!r} at byte {at}"
    end = min(len(data), at + rng.randint(1, 200))
    return data[:at] + data[end:], f"bytes {at}-{end} cut out"


def _mutate(out: Path, rng: random.Random) -> str:
    """Damage ``out``'s campaign.toml or journal at random; returns what was done."""
    config, journal = out / "campaign.toml", out / "trials.jsonl"
    roll = rng.random()
    if roll < 0.2:
        tree, what = _damage_tree(tomllib.loads(config.read_text()), rng, tuple(w for w in _WRONG if w is not None))
        config.write_text(tomli_w.dumps(tree))
        return f"campaign.toml: {what}"
    if roll < 0.3:
        data, what = _damage_bytes(config.read_bytes(), rng)
        config.write_bytes(data)
        return f"campaign.toml: {what}"
    if roll < 0.5:
        data, what = _damage_bytes(journal.read_bytes(), rng)
        journal.write_bytes(data)
        return f"trials.jsonl: {what}"
    lines = journal.read_text().splitlines()
    i = rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.6:
        row, what = _damage_tree(json.loads(lines[i]), rng)
        lines[i] = json.dumps(row)
    elif kind < 0.7:
        lines[i] = rng.choice(["{}", "null", "[]", '"row"', "7"])
        what = f"replaced by {lines[i]}"
    elif kind < 0.8:
        del lines[i]
        what = "deleted"
    elif kind < 0.9:
        lines.insert(i, lines[i])
        what = "repeated"
    else:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        what = f"swapped with row {j + 1}"
    journal.write_text("\n".join(lines) + "\n")
    return f"trials.jsonl row {i + 1}: {what}"


def _without_crash_trace(data: bytes) -> bytes:
    """The journal as a resume keeps it: less a torn last line (a whole one gets its newline back) and the
    RUNNING row of the trial in flight."""
    lines = data.split(b"\n")
    whole, tail = lines[:-1], lines[-1]  # each of ``whole`` was followed by its newline; ``tail`` was not
    if tail.strip():
        try:
            if isinstance(json.loads(tail.decode()), dict):
                whole.append(tail)
        except ValueError:
            pass
    last = next((i for i in range(len(whole) - 1, -1, -1) if whole[i].strip()), None)
    if last is not None:
        try:
            if json.loads(whole[last].decode()).get("status") == "RUNNING":
                whole = whole[:last]
        except (ValueError, AttributeError):
            pass
    return b"".join(line + b"\n" for line in whole)


def _check(what: str, code: int, stderr: str, before: bytes, after: bytes) -> str:
    """Check one outcome; returns its kind (``ok``, ``warning``, ``refused``)."""
    assert "Traceback" not in stderr, (what, stderr)
    if code == 2:
        errors = [line for line in stderr.splitlines() if line.startswith("collie: error: ")]
        assert len(errors) == 1 and stderr.rstrip().endswith(errors[0]), (what, stderr)
        # (a refusal found once the journal was read follows the repair of the crash trace)
        assert after in (before, _without_crash_trace(before)), (what, "the journal changed on a refusal")
        return "refused"
    assert code == 0, (what, code, stderr)
    kept = _without_crash_trace(before)
    assert after.startswith(kept), (what, "a journaled row was lost or rewritten")
    finished = Counter(json.loads(line)["trial"] for line in after.decode().splitlines()
                       if line.strip() and json.loads(line)["status"] != "RUNNING")
    assert set(finished.values()) == {1}, (what, "a finished trial ran again")
    return "warning" if "warning: " in stderr else "ok"


def test_random_damage_never_ends_in_a_traceback_or_a_lost_trial(base: Path, tmp_path: Path) -> None:
    rng = random.Random(23)
    runner = CliRunner()
    outcomes: Counter[str] = Counter()
    for n in range(MUTATIONS):
        out = tmp_path / f"m{n}"
        shutil.copytree(base, out)
        what = _mutate(out, rng)
        before = (out / "trials.jsonl").read_bytes()
        r = runner.invoke(main, ["campaign", "--resume", "--out", str(out), "--format", "json"])
        assert r.exception is None or isinstance(r.exception, SystemExit), (what, r.output)
        outcomes[_check(what, r.exit_code, r.stderr, before, (out / "trials.jsonl").read_bytes())] += 1
        shutil.rmtree(out)
    assert sum(outcomes.values()) == MUTATIONS >= 500
    # the mutations reach every kind of outcome (a fuzzer that only ever hit refusals would prove little)
    assert min(outcomes["ok"], outcomes["warning"], outcomes["refused"]) >= 10, outcomes


def test_random_damage_through_the_real_cli(base: Path, tmp_path: Path) -> None:
    rng = random.Random(5)
    for n in range(SUBPROCESS_MUTATIONS):
        out = tmp_path / f"m{n}"
        shutil.copytree(base, out)
        what = _mutate(out, rng)
        before = (out / "trials.jsonl").read_bytes()
        r = run_cli("campaign", "--resume", "--out", str(out), "--format", "json")
        _check(what, r.returncode, r.stderr, before, (out / "trials.jsonl").read_bytes())
