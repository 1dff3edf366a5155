"""The user docs point only inside the repository: every relative link resolves, and nothing names a file beside
the checkout (``../shared/...``), which a user of the repository or the wheel does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "workloads" / "corpus" / "README.md",
               *(ROOT / "docs").glob("*.md"), *(ROOT / "dev").glob("*.md")])
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target):
            continue
        path = (doc.parent / target).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: link to {target}"
    relative = re.findall(r"(?<![.\w])\.\./[\w./-]+", text)
    outside = [p for p in relative if not (doc.parent / p).resolve().is_relative_to(ROOT)]
    assert not outside, f"{doc.name} names files outside the repository: {outside}"
