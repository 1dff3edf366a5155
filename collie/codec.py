"""The one checked reader of collie's formats, and encode/decode driven by a dataclass's field types.

Every record collie reads (campaign files, journal rows, case folders, waivers, protocol messages) is read with
a :class:`Reader`: it knows where the value sits (the file, or the message, then the field path) and which error
to raise (:class:`~collie.errors.InputError` for files, the protocol's error for the wire). Every failure is one
sentence of one of these forms, the field path joined by ``": "``::

    <where>: <path>: missing (<what is allowed>)
    <where>: <path>: expected <what is allowed>, got <the value>
    <where>: <path>: unknown field 'x'; allowed fields are a, b, c
    <where>: <path>: <a rule of the record>, got <the value>

e.g. ``c.toml: target_info: msg_rate_pps: missing (a number)``.

Invariants:
    * a bool is never a number or an integer; a number is never NaN;
    * a reader raises its own error class and nothing else for any value it is given (records that call a
      foreign reader wrap it with :meth:`Reader.adopt`);
    * :func:`encode` and :func:`decode` are each other's inverse for the field types they know (see
      :func:`decode`); a record with a legacy form or a custom layout writes its own ``to_dict``/``from_dict``
      with the same :class:`Reader`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, Final, NoReturn, TypeVar

from collie.errors import InputError

T = TypeVar("T")
E = TypeVar("E", bound=Enum)

#: The default of a field that has none: reading it when absent is a ``missing`` error.
MISSING: Final[Any] = object()

#: How a decoded dataclass field of a type collie does not own is read: ``(value, reader) -> object``.
Custom = Mapping[type, Callable[[Any, "Reader"], Any]]


def shown(value: Any) -> str:
    """A wrong value as a message shows it: JSON's ``null`` for None, else its repr, cut to 60 characters."""
    text = "null" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


