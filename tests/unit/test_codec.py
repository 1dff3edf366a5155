"""The codec: one checked reader (one wording, the error class it is given) and dataclass-driven encode/decode."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import pytest

from collie.codec import Reader, check_fields, decode, describe, encode, expect_type, shown
from collie.errors import InputError


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    name: str
    weight: float = 1.0


@dataclass(frozen=True)
class Outer:
    count: int
    ratio: float
    on: bool
    colour: Colour
    tags: tuple[str, ...]
    pair: tuple[float, float]
    inner: Inner
    inners: tuple[Inner, ...] = ()
    levels: Mapping[str, float] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    note: str | None = None


class WireError(Exception):
    pass


OUTER = Outer(3, 0.5, True, Colour.BLUE, ("a", "b"), (1.0, 2.0), Inner("x"), (Inner("y", 2.0),), {"l": 1.5},
              {"any": [1, "two"]}, "n")


def test_encode_then_decode_is_the_identity() -> None:
    data = encode(OUTER)
    assert data == {"count": 3, "ratio": 0.5, "on": True, "colour": "blue", "tags": ["a", "b"], "pair": [1.0, 2.0],
                    "inner": {"name": "x", "weight": 1.0}, "inners": [{"name": "y", "weight": 2.0}],
                    "levels": {"l": 1.5}, "extra": {"any": [1, "two"]}, "note": "n"}
    assert list(data) == [f for f in Outer.__dataclass_fields__]  # declaration order: stable bytes on disk
    assert decode(Outer, data, Reader("o.json")) == OUTER


def test_an_int_is_a_number_and_defaults_fill_absent_fields() -> None:
    data = {**encode(OUTER), "ratio": 2}
    for name in ("inners", "levels", "extra", "note"):
        data.pop(name)
    got = decode(Outer, data, Reader("o.json"))
    assert got.ratio == 2.0 and isinstance(got.ratio, float) and got.inners == () and got.note is None


@pytest.mark.parametrize(("change", "message"), [
    ({"count": None}, "o.json: count: missing (an integer)"),
    ({"count": True}, "o.json: count: expected an integer, got True"),
    ({"ratio": True}, "o.json: ratio: expected a number, got True"),
    ({"ratio": float("nan")}, "o.json: ratio: expected a number, got nan"),
    ({"on": 1}, "o.json: on: expected true or false, got 1"),
    ({"colour": "green"}, "o.json: colour: 'green' is not allowed; use one of red, blue"),
    ({"tags": "a"}, "o.json: tags: expected a list of strings, got 'a'"),
    ({"tags": ["a", 2]}, "o.json: tags[1]: expected a string, got 2"),
    ({"pair": [1.0]}, "o.json: pair: expected a list of 2 items, got [1.0]"),
    ({"inner": {"weight": 1.0}}, "o.json: inner: name: missing (a string)"),
    ({"inner": {"name": "x", "colour": 1}}, "o.json: inner: unknown field 'colour'; allowed fields are name, weight"),
    ({"inners": [{"name": 3}]}, "o.json: inners[0]: name: expected a string, got 3"),
    ({"levels": {"l": "high"}}, "o.json: levels: l: expected a number, got 'high'"),
    ({"note": 5}, "o.json: note: expected a string, got 5"),
    ({"size": 1}, "o.json: unknown field 'size'; allowed fields are colour, count, extra"),
])
def test_every_failure_is_one_sentence_naming_the_field(change: dict[str, Any], message: str) -> None:
    data = encode(OUTER)
    for k, v in change.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    with pytest.raises(InputError) as err:
        decode(Outer, data, Reader("o.json"))
    assert str(err.value).startswith(message), str(err.value)


def test_a_reader_raises_the_error_it_is_given() -> None:
    wire = Reader("'x' message", WireError)
    with pytest.raises(WireError, match=r"^'x' message: inner: name: missing \(a string\)$"):
        decode(Outer, {**encode(OUTER), "inner": {}}, wire)
    with pytest.raises(WireError, match=r"^'x' message: w: nope$"):
        wire.at("w").adopt(lambda: (_ for _ in ()).throw(InputError("'x' message: w: nope")))
    with pytest.raises(WireError, match=r"^'x' message: w: not readable \(KeyError: 'k'\)$"):
        wire.at("w").adopt(lambda: dict[str, int]()["k"])


def test_tables_check_allowed_and_required_fields() -> None:
    r = Reader("f.toml").at("flows").at(0)
    assert r.location == "f.toml: flows[0]"
    with pytest.raises(InputError, match=r"^f\.toml: flows\[0\]: server: missing \(a required field\)$"):
        r.table({"client": "a"}, ("client", "server"), ("client", "server"))
    with pytest.raises(InputError, match=r"^f\.toml: flows\[0\]: expected a table, got \[1\]$"):
        r.table([1])
    with pytest.raises(InputError, match=r"^demo\.toml: unknown field 'x'; allowed fields are a$"):
        check_fields({"x": 1}, "demo.toml", ("a",))
    with pytest.raises(InputError, match=r"^demo\.toml: n: expected a number, got False$"):
        expect_type(False, (int, float), "demo.toml: n", "a number")
    assert expect_type(3, int, "demo.toml: n", "an integer") == 3


def test_scalars_dates_and_choices() -> None:
    t = Reader("w.toml").table({"d": dt.date(2027, 1, 31), "s": "2027-02-01", "t": dt.datetime(2027, 1, 1),
                                "blank": "  ", "n": 0})
    assert t.date("d") == dt.date(2027, 1, 31) and t.date("s") == dt.date(2027, 2, 1)
    with pytest.raises(InputError, match=r"w\.toml: t: expected a date without a time"):
        t.date("t")
    with pytest.raises(InputError, match=r"w\.toml: blank: expected a non-empty string, got '  '"):
        t.text("blank", what="a non-empty string", blank=False)
    with pytest.raises(InputError, match=r"w\.toml: n: must be 1 or more, got 0"):
        t.integer("n", minimum=1)
    assert t.text("absent", "dflt") == "dflt"
    assert t.table("absent", default={"a": 1}).data == {"a": 1}
    with pytest.raises(InputError, match=r"^w\.toml: absent: expected a table, got 3$"):
        t.table("absent", default=3)


def test_wrong_values_are_shown_short() -> None:
    assert shown(None) == "null" and shown("x") == "'x'"
    assert len(shown("y" * 500)) == 60 and shown("y" * 500).endswith("...")


def test_types_are_described_as_messages_say_them() -> None:
    assert describe(tuple[str, ...]) == "a list of strings"
    assert describe(Mapping[str, float]) == "a table of numbers"
    assert describe(int | None) == "an integer or null"
    assert describe(Colour) == "one of red, blue"
    assert describe(Inner) == "a table"


def test_a_table_whose_fields_name_their_own_line() -> None:
    lines = {"b": "f.toml:3", "a": "f.toml:2"}

    def field(key: str) -> Reader:
        return Reader(lines.get(key, "f.toml:1"), path=("t", key))

    reader = Reader("f.toml:1", path=("t",))
    with pytest.raises(InputError, match=r"^f\.toml:3: t: unknown field 'b'; allowed fields are a$"):
        reader.table({"a": 1, "b": 2}, ["a"], fields=field)
    with pytest.raises(InputError, match=r"^f\.toml:2: t: a: expected a number, got 'x'$"):
        reader.table({"a": "x"}, ["a", "c"], fields=field).number("a")
    with pytest.raises(InputError, match=r"^f\.toml:1: t: c: missing \(a required field\)$"):
        reader.table({"a": 1}, ["a", "c"], required=["c"], fields=field)
