"""Typed dimensions of a search space: how each one samples, mutates, validates and simplifies its value.

Values are plain JSON types (str, int, bool, list of int) so that points serialize into the trial journal as
they are. Every mutation changes exactly the one value it is given; on log scales most steps are local (half an
octave up to a quarter of the range) and a few are jumps (a fresh sample), so an annealer can both climb a
gradient and cross a wide dimension in a few steps, and escape a basin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

JUMP_PROBABILITY: Final = 0.15
#: Region boundaries sizes are drawn toward by default: the 64 B cache line, the RoCE MTUs, the 4 KiB page.
SIZE_BOUNDARIES: Final = (64, 256, 512, 1024, 2048, 4096)
#: How far beside a boundary a size is drawn (1..this many bytes either way).
BOUNDARY_REACH: Final = 64


@dataclass(frozen=True)
class Choice:
    """One of a list of values; ``ordered`` choices (like MTU) step to a neighbour most of the time."""

    name: str
    values: tuple[Any, ...]
    simplest_value: Any
    ordered: bool = False
    help: str = ""

    def sample(self, rng: np.random.Generator) -> Any:
        return self.values[int(rng.integers(len(self.values)))]

    def mutate(self, value: Any, rng: np.random.Generator) -> Any:
        if len(self.values) == 1:
            return value
        if self.ordered and value in self.values and rng.random() >= JUMP_PROBABILITY:
            i = self.values.index(value)
            steps = [j for j in (i - 1, i + 1) if 0 <= j < len(self.values)]
            return self.values[steps[int(rng.integers(len(steps)))]]
        others = [v for v in self.values if v != value]
        return others[int(rng.integers(len(others)))]

    def check(self, value: Any) -> str | None:
        if value not in self.values or isinstance(value, bool) != isinstance(self.values[0], bool):
            return f"{self.name} = {value!r} is not allowed; use one of {', '.join(map(str, self.values))}"
        return None

    def simplest(self) -> Any:
        return self.simplest_value

    def repairs(self, value: Any) -> list[Any]:
        """Values to try, in order, when ``value`` must change to make a point legal."""
        return [self.simplest_value]

    def domain(self) -> str:
        return " | ".join(map(str, self.values))


@dataclass(frozen=True)
class IntRange:
    """An integer in ``[lo, hi]``, sampled uniformly on a ``log2`` or ``linear`` scale."""

    name: str
    lo: int
    hi: int
    scale: str = "log2"
    simplest_value: int | None = None
    help: str = ""

    def _from_unit(self, u: float) -> int:
        if self.scale == "log2":
            x = math.exp2(math.log2(self.lo) + u * (math.log2(self.hi + 1) - math.log2(self.lo)))
        else:
            x = self.lo + u * (self.hi + 1 - self.lo)
        return min(self.hi, max(self.lo, int(x)))

    def to_unit(self, value: int) -> float:
        """Position of ``value`` in [0, 1] on this dimension's scale (the inverse of sampling)."""
        if self.scale == "log2":
            return (math.log2(value) - math.log2(self.lo)) / (math.log2(self.hi + 1) - math.log2(self.lo))
        return (value - self.lo) / (self.hi + 1 - self.lo)

    def sample(self, rng: np.random.Generator) -> int:
        return self._from_unit(float(rng.random()))

    def mutate(self, value: int, rng: np.random.Generator) -> int:
        if self.lo == self.hi:
            return value
        for _ in range(16):
            if rng.random() < JUMP_PROBABILITY:
                new = self.sample(rng)
            elif self.scale == "log2":
                # a local step of half an octave up to a quarter of the range (at least one octave), so a
                # chain crosses a wide dimension in a few steps and a narrow one in one or two
                span = math.log2(self.hi / self.lo)
                factor = math.exp2(float(rng.uniform(0.5, max(1.0, span / 4))))
                new = round(value * factor) if rng.random() < 0.5 else round(value / factor)
            else:
                span = max(1, (self.hi - self.lo) // 8)
                new = value + int(rng.integers(-span, span + 1))
            new = min(self.hi, max(self.lo, new))
            if new != value:
                return new
        return self.lo if value != self.lo else self.hi

    def check(self, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value <= self.hi:
            return f"{self.name} = {value!r} is out of range; allowed is an integer from {self.lo} to {self.hi}"
        return None

    def simplest(self) -> int:
        return self.lo if self.simplest_value is None else self.simplest_value

    def repairs(self, value: int) -> list[int]:
        """Halve, double, the simplest value, the lower bound: what resource and ordering constraints need."""
        return [max(self.lo, value // 2), min(self.hi, value * 2), self.simplest(), self.lo]

    def domain(self) -> str:
        return f"{self.lo} .. {self.hi} ({self.scale})"


@dataclass(frozen=True)
class Flag:
    """A boolean."""

    name: str
    simplest_value: bool = False
    help: str = ""

    def sample(self, rng: np.random.Generator) -> bool:
        return bool(rng.random() < 0.5)

    def mutate(self, value: bool, rng: np.random.Generator) -> bool:
        return not value

    def check(self, value: Any) -> str | None:
        if not isinstance(value, bool):
            return f"{self.name} = {value!r} is not allowed; use true or false"
        return None

    def simplest(self) -> bool:
        return self.simplest_value

    def repairs(self, value: bool) -> list[bool]:
        """Values to try when ``value`` must change to make a point legal: the simplest one."""
        return [self.simplest_value]

    def domain(self) -> str:
        return "true | false"


@dataclass(frozen=True)
class SizeVector:
    """A request-size pattern: 1..``max_len`` sizes, each any integer in ``[lo, hi]``.

    Half of the fresh sizes are round (a power of two, log-uniform), half sit at a region boundary: a multiple
    of one of ``boundaries`` (the 64 B cache line, the MTUs, the 4 KiB page; a space file may add its own, like
    a burst size), log-uniform in magnitude, exactly on it (a third of them) or 1..64 B either side of it
    (log-uniform, so the 1-byte neighbours are the most frequent). Sizes are clamped to ``[lo, hi]``.

    Mutations: step one size by x2 or /2, scale all by 2..8 either way, resample one size, move one size to the
    nearest multiple of a boundary or to 1..64 B beside it, round one size to the nearest power of two, append
    one, drop one, or make all sizes equal.
    """

    name: str
    lo: int
    hi: int
    max_len: int = 8
    simplest_value: tuple[int, ...] = (65536,)
    help: str = ""
    boundaries: tuple[int, ...] = SIZE_BOUNDARIES

    def _clamp(self, size: int) -> int:
        return min(self.hi, max(self.lo, size))

    def _round(self, rng: np.random.Generator) -> int:
        return self._clamp(1 << int(rng.integers((self.lo - 1).bit_length(), self.hi.bit_length())))

    def _offset(self, rng: np.random.Generator) -> int:
        """0 a third of the time, else 1..64 B either way (log-uniform)."""
        if rng.random() < 1 / 3:
            return 0
        k = round(math.exp2(float(rng.uniform(0.0, math.log2(BOUNDARY_REACH)))))
        return k if rng.random() < 0.5 else -k

    def _boundary(self, rng: np.random.Generator) -> int:
        units = [b for b in self.boundaries if b <= self.hi] or [min(self.boundaries)]
        unit = units[int(rng.integers(len(units)))]
        magnitude = math.exp2(float(rng.uniform(math.log2(unit), math.log2(max(unit, self.hi)))))
        return self._clamp(max(1, round(magnitude / unit)) * unit + self._offset(rng))

    def _one(self, rng: np.random.Generator) -> int:
        return self._round(rng) if rng.random() < 0.5 else self._boundary(rng)

    def nearest_boundary(self, size: int, unit: int) -> int:
        """The multiple of ``unit`` nearest ``size`` (at least ``unit``), clamped to the range."""
        return self._clamp(max(1, round(size / unit)) * unit)

    def nearest_round(self, size: int) -> int:
        """The power of two nearest ``size`` on the log scale, clamped to the range."""
        return self._clamp(1 << max(0, round(math.log2(max(1, size)))))

    def sample(self, rng: np.random.Generator) -> list[int]:
        n = int(rng.integers(1, self.max_len + 1))
        return [self._one(rng) for _ in range(n)]

    def mutate(self, value: Sequence[int], rng: np.random.Generator) -> list[int]:
        sizes = list(value)
        for _ in range(16):
            new = list(sizes)
            move = float(rng.random())
            i = int(rng.integers(len(new)))
            unit = self.boundaries[int(rng.integers(len(self.boundaries)))]
            if move < 0.25:
                new[i] = self._clamp(new[i] * 2 if rng.random() < 0.5 else new[i] // 2)
            elif move < 0.35:
                # scale the whole pattern (every size x or / 2..8): moves the smallest and largest at once
                k = 1 << int(rng.integers(1, 4))
                new = [self._clamp(v * k if move < 0.3 else v // k) for v in new]
            elif move < 0.45:
                new[i] = self._one(rng)
            elif move < 0.53:
                new[i] = self.nearest_boundary(new[i], unit)
            elif move < 0.63:
                new[i] = self._clamp(self.nearest_boundary(new[i], unit) + (self._offset(rng) or 1))
            elif move < 0.68:
                new[i] = self.nearest_round(new[i])
            elif move < 0.8 and len(new) < self.max_len:
                new.insert(int(rng.integers(len(new) + 1)), self._one(rng))
            elif move < 0.92 and len(new) > 1:
                del new[i]
            else:
                new = [new[i]] * len(new) if len(set(new)) > 1 else [new[i]]
            if new != sizes:
                return new
        return [self.lo] if sizes != [self.lo] else [self.hi]

    def check(self, value: Any) -> str | None:
        ok = (isinstance(value, list | tuple) and 1 <= len(value) <= self.max_len
              and all(isinstance(v, int) and not isinstance(v, bool) and self.lo <= v <= self.hi for v in value))
        if not ok:
            return (f"{self.name} = {value!r} is not allowed; use a list of 1 to {self.max_len} byte sizes from "
                    f"{self.lo} to {self.hi}")
        return None

    def simplest(self) -> list[int]:
        return list(self.simplest_value)

    def repairs(self, value: Sequence[int]) -> list[list[int]]:
        """Only the smallest size, only the largest, the simplest pattern."""
        return [[min(value)], [max(value)], list(self.simplest_value)]

    def domain(self) -> str:
        return f"1..{self.max_len} sizes of {self.lo} .. {self.hi} B (any size, boundaries favoured)"


@dataclass(frozen=True)
class OpcodePattern:
    """Opcodes cycled with the point's own (``op``) over the work requests of a flow: 0..``max_len`` of
    ``values``. Half of the samples are empty (one opcode per flow, the paper's traffic), so mixes are searched
    without crowding out the plain verbs.

    Mutations: append one opcode, drop one, replace one, or clear the pattern.
    """

    name: str
    values: tuple[str, ...]
    max_len: int = 3
    simplest_value: tuple[str, ...] = ()
    help: str = ""

    def _one(self, rng: np.random.Generator) -> str:
        return self.values[int(rng.integers(len(self.values)))]

    def sample(self, rng: np.random.Generator) -> list[str]:
        if rng.random() < 0.5:
            return []
        return [self._one(rng) for _ in range(int(rng.integers(1, self.max_len + 1)))]

    def mutate(self, value: Sequence[str], rng: np.random.Generator) -> list[str]:
        ops = list(value)
        for _ in range(16):
            new = list(ops)
            move = float(rng.random())
            if (move < 0.4 or not new) and len(new) < self.max_len:
                new.insert(int(rng.integers(len(new) + 1)), self._one(rng))
            elif move < 0.65 and new:
                del new[int(rng.integers(len(new)))]
            elif move < 0.9 and new:
                new[int(rng.integers(len(new)))] = self._one(rng)
            else:
                new = []
            if new != ops:
                return new
        return [] if ops else [self.values[0]]

    def check(self, value: Any) -> str | None:
        ok = (isinstance(value, list | tuple) and len(value) <= self.max_len
              and all(isinstance(v, str) and v in self.values for v in value))
        if not ok:
            return (f"{self.name} = {value!r} is not allowed; use a list of at most {self.max_len} opcodes from "
                    f"{', '.join(self.values)}")
        return None

    def simplest(self) -> list[str]:
        return list(self.simplest_value)

    def repairs(self, value: Sequence[str]) -> list[list[str]]:
        """No mix at all."""
        return [list(self.simplest_value)]

    def domain(self) -> str:
        return f"0..{self.max_len} of {' | '.join(self.values)}"


Dimension = Choice | IntRange | Flag | SizeVector | OpcodePattern
