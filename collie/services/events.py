"""What the services tell their caller while they work: the campaign's events, and notes.

A service never prints: it emits these through the listener its caller gives, and the CLI renders them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collie.events import Event


@dataclass(frozen=True)
class Note:
    """A sentence for the user about what a service does (e.g. how the target a case runs on differs from the
    one it was found on), shown as is, before the progress of the experiments it precedes."""

    text: str


ServiceEvent = Event | Note
ServiceListener = Callable[[ServiceEvent], None]

