"""Read a campaign folder for a report, without writing to it.

A report may be made of a campaign that is still running, of a folder on a read-only share, or of a folder
that an older collie wrote: this reader never repairs or truncates anything (unlike
:meth:`~collie.storage.campaign.CampaignStore.read_journal`, which a resume uses). It checks every row and file with the
same typed readers as a resume (:mod:`collie.storage.records`, :mod:`collie.storage.case`).

Invariants:
    * each trial appears once, as its last row (its end; RUNNING if the campaign is in it, or crashed in it);
    * a torn last line (a campaign writing it, or a crash) is left out with a warning; any other damaged row is
      an :class:`~collie.errors.InputError` naming the file, the line and the field;
    * anomalies are the complete folders under ``anomalies/`` (half-written ones start with ``.``), by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from collie.errors import CollieError, InputError
from collie.storage.campaign import ANOMALIES, CONFIG, JOURNAL
from collie.storage.case import CaseRecord, read_case_folder
from collie.storage.records import CampaignConfig, Phase, TrialRecord
from collie.storage.rerun import read_rerun
from collie.tomlio import read_toml


@dataclass(frozen=True)
class CampaignData:
    """What a report is made of.

    Attributes:
        root: the campaign folder (as the user named it, resolved).
        config: its ``campaign.toml``.
        trials: one record per trial, by trial number (the last row of each).
        anomalies: each anomaly folder's record, by folder name.
        warnings: what was left out (a torn last line), one sentence each.
        corpus_names: workload key -> name of each case of the campaign's corpus (empty: no corpus, or its
            folder is no longer readable, which a warning says).
        rerun_of: the import folder the campaign is a rerun of (``collie import rerun``; ``""``: a campaign of its
            own).
    """

    root: Path
    config: CampaignConfig
    trials: tuple[TrialRecord, ...]
    anomalies: tuple[CaseRecord, ...]
    warnings: tuple[str, ...] = ()
    corpus_names: Mapping[str, str] = field(default_factory=dict)
    rerun_of: str = ""


def load_campaign(root: Path) -> CampaignData:
    """Read the campaign folder ``root``.

    Raises:
        InputError: ``root`` is not a campaign folder, or one of its files is damaged (one sentence naming the
            file and the field).
    """
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is a file"
        raise InputError(f"{root} {what}; give a campaign folder (one holding {CONFIG})")
    if not (root / CONFIG).is_file():
        raise InputError(f"{root} is not a campaign folder (it holds no {CONFIG})")
    config = CampaignConfig.from_toml(read_toml(root / CONFIG), str(root / CONFIG))
    trials, warnings = _read_trials(root / JOURNAL)
    base = root / ANOMALIES
    folders = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if base.is_dir() else []
    names = _corpus_names(config.corpus, warnings) if any(t.phase is Phase.REPLAY for t in trials) else {}
    rerun = read_rerun(root)
    return CampaignData(root.resolve(), config, trials, tuple(read_case_folder(p) for p in folders),
                        tuple(warnings), names, rerun.import_folder if rerun is not None else "")


def _corpus_names(corpus: str, warnings: list[str]) -> dict[str, str]:
    """Workload key -> case name of the corpus the campaign replayed (its folder may have moved since)."""
    from collie.storage.corpus import load_corpus

    try:
        return {case.workload.key(): case.name for case in load_corpus(Path(corpus))} if corpus else {}
    except CollieError as exc:
        warnings.append(f"the campaign's corpus {corpus} cannot be read now ({exc}); its known cases are named by "
                        "their workload key")
        return {}


def _read_trials(path: Path) -> tuple[tuple[TrialRecord, ...], list[str]]:
    if not path.exists():
        return (), []
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    last: dict[int, TrialRecord] = {}
    warnings: list[str] = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        where = f"{path}: line {i + 1}"
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            if i == len(lines) - 1:  # no newline after it: being written, or torn by a crash
                warnings.append(f"{where} is incomplete (being written, or cut by a crash); the report leaves it "
                                "out")
                break
            raise InputError(f"{where}: not a valid JSON record; the journal is damaged") from None
        record = TrialRecord.from_json(row, where)
        last[record.trial] = record
    return tuple(last[n] for n in sorted(last)), warnings
