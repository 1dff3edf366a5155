"""Damaged case folders: every file of a case is checked on read, and a damaged one is one sentence, exit 2.

A fuzzer damages ``case.toml``, ``mfs.json`` and ``evidence.json`` at random (truncation, garbage bytes, values
of the wrong type, missing and unknown keys) and runs ``collie replay`` (and, on some, ``collie minimize``) on
the result, in-process through click's runner, with a handful through the real subprocess CLI. Every run must
end in exit 0 or 1 (the case ran; a warning allowed), or exit 2 with one sentence; never a traceback.
"""

from __future__ import annotations

import json
import random
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import tomli_w
from click.testing import CliRunner

from collie.cli import main
from tests.conftest import ROOT, run_cli

FIXTURES: Final = ROOT / "tests" / "fixtures" / "cases"
FILES: Final = ("case.toml", "mfs.json", "evidence.json")
#: mutations per file of the format-2 fixture, and of the previous release's evidence.json
PER_FILE: Final = 180
LEGACY: Final = 80
#: values that replace a value of the file (most of them of the wrong type for where they land)
ODD_VALUES: Final[tuple[Any, ...]] = (None, True, False, 0, -3, 1.5, 10**30, float("inf"), "", "abc", "\x00",
                                      [], [1, "x"], {}, {"x": 1})
#: stderr lines a run that worked may print besides its result (with the dashboard's plain progress lines)
HARMLESS: Final = ("warning: ", "note: ", "reproduces (", "does not reproduce (", "== ", "   trial ")


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a parsed JSON/TOML document (keys and list indices)."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _structural(doc: Any, rng: random.Random, toml: bool) -> str:
    """Damage a parsed document: a value of another type, a missing key, or an unknown key; return what."""
    kind = rng.choice(("type", "type", "missing", "unknown"))
    paths = [p for p in _nodes(doc) if p]
    if kind == "missing":
        paths = [p for p in paths if isinstance(_at(doc, p[:-1]), dict)]
    if kind == "unknown" or not paths:
        parents = [p for p in _nodes(doc) if isinstance(_at(doc, p), dict)]
        _at(doc, rng.choice(parents))["zz_unknown"] = 1
        return "unknown key"
    path = rng.choice(paths)
    parent = _at(doc, path[:-1])
    if kind == "missing":
        del parent[path[-1]]
        return f"missing {path}"
    values = [v for v in ODD_VALUES if not (toml and (v is None or v == float("inf") or v == 10**30))]
    parent[path[-1]] = rng.choice(values)
    return f"wrong type at {path}"


def _mutate(text: bytes, name: str, rng: random.Random) -> tuple[bytes, str]:
    """One random damage of a file's bytes; returns the new bytes and what was done."""
    kind = rng.choice(("truncate", "garbage", "structure", "structure"))
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return text[:cut], f"truncated at {cut}"
    if kind == "garbage":
        at = rng.randrange(len(text))
        junk = rng.randbytes(rng.randint(1, 12))
        return text[:at] + junk + text[at + rng.randint(0, 12):], f"garbage at {at}"
    toml = name.endswith(".toml")
    doc = tomllib.loads(text.decode()) if toml else json.loads(text)
    what = _structural(doc, rng, toml)
    out = tomli_w.dumps(doc) if toml else json.dumps(doc, indent=2)
    return out.encode(), what


def _check(code: int, stderr: str, exception: BaseException | None, file: str, what: str) -> str:
    """Fail unless the run ended well; returns ``ran`` or the exit-2 sentence."""
    context = f"{file} {what}: exit {code}: {stderr!r}"
    assert "Traceback" not in stderr, context
    assert exception is None or isinstance(exception, SystemExit), f"{context}: {exception!r:.300}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("collie: error: "), context
        sentence = lines[0]
        assert len(sentence) < 600, context
        return sentence
    assert code in (0, 1), context
    assert all(line.startswith(HARMLESS) or "was found on" in line for line in lines), context
    return "ran"


