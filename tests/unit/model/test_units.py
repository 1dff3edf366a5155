"""Byte sizes as people read them: one formatter, binary units, exact where it reads short."""

from __future__ import annotations

import pytest

from collie.model.units import format_bytes


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (1, "1 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (4097, "4097 B"),
    (65536, "64 KiB"), (4 << 20, "4 MiB"), (64 << 30, "64 GiB"), (12345, "12.1 KiB"), (123456789, "118 MiB"),
    (10_000_000 << 30, "9.54 PiB"), ((1 << 64) - 1, "16 EiB"),
])
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text
