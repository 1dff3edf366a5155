"""perftest command lines of minimal cases, and the condition perftest lacks when it cannot express one."""

from __future__ import annotations

import shlex

import pytest

from collie.model.flow import Endpoint, Flow
from collie.model.workload import Workload
from collie.report.perftest import Device, device_of, lacks, perftest_lines

#: perftest's own option names for the bandwidth tests (its usage text, src/perftest_parameters.c), with
#: whether each takes a value.
PERFTEST_OPTIONS = {"-d": True, "-i": True, "-x": True, "-c": True, "-s": True, "-q": True, "-m": True, "-t": True,
                    "-r": True, "-l": True, "-Q": True, "-I": True, "-D": True, "--report_gbits": False,
                    "--mr_per_qp": False, "--use_cuda": True, "-b": False, "--tclass": True}


def _parse(line: str) -> tuple[str, dict[str, str], list[str]]:
    """(tool, options, positional arguments) of a perftest line, refusing any option perftest does not have."""
    tool, *words = shlex.split(line)
    options: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if name.startswith("-"):
            assert name in PERFTEST_OPTIONS, f"{name} is not a perftest option"
            if PERFTEST_OPTIONS[name] and not eq:
                value = words[i + 1]
                i += 1
            options[name] = value
        else:
            rest.append(word)
        i += 1
    return tool, options, rest


def _flow(**kw: object) -> Flow:
    return Flow(client=Endpoint("a"), server=Endpoint("b"), **kw)  # type: ignore[arg-type]


def test_a_write_case_maps_field_by_field_on_a_verbs_target() -> None:
    w = Workload((_flow(transport="UC", opcodes=("WRITE",), sizes=(65536,), qps=8, mtu=1024, sq_depth=256, batch=32,
                        signal_every=16, inline=64),))
    device = device_of("verbs:mlx5_0:1:3")
    p = perftest_lines(w, {"a": device, "b": device}, duration_s=10.0)
    assert p.expressible and p.tool == "ib_write_bw" and (p.server_host, p.client_host) == ("b", "a")
    tool, server, rest = _parse(p.server)
    assert tool == "ib_write_bw" and rest == []
    assert server == {"-d": "mlx5_0", "-i": "1", "-x": "3", "-c": "UC", "-s": "65536", "-q": "8", "-m": "1024",
                      "-t": "256", "-l": "32", "-Q": "16", "-I": "64", "-D": "10", "--report_gbits": ""}
    tool, client, rest = _parse(p.client)
    assert client == server and rest == ["b"]  # the client connects to the server


def test_a_ud_send_case_sets_both_queue_depths() -> None:
    w = Workload((_flow(transport="UD", opcodes=("SEND",), sizes=(1024,), qps=32, mtu=1024, sq_depth=1448,
                        rq_depth=1448),))
    tool, options, rest = _parse(perftest_lines(w, {}).client)
    assert tool == "ib_send_bw" and options["-c"] == "UD" and options["-t"] == options["-r"] == "1448"
    assert "-d" not in options  # no device named (the simulator): perftest takes the first one
    assert rest == ["b"]


def test_a_read_case_runs_ib_read_bw_with_the_requester_as_client() -> None:
    w = Workload((_flow(opcodes=("READ",), sizes=(131072,), mtu=1024),))
    p = perftest_lines(w, {})
    assert p.tool == "ib_read_bw" and p.client_host == "a" and "-r" not in _parse(p.server)[1]


def test_a_loopback_case_connects_to_localhost_and_gpu_memory_uses_cuda() -> None:
    w = Workload((Flow(client=Endpoint("a", "gpu"), server=Endpoint("a")),))
    p = perftest_lines(w, {})
    _, client, rest = _parse(p.client)
    assert rest == ["localhost"] and client["--use_cuda"] == "0"
    assert "--use_cuda" not in _parse(p.server)[1]


def test_a_flow_and_its_mirror_image_are_perftest_bidirectional() -> None:
    there = _flow(opcodes=("READ",), sizes=(4096,))
    back = Flow(client=Endpoint("b"), server=Endpoint("a"), opcodes=("READ",), sizes=(4096,))
    p = perftest_lines(Workload((there, back)), {})
    assert p.tool == "ib_read_bw"
    assert "-b" in _parse(p.server)[1] and "-b" in _parse(p.client)[1]


