"""The project's front door stays true: every relative link in README.md, docs/*.md and
bench/README.md resolves (the file, and for ``#anchor`` a heading with that GitHub slug), the
texts carry no work-item numbers, and docs/benchmarks.md is what bench/report.py renders from
bench/results/. No Spark."""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> List[Tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, re.sub(r"`+[^`]*`+", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", line)))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup removed, lower case, every character but
    letters, digits, spaces, '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    out = []
    for ch in text.strip().lower():
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat == "Mn":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def anchors(path: Path) -> Set[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 suffixes for repeats."""
    seen: Dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            s = slug(m.group(2))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def relative_links(path: Path) -> List[Tuple[int, str]]:
    found = []
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            found.append((n, target))
    return found


def broken_links(path: Path) -> List[str]:
    bad = []
    for n, target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}:{n}: {target}"
        if not dest.exists():
            bad.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where} (no heading with anchor #{anchor} in {dest.relative_to(ROOT)})")
    return bad


def test_the_slug_is_githubs() -> None:
    assert slug("Stream–table join") == "streamtable-join"
    assert slug("`until_time_limit`: per-key rate limit") == "until_time_limit-per-key-rate-limit"
    assert (
        slug("Which features need kstate's state store provider") == "which-features-need-kstates-state-store-provider"
    )
    assert slug("7. Settings and metrics") == "7-settings-and-metrics"
    assert slug("Deduplication (`bench/run.py`)") == "deduplication-benchrunpy"


def test_anchors_skip_code_and_number_repeats(tmp_path: Path) -> None:
    md = tmp_path / "a.md"
    md.write_text("# Title\n\n```python\n# not a heading\n```\n\n## Errors\n\n### Errors\n", encoding="utf-8")
    assert anchors(md) == {"title", "errors", "errors-1"}


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Real heading\n", encoding="utf-8")
    md = tmp_path / "a.md"
    md.write_text(
        "[ok](b.md#real-heading) [gone](c.md) [anchor](b.md#nope) [web](https://x.y/z)\n"
        "`[in code](d.md)`\n\n```\n[fenced](e.md)\n```\n[self](#here)\n",
        encoding="utf-8",
    )
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        bad = broken_links(md)
    finally:
        ROOT = old
    assert [b.split(": ", 1)[1] for b in bad] == [
        "c.md (no such file)",
        "b.md#nope (no heading with anchor #nope in b.md)",
        "#here (no heading with anchor #here in a.md)",
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


WORK_ITEM = re.compile(r"\bissues?\s*#?\s*\d+|§\s*\d+|\bissue\d+|\bthe issue'?s?\b", re.I)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_work_item_numbers(path: Path) -> None:
    hits = [
        f"{n}: {line.strip()[:120]}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if WORK_ITEM.search(line)
    ]
    assert hits == []


# a placeholder left in a page for a figure still to come (an all-capitals word ending in
# _FIGURES, TODO, TBD, FIXME, XXX)
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*_FIGURES\b|\bTODO\b|\bTBD\b|\bFIXME\b|\bXXX\b")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_placeholders(path: Path) -> None:
    hits = [
        f"{n}: {m.group(0)}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in PLACEHOLDER.finditer(line)
    ]
    assert hits == []


def test_a_placeholder_is_found() -> None:
    assert [m.group(0) for m in PLACEHOLDER.finditer("took 6 s (HEAP_REBUILD_FIGURES); TODO: measure")] == [
        "HEAP_REBUILD_FIGURES",
        "TODO",
    ]


def _report():
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmarks_page_is_what_report_py_renders() -> None:
    """docs/benchmarks.md is generated: edited by hand or stale against bench/results/, this fails."""
    report = _report()
    assert (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") == report.render()
    assert report.slug("Stream–table join (`bench/enrichment.py`)") == "streamtable-join-benchenrichmentpy"


def test_report_renders_every_result_file(tmp_path: Path) -> None:
    """A result file the report has no section for is still shown; quick runs are left out."""
    report = _report()
    (tmp_path / "windows.json").write_text((ROOT / "bench" / "results" / "windows.json").read_text())
    (tmp_path / "windows-quick.json").write_text("{}")
    (tmp_path / "newbench.json").write_text('{"benchmark": "new", "rows_per_s": 5}')
    page = report.render(str(tmp_path))
    assert "## Windowed count with final results" in page
    assert "`newbench.json` (no section in bench/report.py yet)" in page and "`rows_per_s`: 5" in page
    assert "`windows-quick.json`" in page.split("## Not rendered")[1]
    assert "1.56x" in page and "**met**" in page


def test_no_figures_outside_the_benchmarks_page() -> None:
    """Throughput figures live in docs/benchmarks.md only."""
    fig = re.compile(r"\d[\d,.]*k? (rows|events)/s|\d+(\.\d+)?k rows")
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for p in FILES
        if p.name != "benchmarks.md"
        for n, line in prose_lines(p.read_text(encoding="utf-8"))
        if fig.search(line)
    ]
    assert hits == []


def test_the_error_table_is_generated_from_the_conditions_file() -> None:
    import error_docs

    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert error_docs.generated_section() in page, "docs/errors.md's error table is stale: run make docs-errors"
    with open(error_docs.CONDITIONS, encoding="utf-8") as f:
        conditions = json.load(f)
    for name, info in conditions.items():  # every condition and sub-condition has its row
        assert f"| `{name}` | {info['sqlState']} |" in page
        for sub in info.get("subClass") or {}:
            assert f"| `{name}.{sub}` |" in page
