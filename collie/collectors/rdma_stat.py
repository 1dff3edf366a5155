"""Parse ``rdma statistic show`` (iproute2) text and ``-j`` JSON into one snapshot per ``DEV/PORT``.

Text: ``link mlx5_0/1 rx_write_requests 0 rx_read_requests 0 ...`` - one line per port, or with ``-p`` the
counters on following indented lines; both are accepted. JSON: an array of objects
``{"ifindex": 0, "ifname": "mlx5_0", "port": 1, "<counter>": value, ...}``. Optional counters that are
enabled appear like the others. A counter name with blanks (irdma's ``RNR sent``) is read in its normal form
(``RNR_sent``); in the text form its words are those before its value.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from typing import Any, Final

from collie.collectors.catalog import counter_name
from collie.collectors.snapshot import Snapshot, now
from collie.errors import InputError

_LINK: Final = re.compile(r"^link\s+(\S+/\d+)\s*(.*)$")
_META_KEYS: Final = frozenset({"ifindex", "ifname", "port"})


def _pairs(tokens: list[str], source: str, lineno: int) -> list[tuple[str, float]]:
    """``name value`` pairs; a name is every word up to its integer value (irdma's ``RNR sent 3``), in the
    normal form (:func:`~collie.collectors.catalog.counter_name`)."""
    out: list[tuple[str, float]] = []
    words: list[str] = []
    for token in tokens:
        if words and re.fullmatch(r"-?\d+", token):
            out.append((counter_name(" ".join(words)), int(token)))
            words = []
        else:
            words.append(token)
    if words:
        raise InputError(f"{source}: line {lineno}: counter {' '.join(words)!r} has no integer value; expected "
                         "'name value' pairs after the link")
    return out


def parse_rdma_stat_text(text: str, source: str = "<rdma statistic show>") -> list[Snapshot]:
    """Parse the text form.

    Raises:
        InputError: a line that is neither ``link DEV/PORT name value ...`` nor a continuation of one.
    """
    ts = now()
    ports: dict[str, dict[str, float | None]] = {}
    current: str | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        m = _LINK.match(line.strip())
        if m is not None:
            current = m.group(1)
            values = ports.setdefault(current, {})
            for name, v in _pairs(m.group(2).split(), source, lineno):
                values.setdefault(name, v)
            continue
        if current is not None and line[:1].isspace():
            for name, v in _pairs(line.split(), source, lineno):
                ports[current].setdefault(name, v)
            continue
        shown = line.strip() if len(line.strip()) <= 60 else line.strip()[:57] + "..."
        raise InputError(f"{source}: line {lineno} is not rdma statistic output (expected "
                         f"'link DEV/PORT name value ...', got {shown!r})")
    if not ports:
        raise InputError(f"{source}: no counters found; expected 'link DEV/PORT name value ...' lines")
    return [Snapshot(ts, vals, "rdma-stat", label, sources=dict.fromkeys(vals, "rdma-stat"))
            for label, vals in ports.items()]


def parse_rdma_stat_json(text: str, source: str = "<rdma -j statistic show>") -> list[Snapshot]:
    """Parse the ``-j`` form.

    Raises:
        InputError: not JSON, not an array of port objects, or a counter that is not an integer.
    """
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not JSON ({exc.msg} at line {exc.lineno}); expected the output of "
                         f"'rdma -j statistic show'") from None
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        raise InputError(f"{source}: expected a JSON array of ports from 'rdma -j statistic show'")
    ts = now()
    out = []
    for i, entry in enumerate(doc):
        if not isinstance(entry, Mapping) or "ifname" not in entry or "port" not in entry:
            raise InputError(f"{source}: entry {i} is not a port object with 'ifname' and 'port'")
        label = f"{entry['ifname']}/{entry['port']}"
        values: dict[str, float | None] = {}
        for name, v in entry.items():
            if name in _META_KEYS:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise InputError(f"{source}: {label}: counter {name!r} has value {v!r}; expected an integer")
            values[counter_name(str(name))] = v
        out.append(Snapshot(ts, values, "rdma-stat", label, sources=dict.fromkeys(values, "rdma-stat")))
    return out


def parse_rdma_stat(text: str, source: str = "<rdma statistic show>") -> list[Snapshot]:
    """Either form, told apart by the first non-blank character (``[`` or ``{`` = JSON)."""
    head = text.lstrip()[:1]
    if head in ("[", "{"):
        return parse_rdma_stat_json(text, source)
    return parse_rdma_stat_text(text, source)


def read_rdma_stat(link: str | None = None, *, timeout: float = 10.0) -> list[Snapshot]:
    """Run ``rdma -j statistic show [link DEV/PORT]`` and parse it.

    Raises:
        InputError: iproute2's ``rdma`` is missing, or it failed (its last error line is quoted).
    """
    cmd = ["rdma", "-j", "statistic", "show"]
    if link is not None:
        if not re.fullmatch(r"[\w.-]+(/\d+)?", link):
            raise InputError(f"{link!r} is not an RDMA link; write DEV or DEV/PORT, e.g. mlx5_0/1")
        cmd += ["link", link]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise InputError("the 'rdma' tool (iproute2) is not installed") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"'{' '.join(cmd)}' did not answer within {timeout:g} s") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise InputError(f"'{' '.join(cmd)}' failed: {msg}")
    return parse_rdma_stat_json(proc.stdout, " ".join(cmd))
