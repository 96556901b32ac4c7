"""Every code block of the documentation is run, or says why not.

A ```` ```python ```` block of a page under docs/ is run, the blocks of one page in order in one namespace (a
tutorial builds on its earlier blocks), in a fresh Python process whose working folder is an empty temporary one;
a block that raises fails the test, naming the page and the block's line. Any other block (shell commands that
take minutes to hours, output, configuration) must be preceded by the comment ``<!-- no-run: REASON -->`` saying
why it is not run; a block with neither fails. The controls below check that a broken block fails and that an
unmarked shell block is found.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\S*)\s*$")
NO_RUN = re.compile(r"^<!-- no-run: (\S.*\S) -->$")
#: A page's blocks may load a tiny model or compile a search; far more than any takes (seconds), so that a hang
#: fails instead of stalling the suite.
PAGE_SECONDS = 300


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, the line of its opening fence, its language and code, and the reason it is
    not run (None: it is run)."""

    page: str
    line: int
    language: str
    code: str
    no_run: str | None

    @property
    def runs(self) -> bool:
        return self.language == "python" and self.no_run is None


def blocks(text: str, page: str) -> list[Block]:
    """The fenced code blocks of a page's Markdown ``text`` (top-level fences, as the pages write them)."""
    found, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next((k for k in range(index + 1, len(lines)) if lines[k].rstrip() == "```"), None)
        if end is None:
            raise ValueError(f"{page}:{index + 1}: a code block is not closed.")
        before = next((lines[k].strip() for k in range(index - 1, -1, -1) if lines[k].strip()), "")
        marker = NO_RUN.match(before)
        found.append(Block(page, index + 1, opening.group(1), "\n".join(lines[index + 1:end]) + "\n",
                           marker.group(1) if marker else None))
        index = end + 1
    return found


def page_blocks() -> dict[str, list[Block]]:
    return {path.relative_to(ROOT).as_posix(): blocks(path.read_text(), path.relative_to(ROOT).as_posix())
            for path in sorted(DOCS.rglob("*.md"))}


def run_page(page_file: str) -> None:
    """Run the runnable blocks of one page in order, in the namespace of the module ``__main__`` (as a script
    runs: a function the page defines is ``__main__:name``); each compiled under the name ``PAGE:LINE`` so that a
    traceback names the block. Called in the test's child process."""
    page = Path(page_file)
    namespace = vars(sys.modules["__main__"])
    for block in blocks(page.read_text(), page.as_posix()):
        if block.runs:
            exec(compile(block.code, f"{block.page}:{block.line}", "exec"), namespace)


def run_in_child(page: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``run_page`` in a fresh Python process working in ``cwd``, importing this checkout's packages."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    code = "import sys; from tests.reports.test_doc_examples import run_page; run_page(sys.argv[1])"
    return subprocess.run([sys.executable, "-c", code, str(page)], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=PAGE_SECONDS)


RUNNABLE = [page for page, found in page_blocks().items() if any(block.runs for block in found)]


def test_every_code_block_is_run_or_says_why_not():
    unmarked = [f"{b.page}:{b.line} ```{b.language}" for found in page_blocks().values() for b in found
                if b.language != "python" and b.no_run is None]
    assert unmarked == []


def test_at_least_five_tutorials_run_their_code():
    assert len([page for page in RUNNABLE if page.startswith("docs/tutorials/")]) >= 5


@pytest.mark.parametrize("page", RUNNABLE)
def test_the_examples_of_a_page_run(page, tmp_path):
    ran = run_in_child(ROOT / page, tmp_path)
    assert ran.returncode == 0, ran.stderr[-4000:]


def test_control_a_broken_example_fails_naming_its_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```python\nx = 1\n```\n\nText.\n\n```python\nassert x == 2, 'x is not 2'\n```\n")
    ran = run_in_child(page, tmp_path)
    assert ran.returncode != 0 and "x is not 2" in ran.stderr and f"{page}:9" in ran.stderr


def test_control_an_unmarked_shell_block_is_found_and_a_marked_one_is_not_run():
    text = "```sh\nmake report\n```\n\n<!-- no-run: hours of CPU -->\n```sh\nmake report\n```\n\n```python\n1\n```\n"
    found = blocks(text, "page.md")
    assert [(b.line, b.language, b.no_run, b.runs) for b in found] == [
        (1, "sh", None, False), (6, "sh", "hours of CPU", False), (10, "python", None, True)]
    with pytest.raises(ValueError, match="page.md:1: a code block is not closed"):
        blocks("```python\nx = 1\n", "page.md")
