from __future__ import annotations

import csv
import io
import json

from collie.cli.render import render

ROWS = [{"a": 1, "b": 2.5, "c": [1, 2]}, {"a": 3, "b": float("nan"), "d": True}]


def test_json_and_jsonl_keep_every_field() -> None:
    assert json.loads(render(ROWS, "json"))[1] == {"a": 3, "b": None, "d": True}
    lines = render(ROWS, "jsonl").splitlines()
    assert [json.loads(line)["a"] for line in lines] == [1, 3]


def test_csv_has_union_of_columns() -> None:
    rows = list(csv.DictReader(io.StringIO(render(ROWS, "csv"))))
    assert list(rows[0]) == ["a", "b", "c", "d"]
    assert rows[0]["c"] == "1 2" and rows[1]["b"] == ""


def test_table_and_mapping() -> None:
    text = render(ROWS, "table", title="t")
    assert "t" in text and "2.5" in text and "yes" in text
    assert json.loads(render({"x": 1}, "json")) == {"x": 1}
    assert "x" in render({"x": 1}, "table")


def test_brackets_are_data_not_markup() -> None:
    text = render([{"BW [Gb/s]": "[0]: rx_bytes"}], "table", title="a [b] c")
    assert "[Gb/s]" in text and "[0]: rx_bytes" in text and "a [b] c" in text
