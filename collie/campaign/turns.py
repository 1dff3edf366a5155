"""Turns: how several search chains run their trials at once and still decide in a fixed order.

Each chain runs in a thread of its own. A chain *decides* (asks its strategy, judges a result, looks up and
records anomalies, journals) only while it holds the turn; it gives the turn on as soon as it has journaled a
trial RUNNING, runs that trial on its own target while the next chains decide and start theirs, and waits for the
turn to come back before it journals the trial as finished and decides again. The turn goes round the chains
still searching in chain order (0, 1, ..., K-1, 0, ...).

Invariants:
    * at most one chain decides at a time, so the state the chains share (the anomaly registry, the journal's
      numbering, the budget spent, the campaign folder) needs no other lock;
    * the order of every decision is a function of the chains' own decisions, never of which run ended first:
      a campaign of K chains journals the same trials, numbered the same way, every time it is run with the same
      seed on targets that answer the same (which is what makes ``--resume`` re-walk its journal exactly);
    * trials are journaled as finished in the order they were numbered, at most K of them in flight;
    * :meth:`Turns.abort` (a chain failed, or Ctrl-C) makes every waiting chain raise :class:`TurnsAborted`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class TurnsAborted(BaseException):
    """Raised in a chain waiting for its turn once the campaign is stopping (a BaseException, as Ctrl-C is, so
    that no ``except Exception`` of a strategy or a minimizer takes it for a failed probe)."""


class Turns:
    """The turn of K chains (see the module).

    Args:
        chains: the chains taking turns, in turn order; the first holds the turn.
    """

    def __init__(self, chains: Iterable[int]) -> None:
        self._chains = list(chains)
        self._order = list(self._chains)
        self._at = 0
        self._aborted = False
        self._cond = threading.Condition()

    def restart(self) -> None:
        """Every chain takes turns again, the first holding the turn (the chains search to the next total of an
        extended campaign); a stopped campaign stays stopped."""
        with self._cond:
            self._order = list(self._chains)
            self._at = 0
            self._cond.notify_all()

    def wait(self, chain: int) -> None:
        """Block until ``chain`` holds the turn.

        Raises:
            TurnsAborted: the campaign is stopping.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._aborted or self._holder() == chain)
            if self._aborted:
                raise TurnsAborted()

    def pass_on(self, chain: int) -> None:
        """``chain`` (which holds the turn) gives it to the next chain still taking turns."""
        with self._cond:
            if self._holder() == chain and self._order:
                self._at = (self._at + 1) % len(self._order)
            self._cond.notify_all()

    def leave(self, chain: int) -> None:
        """``chain`` is done (or failed): it takes no more turns; if it held the turn, the next chain gets it."""
        with self._cond:
            if chain in self._order:
                i = self._order.index(chain)
                self._order.pop(i)
                if i < self._at:
                    self._at -= 1
                if self._order:
                    self._at %= len(self._order)
                else:
                    self._at = 0
            self._cond.notify_all()

    def abort(self) -> None:
        """Stop: every chain waiting for its turn, and every chain that waits from now on, raises
        :class:`TurnsAborted`."""
        with self._cond:
            self._aborted = True
            self._cond.notify_all()

    def _holder(self) -> int | None:
        return self._order[self._at] if self._order else None
