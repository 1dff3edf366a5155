"""Read nccl-tests output (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf``, ...) into collectives.

One collective's section prints (recent versions first) ``# nccl-tests version ...``, ``# Collective test
starting: all_reduce_perf``, the parameters (``# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor)
warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0``), the rank table (``#  Rank  0 Group  0 Pid 1234
on host device  0 [0000:1b:00] NVIDIA H100 ...``; before 2.13 without ``Group``), a column header and one row per
size: size, count, type, redop, root, then the out-of-place time, algbw, busbw and ``#wrong`` (``error`` before
2.13; ``N/A`` without validation) and the same four in place. It ends with ``# Out of bounds values : 0 OK``,
``# Avg bus bandwidth : 47.8165`` and ``# Collective test concluded: all_reduce_perf``.

Accepted: the layouts of every version since 2.9 (the column header says which columns a row has: before 2.13
``all_gather_perf`` has no redop column, ``broadcast_perf`` a root and no redop, ``alltoall_perf`` a redop
column left blank); numbers as nccl-tests prints them when they do not fit (``158724``, ``1.0e+07``); mpirun's
``--tag-output`` prefixes (``[1,0]<stdout>:``); NCCL's ``INFO`` lines anywhere; the per-iteration (``-I 1``) and
timestamp columns; several collectives in one log (one :class:`NcclCollective` each). The collective's name comes
from the ``Collective test starting`` line, else from a command line before the section (``srun ...
all_reduce_perf -b 8``), else it is inferred from the columns, the rows and the rank count when only one
collective fits (``name_from`` says which).

Invariants:
    * every row has the values its column header names, or the file is refused (InputError, one sentence
      ``file:line: ...``); text that is not nccl-tests output is refused the same way;
    * a section without its ``# Avg bus bandwidth`` summary (killed, cut) is kept with ``complete`` False and
      a warning; nothing is printed, every warning is one sentence ``file:line: ...``;
    * rows are kept as printed, in order; a blank or absent redop or root is None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from collie.errors import InputError
from collie.importers.text import Line, integer_token, log_lines, looks_like_row, number_token, quoted, signed_token

#: bytes per element of nccl-tests' type names
TYPE_SIZES: Final[Mapping[str, int]] = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
    "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}

NameSource = Literal["banner", "command", "inferred"]

_NCCL_LOG: Final = re.compile(r"\bNCCL (?:INFO|WARN|TRACE|ABORT)\b")
_NCCL_VERSION: Final = re.compile(r"NCCL version (?P<version>\S+)")
_TESTS_VERSION: Final = re.compile(r"#\s*nccl-tests version (?P<version>\S+)(?: nccl-headers=(?P<headers>[0-9]+))?"
                                   r"(?: nccl-library=(?P<library>[0-9]+))?.*")
_STARTING: Final = re.compile(r"#\s*Collective test starting:\s*(?P<name>\S+)")
_CONCLUDED: Final = re.compile(r"#\s*Collective test concluded:\s*(?P<name>\S+)")
_PARAM: Final = re.compile(r"(?P<key>nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|agg iters:|iters:|"
                           r"validation:|graph:|unalign:)\s*(?P<value>\S+)")
_STEP: Final = re.compile(r"(?P<step>[0-9]{1,20})\((?P<kind>factor|bytes)\)")
_RANK: Final = re.compile(r"#\s*Rank\s+(?P<rank>[0-9]{1,9})\s+(?:Group\s+(?P<group>[0-9]{1,9})\s+)?Pid\s+"
                          r"(?P<pid>[0-9]{1,12})\s+on\s+(?P<host>\S+)\s+device\s+(?P<device>[0-9]{1,5})\s+"
                          r"\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)")
_REDUCED: Final = re.compile(r"#\s*Reducing maxBytes to (?P<bytes>[0-9]{1,20})")
_OUT_OF_BOUNDS: Final = re.compile(r"#\s*Out of bounds values\s*:\s*(?P<count>\S+)\s*(?P<verdict>OK|FAILED)?")
_AVG_BUS: Final = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)\s*(?P<verdict>OK|FAILED)?")
_ERROR: Final = re.compile(r"#\s*error:\s*(?P<text>.*)")
_COMMAND: Final = re.compile(r"\b(?P<name>(?:all_reduce|all_gather|reduce_scatter|alltoallv|alltoall|broadcast|"
                             r"reduce|sendrecv|gather|scatter|hypercube)_perf)(?:_mpi)?\b")
_PROMPT: Final = re.compile(r"(?:\[[^\]]*\]|[\w.\-]*@[^\s#$]*|~[^\s#$]*)?[#$]\s")
_DATE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME: Final = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")
_PER_ITERATION: Final = ("i_min", "i_max", "i_p99", "i_cv%")


@dataclass(frozen=True)
class NcclParams:
    """The ``# nThread ...`` line of a section; a field the version did not print is None.

    Attributes:
        n_threads: ``nThread``.
        n_gpus: ``nGpus`` (GPUs per thread).
        min_bytes: ``minBytes``.
        max_bytes: ``maxBytes`` (before a ``Reducing maxBytes`` line lowers it).
        step: the ``step:`` value: a factor or a byte increment (``step_kind`` says which).
        step_kind: ``factor`` or ``bytes``.
        warmup_iters: ``warmup iters``.
        iters: ``iters``.
        agg_iters: ``agg iters`` (2.13 on).
        validation: ``validation`` (0: no check, every ``#wrong`` is ``N/A``).
        graph: ``graph`` (CUDA graph launches; 2.13 on).
        unalign: ``unalign`` (2.18 on).
        fields: every ``name value`` pair of the line as printed.
        line: the line.
    """

    n_threads: int | None
    n_gpus: int | None
    min_bytes: int | None
    max_bytes: int | None
    step: int | None
    step_kind: str | None
    warmup_iters: int | None
    iters: int | None
    agg_iters: int | None
    validation: int | None
    graph: int | None
    unalign: int | None
    fields: Mapping[str, str]
    line: int


@dataclass(frozen=True)
class NcclRank:
    """One line of the rank table.

    Attributes:
        rank: the rank.
        group: its group (None before 2.13, which did not print it).
        pid: the process.
        host: the host name.
        device: the CUDA device index.
        bus_id: the PCI address as printed in brackets (``0000:1b:00``, ``0x35``).
        device_name: the GPU's name (``NVIDIA H100 80GB HBM3``).
        line: the line.
    """

    rank: int
    group: int | None
    pid: int
    host: str
    device: int
    bus_id: str
    device_name: str
    line: int


@dataclass(frozen=True)
class NcclResult:
    """The out-of-place or in-place half of a row.

    Attributes:
        time_us: ``time`` (or ``cputime``) in microseconds.
        algbw: ``algbw`` in GB/s.
        busbw: ``busbw`` in GB/s.
        wrong: ``#wrong`` (``error`` in old versions): wrong elements, None when printed ``N/A``.
        per_iteration: ``i_min``, ``i_max``, ``i_p99``, ``i_cv%`` of a ``-I 1`` run, else empty.
    """

    time_us: float
    algbw: float
    busbw: float
    wrong: int | None
    per_iteration: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class NcclRow:
    """One size row.

    Attributes:
        size: bytes.
        count: elements.
        type: the data type (``float``, ``double``, ``bfloat16``).
        redop: the reduction (``sum``, ``none``); None when blank or when the layout has no redop column.
        root: the root rank (-1 for none); None when blank or when the layout has no root column.
        out_of_place: the out-of-place half (None when the test printed only in-place).
        in_place: the in-place half.
        timestamp: the time the row was printed (``-Z``/timestamp column), else None.
        line: the line.
    """

    size: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: NcclResult | None
    in_place: NcclResult
    timestamp: str | None = None
    line: int = 0


@dataclass(frozen=True)
class NcclCollective:
    """One collective's section of a log.

    Attributes:
        name: the program (``all_reduce_perf``), None when the log does not name it and it cannot be inferred.
        name_from: where the name came from: ``banner`` (``# Collective test starting``), ``command`` (a command
            line before the section) or ``inferred``.
        tests_version: nccl-tests' version (``2.17.8``), from 2.17 on.
        nccl_version: NCCL's version (``2.12.7+cuda11.4`` from NCCL's own line, or the ``nccl-library=22902``
            code of the version line).
        params: the ``# nThread ...`` line.
        ranks: the rank table, in order.
        columns: the column header's names, in order (``size count type redop root time algbw busbw #wrong
            time algbw busbw #wrong``).
        rows: the rows, in order.
        out_of_bounds: ``Out of bounds values``.
        out_of_bounds_ok: whether that line said ``OK``.
        avg_bus_bandwidth: ``Avg bus bandwidth`` in GB/s.
        max_bytes_reduced_to: ``Reducing maxBytes to N`` (the sweep stopped below ``maxBytes``).
        complete: whether the section reached its ``Avg bus bandwidth`` summary.
        line: the line where the section starts.
    """

    name: str | None
    name_from: NameSource | None
    tests_version: str | None
    nccl_version: str | None
    params: NcclParams | None
    ranks: tuple[NcclRank, ...]
    columns: tuple[str, ...]
    rows: tuple[NcclRow, ...]
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    avg_bus_bandwidth: float | None
    max_bytes_reduced_to: int | None
    complete: bool
    line: int


@dataclass(frozen=True)
class NcclTestsLog:
    """Every collective of one nccl-tests log.

    Attributes:
        source: the name messages give the log (its file name).
        collectives: the sections, in order.
        warnings: one sentence each (``file:line: ...``).
    """

    source: str
    collectives: tuple[NcclCollective, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Layout:
    """What a column header says a row holds."""

    columns: tuple[str, ...]
    preamble: tuple[str, ...]  # of redop, root
    body: int  # values per half: 4, or 8 with per-iteration columns
    timestamp: bool


@dataclass(frozen=True)
class _Shape:
    """What tells one collective from another: its count per rank, its bus factor, reduction, root, old layout."""

    per_rank: bool
    factor: Literal["all", "ring", "one"]  # busbw/algbw: 2(n-1)/n, (n-1)/n, 1
    reduces: bool | None  # None: either (sendrecv prints 'sum' in new versions, nothing in old ones)
    rooted: bool
    old_columns: tuple[str, ...]  # the redop/root columns before 2.13


_SHAPES: Final[Mapping[str, _Shape]] = {
    "all_reduce_perf": _Shape(False, "all", True, False, ("redop",)),
    "reduce_scatter_perf": _Shape(True, "ring", True, False, ("redop",)),
    "all_gather_perf": _Shape(True, "ring", False, False, ()),
    "alltoall_perf": _Shape(True, "ring", False, False, ("redop",)),
    "broadcast_perf": _Shape(False, "one", False, True, ("root",)),
    "reduce_perf": _Shape(False, "one", True, True, ("redop", "root")),
    "sendrecv_perf": _Shape(False, "one", None, False, ()),
    "gather_perf": _Shape(True, "ring", False, True, ("root",)),
    "scatter_perf": _Shape(True, "ring", False, True, ("root",)),
}


def _layout(line: Line, source: str) -> _Layout:
    """The layout of a ``# size count type ...`` column header."""
    names = tuple(line.text.lstrip("#").split())
    pos = 3
    preamble: list[str] = []
    while pos < len(names) and names[pos] in ("redop", "root") and names[pos] not in preamble:
        preamble.append(names[pos])
        pos += 1
    halves: list[int] = []
    for _ in range(2):
        width = 0
        if pos + 3 < len(names) and names[pos] in ("time", "cputime") and names[pos + 1:pos + 3] == ("algbw", "busbw") \
                and names[pos + 3] in ("#wrong", "error"):
            width = 4
            if names[pos + 4:pos + 8] == _PER_ITERATION:
                width = 8
        if not width:
            break
        halves.append(width)
        pos += width
    timestamp = names[pos:] == ("timestamp",)
    if names[:3] != ("size", "count", "type") or len(halves) != 2 or halves[0] != halves[1] \
            or (pos != len(names) and not timestamp):
        raise InputError(f"{source}:{line.number}: not an nccl-tests column header (expected 'size count type "
                         f"[redop] [root] time algbw busbw #wrong time algbw busbw #wrong'), got {quoted(line.text)}")
    return _Layout(names, tuple(preamble), halves[0], timestamp)


