"""Byte sizes and rates as people write them (``64K``, ``4 MiB``, ``200 Gb/s``) and back."""

from __future__ import annotations

import re

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(i?B?)\s*$", re.IGNORECASE)
_SIZE_FACTORS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def parse_size(value: int | str) -> int:
    """Parse a byte count: an int, or a string such as ``"512"``, ``"64K"``, ``"64KiB"``, ``"4 MB"``.

    Size suffixes are binary (K = 1024), as in perftest and the RDMA literature.

    Raises:
        ValueError: for anything else (including bools, negatives and fractions).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a byte size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"byte size must not be negative: {value}")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            return int(m.group(1)) * _SIZE_FACTORS[m.group(2).upper()]
    raise ValueError(f"not a byte size: {value!r} (write e.g. 512, \"64K\" or \"4MiB\")")


def format_bytes(n: int) -> str:
    """A byte count as people read it, in binary units: ``4 MiB``, ``1.5 KiB``, ``4097 B``, ``9.54 PiB``.

    Exact when some unit gives it in at most four digits and two decimals (so ``4097 B`` is not rounded to
    ``4 KiB``); otherwise about three significant digits of the largest unit.
    """
    top = 0
    while top + 1 < len(_UNITS) and n >= 1 << (10 * (top + 1)):
        top += 1
    for e in range(top, -1, -1):
        unit = 1 << (10 * e)
        if n * 100 % unit == 0 and n < 10_000 * unit:
            return _trimmed(f"{n / unit:.2f}") + f" {_UNITS[e]}"
    value = n / (1 << (10 * top))
    return _trimmed(f"{value:.{2 if value < 10 else 1 if value < 100 else 0}f}") + f" {_UNITS[top]}"


def _trimmed(number: str) -> str:
    """``"1.50"`` -> ``"1.5"``, ``"16.00"`` -> ``"16"``."""
    return number.rstrip("0").rstrip(".") if "." in number else number


def format_rate(bps: float) -> str:
    """Bits per second in Gb/s with two decimals (perftest's --report_gbits convention)."""
    return f"{bps / 1e9:.2f}"
