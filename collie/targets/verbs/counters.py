"""Counter reads of the local device for the verbs target.

TO BE REPLACED: this is a small private reader of ``/sys/class/infiniband/DEV/ports/P/hw_counters`` (and
``ports/P/counters`` where the driver has it) written while ``collie.collectors.sysfs`` was not on main yet.
Once it is, :func:`read_counters` should delegate to it (same contract: names as the driver prints them,
unreadable or non-integer files absent, never 0). ``lifespan`` is a refresh setting, not a counter, and is
skipped. Port counters ``port_xmit_data``/``port_rcv_data`` are octets/4 and are kept as the driver prints
them (the catalog says how to scale).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

SYSFS_CLASS: Final = Path("/sys/class/infiniband")
_SETTINGS: Final = frozenset({"lifespan"})


def _read_dir(path: Path, prefix: str, out: dict[str, int]) -> None:
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name in _SETTINGS or not entry.is_file():
            continue
        try:
            text = entry.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            continue
        if text.isdigit():
            out.setdefault(prefix + entry.name, int(text))


def read_counters(device: str, port: int, root: Path = SYSFS_CLASS) -> dict[str, int]:
    """Every integer counter of ``device`` port ``port``: port counters first, then hw_counters (a hw_counter
    whose name a port counter already took is kept as ``hw:<name>``)."""
    out: dict[str, int] = {}
    base = root / device / "ports" / str(port)
    _read_dir(base / "counters", "", out)
    hw: dict[str, int] = {}
    _read_dir(base / "hw_counters", "", hw)
    for name, value in hw.items():
        out[name if name not in out else f"hw:{name}"] = value
    return out
