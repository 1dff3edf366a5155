"""The clear messages when pyverbs or the device is missing, and the target's checks, on a fake pyverbs."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from collie.errors import InputError, TargetError
from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.targets.base import Unsupported
from collie.targets.verbs import VerbsTarget, compat
from collie.targets.verbs.device import NO_DEVICE
from collie.targets.verbs.spec import parse_spec


class FakeError(Exception):
    pass


class FakeContext:
    port_state = 4  # IBV_PORT_ACTIVE
    gid = "0000:0000:0000:0000:0000:ffff:0a09:0901"

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False

    def query_device(self) -> Any:
        return SimpleNamespace(max_qp=100, max_qp_wr=1024, max_sge=4, max_sge_rd=4, max_cq=100, max_cqe=4096,
                               max_mr=50, max_pd=10, max_mr_size=1 << 30, max_qp_rd_atom=16, atomic_caps=0,
                               phys_port_cnt=1, fw_version="1.2.3", vendor_id=0x15B3, vendor_part_id=4123)

    def query_port(self, port: int) -> Any:
        return SimpleNamespace(state=self.port_state, gid_tbl_len=4, active_mtu=3, max_mtu=5)

    def query_gid(self, port: int, index: int) -> str:
        return self.gid

    def close(self) -> None:
        self.closed = True


#: The most inline data a QP of the fake device accepts (not a power of two: the probe must find it exactly).
FAKE_MAX_INLINE = 220


class FakeQP:
    def __init__(self, pd: Any, init: Any) -> None:
        if init.cap.max_inline_data > FAKE_MAX_INLINE:
            raise FakeError("Failed to create QP: invalid argument")

    def close(self) -> None:
        pass


def fake_pyverbs(devices: list[str] | None, ctx_cls: type = FakeContext) -> compat.Pyverbs:
    def get_device_list() -> list[Any]:
        if devices is None:
            raise FakeError("Failed to get devices list")
        return [SimpleNamespace(name=d.encode()) for d in devices]

    ns = SimpleNamespace
    e = ns(IBV_PORT_ACTIVE=4, IBV_ATOMIC_NONE=0, IBV_QPT_RC=2)
    device = ns(get_device_list=get_device_list, Context=lambda name: ctx_cls(name))
    qp = ns(QP=FakeQP, QPInitAttr=lambda **kw: ns(**kw), QPCap=lambda **kw: ns(**kw))
    return compat.Pyverbs(device=device, pd=ns(PD=lambda ctx: object()), mr=None,  # type: ignore[arg-type]
                          cq=ns(CQ=lambda ctx, cqe: object()), qp=qp, wr=None, addr=None,  # type: ignore[arg-type]
                          e=e, error=(FakeError,), version="test")


def test_missing_pyverbs_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "_LOADED", None)
    monkeypatch.setattr(compat, "DEBIAN_DIST_PACKAGES", "/nonexistent/dist-packages")
    monkeypatch.setitem(sys.modules, "pyverbs", None)  # makes "import pyverbs" raise ImportError
    with pytest.raises(TargetError) as exc:
        compat.load()
    msg = str(exc.value)
    assert "python3-pyverbs" in msg and "apt-get install" in msg
    assert "\n" not in msg


def test_missing_pyverbs_through_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "_LOADED", None)
    monkeypatch.setattr(compat, "DEBIAN_DIST_PACKAGES", "/nonexistent/dist-packages")
    monkeypatch.setitem(sys.modules, "pyverbs", None)
    with pytest.raises(TargetError, match="python3-pyverbs"), VerbsTarget(parse_spec("rxe0")):
        pass


@pytest.mark.parametrize("devices", [None, []])
def test_no_device_is_one_sentence(devices: list[str] | None) -> None:
    with pytest.raises(TargetError) as exc, VerbsTarget(parse_spec("rxe0"), pyverbs=fake_pyverbs(devices)):
        pass
    assert str(exc.value) == NO_DEVICE
    assert str(exc.value).count(".") <= 1 and "\n" not in str(exc.value)


def test_unknown_device_lists_the_present_ones() -> None:
    with pytest.raises(TargetError, match=r"RDMA device 'rxe9' not found; devices here: mlx5_0, rxe0"), \
            VerbsTarget(parse_spec("rxe9"), pyverbs=fake_pyverbs(["rxe0", "mlx5_0"])):
        pass


def test_port_beyond_the_device() -> None:
    with pytest.raises(TargetError, match="has no port 2; it has ports 1 to 1"), \
            VerbsTarget(parse_spec("rxe0:2"), pyverbs=fake_pyverbs(["rxe0"])):
        pass


def test_port_down_and_empty_gid() -> None:
    class Down(FakeContext):
        port_state = 1

    class NoGid(FakeContext):
        gid = "0000:0000:0000:0000:0000:0000:0000:0000"

    with pytest.raises(TargetError, match="is not ACTIVE"), \
            VerbsTarget(parse_spec("rxe0"), pyverbs=fake_pyverbs(["rxe0"], Down)):
        pass
    with pytest.raises(TargetError, match=r"GID index 1 of rxe0 port 1 is empty"), \
            VerbsTarget(parse_spec("rxe0"), pyverbs=fake_pyverbs(["rxe0"], NoGid)):
        pass
    with pytest.raises(TargetError, match="beyond the GID table"), \
            VerbsTarget(parse_spec("rxe0:1:7"), pyverbs=fake_pyverbs(["rxe0"])):
        pass


def test_describe_and_unsupported_from_the_fake_limits() -> None:
    with VerbsTarget(parse_spec("mlx5_0"), pyverbs=fake_pyverbs(["mlx5_0"])) as t:
        info = t.describe()
        assert info.kind == "verbs" and info.name == "verbs:mlx5_0:1:1"
        assert info.firmware == "1.2.3" and info.details["active_mtu"] == "1024"
        assert info.atomics is False and info.max_rd_atomic == 16
        a, b = Endpoint("a"), Endpoint("b")
        t.check(Workload(flows=(Flow(a, b, qps=8, mtu=1024),)))
        with pytest.raises(Unsupported, match="qps 60 x 2 sides = 120 > device max_qp 100"):
            t.run(Workload(flows=(Flow(a, b, qps=60, mtu=1024),)), 1.0)
        with pytest.raises(Unsupported, match="mtu 4096 > port active_mtu 1024"):
            t.check(Workload(flows=(Flow(a, b),)))
        assert info.details["max_inline_data"] == str(FAKE_MAX_INLINE)  # probed: query_device does not say
        t.check(Workload(flows=(Flow(a, b, sizes=(64,), inline=FAKE_MAX_INLINE, mtu=1024),)))
        with pytest.raises(Unsupported, match=f"inline 256 > device max_inline_data {FAKE_MAX_INLINE}"):
            t.check(Workload(flows=(Flow(a, b, sizes=(64,), inline=256, mtu=1024),)))
        with pytest.raises(Unsupported, match="needs atomics"):
            t.check(Workload(flows=(Flow(a, b, opcodes=("ATOMIC_FA",), sizes=(8,), mtu=1024),)))
        with pytest.raises(InputError, match="duration 0 is not a positive"):
            t.run(Workload(flows=(Flow(a, b, mtu=1024),)), 0)


def test_using_the_target_outside_with_is_an_error() -> None:
    t = VerbsTarget(parse_spec("rxe0"), pyverbs=fake_pyverbs(["rxe0"]))
    with pytest.raises(TargetError, match="must be entered"):
        t.describe()
