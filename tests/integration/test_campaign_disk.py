"""A campaign folder on a real small, full or read-only filesystem (a tmpfs in a private mount namespace).

Each test runs a shell script under ``unshare --mount``: the tmpfs exists only for that script and vanishes with
it, whatever happens. This needs root and ``unshare`` (``tests/system_components.py``: without them the tests
skip, saying why, except under CI, where they fail).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.system_components import require


@pytest.fixture(autouse=True)
def _root_and_unshare() -> None:
    require("root")
    require("unshare")

CORPUS = ROOT / "workloads" / "corpus"

COLLIE = f"{shlex.quote(sys.executable)} -m collie"


def _in_tmpfs(mount: Path, options: str, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) with a tmpfs mounted at ``mount`` (``options``: e.g. ``size=20m``) only for it."""
    mount.mkdir()
    whole = f"set -u\nmount -t tmpfs -o {options} tmpfs {shlex.quote(str(mount))}\n{script}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", whole],
                          capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL,
                          check=False)


def test_a_disk_too_full_or_read_only_is_refused_before_the_campaign_starts(tmp_path: Path) -> None:
    ci = f"{COLLIE} ci --corpus {CORPUS} --budget 20 -q --out"
    small = _in_tmpfs(tmp_path / "small", "size=8m", f"{COLLIE} campaign --budget 20 --out {tmp_path}/small/c; "
                                                     f"echo rc=$?; ls {tmp_path}/small/c; {ci} {tmp_path}/small/g; "
                                                     "echo rc=$?")
    assert "rc=2\nrc=2" in small.stdout and "MiB free" in small.stderr, small.stderr
    assert "trials.jsonl" not in small.stdout  # nothing started
    ro = _in_tmpfs(tmp_path / "ro", "ro", f"{COLLIE} campaign --budget 20 --out {tmp_path}/ro/c; echo rc=$?; "
                                          f"{COLLIE} minimize {EXAMPLES}/bi-rc-read-80qp.toml --out {tmp_path}/ro/m/x;"
                                          f" echo rc=$?; {ci} {tmp_path}/ro/g; echo rc=$?")
    assert "rc=2\nrc=2\nrc=2" in ro.stdout, ro.stderr
    for out in ("c", "m/x", "g"):  # the folder is blamed, never the target
        assert f"cannot create the output folder {tmp_path}/ro/{out}: {tmp_path}/ro cannot be written" in ro.stderr
    assert "target" not in small.stderr + ro.stderr
    for r in (small, ro):
        assert "Traceback" not in r.stderr


def test_a_disk_that_fills_mid_campaign_stops_it_with_one_sentence_and_resume_finishes_it(tmp_path: Path) -> None:
    mount = tmp_path / "m"
    out = mount / "c"
    journal = out / "trials.jsonl"
    # start a paced campaign; once its journal holds ~40 trials, fill the disk; then free it and resume
    script = f"""
{COLLIE} campaign --budget 200 --out {out} --pace 0.02 >/dev/null 2>{mount}/err.txt &
pid=$!
while [ "$(wc -l < {journal} 2>/dev/null || echo 0)" -lt 80 ]; do sleep 0.05; done
dd if=/dev/zero of={mount}/fill bs=1M count=64 2>/dev/null
wait $pid
echo "first rc=$?"
cat {mount}/err.txt >&2
rm {mount}/fill
{COLLIE} campaign --resume --out {out} --format json
echo "resume rc=$?"
cat {journal} > {tmp_path}/journal.jsonl
"""
    r = _in_tmpfs(mount, "size=20m", script)
    assert "first rc=2" in r.stdout, r.stderr
    assert "No space left on device" in r.stderr and f"--resume --out {out}" in r.stderr
    assert "Traceback" not in r.stderr
    assert "resume rc=0" in r.stdout, r.stderr
    summary = json.loads(r.stdout[r.stdout.index("{"):r.stdout.rindex("}") + 1])
    assert summary["experiments"] == 200
    trials = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    done = [t["trial"] for t in trials if t["status"] != "RUNNING"]
    assert done == list(range(1, len(done) + 1))  # every trial once, in order, the torn one re-run
