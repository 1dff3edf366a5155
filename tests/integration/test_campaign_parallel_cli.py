"""``collie campaign --parallel K`` through the real CLI on targets that have no host groups: ``--parallel 1`` is the
campaign without it, more chains are refused in one sentence, and a resume keeps the campaign's K."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.conftest import run_cli
from tests.integration.test_campaign_resume_cli import _folders, _rows

TARGET = "sim:cx6-200g-amd"


def test_parallel_1_journals_exactly_what_a_campaign_without_parallel_journals(tmp_path: Path) -> None:
    common = ("campaign", "--target", TARGET, "--preset", "quick", "--budget", "40", "--seed", "4", "--no-live")
    plain = run_cli(*common, "--out", str(tmp_path / "plain"))
    one = run_cli(*common, "--out", str(tmp_path / "one"), "--parallel", "1")
    assert plain.returncode == 0 and one.returncode == 0, (plain.stderr, one.stderr)
    assert _rows(tmp_path / "one") == _rows(tmp_path / "plain")
    assert _folders(tmp_path / "one") == _folders(tmp_path / "plain")
    configs = [tomllib.loads((tmp_path / d / "campaign.toml").read_text()) for d in ("plain", "one")]
    for c in configs:
        c.pop("created")
    assert configs[0] == configs[1] and "parallel" not in configs[0]


def test_more_chains_on_a_target_without_host_groups_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "c"
    r = run_cli("campaign", "--target", TARGET, "--parallel", "2", "--budget", "20", "--out", str(out))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"collie: error: --parallel 2 needs a remote target (--target remote:hosts.toml), whose inventory gives "
        f"each chain a host group of its own; {TARGET} is one target, so run it without --parallel"]
    assert not out.exists()


def test_a_resume_cannot_change_the_number_of_chains(tmp_path: Path) -> None:
    out = tmp_path / "c"
    first = run_cli("campaign", "--target", TARGET, "--preset", "quick", "--budget", "20", "--out", str(out),
                    "--no-live")
    assert first.returncode == 0, first.stderr
    r = run_cli("campaign", "--resume", "--out", str(out), "--parallel", "2")
    assert r.returncode == 2 and "--parallel 2 differs from this campaign's parallel (1" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_an_inventory_that_cannot_give_k_groups_is_exit_2_before_any_host_is_reached(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("".join(f'[[host]]\nname = "h{i}"\naddress = "192.0.2.{i + 1}"\ntarget = "sim:cx6-200g"\n\n'
                             for i in range(3)))  # TEST-NET addresses: nothing is ever reached
    out = tmp_path / "c"
    r = run_cli("campaign", "--target", f"remote:{hosts}", "--parallel", "2", "--budget", "20", "--out", str(out))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"collie: error: {hosts} has 3 hosts, but --parallel 2 needs at least 4: 2 disjoint groups of 2 (one host "
        "per role a and b)"]
    assert not out.exists()
