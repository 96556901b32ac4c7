"""The README (read in five minutes) and the documentation (MkDocs, built offline with warnings as errors)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: mkdocs-material prints a notice about its successor on every build; it is not a warning of ours.
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def build_docs(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=QUIET, capture_output=True, text=True)


def test_docs_build_with_warnings_as_errors(tmp_path):
    built = build_docs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if not (tmp_path / "site" / ("" if p == "index" else p) / "index.html").exists()] == []


def test_a_broken_link_fails_the_docs_build(tmp_path):
    """Control: the strict build fails on a link to a page that does not exist."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "extra.md").write_text("# Extra\n\nSee [the missing page](missing.md).\n")
    built = build_docs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr


def test_readme_is_read_in_five_minutes_with_the_two_commands_on_its_first_screen():
    text = README.read_text()
    assert len(text.encode()) <= 10_000
    first_screen = "\n".join(text.splitlines()[:25])
    assert "make test" in first_screen and "make report" in first_screen
    assert re.search(r"make report .*(hours|minutes|an hour)", first_screen)  # with its time, as measured


def test_readme_links_point_to_files_of_the_repository():
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def test_no_page_cites_files_that_are_not_in_the_repository():
    texts = [README.read_text(), *(p.read_text() for p in (ROOT / "docs").glob("*.md"))]
    assert [t[:40] for t in texts if re.search(r"\b(SPEC|STYLE)(\.md| section)", t)] == []
