"""A campaign's budget: the experiments it may spend, what its chains have spent, and what each chain keeps back
to finish the open edges of the minimal feature sets it found.

The budget counts exploring, confirming and minimizing trials (:attr:`~collie.storage.records.Phase.budgeted`)
that were not pruned; calibration and corpus replay are apart. A campaign extended by ``--resume --budget N``
runs its search once per total (the earlier ones, then ``N``), so the journal of the first total is re-walked as
it was run.

Invariants:
    * the totals only grow (``campaign.toml`` keeps them so), and :attr:`Budget.total` is the one the search
      runs to now;
    * :attr:`Budget.spent` counts every budgeted trial in flight as spent (a trial that is pruned is given back
      when it finishes), and never exceeds :attr:`Budget.total`: a trial is started only below the total
      (:meth:`Budget.start` raises :class:`BudgetSpent` otherwise), so K chains that start trials in turn never
      run more than the total between them;
    * a chain's *reserve* is what finishing the open edges of its minimal feature sets may still take (the sum
      of their :meth:`~Reservation.open_cost`, read when asked); :meth:`Budget.free` is the total less it;
    * a chain's *limit* is where :meth:`Budget.charge` raises :class:`BudgetSpent`: the total from the start of
      each total (:meth:`Budget.extend_to`) and while it finishes edges (:meth:`Budget.open_reserve`), what was
      free when it began recording a find (:meth:`Budget.keep_reserve`); a limit never exceeds the total;
    * a symptom's *share* is what recording the finds leading with that symptom kind (confirming, minimizing,
      finishing edges) has spent, over every chain; :meth:`Budget.over_share` says when it passed
      :data:`SYMPTOM_SHARE` of the total;
    * it is read and changed only by the chain whose turn it is (see :mod:`collie.campaign.turns`), or by the
      one chain of a campaign of one, so it needs no lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final, Protocol

#: The share of the total that recording the finds of one symptom kind may spend with full care: past it, a
#: symptom that keeps being found (a starved receiver's ratio-shaped region, met again just past each box that
#: describes it) no longer takes the experiments the search needs for the others.
SYMPTOM_SHARE: Final = 1 / 3


class BudgetSpent(Exception):
    """A chain asked for a budgeted trial with its budget spent (up to its limit), in the middle of confirming,
    minimizing or finishing edges.

    Attributes:
        kept: the experiments the chain's limit kept back below the total (its reserve for open edges when it
            began recording a find; 0 once the reserve is open).
    """

    def __init__(self, kept: int) -> None:
        super().__init__(f"the budget is spent ({kept} kept for open edges)")
        self.kept = kept


class Reservation(Protocol):
    """Something that may still spend experiments of the budget later (a minimizer with open edges)."""

    def open_cost(self) -> int:
        """At most how many experiments it may still take."""
        ...


class Budget:
    """The budget of one campaign, shared by its chains (see the module's invariants).

    Args:
        totals: every total the campaign runs to, in order: the earlier budgets of an extended campaign, then
            its budget (at least one; :class:`~collie.storage.records.CampaignConfig` keeps each above the one
            before).
        chains: how many chains share it (numbered from 0).

    Raises:
        ValueError: no total.
    """

    def __init__(self, totals: Sequence[int], chains: int = 1) -> None:
        if not totals:
            raise ValueError("a budget needs at least one total")
        #: every total, in order (the last is the campaign's budget)
        self.totals = tuple(totals)
        #: the total the search runs to now
        self.total = self.totals[0]
        #: budgeted trials that finished unpruned, over every chain
        self.experiments = 0
        #: budgeted trials started and not finished yet, over every chain
        self.in_flight = 0
        #: experiments spent recording finds, per symptom kind
        self.shares: Counter[str] = Counter()
        self._reserved: dict[int, list[Reservation]] = {c: [] for c in range(chains)}
        self._limits = dict.fromkeys(range(chains), self.total)

    @property
    def spent(self) -> int:
        """The experiments spent, every budgeted trial in flight counted as spent."""
        return self.experiments + self.in_flight

    @property
    def left(self) -> int:
        """The experiments left to the current total."""
        return self.total - self.spent

    def extend_to(self, total: int) -> None:
        """Run to ``total`` (one of :attr:`totals`, in order) from now on; every chain's limit is the total."""
        self.total = total
        self._limits = dict.fromkeys(self._limits, total)

    # -- trials ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """A budgeted trial starts (it counts as spent from now on).

        Raises:
            BudgetSpent: the total is spent (a chain's loop let a trial past its limit).
        """
        if self.spent >= self.total:
            raise BudgetSpent(0)
        self.in_flight += 1

    def finish(self, counts: bool) -> None:
        """A budgeted trial finished; ``counts``: it was not pruned (else it is given back)."""
        self.in_flight -= 1
        self.experiments += counts

    # -- symptoms' shares -------------------------------------------------------------------------------------

    def spend_on(self, symptom: str, experiments: int) -> None:
        """Recording a find leading with symptom kind ``symptom`` spent ``experiments``."""
        self.shares[symptom] += experiments

    def over_share(self, symptom: str) -> bool:
        """Whether recording the finds of ``symptom`` has spent more than :data:`SYMPTOM_SHARE` of the total."""
        return self.shares[symptom] > SYMPTOM_SHARE * self.total

    # -- one chain's reserve and limit -----------------------------------------------------------------------

    def reserve(self, chain: int, reservation: Reservation) -> None:
        """Keep what ``reservation`` may still take back for ``chain`` (until :meth:`release`)."""
        self._reserved[chain].append(reservation)

    def release(self, chain: int, reservation: Reservation) -> None:
        """``reservation`` of ``chain`` is done: keep nothing back for it any more."""
        self._reserved[chain].remove(reservation)

    def reserved(self, chain: int) -> int:
        """What finishing ``chain``'s reservations may still take."""
        return sum(r.open_cost() for r in self._reserved[chain])

    def free(self, chain: int) -> int:
        """The total less ``chain``'s reserve: where its search stops asking new points."""
        return self.total - self.reserved(chain)

    def keep_reserve(self, chain: int) -> None:
        """``chain`` records a find: its probes stop where its reserve begins (what is free now)."""
        self._limits[chain] = self.free(chain)

    def open_reserve(self, chain: int) -> None:
        """``chain`` finishes its open edges: its probes may spend up to the total."""
        self._limits[chain] = self.total

    def charge(self, chain: int) -> None:
        """``chain`` is about to start a budgeted probe.

        Raises:
            BudgetSpent: the budget is spent up to ``chain``'s limit.
        """
        limit = self._limits[chain]
        if self.spent >= limit:
            raise BudgetSpent(self.total - limit)
