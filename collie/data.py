"""Locate the declarative data folders (``workloads/``, ``counters/``, ``search/``, ``hosts/``).

In a wheel they ship as ``collie/_data/<name>``; in a source checkout or an editable install they are the
top-level folders beside the package. Both layouts resolve through :func:`data_dir`.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
DATA_FOLDERS = ("workloads", "counters", "search", "hosts")


def data_dir(name: str) -> Path:
    """Return the folder holding one kind of declarative data.

    Args:
        name: one of ``workloads``, ``counters``, ``search``, ``hosts``.

    Raises:
        ValueError: for an unknown name.
        FileNotFoundError: when neither layout has the folder (a broken install).
    """
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}; expected one of {', '.join(DATA_FOLDERS)}")
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"collie's data folder {name!r} is missing from this installation")