def test_one_memory_region_per_qp_is_mr_per_qp() -> None:
    assert "--mr_per_qp" in _parse(perftest_lines(Workload((_flow(qps=4, mrs=4),)), {}).server)[1]


@pytest.mark.parametrize("tclass", [106, 0])
def test_a_traffic_class_is_tclass_on_both_lines(tclass: int) -> None:
    p = perftest_lines(Workload((_flow(sizes=(4096,), tclass=tclass),)), {})
    for line in (p.server, p.client):
        assert f"--tclass={tclass}" in shlex.split(line)  # perftest's spelling, one word
        assert _parse(line)[1]["--tclass"] == str(tclass)


def test_a_flow_without_a_traffic_class_sets_none() -> None:
    p = perftest_lines(Workload((_flow(sizes=(4096,)),)), {})
    assert "tclass" not in p.server + p.client


def test_a_mirrored_pair_with_one_traffic_class_keeps_it() -> None:
    there = _flow(sizes=(4096,), tclass=106)
    back = Flow(client=Endpoint("b"), server=Endpoint("a"), sizes=(4096,), tclass=106)
    p = perftest_lines(Workload((there, back)), {})
    assert all({"-b", "--tclass"} <= set(_parse(line)[1]) for line in (p.server, p.client))


@pytest.mark.parametrize("workload, condition", [
    (Workload((_flow(), _flow())), "2 flows at once that are not mirror images"),
    (Workload((_flow(), _flow(), _flow())), "3 flows at once"),
    (Workload((_flow(opcodes=("ATOMIC_FA",), sizes=(8,)),)), "posts ATOMIC_FA"),
    (Workload((_flow(sizes=(64, 65536)),)), "2 sizes"),
    (Workload((_flow(sges=4),)), "over 4"),
    (Workload((_flow(qps=2, mrs=7),)), "7 for 2 QPs"),
    (Workload((Flow(client=Endpoint("a", "remote"), server=Endpoint("b")),)), "NUMA"),
    (Workload((_flow(processes=2),)), "2 per host"),
    (Workload((_flow(burst=True),)), "bursts"),
    (Workload((_flow(opcodes=("READ",), transport="UC"),)), "no UC connection"),
    (Workload((_flow(batch=4, signal_every=8),)), "4 work requests at a time with one completion every 8"),
    (Workload((_flow(opcodes=("READ", "WRITE")),)), "cycles through READ/WRITE on the same QPs"),
    (Workload((_flow(opcodes=("SEND",), recv_delay_us=100),)), "paces its receives"),
    (Workload((_flow(mr_churn=100),)), "control-path churn"),
])
def test_what_perftest_cannot_express_is_named_in_one_sentence(workload: Workload, condition: str) -> None:
    p = perftest_lines(workload, {})
    assert not p.expressible and p.server == p.client == ""
    assert condition in p.lacks and p.lacks == lacks(workload) and "\n" not in p.lacks


def test_the_device_comes_from_a_verbs_target_only() -> None:
    assert device_of("verbs:rxe0").name == "rxe0" and device_of("verbs:rxe0").port is None
    assert device_of("verbs:mlx5_1:2:3") == Device("mlx5_1", 2, 3)
    assert device_of("sim:cx6-200g").name == "" and device_of("remote:lab.toml").name == ""


def test_each_host_opens_its_own_device_and_the_client_connects_to_the_servers_address() -> None:
    w = Workload((_flow(opcodes=("WRITE",), sizes=(4096,)),))
    p = perftest_lines(w, {"a": Device("mlx5_0", 1, 3, "10.0.0.1"), "b": Device("mlx5_2", 2, 5, "10.0.0.2")})
    _, server, rest = _parse(p.server)
    assert (server["-d"], server["-i"], server["-x"], rest) == ("mlx5_2", "2", "5", [])
    _, client, rest = _parse(p.client)
    assert (client["-d"], client["-i"], client["-x"], rest) == ("mlx5_0", "1", "3", ["10.0.0.2"])
