"""Bad input: every real log, mutated many ways, ends in a clean result, a result with warnings, or an InputError
of one sentence naming the file and line - never another exception, never a message without its line.

The mutations are drawn from a random generator seeded with the fixture's name, so every run of the suite tries the
same ones; a failure names the mutation (its kind and number) so it can be replayed with :func:`mutations`.
Besides them, every log is cut after each of its lines: what such a cut log yields is either an error or the
first rows of the whole log, unchanged, with a warning when the cut fell inside a table.
"""

from __future__ import annotations

import random
import re
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.importers.nccl_tests import NcclTestsLog, parse_nccl_tests
from collie.importers.perftest import PerftestLog, parse_perftest
from collie.importers.text import decode_log
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
PER_FIXTURE = 60

Parser = Callable[[str, str], PerftestLog | NcclTestsLog]
LOGS: list[tuple[Path, Parser]] = [
    *((p, parse_perftest) for p in sorted((FIXTURES / "perftest").iterdir()) if p.name != "SOURCES.md"),
    *((p, parse_nccl_tests) for p in sorted((FIXTURES / "nccl_tests").iterdir()) if p.name != "SOURCES.md")]
IDS = [p.name for p, _ in LOGS]


def _row_lines(lines: list[bytes]) -> list[int]:
    """Lines that hold at least three numbers (rows, mostly)."""
    return [i for i, ln in enumerate(lines) if len(re.findall(rb"(?<!\S)[0-9][0-9.e+]*(?!\S)", ln)) >= 3] or \
        list(range(len(lines)))


def _cut_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    return b"\n".join(lines[:rng.randrange(len(lines) + 1)])


def _truncate_mid_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.choice(_row_lines(lines))
    start = sum(len(ln) + 1 for ln in lines[:i])
    return data[:start + rng.randrange(len(lines[i]) + 1)]


def _garbage_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 24))) + data[at:]


def _swap_columns(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.choice(_row_lines(lines))
    words = lines[i].split()
    if len(words) >= 2:
        a, b = rng.sample(range(len(words)), 2)
        words[a], words[b] = words[b], words[a]
        lines[i] = b"   ".join(words)
    return b"\n".join(lines)


def _remove_header(data: bytes, rng: random.Random) -> bytes:
    """Drop the header: the title, the ``key : value`` lines, the column header, the ``#`` lines (one of them)."""
    pattern = rng.choice([rb"Test\s*$", rb"\S\s*:\s*\S", rb"#bytes|#\s+size\s", rb"^\s*(\[[0-9,]+\]<stdout>:)?#",
                          rb"address:|GID:|#\s+Rank", rb"nThread|-{20}"])
    return b"\n".join(ln for ln in data.split(b"\n") if not re.search(pattern, ln))


def _number_to_text(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.choice(_row_lines(lines))
    words = lines[i].split()
    numbers = [k for k, w in enumerate(words) if re.fullmatch(rb"[-+0-9.e]+(\[B\])?", w)]
    if numbers:
        words[rng.choice(numbers)] = rng.choice([b"abc", b"x1", b"N/A", b"-", b"1e999", b"nan", b"1..2", b"0x1f",
                                                 b"\xd9\xa1\xd9\xa2", b"1_000"])
        lines[i] = b"  ".join(words)
    return b"\n".join(lines)


def _duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    j = min(len(lines), i + rng.randint(1, 4))
    return b"\n".join(lines[:j] + lines[i:j] + lines[j:])


def _delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return b"\n".join(lines)


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _garbage_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    lines[rng.randrange(len(lines))] = bytes(rng.randrange(32, 127) for _ in range(rng.randint(0, 100)))
    return b"\n".join(lines)


def _log_twice(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    return b"\n".join(lines[:rng.randrange(len(lines) + 1)]) + b"\n" + data


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "cut at a line": _cut_lines, "truncated mid-line": _truncate_mid_line, "garbage bytes": _garbage_bytes,
    "two columns swapped": _swap_columns, "header removed": _remove_header, "number replaced by text": _number_to_text,
    "lines duplicated": _duplicate_lines, "line deleted": _delete_line, "lines swapped": _swap_lines,
    "bytes flipped": _flip_bytes, "line of garbage": _garbage_line, "log repeated": _log_twice}


def mutations(path: Path, count: int = PER_FIXTURE) -> Iterator[tuple[str, bytes]]:
    """``count`` mutations of the log at ``path``, every kind in turn, drawn from a generator seeded by its name."""
    data = path.read_bytes()
    rng = random.Random(f"collie-importers:{path.name}")
    kinds = list(MUTATIONS.items())
    for i in range(count):
        kind, mutate = kinds[i % len(kinds)]
        yield f"#{i} {kind}", mutate(data, rng)


def _check_sentence(text: str, name: str, lines: int) -> None:
    m = re.match(rf"{re.escape(name)}:([0-9]+): \S", text)
    assert m is not None, f"not 'file:line: ...': {text!r}"
    assert 1 <= int(m.group(1)) <= lines + 1, text
    assert "\n" not in text and "Traceback" not in text, text


@pytest.mark.parametrize(("path", "parse"), LOGS, ids=IDS)
def test_every_mutation_ends_in_a_result_a_warning_or_one_input_error(path: Path, parse: Parser) -> None:
    outcomes = {"clean": 0, "warned": 0, "refused": 0}
    for what, data in mutations(path):
        text = decode_log(data)
        try:
            log = parse(text, path.name)
        except InputError as exc:
            _check_sentence(str(exc), path.name, text.count("\n") + 1)
            outcomes["refused"] += 1
            continue
        except Exception:
            pytest.fail(f"{path.name}: mutation {what} raised something other than InputError:\n"
                        f"{traceback.format_exc()}")
        for warning in log.warnings:
            _check_sentence(warning, path.name, text.count("\n") + 1)
        outcomes["warned" if log.warnings else "clean"] += 1
    assert sum(outcomes.values()) == PER_FIXTURE >= 50
    assert outcomes["refused"] and outcomes["clean"] + outcomes["warned"], outcomes


def _groups(log: PerftestLog | NcclTestsLog) -> list[tuple[tuple[object, ...], bool]]:
    """The rows of each run or section, and whether it was complete."""
    if isinstance(log, PerftestLog):
        return [(run.rows, run.complete) for run in log.runs]
    return [(c.rows, c.complete) for c in log.collectives]


@pytest.mark.parametrize(("path", "parse"), LOGS, ids=IDS)
def test_a_log_cut_after_any_line_yields_its_first_rows_unchanged_or_an_error(path: Path, parse: Parser) -> None:
    text = path.read_text(encoding="utf-8")
    whole = _groups(parse(text, path.name))
    lines = text.split("\n")
    for n in range(1, len(lines)):
        try:
            log = parse("\n".join(lines[:n]), path.name)
        except InputError as exc:
            _check_sentence(str(exc), path.name, n)
            continue
        groups = _groups(log)
        assert len(groups) <= len(whole), f"{path.name} cut after line {n}"
        for (rows, complete), (all_rows, _) in zip(groups, whole, strict=False):
            assert rows == all_rows[:len(rows)], f"{path.name} cut after line {n}"
            if len(rows) < len(all_rows):
                assert not complete and log.warnings, f"{path.name} cut after line {n}: a short run without a warning"
