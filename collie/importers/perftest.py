"""Read perftest output (``ib_write_bw``, ``ib_read_lat``, ``ib_send_bw``, ``ib_atomic_bw``, ...) into runs.

A perftest run prints a dashed rule, its title (``RDMA_Write BW Test``, ``Send Latency Test``, ``Atomic
FETCH_AND_ADD BW Test``, ``RDMA_Write Bidirectional BW Test``, ``RDMA_Write Post List BW Test``), header lines of
``key : value`` pairs (one or two a line), a rule, the address of each QP at each end (``local address: LID ..
QPN .. PSN .. [OUT ..] [RKey .. VAddr ..]``, then ``GID: ..`` on RoCE), a rule, the column header (``#bytes
#iterations BW peak[Gb/sec] ...`` or ``#bytes #iterations t_min[usec] ...``), one row per message size, and a
closing rule. :func:`parse_perftest` reads that text, and the JSON ``--out_json`` writes.

Accepted around and inside the output: shell prompts and command lines (wrapped or not) before it, any leading
indentation (code blocks indent every line, not always evenly), tabs and uneven spacing, messages printed in the
table (``Conflicting CPU frequency values detected``, ``libibverbs: Warning``), the extra lines of vendor forks
(``Connected:``, ``Using ROCm Device ...``), several runs one after another, and the output of a server and a
client interleaved in one file (one title printed before the other's results: read as one run, with a warning).

The header becomes a mapping of every ``key : value`` pair (as printed) and typed fields for a collie flow shape
(:class:`PerftestHeader`). Each row is a :class:`BandwidthRow` or :class:`LatencyRow` by the columns: older
latency tools print fewer columns (``t_min t_max t_typical`` only), and those absent are None.

Invariants:
    * every row has exactly the numbers its column header names, or the file is refused (InputError, one
      sentence ``file:line: ...``); text that is not perftest output at all is refused the same way;
    * a run whose table has no closing rule (killed, ``--run_infinitely``) is kept, rows and all, with
      ``complete`` False and a warning; nothing is printed, every warning is a sentence ``file:line: ...``;
    * a row printed again after the closing rule (the other process of a loopback run) is dropped, with a
      warning; no row is ever merged, averaged or reordered;
    * the JSON form is read with :class:`collie.codec.Reader`; perftest's pre-24.01 JSON (unquoted keys and
      values, trailing commas) is repaired first, and a warning says what was repaired.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from collie.codec import Reader, Table, shown
from collie.errors import InputError
from collie.importers.text import Line, integer_token, log_lines, looks_like_row, number_token, quoted

#: perftest's verbs (``testsStr``) -> collie's opcode family
VERBS: Final[Mapping[str, str]] = {"Send": "SEND", "Send_imm": "SEND", "RDMA_Write": "WRITE",
                                   "RDMA_Write_imm": "WRITE", "RDMA_Read": "READ", "Atomic": "ATOMIC"}
Kind = Literal["bw", "lat"]

_RULE: Final = re.compile(r"-{20,}")
_TITLE: Final = re.compile(
    r"(?P<verb>Send_imm|Send|RDMA_Write_imm|RDMA_Write|RDMA_Read|Atomic)(?:\s+(?P<atomic>CMP_AND_SWAP|FETCH_AND_ADD))?"
    r"(?P<bidir>\s+Bidirectional)?(?P<post>\s+Post\s+List)?\s+(?P<kind>BW|Latency)(?:\s+forwarding)?"
    r"(?:\s+Multicast)?\s+Test")
#: one ``key : value`` pair; a header line is one or more of them and nothing else
_PAIR: Final = re.compile(r"(?P<key>[A-Za-z][\w.*\-]*(?:[ \t]+[\w.*\-]+)*)[ \t]*:[ \t]*(?P<value>\S+)")
_ADDRESS: Final = re.compile(r"(?P<side>local|remote)\s+address:\s*(?P<rest>.*)")
_ADDRESS_FIELD: Final = re.compile(r"(?P<name>LID|QPN|PSN|OUT|RKey|VAddr|SRQn)\s+(?P<value>(?:0x)?[0-9a-fA-F]{1,20})")
_GID: Final = re.compile(r"M?GID:\s*(?P<gid>[0-9]{1,3}(?::[0-9]{1,3}){15})")
_COLUMN: Final = re.compile(
    r"#bytes|#sl|#iterations|BW\s+peak\[[^\]\s]+\]|BW\s+average\[[^\]\s]+\]|MsgRate\[Mpps\]"
    r"|BW\s+Port[12]\[[^\]\s]+\]|MsgRate\s+Port[12]\[Mpps\]|t_min\[usec\]|t_max\[usec\]|t_typical\[usec\]"
    r"|t_avg\[usec\]|t_stdev\[usec\]|99%\s+percentile\[usec\]|99\.9%\s+percentile\[usec\]|tps\s+average"
    r"|CPU_Util\[%\]")
_UNIT: Final = re.compile(r"BW peak\[(?P<unit>[^\]]+)\]")
#: a shell prompt (``root@host:~# ``, ``[user@host ~]$ ``, ``~# ``, ``$ ``): the output before it has ended
_PROMPT: Final = re.compile(r"(?:\[[^\]]*\]|[\w.\-]*@[^\s#$]*|~[^\s#$]*)?[#$](?:\s|$)")
#: what perftest and the libraries under it print inside a table that is not a row (kept out silently)
_NOISE: Final = re.compile(r"Conflicting CPU frequency|libibverbs:|WARNING|Warning|\*|Using sampled CPU speed|"
                           r"Completed:|Connected:|Total run time|deallocating|allocated|Using ROCm|Waiting for")
#: header keys (in :func:`canonical` form) that start a run when no title came before them
_HEADER_KEYS: Final = frozenset({
    "dualport", "device", "numberofqps", "transporttype", "connectiontype", "usingsrq", "pcierelaxorder",
    "ibvwrapi", "txdepth", "rxdepth", "cqmoderation", "postlist", "mtu", "linktype", "gidindex", "maxinlinedata",
    "outstandreads", "rdmacmqps", "dataexmethod"})
#: the columns of a row -> the field of a bandwidth row
_BW_FIELDS: Final[Mapping[str, str]] = {"#bytes": "size", "#iterations": "iterations", "BW peak": "bw_peak",
                                        "BW average": "bw_average", "MsgRate": "msg_rate"}
_LAT_FIELDS: Final[Mapping[str, str]] = {
    "#bytes": "size", "#iterations": "iterations", "t_min": "t_min", "t_max": "t_max", "t_typical": "t_typical",
    "t_avg": "t_avg", "t_stdev": "t_stdev", "99% percentile": "p99", "99.9% percentile": "p99_9",
    "tps average": "tps_average"}
_INTEGER_COLUMNS: Final = frozenset({"#bytes", "#iterations", "#sl"})


def canonical(key: str) -> str:
    """A header key in a form both outputs share: ``Dual-port`` and ``Dual_port`` are ``dualport``,
    ``ibv_wr* API`` and ``ibv_wr_API`` are ``ibvwrapi``."""
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _column_name(column: str) -> str:
    """A column without its unit (``BW peak[Gb/sec]`` -> ``BW peak``)."""
    return re.sub(r"\[[^\]]*\]$", "", column)


@dataclass(frozen=True)
class PerftestHeader:
    """The header of a run: every ``key : value`` pair as printed, and the typed fields of a flow shape.

    A typed field is None when the run did not print it (a server prints no ``TX depth``, a READ test no ``Max
    inline data``, a run on the default GID no ``GID index``).

    Attributes:
        fields: every pair, key and value as printed (key white space collapsed), in order.
        device: the RDMA device (``mlx5_0``).
        qps: ``Number of qps``.
        transport: ``Transport type`` (``IB`` for every verbs transport, ``IW`` on iWARP).
        connection: ``Connection type``: ``RC``, ``UC``, ``UD`` (or ``XRC``, ``DC``, ``SRD``, ``RawEth``).
        using_srq: ``Using SRQ``.
        tx_depth: ``TX depth``.
        rx_depth: ``RX depth``.
        cq_moderation: ``CQ Moderation`` (bandwidth tools).
        post_list: ``Post List`` (only printed above 1).
        mtu: ``Mtu`` in bytes.
        link_type: ``Link type``: ``IB`` or ``Ethernet`` (RoCE).
        gid_index: ``GID index``.
        max_inline: ``Max inline data`` in bytes.
        outstand_reads: ``Outstand reads`` (READ and atomic tests).
    """

    fields: Mapping[str, str]
    device: str | None = None
    qps: int | None = None
    transport: str | None = None
    connection: str | None = None
    using_srq: bool | None = None
    tx_depth: int | None = None
    rx_depth: int | None = None
    cq_moderation: int | None = None
    post_list: int | None = None
    mtu: int | None = None
    link_type: str | None = None
    gid_index: int | None = None
    max_inline: int | None = None
    outstand_reads: int | None = None


@dataclass(frozen=True)
class QpAddress:
    """One ``local address:`` or ``remote address:`` line and the ``GID:`` line under it.

    Attributes:
        side: ``local`` or ``remote``.
        lid: the LID (0 on RoCE).
        qpn: the QP number.
        psn: the first packet sequence number.
        out_reads: ``OUT``, the outstanding reads (READ tests).
        rkey: ``RKey`` (WRITE and READ tests).
        vaddr: ``VAddr`` (WRITE and READ tests).
        srqn: ``SRQn`` (XRC and DC).
        gid: the GID as printed (perftest prints its 16 bytes in decimal, ``00:00:...:255:255:192:168:02:226``).
        line: the line of the address.
    """

    side: str
    lid: int
    qpn: int
    psn: int
    out_reads: int | None = None
    rkey: int | None = None
    vaddr: int | None = None
    srqn: int | None = None
    gid: str | None = None
    line: int = 0


@dataclass(frozen=True)
class BandwidthRow:
    """One row of a bandwidth tool.

    Attributes:
        size: ``#bytes``, the message size.
        iterations: ``#iterations``.
        bw_peak: ``BW peak`` in the run's unit (``0.00`` in a duration run, ``-D``).
        bw_average: ``BW average`` in the run's unit.
        msg_rate: ``MsgRate`` in Mpps.
        extra: any other column by its header name (``#sl``, ``BW Port1[Gb/sec]``, ``CPU_Util[%]``).
        line: the row's line.
    """

    size: int
    iterations: int
    bw_peak: float
    bw_average: float
    msg_rate: float
    extra: Mapping[str, float] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class LatencyRow:
    """One row of a latency tool, in microseconds; a column the tool did not print is None.

    Attributes:
        size: ``#bytes``.
        iterations: ``#iterations``.
        t_min: ``t_min``.
        t_max: ``t_max``.
        t_typical: ``t_typical`` (the median).
        t_avg: ``t_avg``.
        t_stdev: ``t_stdev``.
        p99: ``99% percentile``.
        p99_9: ``99.9% percentile``.
        tps_average: ``tps average`` (transactions per second, duration runs).
        extra: any other column by its header name (``CPU_Util[%]``).
        line: the row's line.
    """

    size: int
    iterations: int
    t_min: float | None = None
    t_max: float | None = None
    t_typical: float | None = None
    t_avg: float | None = None
    t_stdev: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    tps_average: float | None = None
    extra: Mapping[str, float] = field(default_factory=dict)
    line: int = 0


PerftestRow = BandwidthRow | LatencyRow


@dataclass(frozen=True)
class PerftestRun:
    """One run of one perftest tool.

    Attributes:
        title: the title as printed (``RDMA_Write BW Test``), None when the log does not have it.
        verb: ``WRITE``, ``READ``, ``SEND`` or ``ATOMIC`` (None without a title).
        kind: ``bw`` or ``lat``.
        bidirectional: a ``-b`` run (both sides send; each row is the sum of both directions).
        immediate: a ``_imm`` verb (``Send_imm``, ``RDMA_Write_imm``).
        atomic_op: ``FETCH_AND_ADD`` or ``CMP_AND_SWAP`` for atomics.
        header: the header.
        addresses: the address lines, in order (one local and one remote per QP; a loopback log has both
            processes' lines).
        columns: the column header's columns as printed (``BW peak[Gb/sec]``), in order.
        unit: the bandwidth unit (``MB/sec``, ``MiB/sec``, ``Gb/sec``), ``usec`` for latency, None when the log
            does not say (JSON).
        rows: the rows, in order.
        complete: whether the table was closed by perftest's closing rule.
        line: the line where the run starts.
        form: ``text`` or ``json``.
    """

    title: str | None
    verb: str | None
    kind: Kind
    bidirectional: bool
    immediate: bool
    atomic_op: str | None
    header: PerftestHeader
    addresses: tuple[QpAddress, ...]
    columns: tuple[str, ...]
    unit: str | None
    rows: tuple[PerftestRow, ...]
    complete: bool
    line: int
    form: Literal["text", "json"] = "text"


@dataclass(frozen=True)
class PerftestLog:
    """Every run of one perftest log.

    Attributes:
        source: the name messages give the log (its file name).
        runs: the runs, in the order they start.
        warnings: one sentence each (``file:line: ...``): runs cut short, rows dropped, JSON repaired.
    """

    source: str
    runs: tuple[PerftestRun, ...]
    warnings: tuple[str, ...] = ()


# -- the text form -------------------------------------------------------------------------------------------


def _pairs(text: str) -> list[tuple[str, str]] | None:
    """The ``key : value`` pairs of a header line, or None when the line is not only pairs."""
    pairs: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _PAIR.match(text, pos)
        if m is None:
            return None
        pairs.append((" ".join(m.group("key").split()), m.group("value")))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return pairs or None


def _columns(line: Line, source: str) -> tuple[str, ...]:
    """The columns of a ``#bytes ...`` header line."""
    text, pos, out = line.text, 0, []
    while pos < len(text):
        m = _COLUMN.match(text, pos)
        if m is None:
            raise InputError(f"{source}:{line.number}: unknown column {quoted(text[pos:].split()[0])} in a perftest "
                             "result header; known: #bytes #iterations BW peak BW average MsgRate t_min t_max "
                             "t_typical t_avg t_stdev 99% percentile 99.9% percentile tps average")
        out.append(" ".join(m.group(0).split()))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tuple(out)


def _kind_of(columns: tuple[str, ...]) -> Kind | None:
    names = {_column_name(c) for c in columns}
    if {"#bytes", "#iterations", "BW peak", "BW average", "MsgRate"} <= names:
        return "bw"
    if {"#bytes", "#iterations"} <= names and names & {"t_min", "t_avg", "t_typical"}:
        return "lat"
    return None


class _Run:
    """A run being read (mutable); :meth:`build` freezes it."""

    def __init__(self, line: int, title: re.Match[str] | None) -> None:
        self.line = line
        self.title = title
        self.fields: dict[str, str] = {}
        self.field_lines: dict[str, int] = {}
        self.addresses: list[dict[str, Any]] = []
        self.columns: tuple[str, ...] = ()
        self.rows: list[PerftestRow] = []
        self.row_tokens: dict[tuple[str, ...], int] = {}
        self.closed = False

    @property
    def in_table(self) -> bool:
        return bool(self.columns)

    def build(self, source: str, warnings: list[str], last: int) -> PerftestRun:
        kind = _kind_of(self.columns) if self.columns else None
        if kind is None:
            kind = "bw" if self.title is None or self.title.group("kind") == "BW" else "lat"
        if not self.closed:
            what = f"its {len(self.rows)} rows are kept" if self.rows else "it has no rows"
            warnings.append(f"{source}:{last}: the run that starts at line {self.line} ends without perftest's "
                            f"closing rule (killed, or cut short); {what}")
        unit = None
        for column in self.columns:
            m = _UNIT.fullmatch(column)
            if m is not None:
                unit = m.group("unit")
        if kind == "lat" and self.columns:
            unit = "usec"
        title = self.title
        return PerftestRun(
            title=" ".join(title.group(0).split()) if title else None,
            verb=VERBS[title.group("verb")] if title else None,
            kind=kind,
            bidirectional=bool(title and title.group("bidir")),
            immediate=bool(title and title.group("verb").endswith("_imm")),
            atomic_op=title.group("atomic") if title else None,
            header=_header(self.fields, self.field_lines, source),
            addresses=tuple(QpAddress(**a) for a in self.addresses),
            columns=self.columns,
            unit=unit,
            rows=tuple(self.rows),
            complete=self.closed,
            line=self.line)


def _header(fields: Mapping[str, str], lines: Mapping[str, int], source: str) -> PerftestHeader:
    """The typed header of ``fields`` (``lines`` gives each key's line for messages)."""
    by_canonical = {canonical(k): k for k in reversed(list(fields))}

    def text(name: str) -> str | None:
        key = by_canonical.get(name)
        return fields[key] if key is not None else None

    def number(name: str) -> int | None:
        key = by_canonical.get(name)
        if key is None:
            return None
        m = re.fullmatch(r"([0-9]{1,12})(?:\[B\])?", fields[key])
        if m is None:
            raise InputError(f"{source}:{lines.get(key, 1)}: perftest header field {key!r} should be an integer, "
                             f"got {quoted(fields[key])}")
        return int(m.group(1))

    def flag(name: str) -> bool | None:
        value = text(name)
        return None if value is None else {"ON": True, "OFF": False}.get(value.upper())

    return PerftestHeader(
        fields=dict(fields), device=text("device"), qps=number("numberofqps"), transport=text("transporttype"),
        connection=text("connectiontype"), using_srq=flag("usingsrq"), tx_depth=number("txdepth"),
        rx_depth=number("rxdepth"), cq_moderation=number("cqmoderation"), post_list=number("postlist"),
        mtu=number("mtu"), link_type=text("linktype"), gid_index=number("gidindex"),
        max_inline=number("maxinlinedata"), outstand_reads=number("outstandreads"))


def _address(line: Line, source: str, side: str, rest: str) -> dict[str, Any]:
    values: dict[str, int] = {}
    pos = 0
    while pos < len(rest):
        m = _ADDRESS_FIELD.match(rest, pos)
        if m is None:
            break
        values[m.group("name")] = int(m.group("value"), 16)
        pos = m.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    if pos < len(rest) or not {"LID", "QPN", "PSN"} <= values.keys():
        raise InputError(f"{source}:{line.number}: expected '{side} address: LID <hex> QPN <hex> PSN <hex>' "
                         f"(then OUT, RKey, VAddr or SRQn), got {quoted(line.text)}")
    return {"side": side, "lid": values["LID"], "qpn": values["QPN"], "psn": values["PSN"],
            "out_reads": values.get("OUT"), "rkey": values.get("RKey"), "vaddr": values.get("VAddr"),
            "srqn": values.get("SRQn"), "line": line.number}


def _row(line: Line, source: str, kind: Kind, columns: tuple[str, ...]) -> PerftestRow:
    tokens = line.tokens
    names = [_column_name(c) for c in columns]
    values: list[float | int] = []
    for token, name in zip(tokens, names, strict=False):
        value: float | int | None = integer_token(token) if name in _INTEGER_COLUMNS else number_token(token)
        if value is None:
            break
        values.append(value)
    if len(tokens) != len(columns) or len(values) != len(columns):
        raise InputError(f"{source}:{line.number}: expected {len(columns)} numbers in a result row "
                         f"({' '.join(names)}), got {quoted(line.text)}")
    known = _BW_FIELDS if kind == "bw" else _LAT_FIELDS
    typed: dict[str, Any] = {}
    extra: dict[str, float] = {}
    for column, name, value in zip(columns, names, values, strict=True):
        if name in known:
            typed[known[name]] = value
        else:
            extra[column] = value
    if kind == "bw":
        return BandwidthRow(**typed, extra=extra, line=line.number)
    return LatencyRow(**typed, extra=extra, line=line.number)


def parse_perftest_text(text: str, source: str = "<perftest>") -> PerftestLog:
    """Read perftest's text output (see the module's docstring for what is accepted).

    Args:
        text: the whole log.
        source: the name messages give it (its file name).

    Returns:
        Every run, in order, and the warnings.

    Raises:
        InputError: no perftest run in ``text``, or a row, address, column header or typed header field that
            cannot be read.
    """
    lines = log_lines(text)
    warnings: list[str] = []
    run: _Run | None = None
    built: list[PerftestRun] = []
    last = 0

    def finish() -> None:
        nonlocal run
        if run is not None:
            built.append(run.build(source, warnings, last))
            run = None

    def start(line: Line, title: re.Match[str] | None) -> _Run:
        finish()
        return _Run(line.number, title)

    for line in lines:
        s = line.text
        if not s:
            continue
        title = _TITLE.fullmatch(s)
        if title is not None:
            if run is not None and not run.in_table and not run.rows and run.title is not None \
                    and " ".join(run.title.group(0).split()) == " ".join(s.split()):
                warnings.append(f"{source}:{line.number}: a second {quoted(' '.join(s.split()))} header before the "
                                f"first run printed results (two processes' output interleaved, e.g. a loopback "
                                f"run); read as one run")
            else:
                if run is not None and not run.in_table and not run.rows:
                    warnings.append(f"{source}:{line.number}: the run that starts at line {run.line} has no result "
                                    f"table before the next title; its header is dropped")
                    run = None
                run = start(line, title)
            last = line.number
            continue
        if _RULE.fullmatch(s):
            if run is not None:
                last = line.number
                if run.in_table and run.rows and not run.closed:
                    run.closed = True
            continue
        if _PROMPT.match(s):
            finish()
            continue
        if s.startswith("#bytes"):
            columns = _columns(line, source)
            kind = _kind_of(columns)
            if kind is None:
                raise InputError(f"{source}:{line.number}: a perftest result header without the columns of a "
                                 f"bandwidth or latency table, got {quoted(s)}")
            if run is not None and run.in_table and not run.rows and columns == run.columns:
                continue  # printed twice (two processes)
            if run is None or run.rows:
                previous = run
                run = start(line, previous.title if previous else None)
                if previous is not None:
                    run.fields, run.field_lines = dict(previous.fields), dict(previous.field_lines)
                    run.addresses = list(previous.addresses)
                else:
                    warnings.append(f"{source}:{line.number}: a result table without the test title and header "
                                    "above it; the test is taken from its columns")
            if run.title is not None and kind != ("bw" if run.title.group("kind") == "BW" else "lat"):
                raise InputError(f"{source}:{line.number}: the {quoted(' '.join(run.title.group(0).split()))} run "
                                 f"of line {run.line} prints a {'bandwidth' if kind == 'bw' else 'latency'} table")
            run.columns = columns
            last = line.number
            continue
        address = _ADDRESS.fullmatch(s)
        if address is not None:
            if run is None or run.rows:
                run = start(line, None)
            run.addresses.append(_address(line, source, address.group("side"), address.group("rest")))
            last = line.number
            continue
        gid = _GID.fullmatch(s)
        if gid is not None and run is not None and run.addresses and not run.rows:
            run.addresses[-1]["gid"] = gid.group("gid")
            last = line.number
            continue
        if run is not None and run.closed:
            pairs = _pairs(s)
            if pairs is not None and any(canonical(k) in _HEADER_KEYS for k, _ in pairs):
                finish()
        if run is not None and run.in_table:
            tokens = line.tokens
            if not _NOISE.match(s) and looks_like_row(tokens):
                kind = _kind_of(run.columns)
                assert kind is not None  # checked when the columns were read
                try:
                    row = _row(line, source, kind, run.columns)
                except InputError:
                    if run.closed:
                        continue  # text after the run that happens to hold numbers (``[1]+ Done ... -n 5000``)
                    raise
                seen = tuple(tokens)
                if run.closed and seen in run.row_tokens:
                    warnings.append(f"{source}:{line.number}: the row of line {run.row_tokens[seen]} printed again "
                                    "after the table closed (the other process of the run); dropped")
                    continue
                run.closed = False
                run.rows.append(row)
                run.row_tokens.setdefault(seen, line.number)
                last = line.number
            elif not run.closed and not _NOISE.match(s):
                warnings.append(f"{source}:{line.number}: not a result row, skipped: {quoted(s)}")
            continue
        pairs = _pairs(s)
        if run is not None and pairs is None and len(line.tokens) >= 4 and looks_like_row(line.tokens, 4):
            raise InputError(f"{source}:{line.number}: a result row before the '#bytes #iterations ...' column "
                             f"header of the run that starts at line {run.line}, got {quoted(s)}")
        known = pairs is not None and any(canonical(k) in _HEADER_KEYS for k, _ in pairs)
        if pairs is not None and (run is not None or known):
            if run is None:
                run = start(line, None)
            for key, value in pairs:
                if key not in run.fields:
                    run.fields[key], run.field_lines[key] = value, line.number
                elif run.fields[key] != value:
                    warnings.append(f"{source}:{line.number}: {key!r} is {quoted(value)} here but "
                                    f"{quoted(run.fields[key])} at line {run.field_lines[key]}; the first is kept")
            last = line.number
    finish()
    if not built:
        first = next((ln for ln in lines if ln.text), None)
        if first is None:
            raise InputError(f"{source}:1: empty; expected perftest output (a title such as 'RDMA_Write BW Test' "
                             "and a result table)")
        raise InputError(f"{source}:{first.number}: not perftest output: no test title such as 'RDMA_Write BW "
                         f"Test', header or result table in its {len(lines)} lines (it starts {quoted(first.text)})")
    return PerftestLog(source, tuple(built), tuple(warnings))


# -- the JSON form -------------------------------------------------------------------------------------------

#: one line of perftest's JSON: ``key: value,`` with the key and a word value quoted or not
_JSON_LINE: Final = re.compile(r'(?P<indent>\s*)(?:"(?P<qkey>[^"]*)"|(?P<key>[A-Za-z_][^":{}\[\],]*))\s*:(?P<value>.*)')
_JSON_BARE: Final = re.compile(r"[-+]?[0-9][0-9.eE+\-]*|true|false|null|\{|\[")
_TRAILING_COMMA: Final = re.compile(r",(\s*[}\]])")
_JSON_TITLE: Final = re.compile(
    r"(?P<verb>Send_imm|Send|RDMA_Write_imm|RDMA_Write|RDMA_Read|Atomic)(?:_(?P<atomic>CMP_AND_SWAP|FETCH_AND_ADD))?"
    r"(?P<bidir>_Bidirectional)?(?P<post>_Post_List)?_(?P<kind>BW|Latency)(?P<rest>(?:_forwarding)?(?:_Multicast)?)"
    r"_Test")
_JSON_BW: Final[Mapping[str, str]] = {"MsgSize": "size", "n_iterations": "iterations", "BW_peak": "bw_peak",
                                      "BW_average": "bw_average", "MsgRate": "msg_rate"}
_JSON_LAT: Final[Mapping[str, str]] = {
    "MsgSize": "size", "n_iterations": "iterations", "t_min": "t_min", "t_max": "t_max", "t_typical": "t_typical",
    "t_avg": "t_avg", "t_stdev": "t_stdev", "percentile_99": "p99", "percentile_99.9": "p99_9",
    "tps_average": "tps_average"}


def _repair(text: str) -> tuple[str, str | None, int]:
    """perftest's pre-24.01 JSON made standard: keys and word values quoted, trailing commas removed.

    Returns:
        The repaired text, a sentence of what was repaired (None: nothing) and the first line changed.
    """
    keys = values = 0
    first = 0
    out: list[str] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        body = raw.rstrip()
        comma = "," if body.endswith(",") else ""
        m = _JSON_LINE.fullmatch(body[:-1] if comma else body)
        if m is None:
            out.append(raw)
            continue
        key = m.group("qkey") if m.group("qkey") is not None else m.group("key").strip()
        value = m.group("value").strip()
        changed = m.group("qkey") is None
        keys += changed
        if value and not value.startswith('"') and not _JSON_BARE.fullmatch(value):
            value = json.dumps(value)
            values += 1
            changed = True
        if changed and not first:
            first = number
        out.append(f"{m.group('indent')}{json.dumps(key)}: {value}{comma}")
    repaired = "\n".join(out)
    commas = len(_TRAILING_COMMA.findall(repaired))
    repaired = _TRAILING_COMMA.sub(r"\1", repaired)
    done = [f"{n} {what}" for n, what in ((keys, "unquoted keys quoted"), (values, "unquoted values quoted"),
                                          (commas, "trailing commas removed")) if n]
    return repaired, ", ".join(done) if done else None, first or 1


def _json_objects(text: str, source: str) -> tuple[list[tuple[Any, int]], str | None, int]:
    """The top-level objects of ``text`` with the line each starts on, repaired when it is not standard JSON."""
    decoder = json.JSONDecoder()

    def objects(body: str) -> list[tuple[Any, int]]:
        found: list[tuple[Any, int]] = []
        pos = 0
        while True:
            while pos < len(body) and body[pos].isspace():
                pos += 1
            if pos >= len(body):
                return found
            value, end = decoder.raw_decode(body, pos)
            found.append((value, body.count("\n", 0, pos) + 1))
            pos = end

    try:
        return objects(text), None, 0
    except (json.JSONDecodeError, RecursionError):
        pass
    repaired, what, first = _repair(text)
    try:
        return objects(repaired), what, first
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}: not perftest JSON, even read as perftest's pre-24.01 form with "
                         f"unquoted keys ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{source}:1: not perftest JSON: nested too deeply") from None


