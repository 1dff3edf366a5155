"""The anomaly registry: what a campaign knows of the anomalies it met, and the questions its search asks.

Which known anomaly explains a find (:meth:`AnomalyRegistry.match`) or a run of minimization
(:meth:`AnomalyRegistry.explaining`), which one a minimized find is (:meth:`AnomalyRegistry.nesting`), which one
a find lies just past the edge of (:meth:`AnomalyRegistry.near`), the regions of the space the strategy is kept
out of or steered around (:meth:`AnomalyRegistry.regions`, :meth:`AnomalyRegistry.inside`), and the replacement
of an MFS that was widened or whose edges were finished (:meth:`AnomalyRegistry.replace_mfs`).

Invariants: records are frozen; a replaced record takes the place of the old one in both :attr:`known` and
:attr:`found`, so both lists always hold the current record of each anomaly, in the order met.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from collie.mfs import MFS
from collie.model.features import Features, features
from collie.model.space import SearchSpace
from collie.oracle import leading_symptom
from collie.strategies.base import Region


@dataclass(frozen=True)
class AnomalyRecord:
    """One anomaly a campaign knows.

    Attributes:
        anomaly_id: ``A001-pause`` (found by this campaign) or ``corpus:NAME`` (a corpus case that reproduced).
        signature: the verdict's signature when it was found.
        mfs: its minimal feature set; None when it was not minimized.
        point: its simplest case as a search point (the find's own point when not minimized; empty for a
            corpus case).
        found_at: the experiment that first showed it, counting explore, confirm and minimize runs from 1
            (calibration and corpus replays aside); 0 for a corpus case.
        confirmed: it reproduced ``required`` of ``runs`` times (after minimizing, on the simplest case).
        trial: the journal's trial that found it (0 for a corpus case).
    """

    anomaly_id: str
    signature: str
    mfs: MFS | None
    point: Mapping[str, Any]
    found_at: int
    confirmed: bool
    trial: int = 0


class AnomalyRegistry:
    """The known anomalies of one campaign over one search space.

    Args:
        space: the campaign's search space (points are built into workloads to read their features).
        found: the list the campaign's own finds are kept in (the summary's), in the order found.
    """

    def __init__(self, space: SearchSpace, found: list[AnomalyRecord]) -> None:
        self.space = space
        #: every known anomaly: the corpus's that reproduced, then the campaign's own finds, in order
        self.known: list[AnomalyRecord] = []
        self.found = found
        #: ids given so far (an anomaly that joins another later keeps its number unused)
        self._issued = 0
        #: chain -> the signature of the find it is confirming and minimizing now (several chains only)
        self._held: dict[int, str] = {}

    def next_id(self, primary: str) -> str:
        """A new id for a find whose primary symptom is ``primary`` (``A003-low-throughput``), numbered in the
        order asked."""
        self._issued += 1
        return f"A{self._issued:03d}-{primary.replace('_', '-')}"

    def add(self, record: AnomalyRecord, *, found: bool = True) -> None:
        """Know ``record``; ``found``: the campaign found it (else a corpus case)."""
        self.known.append(record)
        if found:
            self.found.append(record)

    def remove(self, record: AnomalyRecord) -> None:
        """Forget ``record`` (it joined another anomaly as a further hit)."""
        for records in (self.known, self.found):
            records[:] = [a for a in records if a.anomaly_id != record.anomaly_id]

    def hold(self, chain: int, signature: str) -> None:
        """Chain ``chain`` is confirming and minimizing a find of ``signature`` (until :meth:`release`)."""
        self._held[chain] = signature

    def release(self, chain: int) -> None:
        """Chain ``chain`` has recorded (or dropped) the find it held."""
        self._held.pop(chain, None)

    def held_elsewhere(self, chain: int, signature: str) -> bool:
        """Whether a chain other than ``chain`` is confirming or minimizing a find of the same leading symptom as
        ``signature`` (which may turn out to be the same anomaly, known once that chain has recorded it)."""
        lead = leading_symptom(signature)
        return any(c != chain and leading_symptom(s) == lead for c, s in self._held.items())

    def get(self, anomaly_id: str) -> AnomalyRecord:
        """The current record of a known anomaly (KeyError if none)."""
        record = self.find(anomaly_id)
        if record is None:
            raise KeyError(anomaly_id)
        return record

    def find(self, anomaly_id: str) -> AnomalyRecord | None:
        """The current record of a known anomaly (None if none, or no longer: it joined another)."""
        return next((a for a in self.known if a.anomaly_id == anomaly_id), None)

    def regions(self) -> list[Region]:
        """The known anomalies with a minimized case and a minimal feature set, as regions of the space."""
        return [Region(dict(a.point), partial(self.misses, a.mfs)) for a in self.known
                if a.mfs is not None and a.mfs.conditions and a.point]

    def misses(self, mfs: MFS, point: Mapping[str, Any]) -> int:
        """How many conditions of ``mfs`` the workload of ``point`` breaks."""
        return len(mfs.broken(features(self.space.build(point))))

    def inside(self, point: Mapping[str, Any]) -> int:
        """How many known MFSs hold ``point`` (a search's exclusion: 0 is worth asking)."""
        f = features(self.space.build(point))
        return sum(a.mfs is not None and a.mfs.holds(f) for a in self.known)

    def match(self, f: Features, signature: str) -> AnomalyRecord | None:
        """The known anomaly that explains a run of ``f`` showing ``signature``: one whose MFS holds for ``f``
        and leads with the same symptom, or an unminimized one of that very signature.

        A run inside one anomaly's region that leads with another symptom has met a second anomaly overlapping
        it (an RC SEND pause inside the region of a low-throughput anomaly that any RC verb shows).
        """
        return self.explaining(f, signature) or next(
            (a for a in self.known if a.mfs is None and a.signature == signature), None)

    def explaining(self, f: Features, signature: str, besides: str = "") -> AnomalyRecord | None:
        """The known anomaly (other than ``besides``) whose region holds ``f``, leading with the same symptom as
        ``signature`` (None if none): a run there is that anomaly, whatever else it may be too."""
        lead = leading_symptom(signature)
        return next((a for a in self.known if a.mfs is not None and a.mfs.holds(f) and a.anomaly_id != besides
                     and leading_symptom(a.signature) == lead), None)

    def nesting(self, mfs: MFS, besides: str = "") -> AnomalyRecord | None:
        """The known anomaly (other than ``besides``) with the same leading symptom as ``mfs`` whose region
        equals, holds or lies inside ``mfs``'s (None if none): ``mfs`` is that anomaly (docs/search.md, "the
        same anomaly")."""
        lead = leading_symptom(mfs.signature)
        return next((a for a in self.known if a.mfs is not None and a.anomaly_id != besides
                     and leading_symptom(a.signature) == lead and a.mfs.nests(mfs)), None)

    def near(self, f: Features, signature: str) -> tuple[int, MFS] | None:
        """A known anomaly of the same signature whose MFS, widened a little, explains ``f``: (index, MFS)."""
        for i, a in enumerate(self.known):
            if a.mfs is not None and a.signature == signature:
                widened = a.mfs.widened_to(f)
                if widened is not None:
                    return i, widened
        return None

    def replace_mfs(self, record: AnomalyRecord, mfs: MFS, point: Mapping[str, Any] | None = None
                    ) -> AnomalyRecord:
        """Give known anomaly ``record`` the MFS ``mfs`` (and the case ``point``, if given); returns its new
        record (in place of the old one)."""
        new = replace(record, mfs=mfs, point=record.point if point is None else dict(point))
        for records in (self.known, self.found):
            for i, a in enumerate(records):
                if a.anomaly_id == record.anomaly_id:
                    records[i] = new
        return new
