"""The CLI's one renderer: every format carries the same rows and fields, each in its own faithful form."""

from __future__ import annotations

import csv
import io
import json

import pytest

from collie.cli.render import FORMATS, render

ROWS = [{"a": 1, "b": 2.5, "c": [1, 2]}, {"a": 3, "b": float("nan"), "d": True}]


def table_cells(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and the body rows of a rendered table (one line per row: keep cells short)."""
    header = [c.strip() for c in next(line for line in text.splitlines() if line.startswith("┃")).split("┃")[1:-1]]
    body = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]
    return header, body


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


# ---- json -----------------------------------------------------------------------------------------------------
def test_json_is_a_list_of_every_row_with_every_field_in_json_types() -> None:
    assert json.loads(render(ROWS, "json")) == [{"a": 1, "b": 2.5, "c": [1, 2]}, {"a": 3, "b": None, "d": True}]


def test_json_of_one_mapping_is_that_object_not_field_value_rows() -> None:
    assert json.loads(render({"x": 1, "y": (2, 3), "z": None}, "json")) == {"x": 1, "y": [2, 3], "z": None}


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_json_is_strict_non_finite_floats_are_null_at_any_depth(fmt: str) -> None:
    rows = [{"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf"),
             "nested": {"l": [float("nan"), (1.5, float("inf"))]}}]
    text = render(rows, fmt)
    decoded = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    row = decoded[0] if fmt == "json" else decoded
    assert row == {"nan": None, "inf": None, "ninf": None, "nested": {"l": [None, [1.5, None]]}}


def test_json_keeps_numbers_exact() -> None:
    assert json.loads(render([{"f": 0.1234567891, "big": 123456789012}], "json")) == [
        {"f": 0.1234567891, "big": 123456789012}]


# ---- jsonl ----------------------------------------------------------------------------------------------------
def test_jsonl_is_one_compact_object_per_row_per_line() -> None:
    rows = [*ROWS, {"s": "two\nlines", "e": []}]
    lines = render(rows, "jsonl").split("\n")
    assert len(lines) == len(rows)
    assert [json.loads(line) for line in lines] == [{"a": 1, "b": 2.5, "c": [1, 2]}, {"a": 3, "b": None, "d": True},
                                                    {"s": "two\nlines", "e": []}]


def test_jsonl_of_one_mapping_is_one_field_value_object_per_line() -> None:
    lines = render({"x": 1, "y": [2]}, "jsonl").splitlines()
    assert [json.loads(line) for line in lines] == [{"field": "x", "value": 1}, {"field": "y", "value": [2]}]


# ---- csv ------------------------------------------------------------------------------------------------------
def test_csv_header_is_the_union_of_columns_in_first_seen_order() -> None:
    rows = csv_rows(render([{"z": 1}, {"a": 2, "z": 3}, {"m": 4}], "csv"))
    assert rows == [["z", "a", "m"], ["1", "", ""], ["3", "2", ""], ["", "", "4"]]


def test_csv_cells_none_nan_missing_are_empty_lists_space_joined_floats_unrounded() -> None:
    rows = csv_rows(render([*ROWS, {"a": None, "b": 0.1234567891, "c": (7, 8, 9)}], "csv"))
    assert rows == [["a", "b", "c", "d"],
                    ["1", "2.5", "1 2", ""],
                    ["3", "", "", "True"],
                    ["", "0.1234567891", "7 8 9", ""]]


def test_csv_quotes_separators_quotes_and_newlines() -> None:
    nasty = 'a,b "quoted"\nnext line'
    text = render([{"k": nasty, "n": 1}], "csv")
    assert csv_rows(text) == [["k", "n"], [nasty, "1"]]
    assert "\r" not in text and not text.endswith("\n")


def test_csv_of_one_mapping_is_field_value_rows() -> None:
    assert csv_rows(render({"x": 1, "y": [2, 3]}, "csv")) == [["field", "value"], ["x", "1"], ["y", "2 3"]]


# ---- table ----------------------------------------------------------------------------------------------------
def test_table_cells_none_nan_bool_float_int_and_lists() -> None:
    text = render([{"none": None, "nan": float("nan"), "yes": True, "no": False, "pi": 3.14159,
                    "big": 123456.7, "neg": -98765.4, "int": 123456789, "list": [1, 2.5, None]}], "table")
    header, body = table_cells(text)
    assert header == ["none", "nan", "yes", "no", "pi", "big", "neg", "int", "list"]
    assert body == [["-", "-", "yes", "no", "3.142", "123,457", "-98,765", "123456789", "1, 2.5, -"]]


def test_table_has_the_title_one_line_per_row_and_dash_for_missing_fields() -> None:
    text = render(ROWS, "table", title="the title")
    assert text.splitlines()[0].strip() == "the title"
    header, body = table_cells(text)
    assert header == ["a", "b", "c", "d"]
    assert body == [["1", "2.5", "1, 2", "-"], ["3", "-", "-", "yes"]]


def test_table_of_one_mapping_is_a_field_value_table() -> None:
    header, body = table_cells(render({"x": 1, "y": None}, "table"))
    assert header == ["field", "value"] and body == [["x", "1"], ["y", "-"]]


def test_brackets_are_data_not_markup() -> None:
    text = render([{"BW [Gb/s]": "[0]: rx_bytes", "s": "[bold]x[/bold]"}], "table", title="a [b] c")
    header, body = table_cells(text)
    assert header == ["BW [Gb/s]", "s"] and body == [["[0]: rx_bytes", "[bold]x[/bold]"]]
    assert text.splitlines()[0].strip() == "a [b] c"


# ---- every format ----------------------------------------------------------------------------------------------
def test_explicit_columns_choose_and_order_the_fields_in_table_and_csv() -> None:
    rows = [{"a": 1, "b": 2, "c": 3}]
    assert table_cells(render(rows, "table", columns=["c", "a"])) == (["c", "a"], [["3", "1"]])
    assert csv_rows(render(rows, "csv", columns=["c", "a"])) == [["c", "a"], ["3", "1"]]


def test_no_rows() -> None:
    assert json.loads(render([], "json")) == []
    assert render([], "jsonl") == ""
    assert render([], "csv") == ""
    assert csv_rows(render([], "csv", columns=["a", "b"])) == [["a", "b"]]
    assert table_cells(render([], "table", columns=["a", "b"])) == (["a", "b"], [])


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_carries_every_row(fmt: str) -> None:
    rows = [{"i": i, "s": f"row {i}"} for i in range(25)]
    text = render(rows, fmt)
    if fmt == "json":
        assert json.loads(text) == rows
    elif fmt == "jsonl":
        assert [json.loads(line) for line in text.splitlines()] == rows
    elif fmt == "csv":
        assert csv_rows(text)[1:] == [[str(r["i"]), r["s"]] for r in rows]
    else:
        assert table_cells(text)[1] == [[str(r["i"]), r["s"]] for r in rows]
