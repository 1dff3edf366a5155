"""What a resumed campaign says first: where it continues, so that its log does not read like a fresh start."""

from __future__ import annotations

from collie.events import counted
from collie.services.events import Note
from collie.storage.campaign import CampaignStore
from collie.storage.records import TrialState


def resumed_note(store: CampaignStore) -> Note:
    """Where the campaign in ``store`` (its configuration already amended for the resume) continues: the trials
    its journal holds, the experiments they spent of the budget, and the anomalies already found.

    Raises:
        InputError: a journal damaged beyond a crash's trace (see :meth:`CampaignStore.read_journal`).
    """
    finished = [r for r in store.read_journal().records if r.state.finished]
    spent = sum(r.phase.budgeted and r.state is not TrialState.PRUNED for r in finished)
    found = sum(1 for _ in store.anomaly_dirs())
    return Note(f"resumed {store.root}: its journal holds {counted(len(finished), 'finished trial')} "
                f"({spent} of the budget of {counted(store.config().budget, 'experiment')}), "
                f"{counted(found, 'anomaly', 'anomalies')} already found; those trials are read back, not run again")