class Reader:
    """Where a value sits and the error to raise about it.

    Args:
        where: the file or message the value came from (``c.toml``, ``j: line 3``, ``'hello' message``).
        error: the exception class every failure raises (called with the one sentence).
        path: the field path inside ``where`` (build it with :meth:`at`).
    """

    __slots__ = ("error", "path", "where")

    def __init__(self, where: str, error: type[Exception] = InputError, path: tuple[str, ...] = ()) -> None:
        self.where, self.error, self.path = where, error, path

    def at(self, key: str | int) -> Reader:
        """The reader of field ``key`` (a name) or item ``key`` (an index) of this value."""
        if isinstance(key, int):
            last = self.path[-1] if self.path else ""
            return Reader(self.where, self.error, (*self.path[:-1], f"{last}[{key}]"))
        return Reader(self.where, self.error, (*self.path, key))

    @property
    def location(self) -> str:
        """``where`` and the field path, as a message names them."""
        return ": ".join((self.where, *self.path))

    def fail(self, problem: str) -> NoReturn:
        """Raise the error: this value breaks a rule (``problem`` says which, e.g. ``must be 1 or more, got 0``)."""
        raise self.error(f"{self.location}: {problem}")

    def wrong(self, value: Any, what: str) -> NoReturn:
        """Raise the error: ``value`` is not ``what`` (e.g. ``a number``)."""
        self.fail(f"expected {what}, got {shown(value)}")

    def missing(self, what: str) -> NoReturn:
        """Raise the error: this field is absent and must be ``what``."""
        self.fail(f"missing ({what})")

    def adopt(self, read: Callable[[], T]) -> T:
        """Run a foreign reader (a workload's, a snapshot's) on a value found here: its :class:`InputError`
        becomes this reader's error (its sentence kept), and a ``TypeError``, ``ValueError``, ``KeyError`` or
        ``AttributeError`` it lets through becomes one about this value."""
        try:
            return read()
        except InputError as exc:
            if self.error is InputError:
                raise
            raise self.error(str(exc)) from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            self.fail(f"not readable ({type(exc).__name__}: {exc})")

    # -- one value ------------------------------------------------------------------------------------------

    def typed(self, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
        """``value`` if it is of ``kind`` (a bool only when ``kind`` names bool), else the error."""
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            self.wrong(value, what)
        return value

    def string(self, value: Any, what: str = "a string", blank: bool = True) -> str:
        """A string; with ``blank`` False, one of only white space is wrong too."""
        text = str(self.typed(value, str, what))
        if not blank and not text.strip():
            self.wrong(value, what)
        return text

    def number(self, value: Any, what: str = "a number") -> float:
        if not _is_number(value):
            self.wrong(value, what)
        return float(value)

    def integer(self, value: Any, what: str = "an integer", minimum: int | None = None) -> int:
        """An integer; with ``minimum``, one below it is ``must be <minimum> or more``."""
        number = int(self.typed(value, int, what))
        if minimum is not None and number < minimum:
            self.fail(f"must be {minimum} or more, got {number}")
        return number

    def flag(self, value: Any) -> bool:
        return bool(self.typed(value, bool, "true or false"))

    def date(self, value: Any) -> dt.date:
        """A date without a time: a TOML date, or an ISO string (``2027-01-31``)."""
        if isinstance(value, dt.datetime):
            self.fail(f"expected a date without a time, like 2027-01-31, got {value.isoformat()}")
        if isinstance(value, dt.date):
            return value
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value.strip())
            except ValueError:
                pass
        self.wrong(value, "a date like 2027-01-31")

    def items(self, value: Any, what: str = "a list") -> list[Any]:
        return list(self.typed(value, list, what))

    def choice(self, value: Any, kind: type[E], what: str = "") -> E:
        """A member of enum ``kind`` by its value; ``what`` names the kind in the message (``a phase``)."""
        for member in kind:
            if member.value == value and type(value) is type(member.value):
                return member
        self.not_one_of(value, [m.value for m in kind], what)

    def one_of(self, value: Any, allowed: Iterable[Any], what: str = "") -> Any:
        """``value`` if it equals one of ``allowed`` (a bool never does), else the error listing them."""
        choices = list(allowed)
        if isinstance(value, bool) or value not in choices:
            self.not_one_of(value, choices, what)
        return value

    def not_one_of(self, value: Any, allowed: Iterable[Any], what: str = "") -> NoReturn:
        """Raise the error: ``value`` is none of ``allowed`` (``what`` names the kind, e.g. ``a phase``)."""
        self.fail(f"{shown(value)} is not {what or 'allowed'}; use one of {', '.join(str(a) for a in allowed)}")

    def table(self, value: Any, allowed: Iterable[str] | None = None, required: Iterable[str] = (),
              what: str = "a table", fields: Callable[[str], Reader] | None = None) -> Table:
        """A table (a JSON object); with ``allowed``, a field not in it is an error, and one of ``required``
        that is absent is ``missing (a required field)``. ``fields`` gives the reader of each field when it
        says more than this reader's :meth:`at` (see :class:`Table`)."""
        table = Table(self.typed(value, dict, what), self, fields)
        if allowed is not None:
            table.only(allowed)
        for key in required:
            if key not in table.data:
                table.at(key).missing("a required field")
        return table