def _half(tokens: list[str], layout: _Layout, line: Line, source: str) -> NcclResult:
    values = [number_token(t) for t in tokens[:3]]
    wrong_token = tokens[3]
    wrong = None if wrong_token == "N/A" else number_token(wrong_token)
    extra = {name: number_token(t) for name, t in zip(_PER_ITERATION, tokens[4:layout.body], strict=False)}
    if any(v is None for v in values) or (wrong_token != "N/A" and (wrong is None or wrong < 0)) \
            or any(v is None for v in extra.values()):
        raise InputError(f"{source}:{line.number}: expected numbers for time algbw busbw #wrong (#wrong may be "
                         f"N/A) in a result row, got {quoted(line.text)}")
    time_us, algbw, busbw = (float(v) for v in values if v is not None)
    return NcclResult(time_us, algbw, busbw, None if wrong is None else round(wrong),
                      {k: v for k, v in extra.items() if v is not None})


def _row(line: Line, layout: _Layout, source: str) -> NcclRow:
    tokens = line.tokens
    expected = " ".join(layout.columns)
    bad = InputError(f"{source}:{line.number}: expected an nccl-tests result row ({expected}), got {quoted(line.text)}")
    timestamp = None
    if layout.timestamp and len(tokens) >= 2 and _DATE.fullmatch(tokens[-2]) and _TIME.fullmatch(tokens[-1]):
        timestamp = f"{tokens[-2]} {tokens[-1]}"
        tokens = tokens[:-2]
    if len(tokens) < 3:
        raise bad
    size, count, type_name = integer_token(tokens[0]), integer_token(tokens[1]), tokens[2]
    if size is None or count is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", type_name):
        raise bad
    rest = tokens[3:]
    halves = 0
    if 0 <= len(rest) - 2 * layout.body <= len(layout.preamble):
        halves = 2
    elif len(rest) - layout.body == len(layout.preamble):
        halves = 1  # the out-of-place half left blank (a test that runs in place only)
    if not halves:
        raise bad
    middle = rest[:len(rest) - halves * layout.body]
    values = rest[len(middle):]
    redop: str | None = None
    root: int | None = None
    if len(middle) == 2:
        redop, root = middle[0], signed_token(middle[1])
        if root is None:
            raise bad
    elif len(middle) == 1:
        as_root = signed_token(middle[0])
        if "redop" in layout.preamble and (as_root is None or "root" not in layout.preamble):
            redop = middle[0]
        elif as_root is not None:
            root = as_root
        else:
            raise bad
    if redop is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", redop):
        raise bad
    results = [_half(values[i * layout.body:(i + 1) * layout.body], layout, line, source) for i in range(halves)]
    return NcclRow(size, count, type_name, redop, root, results[0] if halves == 2 else None, results[-1], timestamp,
                   line.number)