def _key_lines(text: str) -> Callable[[str, str], int]:
    """The line of ``key`` inside section ``section`` of a JSON log (1 when not found), for messages."""
    lines = text.split("\n")

    def line_of(section: str, key: str) -> int:
        start = next((i for i, ln in enumerate(lines) if re.match(rf'\s*"?{re.escape(section)}"?\s*:', ln)), 0)
        pat = re.compile(rf'\s*"?{re.escape(key)}"?\s*:')
        return next((i + 1 for i in range(start, len(lines)) if pat.match(lines[i])), start + 1)

    return line_of


def _json_run(value: Any, line: int, source: str, line_of: Callable[[str, str], int]) -> PerftestRun:
    top = Reader(f"{source}:{line}").table(value, what="a perftest JSON object with test_info and results",
                                           required=("test_info", "results"))

    def section(name: str) -> Table:
        return Reader(f"{source}:{line_of(name, name)}", InputError, (name,)).table(
            top.data[name], what="an object",
            fields=lambda key: Reader(f"{source}:{line_of(name, key)}", InputError, (name, key)))

    info, results = section("test_info"), section("results")
    fields: dict[str, str] = {}
    lines: dict[str, int] = {}
    for key, raw in info.data.items():
        shown_value = info.at(key).typed(raw, (str, int, float), "a string or a number")
        fields[key], lines[key] = str(shown_value), line_of("test_info", key)
    test = fields.get("test", "")
    title = _JSON_TITLE.fullmatch(test)
    if title is None:
        info.at("test").fail(f"expected a perftest test name such as RDMA_Write_BW_Test, got {shown(test)}")
    kind: Kind = "bw" if title.group("kind") == "BW" else "lat"
    known = _JSON_BW if kind == "bw" else _JSON_LAT
    if "MsgSize" not in results or "n_iterations" not in results:
        results.reader.fail("has no MsgSize and n_iterations (a run with --output=bandwidth, message_rate or "
                            "latency writes only its one figure); collie needs the full report")
    typed: dict[str, Any] = {}
    extra: dict[str, float] = {}
    for key in results.data:
        if key in ("MsgSize", "n_iterations"):
            typed[known[key]] = results.integer(key, minimum=0)
        elif key in known:
            typed[known[key]] = results.number(key)
        else:
            extra[key] = results.number(key)
    row: PerftestRow
    try:
        row = BandwidthRow(**typed, extra=extra, line=line_of("results", "MsgSize")) if kind == "bw" else \
            LatencyRow(**typed, extra=extra, line=line_of("results", "MsgSize"))
    except TypeError:
        missing = sorted(k for k, f in known.items() if f not in typed)
        results.reader.fail(f"misses the {kind} results {', '.join(missing)}")
    words = [title.group("verb")]
    words += [title.group("atomic")] if title.group("atomic") else []
    words += ["Bidirectional"] if title.group("bidir") else []
    words += ["Post List"] if title.group("post") else []
    words += [title.group("kind")] + [w for w in title.group("rest").split("_") if w] + ["Test"]
    return PerftestRun(
        title=" ".join(words), verb=VERBS[title.group("verb")], kind=kind, bidirectional=bool(title.group("bidir")),
        immediate=title.group("verb").endswith("_imm"), atomic_op=title.group("atomic"),
        header=_header(fields, lines, source), addresses=(), columns=tuple(results.data), unit=None,
        rows=(row,), complete=True, line=line, form="json")


