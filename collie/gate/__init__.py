"""The CI gate (``collie ci``): replay the known cases, search briefly, decide, with waivers and JUnit XML.

    * :mod:`collie.gate.waivers` - the waiver file: accepted anomalies with a reason and an expiry date;
    * :mod:`collie.gate.gate` - the gate's run and its decision (:class:`GateResult`, :class:`ExitCode`);
    * :mod:`collie.gate.junit` - the result as JUnit XML (through junitparser).
"""

from collie.gate.gate import (
    CampaignRun,
    ExitCode,
    GateResult,
    GateWatch,
    InfrastructureError,
    KnownResult,
    KnownStatus,
    NewAnomaly,
    run_gate,
)
from collie.gate.waivers import Waiver, Waivers, load_waivers

__all__ = ["CampaignRun", "ExitCode", "GateResult", "GateWatch", "InfrastructureError", "KnownResult", "KnownStatus",
           "NewAnomaly", "Waiver", "Waivers", "load_waivers", "run_gate"]