def _params(line: Line, source: str) -> NcclParams:
    fields: dict[str, str] = {}
    for m in _PARAM.finditer(line.text):
        fields.setdefault(m.group("key").rstrip(":"), m.group("value"))

    def number(key: str) -> int | None:
        if key not in fields:
            return None
        value = integer_token(fields[key])
        if value is None:
            raise InputError(f"{source}:{line.number}: nccl-tests parameter {key!r} should be an integer, got "
                             f"{quoted(fields[key])}")
        return value

    step: int | None = None
    kind: str | None = None
    if "step" in fields:
        stepped = _STEP.fullmatch(fields["step"])
        if stepped is None:
            raise InputError(f"{source}:{line.number}: nccl-tests parameter 'step' should be N(factor) or N(bytes), "
                             f"got {quoted(fields['step'])}")
        step, kind = int(stepped.group("step")), stepped.group("kind")
    return NcclParams(number("nThread"), number("nGpus"), number("minBytes"), number("maxBytes"), step, kind,
                      number("warmup iters"), number("iters"), number("agg iters"), number("validation"),
                      number("graph"), number("unalign"), fields, line.number)


def _infer(columns: tuple[str, ...], rows: list[NcclRow], ranks: int) -> list[str]:
    """The collectives whose shape fits the section (see :class:`_Shape`)."""
    present = tuple(c for c in ("redop", "root") if c in columns)
    reduces = any(r.redop not in (None, "none") for r in rows)
    rooted = any(r.root is not None and r.root >= 0 for r in rows)
    sized = [r for r in rows if r.count > 0 and r.type in TYPE_SIZES]
    ratio = None
    if sized:
        big = max(sized, key=lambda r: r.size)
        ratio = big.size / (big.count * TYPE_SIZES[big.type])
    measured = [r.out_of_place or r.in_place for r in rows]
    factor = None
    usable = [m for m in measured if m.algbw >= 0.5]
    if usable:
        best = max(usable, key=lambda m: m.algbw)
        factor = best.busbw / best.algbw
    fits: list[str] = []
    for name, shape in _SHAPES.items():
        if len(present) < 2 and present != shape.old_columns:
            continue
        if shape.reduces is not None and reduces != shape.reduces:
            continue
        if rooted != shape.rooted:
            continue
        if ratio is not None and ranks > 1 and abs(ratio - (ranks if shape.per_rank else 1)) > 0.01 * ranks:
            continue
        if factor is not None and ranks > 0:
            want = {"all": 2 * (ranks - 1) / ranks, "ring": (ranks - 1) / ranks, "one": 1.0}[shape.factor]
            if abs(factor - want) > 0.03 * max(want, 0.1):
                continue
        fits.append(name)
    return fits


