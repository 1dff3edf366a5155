"""A campaign: calibrate -> replay the corpus -> explore -> confirm -> minimize -> record, journaled.

Split along its jobs (in the spirit of Optuna's study and storage):
    * :mod:`collie.campaign.runner` - the journaled trial runner (:class:`TrialRunner`): numbers, runs or takes
      from the journal, and journals every trial, telling the target each run's repetition;
    * :mod:`collie.campaign.registry` - the anomaly registry (:class:`AnomalyRegistry`): known match, regions,
      widening, MFS replacement;
    * :mod:`collie.campaign.loop` - the phase loop (:class:`Campaign`), which finds, confirms, minimizes and saves;
    * :mod:`collie.campaign.summary` - the tally the CLI reads (:class:`CampaignSummary`);
    * :mod:`collie.campaign.parallel` - K search chains on K targets sharing one registry, budget and journal
      (:class:`ParallelCampaign`, ``--parallel K``), deciding in turns (:mod:`collie.campaign.turns`).

The campaign folder's files and their typed records are in :mod:`collie.storage.campaign` and
:mod:`collie.storage.records`.
"""

from collie.campaign.loop import MAX_SIDE_FINDINGS, Campaign
from collie.campaign.parallel import ParallelCampaign, chain_seed
from collie.campaign.registry import AnomalyRecord, AnomalyRegistry
from collie.campaign.runner import CampaignInterrupted, TrialOutcome, TrialRunner
from collie.campaign.summary import CampaignSummary

__all__ = ["MAX_SIDE_FINDINGS", "AnomalyRecord", "AnomalyRegistry", "Campaign", "CampaignInterrupted",
           "CampaignSummary", "ParallelCampaign", "TrialOutcome", "TrialRunner", "chain_seed"]
