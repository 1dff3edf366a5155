"""``collie fleet check``: an acceptance run of a fleet without MPI, localising slow hosts in a few rounds."""

from collie.fleet.check import FleetCheck, FleetResult, Round, RoundKind, Suspect, check_fleet, check_rails, ring_orders

__all__ = ["FleetCheck", "FleetResult", "Round", "RoundKind", "Suspect", "check_fleet", "check_rails", "ring_orders"]
