"""The library's services: what the CLI calls, one service per command, each returning typed results.

A command parses its options, calls its service and renders what comes back; a service never prints, it emits
events (:mod:`collie.events`, and :class:`~collie.services.events.Note`) through the listener its caller gives.

    * :mod:`collie.services.cases` - a saved case replayed (:func:`replay_case`) or minimized
      (:func:`minimize_case`) on the target it was found on;
    * :mod:`collie.services.run` - one experiment and its verdict (:func:`run_workload`);
    * :mod:`collie.services.fleet` - a fleet check (:func:`fleet_check`): rounds of collective patterns over
      every host, measured and localised, not judged by the oracle;
    * :func:`check_new_folder` - a folder given to write a campaign or a case into, checked before anything runs;
    * :mod:`collie.services.campaigns` - a campaign planned (:func:`plan_campaign`,
      :func:`plan_resumed_campaign`) and opened (:func:`open_campaign`), and the CI gate's (:func:`plan_gate`,
      :func:`open_gate`).
    * :mod:`collie.services.rerun` - an import's perftest rows run again as a campaign folder (:func:`plan_rerun`,
      :func:`plan_resumed_rerun`, :func:`run_rerun`).

Every other experiment they run is :func:`collie.experiment.run_and_judge`'s; every oracle they calibrate,
:func:`collie.calibrate.calibrate_target`'s.
"""

import collie.remote.kind  # noqa: F401  (the remote layer registers the remote:INVENTORY.toml target kind)
from collie.services.campaigns import (
    CampaignPlan,
    OpenedGate,
    ResumeOptions,
    open_campaign,
    open_gate,
    plan_campaign,
    plan_gate,
    plan_resumed_campaign,
)
from collie.services.cases import (
    LocatedCase,
    Minimized,
    MinimizePlan,
    Replay,
    case_oracle,
    locate_case,
    minimize_case,
    plan_minimize,
    replay_case,
    save_minimized,
)
from collie.services.events import Note, ServiceEvent, ServiceListener
from collie.services.fleet import fleet_check
from collie.services.rerun import RerunPlan, RerunSummary, parsed_target, plan_rerun, plan_resumed_rerun, run_rerun
from collie.services.run import WorkloadRun, run_workload
from collie.storage.files import check_new_folder

__all__ = ["CampaignPlan", "LocatedCase", "MinimizePlan", "Minimized", "Note", "OpenedGate", "Replay", "RerunPlan",
           "RerunSummary", "ResumeOptions", "ServiceEvent", "ServiceListener", "WorkloadRun", "case_oracle",
           "check_new_folder", "fleet_check", "locate_case", "minimize_case", "open_campaign", "open_gate",
           "parsed_target", "plan_campaign", "plan_gate", "plan_minimize", "plan_rerun", "plan_resumed_campaign",
           "plan_resumed_rerun", "replay_case", "run_rerun", "run_workload", "save_minimized"]
