"""Periodic sampling of counters during a run: per-interval rates with mean and spread, and a total.

The default is 4 intervals (5 readings) once traffic is stable (``warmup`` seconds after the start).

Invariants of a :class:`Sampled`:
    * ``total`` covers first to last reading: counters are the sum of the per-interval deltas (so a 32-bit
      counter may wrap once per interval, not once per run); a counter unknown in any interval (missing,
      reset) is ``None`` in the total; gauges are the mean over all readings, never a difference;
    * ``stats`` has, per counter known in every interval, the per-second rate of each interval (gauges: the
      reading) summarised as mean, sample standard deviation, minimum and maximum.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from collie.collectors.catalog import Catalog
from collie.collectors.snapshot import Delta, Snapshot, delta
from collie.errors import InputError

DEFAULT_SAMPLES = 4


@dataclass(frozen=True)
class RateStats:
    """Summary of one counter's per-interval rates (per second; gauges: their readings).

    Attributes:
        mean, stdev, minimum, maximum: over ``samples`` values; ``stdev`` is 0 for one sample.
        cv: coefficient of variation (``stdev / |mean|``), ``None`` when the mean is 0.
    """

    mean: float
    stdev: float
    minimum: float
    maximum: float
    samples: int

    @property
    def cv(self) -> float | None:
        return self.stdev / abs(self.mean) if self.mean else None


@dataclass(frozen=True)
class Sampled:
    """The result of sampling one device (see the module docstring for invariants)."""

    total: Delta
    stats: Mapping[str, RateStats]
    intervals: tuple[Delta, ...]


def _stats(values: Sequence[float]) -> RateStats:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return RateStats(mean, math.sqrt(var), min(values), max(values), n)


def summarize(readings: Sequence[Snapshot], catalog: Catalog | None = None) -> Sampled:
    """Summarise readings of one device taken at increasing timestamps.

    Raises:
        InputError: fewer than two readings, or timestamps that do not increase.
    """
    if len(readings) < 2:
        raise InputError(f"sampling needs at least 2 readings, got {len(readings)}")
    intervals = tuple(delta(a, b, None, catalog) for a, b in itertools.pairwise(readings))
    seconds = readings[-1].timestamp - readings[0].timestamp
    names = list(dict.fromkeys(n for d in intervals for n in d.values))
    totals: dict[str, float | None] = {}
    stats: dict[str, RateStats] = {}
    for name in names:
        spec = catalog.lookup(name) if catalog is not None else None
        per = [d.values.get(name) for d in intervals]
        if spec is not None and spec.kind == "gauge":
            levels = [s.values.get(name) for s in readings]
            known = [v for v in levels if v is not None]
            totals[name] = sum(known) / len(known) if len(known) == len(levels) else None
            if len(known) == len(levels):
                stats[name] = _stats(known)
            continue
        if any(v is None for v in per):
            totals[name] = None
            continue
        vals = [v for v in per if v is not None]
        totals[name] = sum(vals)
        stats[name] = _stats([v / d.seconds for v, d in zip(vals, intervals, strict=True)])
    last = intervals[-1]
    total = Delta(
        seconds=seconds,
        values=totals,
        settings=dict(last.settings),
        resets=tuple(r for d in intervals for r in d.resets),
        wraps=tuple(dict.fromkeys(w for d in intervals for w in d.wraps)),
        uncatalogued=tuple(dict.fromkeys(u for d in intervals for u in d.uncatalogued)),
        device=last.device,
        sources=dict(last.sources),
        unreadable={k: v for d in intervals for k, v in d.unreadable.items()},
    )
    return Sampled(total, stats, intervals)


def sample(
    read: Callable[[], Snapshot],
    *,
    samples: int = DEFAULT_SAMPLES,
    interval: float = 1.0,
    warmup: float = 0.0,
    catalog: Catalog | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Sampled:
    """Read ``samples + 1`` times, ``interval`` seconds apart, after waiting ``warmup`` seconds.

    Args:
        read: takes one reading of one device (e.g. ``lambda: read_port(root, ref)``).
        samples: number of intervals (>= 1).
        interval: seconds between readings (> 0).
        warmup: seconds to wait first, so traffic is stable.
        catalog: counter kinds.
        sleep: injectable for tests.

    Raises:
        InputError: ``samples`` < 1 or ``interval`` <= 0.
    """
    if samples < 1:
        raise InputError(f"samples must be at least 1, got {samples}")
    if not interval > 0:
        raise InputError(f"the sampling interval must be positive, got {interval:g} s")
    if warmup > 0:
        sleep(warmup)
    readings = [read()]
    for _ in range(samples):
        sleep(interval)
        readings.append(read())
    return summarize(readings, catalog)


def sample_during(read: Callable[[], Snapshot], duration: float, *, samples: int = DEFAULT_SAMPLES,
                  warmup: float = 0.0, catalog: Catalog | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> Sampled:
    """Spread ``samples`` intervals evenly over ``duration`` seconds of a run (after ``warmup``)."""
    if not duration > 0:
        raise InputError(f"the run duration must be positive, got {duration:g} s")
    return sample(read, samples=samples, interval=duration / max(samples, 1), warmup=warmup, catalog=catalog,
                  sleep=sleep)