class Table:
    """One checked table (a JSON object or TOML table): typed access to its fields, each failure one sentence.

    A getter's ``default`` is returned, unchecked, when the field is absent (except :meth:`table`'s); without
    one, an absent field is ``missing (<what is allowed>)``.

    ``fields``, when given, is the reader of field ``key`` (default ``reader.at(key)``): a file that names the
    line of each field (``hosts.toml:5``) gives readers whose ``where`` holds it; an unknown field is then named
    in the table's path at that field's ``where``.
    """

    __slots__ = ("data", "fields", "reader")

    def __init__(self, data: dict[str, Any], reader: Reader, fields: Callable[[str], Reader] | None = None) -> None:
        self.data, self.reader, self.fields = data, reader, fields

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def only(self, allowed: Iterable[str]) -> Table:
        """This table, after checking it has no field outside ``allowed``."""
        names = list(allowed)
        for key in self.data:
            if key not in names:
                here = self.reader if self.fields is None else \
                    Reader(self.fields(key).where, self.reader.error, self.reader.path)
                here.fail(f"unknown field {key!r}; allowed fields are {', '.join(sorted(names))}")
        return self

    def at(self, key: str) -> Reader:
        return self.reader.at(key) if self.fields is None else self.fields(key)

    def get(self, key: str, default: Any = MISSING, what: str = "a value") -> Any:
        if key in self.data:
            return self.data[key]
        if default is MISSING:
            self.at(key).missing(what)
        return default

    def _read(self, key: str, default: Any, what: str, check: Callable[[Reader, Any], T]) -> T:
        if key not in self.data:
            if default is MISSING:
                self.at(key).missing(what)
            return typing.cast(T, default)
        return check(self.at(key), self.data[key])

    def text(self, key: str, default: Any = MISSING, what: str = "a string", blank: bool = True) -> str:
        return self._read(key, default, what, lambda r, v: r.string(v, what, blank))

    def number(self, key: str, default: Any = MISSING, what: str = "a number") -> float:
        return self._read(key, default, what, lambda r, v: r.number(v, what))

    def integer(self, key: str, default: Any = MISSING, what: str = "an integer", minimum: int | None = None) -> int:
        return self._read(key, default, what, lambda r, v: r.integer(v, what, minimum))

    def flag(self, key: str, default: Any = MISSING) -> bool:
        return self._read(key, default, "true or false", Reader.flag)

    def date(self, key: str, default: Any = MISSING) -> dt.date:
        return self._read(key, default, "a date like 2027-01-31", Reader.date)

    def items(self, key: str, default: Any = MISSING, what: str = "a list") -> list[Any]:
        return self._read(key, default, what, lambda r, v: r.items(v, what))

    def choice(self, key: str, kind: type[E], what: str, default: Any = MISSING) -> E:
        return self._read(key, default, what, lambda r, v: r.choice(v, kind, what))

    def table(self, key: str, allowed: Iterable[str] | None = None, required: Iterable[str] = (),
              default: Any = MISSING) -> Table:
        """Field ``key``, a table (``default``, when it is absent, is checked like a value that is there)."""
        return self.at(key).table(self.get(key, default, "a table"), allowed, required)

    def numbers(self, key: str, default: Any = MISSING) -> dict[str, float]:
        """A table of numbers (metrics, counters)."""
        return self._read(key, default, "a table of numbers",
                          lambda r, v: {k: r.at(k).number(x) for k, x in r.table(v).data.items()})


# -- the legacy-style entry points of other readers -----------------------------------------------------------


