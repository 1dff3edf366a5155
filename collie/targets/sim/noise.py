"""The simulator's noise source: a small counter-based generator, a pure function of its seed material.

A run's draws depend only on ``(seed, workload key, repetition)``, so a campaign is reproducible for a seed
whatever the order of its other trials, and re-running a case gives fresh noise.
"""

from __future__ import annotations

import hashlib
from typing import Final

_MASK: Final = (1 << 64) - 1
_INV: Final = 1.0 / (1 << 53)


class Draws:
    """Uniform numbers in [0, 1) from SplitMix64 seeded by a BLAKE2b hash of the seed material."""

    __slots__ = ("_state",)

    def __init__(self, seed: int, key: str, repetition: int) -> None:
        digest = hashlib.blake2b(f"{seed}:{key}:{repetition}".encode(), digest_size=8).digest()
        self._state = int.from_bytes(digest, "little")

    def __call__(self) -> float:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
        return (z >> 11) * _INV

    def take(self, n: int) -> list[float]:
        """The next ``n`` numbers at once: what ``n`` calls would return, in order."""
        state = self._state
        out = []
        for _ in range(n):
            state = z = (state + 0x9E3779B97F4A7C15) & _MASK
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
            out.append(((z ^ (z >> 31)) >> 11) * _INV)
        self._state = state
        return out
