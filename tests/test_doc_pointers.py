"""The documentation's pointers lead somewhere: the files and sections the adapters', the
benchmarks' and the command line's docstrings name exist, and docs/architecture.md lists the
extras each pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SOURCES = sorted(
    path
    for folder in ("compat", "bench", "cli")
    for path in (ROOT / "src" / "topicmatch" / folder).glob("*.py")
)
#: A file of the repository named in a docstring: docs/..., benchmarks/..., tests/..., scripts/...
PATH = re.compile(r"\b((?:docs|benchmarks|tests|scripts)/[\w./-]*\w)")
#: A section named as: README, "Title" or docs/x.md, section "Title"
SECTION = re.compile(r'\b(README|docs/[\w./-]+\.md)(?:,| ,)? (?:section )?"([^"]+)"')


def _headings(path: Path) -> set[str]:
    return {
        line.lstrip("#").strip() for line in path.read_text(encoding="utf-8").splitlines() if line[:1] == "#"
    }


@pytest.mark.parametrize("source", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_file_and_section_a_docstring_names_exists(source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    for named in PATH.findall(text):
        assert (ROOT / named).exists(), f"{source.name} names {named}, which does not exist"
    for document, title in SECTION.findall(text):
        path = ROOT / ("README.md" if document == "README" else document)
        assert title in _headings(path), f"{source.name} names the section {title!r} of {document}: none"


def test_the_paho_adapter_says_where_its_speed_is_measured() -> None:
    from topicmatch.compat import paho  # noqa: PLC0415 - what is checked is its docstring

    doc = " ".join((paho.__doc__ or "").split())
    assert 'docs/performance.md, section "Other experiments"' in doc
    assert "benchmarks/paho_adapter.py" in doc
    assert "README" not in doc


@pytest.mark.parametrize(
    ("project", "row"),
    [("pyproject.toml", "| `topicmatch` ("), ("latency/pyproject.toml", "| `topicmatch-latency` (")],
)
def test_the_architecture_doc_lists_the_extras_of_each_distribution(project: str, row: str) -> None:
    extras = set(
        tomllib.loads((ROOT / project).read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    (line,) = [line for line in doc.splitlines() if line.startswith(row)]
    depends_on = line.rstrip(" |").rsplit("|", 1)[1]
    listed = depends_on.split("extra", 1)[1] if "extra" in depends_on else ""
    assert set(re.findall(r"`([\w-]+)`", listed)) == extras