class _Section:
    """A section being read (mutable); :meth:`build` freezes it."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.name: str | None = None
        self.name_from: NameSource | None = None
        self.tests_version: str | None = None
        self.nccl_library: str | None = None
        self.nccl_version: str | None = None
        self.banner = False
        self.params: NcclParams | None = None
        self.ranks: list[NcclRank] = []
        self.layout: _Layout | None = None
        self.rows: list[NcclRow] = []
        self.out_of_bounds: int | None = None
        self.out_of_bounds_ok: bool | None = None
        self.avg_bus: float | None = None
        self.reduced: int | None = None
        self.concluded = False
        self.last = line

    @property
    def started(self) -> bool:
        """Whether it holds more than a version line: a new banner or version line starts another section."""
        return self.banner or self.params is not None or self.layout is not None or bool(self.rows)

    @property
    def ended(self) -> bool:
        return self.avg_bus is not None or self.concluded

    def build(self, source: str, warnings: list[str]) -> NcclCollective:
        columns = self.layout.columns if self.layout else ()
        name, name_from = self.name, self.name_from
        if name is None and self.rows:
            fits = _infer(columns, self.rows, len(self.ranks))
            if len(fits) == 1:
                name, name_from = fits[0], "inferred"
            else:
                could = f"; it could be {' or '.join(fits)}" if fits else ""
                warnings.append(f"{source}:{self.line}: the collective of this section is not named in the log (no "
                                f"'# Collective test starting' line or command line){could}")
        if self.avg_bus is None:
            what = f"its {len(self.rows)} rows are kept" if self.rows else "it has no rows"
            warnings.append(f"{source}:{self.last}: the section that starts at line {self.line} ends without its "
                            f"'# Avg bus bandwidth' summary (killed, or cut short); {what}")
        return NcclCollective(
            name=name, name_from=name_from, tests_version=self.tests_version,
            nccl_version=self.nccl_version or self.nccl_library, params=self.params, ranks=tuple(self.ranks),
            columns=columns, rows=tuple(self.rows), out_of_bounds=self.out_of_bounds,
            out_of_bounds_ok=self.out_of_bounds_ok, avg_bus_bandwidth=self.avg_bus,
            max_bytes_reduced_to=self.reduced, complete=self.avg_bus is not None, line=self.line)


def parse_nccl_tests(text: str, source: str = "<nccl-tests>") -> NcclTestsLog:
    """Read nccl-tests' text output (see the module's docstring for what is accepted).

    Args:
        text: the whole log.
        source: the name messages give it (its file name).

    Returns:
        Every collective's section, in order, and the warnings.

    Raises:
        InputError: no nccl-tests section in ``text``, or a row, rank line, column header or parameter that
            cannot be read.
    """
    lines = log_lines(text)
    warnings: list[str] = []
    built: list[NcclCollective] = []
    section: _Section | None = None
    command: str | None = None  # a program named by a command line, for the next section

    def finish() -> None:
        nonlocal section
        if section is not None:
            built.append(section.build(source, warnings))
            section = None

    def begin(line: Line, fresh: bool) -> _Section:
        """The section ``line`` belongs to: the current one, or (``fresh``, or none yet) a new one."""
        nonlocal section, command
        if section is None or fresh:
            finish()
            section = _Section(line.number)
            if command is not None:
                section.name, section.name_from, command = command, "command", None
        section.last = line.number
        return section

    for line in lines:
        s = line.text
        if not s:
            continue
        if _NCCL_LOG.search(s):
            continue
        nccl = _NCCL_VERSION.match(s)
        if nccl is not None:
            if section is not None:
                section.nccl_version = nccl.group("version")
            continue
        if s.startswith("#"):
            if m := _TESTS_VERSION.fullmatch(s):
                current = begin(line, section is not None and (section.started or section.tests_version is not None))
                current.tests_version, current.nccl_library = m.group("version"), m.group("library")
            elif m := _STARTING.fullmatch(s):
                current = begin(line, section is not None and section.started)
                current.banner, current.name, current.name_from = True, m.group("name"), "banner"
            elif s.lstrip("#").split()[:1] == ["nThread"]:
                fresh = section is not None and (section.params is not None or section.layout is not None
                                                 or section.ended)
                begin(line, fresh).params = _params(line, source)
            elif s.lstrip("#").split()[:1] == ["Rank"]:
                rank = _RANK.fullmatch(s)
                if rank is None:
                    raise InputError(f"{source}:{line.number}: expected '#  Rank N [Group N] Pid N on HOST device N "
                                     f"[BUS] NAME', got {quoted(s)}")
                current = begin(line, section is not None and (section.layout is not None or section.ended))
                current.ranks.append(NcclRank(
                    int(rank.group("rank")), int(rank.group("group")) if rank.group("group") else None,
                    int(rank.group("pid")), rank.group("host"), int(rank.group("device")), rank.group("bus"),
                    rank.group("name").strip(), line.number))
            elif s.lstrip("#").split()[:1] == ["size"]:
                layout = _layout(line, source)
                if section is not None and section.layout == layout and not section.rows:
                    continue  # printed twice
                fresh = section is not None and (bool(section.rows) or section.ended or section.layout is not None)
                begin(line, fresh).layout = layout
            elif m := _REDUCED.match(s):
                begin(line, False).reduced = int(m.group("bytes"))
            elif m := _OUT_OF_BOUNDS.fullmatch(s):
                count = integer_token(m.group("count"))
                if section is None or count is None:
                    raise InputError(f"{source}:{line.number}: expected '# Out of bounds values : N OK' after a "
                                     f"result table, got {quoted(s)}")
                section.out_of_bounds, section.out_of_bounds_ok = count, m.group("verdict") != "FAILED"
                section.last = line.number
            elif m := _AVG_BUS.fullmatch(s):
                value = number_token(m.group("value"))
                if section is None or value is None:
                    raise InputError(f"{source}:{line.number}: expected '# Avg bus bandwidth : NUMBER' after a "
                                     f"result table, got {quoted(s)}")
                section.avg_bus = value
                section.last = line.number
            elif m := _CONCLUDED.fullmatch(s):
                if section is not None:
                    section.concluded = True
                    section.last = line.number
            elif m := _ERROR.fullmatch(s):
                warnings.append(f"{source}:{line.number}: nccl-tests reported an error: {quoted(m.group('text'))}")
            continue
        tokens = line.tokens
        in_table = section is not None and section.layout is not None and not section.ended
        if in_table and looks_like_row(tokens, 4) and not _PROMPT.match(s):
            assert section is not None and section.layout is not None
            section.rows.append(_row(line, section.layout, source))
            section.last = line.number
            continue
        if not in_table and tokens and integer_token(tokens[0]) is not None and looks_like_row(tokens, 4):
            raise InputError(f"{source}:{line.number}: a result row outside a table (no '# size count type ...' "
                             f"column header above it), got {quoted(s)}")
        named = _COMMAND.search(s)
        if named is not None and (_PROMPT.match(s) or not in_table):
            if section is not None and not section.rows and section.name is None:
                section.name, section.name_from = named.group("name"), "command"
            else:
                command = named.group("name")
        if in_table and _PROMPT.match(s):
            finish()
        elif in_table:
            warnings.append(f"{source}:{line.number}: not a result row, skipped: {quoted(s)}")
    finish()
    if not any(c.params is not None or c.columns or c.ranks for c in built):
        first = next((ln for ln in lines if ln.text), None)
        start = f" (it starts {quoted(first.text)})" if first else ""
        raise InputError(f"{source}:{first.number if first else 1}: not nccl-tests output: no '# nThread ...' line, "
                         f"rank table or '# size count type ...' column header in its {len(lines)} lines{start}")
    return NcclTestsLog(source, tuple(built), tuple(warnings))
