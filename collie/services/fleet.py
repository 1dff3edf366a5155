"""A fleet check on a target: what ``collie fleet check`` calls."""

from __future__ import annotations

from collie.errors import InputError, TargetError
from collie.fleet import FleetCheck, RoundKind, check_rails
from collie.gate import InfrastructureError
from collie.model.collective import LinkFigure, collective
from collie.model.flow import Endpoint, Flow
from collie.model.patterns import Pattern, PatternKind
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.kind import TargetSpec
from collie.targets.registry import open_target

#: Every connection of a fleet check: 1 MiB RC WRITEs on 2 QPs (what nccl-tests' rings move, in WRs a NIC
#: streams at line rate).
CHECK_FLOW = Flow(Endpoint("a"), Endpoint("b"), sizes=(1 << 20,), mr_size=1 << 20, qps=2)
_KINDS = {RoundKind.RING: PatternKind.RING_ALLREDUCE, RoundKind.PAIRS: PatternKind.PAIRWISE}


def fleet_check(target_spec: TargetSpec, *, size: int, duration: float, margin: float, seed: int,
                accept_new_host_keys: bool = False) -> FleetCheck:
    """Check every host of ``target_spec``'s fleet (:func:`collie.fleet.check_fleet`), each round a pattern of
    ``size`` bytes per rank run for ``duration`` seconds; a fleet whose hosts have several NICs
    (:attr:`~collie.targets.base.TargetInfo.nics_per_host`) rail by rail (:func:`collie.fleet.check_rails`).

    Raises:
        InputError: the target has fewer than 3 hosts, or ``margin`` is not in (0, 1).
        TargetError: the target cannot be opened.
        InfrastructureError: a round could not run (the target refused it, or it ended in errors).
    """
    if not 0 < margin < 1:
        raise InputError(f"--margin {margin}: a link's shortfall below its round's reference must be in (0, 1)")
    target = open_target(target_spec, seed=seed, accept_new_host_keys=accept_new_host_keys)
    with target:
        info = target.describe()
        hosts = info.hosts
        if len(hosts) < 3:
            raise InputError(f"{target_spec} has {len(hosts)} hosts ({', '.join(hosts)}); a fleet check needs at "
                             "least 3: a simulated fleet such as sim:fleet8-cx6, or a profile with hosts = N")

        def run(kind: RoundKind, order: tuple[str, ...]) -> tuple[LinkFigure, ...]:
            pattern = Pattern(_KINDS[kind], order, size, flow=CHECK_FLOW)
            try:
                result = target.run(Workload.of_pattern(pattern), duration)
            except (Unsupported, TargetError) as exc:
                raise InfrastructureError(f"{target_spec} could not run a {kind.value} round: {exc}") from None
            if result.errors:
                raise InfrastructureError(f"a {kind.value} round on {target_spec} ended in errors: "
                                          f"{'; '.join(result.errors[:3])}")
            return collective(pattern, result.flows).links

        result = check_rails(run, hosts, info.nics_per_host, margin, seed)
    return FleetCheck(str(target_spec), info, size, result)