def parse_perftest_json(text: str, source: str = "<perftest json>") -> PerftestLog:
    """Read the file perftest's ``--out_json`` writes: one object (``test_info`` and ``results``) per run.

    perftest rewrites the file for every message size, so a sweep's file holds its last size only. Files of
    perftest 4.5 to 23.x are not JSON (keys and most values unquoted, trailing commas); they are repaired and a
    warning says what was repaired. Several objects one after another are several runs. The JSON does not say
    the bandwidth unit (MiB/sec, or Gb/sec after ``--report_gbits``): ``unit`` is None.

    Raises:
        InputError: not JSON even after the repair, or not a perftest report (one sentence with the line).
    """
    objects, repaired, first = _json_objects(text, source)
    if not objects:
        raise InputError(f"{source}:1: empty; expected perftest's --out_json output")
    warnings = [] if repaired is None else [
        f"{source}:{first}: not standard JSON (perftest before 24.01 wrote it so); repaired: {repaired}"]
    line_of = _key_lines(text)
    runs = tuple(_json_run(value, line, source, line_of) for value, line in objects)
    return PerftestLog(source, runs, tuple(warnings))


def parse_perftest(text: str, source: str = "<perftest>") -> PerftestLog:
    """Read a perftest log, text or ``--out_json`` JSON (a log whose first character is ``{``).

    Raises:
        InputError: see :func:`parse_perftest_text` and :func:`parse_perftest_json`.
    """
    if text.lstrip().startswith("{"):
        return parse_perftest_json(text, source)
    return parse_perftest_text(text, source)