def check_fields(table: Mapping[str, Any], where: str, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
    """Reject unknown and missing fields of one table, ``where`` naming it (``demo.toml: flows[0]``)."""
    Reader(where).table(dict(table), allowed, required)


def expect_type(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    """``value`` if it is of ``kind`` (bools are never numbers), else an :class:`InputError` at ``where``."""
    return Reader(where).typed(value, kind, what)


# -- dataclass-driven encode / decode -----------------------------------------------------------------------


def encode(obj: Any) -> Any:
    """The plain JSON-ready form of ``obj``: a dataclass field by field in declaration order (a field whose
    value has ``to_dict`` uses it), enums by value, tuples as lists, mappings as dicts."""
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None and not isinstance(obj, type):
        return to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    return _plain(obj)


def encode_fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, encoded (:func:`encode`), ignoring any ``to_dict`` of ``obj`` itself."""
    return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def built(cls: type[T], values: dict[str, Any]) -> T:
    """``cls(**values)`` for a frozen dataclass without ``__post_init__``, when ``values`` names every field, in
    field order, with what the field holds: the instance takes ``values`` as its ``__dict__`` instead of the
    generated ``__init__`` setting each field with ``object.__setattr__`` (the cost of the simulator's results
    and a workload's features, built per experiment). ``values`` must be a fresh dict the caller keeps no use
    of."""
    obj: T = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    return value


_HINTS: Final[dict[type, dict[str, Any]]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s field types, resolved once."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def describe(kind: Any) -> str:
    """What a value of type ``kind`` is, as messages say it (``a number``, ``a list of strings``)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [describe(a) for a in args if a is not type(None)]
        return " or ".join(inner) + (" or null" if type(None) in args else "")
    if origin in (tuple, list):
        return "a list" if not args else f"a list of {_plural(describe(args[0]))}"
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        return "a table" if len(args) < 2 or args[1] is Any else f"a table of {_plural(describe(args[1]))}"
    if isinstance(kind, type) and issubclass(kind, Enum):
        return "one of " + ", ".join(str(m.value) for m in kind)
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(kind, "a table")


def _plural(what: str) -> str:
    return {"a string": "strings", "an integer": "integers", "a number": "numbers", "a table": "tables"}.get(what,
                                                                                                         what)


def decode(cls: type[T], data: Any, reader: Reader, custom: Custom | None = None) -> T:
    """A dataclass ``cls`` from its :func:`encode` form, every field checked against its declared type.

    Known types: ``str``, ``int``, ``float`` (an int is accepted), ``bool``, enums (by value), ``X | None``,
    ``tuple[X, ...]``/``tuple[X, Y]``/``list[X]``, ``Mapping``/``dict`` (``[str, X]``, ``Any`` values taken as
    they are), ``Any``, and nested classes: one in ``custom`` is read by its entry, another with a
    ``from_dict(data, reader)`` by that, another dataclass by :func:`decode`. A field with a default may be
    absent; no field outside the dataclass's may be present.
    """
    declared = dataclasses.fields(cls)  # type: ignore[arg-type]
    table = reader.table(data, [f.name for f in declared])
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in declared:
        kind = hints[f.name]
        if f.name not in table:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                table.at(f.name).missing(describe(kind))
            continue
        values[f.name] = _value(kind, table.data[f.name], table.at(f.name), custom or {})
    return cls(**values)


def _value(kind: Any, value: Any, reader: Reader, custom: Custom) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"decode: no rule for {kind}")
        if value is None:
            reader.wrong(value, describe(kind))
        return _value(inner[0], value, reader, custom)
    if origin in (tuple, list):
        items = reader.items(value, describe(kind))
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(items) != len(args):
                reader.wrong(value, f"a list of {len(args)} items")
            return tuple(_value(a, x, reader.at(i), custom) for i, (a, x) in enumerate(zip(args, items, strict=True)))
        out = [_value(args[0] if args else Any, x, reader.at(i), custom) for i, x in enumerate(items)]
        return tuple(out) if origin is tuple else out
    if origin in (dict, Mapping) or kind in (dict, Mapping):
        table = reader.table(value, what=describe(kind))
        values = args[1] if len(args) == 2 else Any
        return {k: _value(values, v, reader.at(k), custom) for k, v in table.data.items()}
    if kind is str:
        return reader.string(value)
    if kind is bool:
        return reader.flag(value)
    if kind is int:
        return reader.integer(value)
    if kind is float:
        return reader.number(value)
    if isinstance(kind, type) and issubclass(kind, Enum):
        return reader.choice(value, kind)
    if kind in custom:
        return custom[kind](value, reader)
    from_dict = getattr(kind, "from_dict", None)
    if from_dict is not None:
        return from_dict(value, reader)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return decode(kind, value, reader, custom)
    raise TypeError(f"decode: no rule for {kind}")
