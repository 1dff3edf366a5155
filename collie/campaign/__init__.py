"""A campaign: calibrate -> replay the corpus -> explore -> confirm -> minimize -> record, journaled.

Split along its jobs (in the spirit of Optuna's study and storage):
    * :mod:`collie.campaign.campaign` - the campaign (:class:`Campaign`): K search chains on K targets (K = 1
      without ``--parallel``) sharing one registry, budget and journal; it calibrates, replays the corpus and
      runs the chains, inline or in threads deciding in turns (:mod:`collie.campaign.turns`);
    * :mod:`collie.campaign.chain` - one search chain (:class:`Chain`), which explores, confirms, minimizes and
      saves;
    * :mod:`collie.campaign.budget` - the budget the chains share (:class:`Budget`, :class:`BudgetSpent`): the
      total, the experiments spent and in flight, and each chain's reserve for open edges;
    * :mod:`collie.campaign.runner` - the journaled trial runner (:class:`TrialRunner`): numbers, runs or takes
      from the journal, and journals every trial, telling the target each run's repetition;
    * :mod:`collie.campaign.registry` - the anomaly registry (:class:`AnomalyRegistry`): known match, regions,
      widening, MFS replacement;
    * :mod:`collie.campaign.summary` - the tally the CLI reads (:class:`CampaignSummary`).

The campaign folder's files and their typed records are in :mod:`collie.storage.campaign` and
:mod:`collie.storage.records`.
"""

from collie.campaign.budget import Budget, BudgetSpent
from collie.campaign.campaign import Campaign
from collie.campaign.chain import MAX_SIDE_FINDINGS, Chain, chain_seed
from collie.campaign.registry import AnomalyRecord, AnomalyRegistry
from collie.campaign.runner import CampaignInterrupted, TrialOutcome, TrialRunner
from collie.campaign.summary import CampaignSummary

__all__ = ["MAX_SIDE_FINDINGS", "AnomalyRecord", "AnomalyRegistry", "Budget", "BudgetSpent", "Campaign",
           "CampaignInterrupted", "CampaignSummary", "Chain", "TrialOutcome", "TrialRunner", "chain_seed"]
