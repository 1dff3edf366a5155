"""Profile files: the built-ins load, a custom file loads by path, and every malformed field gets one sentence
naming the file, the line and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from collie.errors import InputError
from collie.targets.registry import open_target, parse_target
from collie.targets.sim import SimTarget, builtin_names, library, load_profile
from collie.targets.sim.profile import PROFILE_DIR, parse_profile
from collie.targets.sim.quirks import parse_clause

GOOD = (PROFILE_DIR / "ideal.toml").read_text()


def test_every_builtin_profile_loads_and_quirks_are_shared() -> None:
    lib = library()
    seen: dict[str, object] = {}
    for name in builtin_names():
        p = load_profile(name)
        assert p.name == name
        for q in p.active_quirks:
            assert q is lib[q.id]  # one declaration, shared
            seen[q.id] = q
    assert len(seen) == 18


def test_profiles_have_the_published_anomalies() -> None:
    def ids(name: str) -> set[int]:
        return {q.anomaly for q in load_profile(name).active_quirks}

    assert ids("cx6-200g") == {1, 2, 3, 4, 5, 6, 7, 8, 10, 13}
    assert ids("cx6-200g-amd") == ids("cx6-200g") | {9, 11, 12}
    assert ids("p2100g-100g") == {14, 15, 16, 17, 18}
    assert ids("rxe") == ids("ideal") == set()


def test_default_and_open_target_specs(tmp_path: Path) -> None:
    assert SimTarget().profile.name == "cx6-200g"
    t = open_target(parse_target("sim:p2100g-100g"), seed=4)
    assert isinstance(t, SimTarget) and t.describe().counter_dialect == "bnxt_re"
    f = tmp_path / "mine.toml"
    f.write_text(GOOD.replace('name = "ideal"', 'name = "mine"'))
    t = open_target(parse_target(f"sim:{f}"))
    assert isinstance(t, SimTarget) and t.describe().name == "sim:mine"


def test_describe_is_a_real_looking_fingerprint() -> None:
    info = SimTarget("cx6-200g").describe()
    assert info.kind == "sim" and info.hosts == ("a", "b")
    assert "ConnectX-6" in info.nic_model and info.firmware and info.kernel
    assert info.driver == "mlx5" and info.counter_dialect == "mlx5"
    assert info.line_rate_bps == 200e9 and info.msg_rate_pps > 0
    assert info.details["pcie"] == "Gen4 x16" and info.details["relaxed_ordering"] == "on"
    assert SimTarget("rxe").describe().counter_dialect == "rxe"


def test_requires_makes_a_quirk_inactive_with_the_reason() -> None:
    text = (PROFILE_DIR / "cx6-200g-amd.toml").read_text().replace("relaxed_ordering = false",
                                                                     "relaxed_ordering = true")
    p = parse_profile(text, "ro.toml")
    assert "f09-bi-sge-mix-noro" not in {q.id for q in p.active_quirks}
    (_q, why), = [(q, w) for q, w in p.inactive_quirks if q.id == "f09-bi-sge-mix-noro"]
    assert "relaxed_ordering" in why


def test_inline_quirk_in_a_custom_profile() -> None:
    text = GOOD + '''
[[quirk]]
id = "my-big-batch"
summary = "huge post lists hurt"
when = ["batch >= 100", "opcode == WRITE"]
symptom = { loss = 0.01, throughput = 0.5 }
diagnostics = ["sim_qpc_cache_miss"]
'''
    p = parse_profile(text, "inline.toml")
    assert [q.id for q in p.active_quirks] == ["my-big-batch"]


def _bad(text: str) -> str:
    with pytest.raises(InputError) as exc:
        parse_profile(text, "bad.toml")
    msg = str(exc.value)
    assert "\n" not in msg and "bad.toml" in msg
    return msg


@pytest.mark.parametrize(("old", "new", "field", "line"), [
    ('line_rate_gbps = 200', 'line_rate_gbps = "fast"', "nic.line_rate_gbps", True),
    ('line_rate_gbps = 200', 'line_rate_gbps = 0', "nic.line_rate_gbps", True),
    ('gen = 5', 'gen = 9', "pcie.gen", True),
    ('width = 16', 'width = 12', "pcie.width", True),
    ('relaxed_ordering = true', 'relaxed_ordering = "yes"', "pcie.relaxed_ordering", True),
    ('cpu_vendor = "intel"', 'cpu_vendor = "via"', "host.cpu_vendor", True),
    ('gpu = "same-switch"', 'gpu = "sometimes"', "host.gpu", True),
    ('nic_numa_node = 0', 'nic_numa_node = 3', "host.nic_numa_node", True),
    ('noise = 0.02', 'noise = 0.5', "model.noise", True),
    ('qpc_entries = 4096', 'qpc_entries = -1', "cache.qpc_entries", True),
    ('dialect = "mlx5"', 'dialect = "ib"', "dialect", True),
    ('quirks = []', 'quirks = ["f99-nothing"]', "quirks", True),
    ('quirks = []', 'quirks = ["f01-ud-rx-wqe", "f01-ud-rx-wqe"]', "quirks", True),
    ('hosts = ["a", "b"]', 'hosts = ["a", "a"]', "hosts", True),
    ('max_qp = 262144', 'max_qp = 262144\nmax_qps = 3', "max_qps", False),
    ('name = "ideal"', 'name = "has space"', "name", True),
])
def test_malformed_field_is_named(old: str, new: str, field: str, line: bool) -> None:
    assert old in GOOD
    msg = _bad(GOOD.replace(old, new, 1))
    assert field in msg
    if line:
        lineno = GOOD.replace(old, new, 1).splitlines().index(new.splitlines()[0]) + 1
        assert f"bad.toml:{lineno}:" in msg, msg


def test_missing_and_malformed_files() -> None:
    assert "model" in _bad(GOOD.replace('model = "collie ideal 200G NIC (simulated)"\n', ""))
    assert "malformed TOML" in _bad(GOOD + "\n[nic\n")
    with pytest.raises(InputError, match="unknown simulator profile 'nope'"):
        load_profile("nope")
    with pytest.raises(InputError, match="no such simulator profile file"):
        load_profile("/nonexistent/x.toml")


def test_rxe_dialect_cannot_show_pause() -> None:
    text = (PROFILE_DIR / "rxe.toml").read_text().replace("quirks = []", 'quirks = ["f01-ud-rx-wqe"]')
    assert "rxe dialect has no PFC" in _bad(text)


@pytest.mark.parametrize(("clause", "error"), [
    ("qps >= 4", "unknown feature 'qps'"),
    ("batch >= lots", "is a number"),
    ("transport >= RC", "categorical"),
    ("bidirectional >= 1", "flag"),
    ("batch ~ 4", "cannot read condition"),
    ("opcode in SEND", "needs a list"),
    (42, "condition string"),
])
def test_bad_conditions(clause: object, error: str) -> None:
    with pytest.raises(InputError, match=re.escape(error)):
        parse_clause(clause, "x.toml: quirk 'q'.when[0]")


def test_bad_quirk_fields_name_the_line() -> None:
    text = GOOD + '''
[[quirk]]
id = "mine"
when = ["batch >= 100", "nonsense_feature >= 3"]
symptom = { pause = 0.1 }
diagnostics = ["sim_qpc_cache_miss"]
'''
    msg = _bad(text)
    lineno = text.splitlines().index('when = ["batch >= 100", "nonsense_feature >= 3"]') + 1
    assert f"bad.toml:{lineno}:" in msg and "nonsense_feature" in msg
    for old, new, what in [
        ('symptom = { pause = 0.1 }', 'symptom = { pause = 2.0 }', "symptom.pause"),
        ('symptom = { pause = 0.1 }', 'symptom = { }', "has no effect"),
        ('symptom = { pause = 0.1 }', 'symptom = { pause = 0.1, pause_at = "moon" }', "pause_at"),
        ('diagnostics = ["sim_qpc_cache_miss"]', 'diagnostics = ["tx_bytes"]', "diagnostics"),
        ('id = "mine"', 'id = "Mine Quirk"', "id"),
        ('id = "mine"', 'id = "f01-ud-rx-wqe"', "already in the shared library"),
    ]:
        good_when = text.replace("nonsense_feature >= 3", "qps_total >= 3")
        assert what in _bad(good_when.replace(old, new, 1))


def test_the_example_in_the_docs_loads() -> None:
    doc = (Path(__file__).resolve().parents[4] / "docs" / "sim-profiles.md").read_text()
    text = doc.split("## Writing your own profile", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    p = parse_profile(text, "docs example")
    assert [q.id for q in p.active_quirks] == ["f01-ud-rx-wqe", "f11-bi-remote-numa", "my-write-deep-loss"]
    assert [q.id for q, _ in p.inactive_quirks] == ["f09-bi-sge-mix-noro"]
    # its own quirk is reachable in the default search space: a point of it fires the quirk
    from collie.model.space import load_space

    space = load_space()
    workload = space.build({**space.simplest(), "wq_depth": 4096})
    assert SimTarget(p).run(workload, 5.0).truth == ("my-write-deep-loss",)


def test_a_profile_file_rewritten_is_read_again(tmp_path: Path) -> None:
    import os

    path = tmp_path / "mine.toml"
    text = (PROFILE_DIR / "fleet8-cx6.toml").read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    assert load_profile(str(path)).faults == ()
    path.write_text(text + '\n[[faults]]\nhost = "h1"\nkind = "pcie"\nfactor = 0.5\n', encoding="utf-8")
    os.utime(path, ns=(1, path.stat().st_mtime_ns + 1_000_000))  # a later modification time, however coarse
    assert [f.host for f in load_profile(str(path)).faults] == ["h1"]
    assert load_profile(str(path)) is load_profile(str(path))  # unchanged: parsed once
