"""The line helpers both log parsers share: numbering, launcher tags, and what counts as a number."""

from __future__ import annotations

import pytest

from collie.importers.text import decode_log, integer_token, log_lines, looks_like_row, number_token, signed_token


def test_lines_are_numbered_by_newline_only_and_lose_tags_indent_and_carriage_returns() -> None:
    lines = log_lines("  a\tb  \r\n[1,0]<stdout>:   # nThread 1\n[12,3]<stderr>:\nx\x0cy\u2028z\n")
    assert [(ln.number, ln.text) for ln in lines] == [(1, "a\tb"), (2, "# nThread 1"), (3, ""), (4, "x\x0cy\u2028z"),
                                                      (5, "")]
    assert lines[0].tokens == ["a", "b"]


@pytest.mark.parametrize(("token", "value"), [
    ("12", 12.0), ("-0.5", -0.5), (".5", 0.5), ("5.", 5.0), ("1.0e+07", 1.0e7), ("158724", 158724.0),
    ("1e999", None), ("nan", None), ("inf", None), ("1_000", None), ("\u0661\u0662", None), ("0x10", None),
    ("1..2", None), ("", None), ("N/A", None)])
def test_numbers_are_finite_ascii_decimals(token: str, value: float | None) -> None:
    assert number_token(token) == value


def test_integers_are_ascii_digits_of_bounded_length() -> None:
    assert integer_token("007") == 7
    assert integer_token("-1") is None and signed_token("-1") == -1
    assert integer_token("\uff11") is None  # a fullwidth digit
    assert integer_token("9" * 31) is None  # more digits than any counter has, and never Python's int limit
    assert integer_token("12.0") is None


def test_a_row_starts_with_a_number_or_holds_several() -> None:
    assert looks_like_row(["2", "20000", "0.88"])
    assert looks_like_row(["abc", "20000", "0.88", "6.84"])  # a garbled first column is still a row
    assert not looks_like_row(["Conflicting", "CPU", "frequency", "2300.000000", "!=", "2394.296000."])
    assert not looks_like_row([])


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert decode_log(b"ok \xff\xfe 12\n") == "ok \ufffd\ufffd 12\n"
