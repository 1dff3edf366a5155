"""Which known anomalies a find outside their MFS may be: drivers, limits and categorical conditions."""

from __future__ import annotations

from typing import Any

from collie.campaign import AnomalyRecord
from collie.campaign.registry import AnomalyRegistry
from collie.mfs import MFS, Condition
from collie.model.features import features
from collie.model.space import load_space

SPACE = load_space()
RNR = MFS("rnr@receiver", (Condition("transport", "==", "UD"), Condition("recv_delay_us", ">=", 1),
                           Condition("qps_total", "<=", 128)))


def _registry(*records: AnomalyRecord) -> AnomalyRegistry:
    registry = AnomalyRegistry(SPACE, [])
    for r in records:
        registry.add(r)
    return registry


def _point(**changes: Any) -> dict[str, Any]:
    return {**SPACE.simplest(), **changes}


def _record(mfs: MFS, anomaly_id: str = "A001-rnr") -> AnomalyRecord:
    return AnomalyRecord(anomaly_id, mfs.signature, mfs, _point(op="UD_SEND", recv_delay_us=1), 1, True, 1)


def _driven(registry: AnomalyRegistry, signature: str = "rnr@receiver+low_throughput@receiver",
            **changes: Any) -> list[tuple[str, str, list[str]]]:
    f = features(SPACE.build(_point(**changes)))
    return [(a.anomaly_id, str(d), [str(c) for c in cats]) for a, d, cats in registry.driven(f, signature)]


def test_a_find_past_a_limit_with_the_driver_holding_is_offered_with_that_driver() -> None:
    # qps_total <= 128 holds at the simplest point (a limit); recv_delay_us >= 1 does not (the driver)
    registry = _registry(_record(RNR))
    assert _driven(registry, op="UD_SEND", recv_delay_us=10, qps=512) == [("A001-rnr", "recv_delay_us >= 1", [])]


def test_a_find_with_another_transport_is_offered_with_the_categorical_conditions_it_breaks() -> None:
    registry = _registry(_record(RNR))
    assert _driven(registry, op="RC_SEND", recv_delay_us=10) == [("A001-rnr", "recv_delay_us >= 1",
                                                                  ["transport == UD"])]


def test_a_find_without_the_driver_inside_or_of_another_symptom_is_not_offered() -> None:
    registry = _registry(_record(RNR))
    assert _driven(registry, op="UD_SEND", recv_delay_us=0, qps=512) == []  # the driver does not hold
    assert _driven(registry, op="UD_SEND", recv_delay_us=10) == []  # inside: a plain hit, not this question
    assert _driven(registry, "pause@receiver", op="UD_SEND", recv_delay_us=10, qps=512) == []


def test_an_mfs_without_a_numeric_driver_offers_nothing() -> None:
    # gpu == True and qps_total <= 128: nothing numeric that the simplest point breaks, so no run can tell
    only_limits = MFS("pause@receiver", (Condition("gpu", "==", True), Condition("qps_total", "<=", 128)))
    registry = _registry(_record(only_limits, "A001-pause"))
    assert _driven(registry, "pause@receiver", memory="gpu", qps=512) == []