def _fuzz(fixture: Path, tmp_path: Path, files: tuple[str, ...], count: int, seed: int,
          run: Callable[[list[str]], tuple[int, str, BaseException | None]], inside: str = "") -> dict[str, int]:
    """``count`` mutations of each of ``files`` of the case folder ``fixture`` (or of the case ``inside`` it,
    e.g. a campaign's ``anomalies/A003-pause``); returns how many ended each way."""
    rng = random.Random(seed)
    outcomes = {"ran": 0, "named the file": 0, "other sentence": 0}
    for n, file in enumerate(files):
        original = (fixture / inside / file).read_bytes()
        for i in range(count):
            copy = tmp_path / f"copy-{n}-{i}"
            shutil.copytree(fixture, copy)
            case = copy / inside
            damaged, what = _mutate(original, file, rng)
            (case / file).write_bytes(damaged)
            command = "minimize" if i % 12 == 0 else "replay"
            args = [command, str(case), "--format", "json"]
            if command == "replay":
                args += ["--runs", "1", "--duration", "0.1"]
            code, stderr, exc = run(args)
            result = _check(code, stderr, exc, file, what)
            if result == "ran":
                outcomes["ran"] += 1
            elif f"{case / file}: " in result:
                outcomes["named the file"] += 1
            else:
                # a valid file that now says something else: an unknown recorded target, a workload the target
                # cannot run, a case that is not anomalous there
                assert any(s in result for s in ("cannot be opened", "cannot run", "not anomalous",
                                                 "not a point of the search space")), (file, what, result)
                outcomes["other sentence"] += 1
            shutil.rmtree(copy)
    return outcomes


def _in_process(args: list[str]) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.stderr, result.exception


def test_random_damage_to_every_case_file_is_one_sentence_or_a_run(tmp_path: Path) -> None:
    outcomes = _fuzz(FIXTURES / "v2-A003-pause", tmp_path, FILES, PER_FILE, 1, _in_process)
    old = _fuzz(FIXTURES / "v1-campaign", tmp_path, ("evidence.json",), LEGACY, 2, _in_process,
                inside="anomalies/A003-pause")
    total = {k: outcomes[k] + old[k] for k in outcomes}
    assert sum(total.values()) == len(FILES) * PER_FILE + LEGACY >= 500
    # the fuzzer reaches both ends: damage that is caught and named, and damage the case survives
    assert total["named the file"] > 250 and total["ran"] > 50, total


@pytest.mark.parametrize("seed", [3, 4])
def test_random_damage_through_the_real_cli(tmp_path: Path, seed: int) -> None:
    def subprocess_run(args: list[str]) -> tuple[int, str, BaseException | None]:
        r = run_cli(*args)
        return r.returncode, r.stderr, None

    outcomes = _fuzz(FIXTURES / "v2-A003-pause", tmp_path, FILES, 1, seed, subprocess_run)
    assert sum(outcomes.values()) == len(FILES)


@pytest.mark.parametrize(("file", "text", "field"), [
    ("evidence.json", "", "not valid JSON"),
    ("evidence.json", '{"format": 2}', "anomaly_id: missing (a string)"),
    ("evidence.json", '{"format": 9}', "format: written by a newer collie (format 9)"),
    ("mfs.json", b"\xff\xfe garbage", "not a UTF-8 text file"),
    ("mfs.json", '{"signature": "pause@receiver", "conditions": [{"feature": "qps_total", "op": ">=", '
                 '"value": "many"}]}', "conditions[0]: value: expected a number (feature qps_total)"),
    ("case.toml", "[[flows]]\nclient = 3\nserver = \"b\"\n", "flows[0].client: expected a host name"),
])
def test_damage_names_the_file_and_the_field(tmp_path: Path, file: str, text: str | bytes, field: str) -> None:
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "v2-A003-pause", case)
    (case / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    code, stderr, exc = _in_process(["replay", str(case)])
    sentence = _check(code, stderr, exc, file, "hand-made")
    assert code == 2 and f"{case / file}" in sentence and field in sentence, sentence


def test_a_field_deep_in_the_evidence_is_named_by_its_path(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(FIXTURES / "v2-A003-pause", case)
    evidence = json.loads((case / "evidence.json").read_text())
    evidence["case"]["verdict"]["symptoms"][0]["value"] = "high"
    (case / "evidence.json").write_text(json.dumps(evidence))
    r = run_cli("replay", str(case))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"collie: error: {case / 'evidence.json'}: case: verdict: symptoms[0]: value: expected a number, got 'high'"]
