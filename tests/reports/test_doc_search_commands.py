"""Every search command the README and the docs give (``consensus search ...``, ``python -m sim search ...``) is one
the command line accepts: it parses with the real parser and passes the checks the command makes before it searches
(``sim.__main__.check_search_arguments``). A stale command (an option the command now refuses, a missing
``--method random``) fails here, naming its page, instead of exiting 2 for the reader. Nothing is searched.

The commands are the lines of fenced blocks that start with the command (a line ending in ``\\`` goes on) and the
inline code spans that start with it and a claim (``consensus search --method random`` names a method, not a
command); a span that names no ``--out`` (a mention, as in a table of measurements) is checked with one.
Placeholders (``CLAIM``, ``N``, ``DIR``, ...) stand for a value each, and ``[A | B]`` for ``A``. The controls: the README's former Dask command is refused, and the extraction finds
commands of both kinds.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from foundation.helpformat import command_parser, parse
from sim.__main__ import _parser, check_search_arguments
from tests.reports.test_doc_examples import blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The command and what follows it: ``consensus search``, ``.venv/bin/python -m sim search``, ``sim search``.
COMMAND = re.compile(r"^(?:\S*/)?(?:consensus|(?:\S*python\S*\s+-m\s+)?sim)\s+search(?![-\w])(.*)$", re.S)
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")
#: ``[A | B]`` and ``[A]`` of a usage line: the first alternative.
OPTIONAL = re.compile(r"\[([^\[\]|]*?)\s*(?:\|[^\[\]]*)?\]")
#: What each placeholder of the docs stands for.
PLACEHOLDERS = {"CLAIM": "conj.value-full", "N": "64", "K": "2", "S": "60", "DIR": "out",
                "ADDRESS": "tcp://scheduler-host:8786"}


def commands(text: str, page: str) -> list[tuple[str, str]]:
    """The search commands of a page's Markdown ``text``: (where, the command as written)."""
    found = []
    for block in blocks(text, page):
        for line in block.code.replace("\\\n", " ").splitlines():
            if COMMAND.match(line.strip()):
                found.append((f"{page}:{block.line}", line.strip()))
    for span in INLINE.findall(FENCED.sub("", text)):
        span = " ".join(span.split())
        match = COMMAND.match(span)
        if match and match.group(1).strip() and not match.group(1).strip().startswith("-"):  # it names a claim
            found.append((page, span))
    return found


def arguments(command: str) -> list[str]:
    """``sim``'s arguments for a documented command: ``search`` and its words, placeholders replaced."""
    words = [PLACEHOLDERS.get(word, word)
             for word in shlex.split(OPTIONAL.sub(r"\1", COMMAND.match(command).group(1)), comments=True)]
    return ["search", *words, *([] if "--out" in words else ["--out", "out"])]


def check(command: str) -> None:
    """Parse ``command`` as ``sim`` does and make the checks it makes before searching (``SystemExit`` if refused)."""
    parser = _parser()
    args = parse(parser, arguments(command))
    check_search_arguments(command_parser(parser, "search"), args)


DOCUMENTED = [found for page in PAGES for found in commands(page.read_text(), page.relative_to(ROOT).as_posix())]


def test_the_readme_and_the_docs_give_search_commands():
    assert len(DOCUMENTED) >= 20
    assert any(where.startswith("README.md:") and "--scheduler" in command for where, command in DOCUMENTED)


@pytest.mark.parametrize("where, command", DOCUMENTED,
                         ids=[f"{where}:{command.split(' search ')[1][:40]}" for where, command in DOCUMENTED])
def test_a_documented_search_command_is_accepted(where, command, capsys):
    try:
        check(command)
    except SystemExit:
        pytest.fail(f"{where}: `{command}` is refused: {capsys.readouterr().err.strip().splitlines()[-1]}")


def test_control_the_former_dask_command_of_the_readme_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        check(".venv/bin/consensus search conj.nonsymmetric-full --instances 100000 --out /shared/ns "
              "--scheduler tcp://HOST:8786")
    assert exit_.value.code == 2 and "--scheduler belongs to the random search on Dask: add --method random" in \
        capsys.readouterr().err


def test_control_commands_are_found_in_blocks_and_spans_with_their_placeholders():
    text = ("Run `consensus search CLAIM\n--method random --instances N`, not `consensus search --method random`.\n\n"
            "<!-- no-run: minutes -->\n```sh\n.venv/bin/python -m sim search conj.value-full \\\n"
            "    --budget 5 --out x   # a comment\n.venv/bin/python -m sim search-bench\n```\n")
    found = commands(text, "page.md")
    assert found == [
        ("page.md:5", ".venv/bin/python -m sim search conj.value-full      --budget 5 --out x   # a comment"),
        ("page.md", "consensus search CLAIM --method random --instances N")]
    assert arguments(found[0][1]) == ["search", "conj.value-full", "--budget", "5", "--out", "x"]
    assert arguments(found[1][1]) == ["search", "conj.value-full", "--method", "random", "--instances", "64", "--out",
                                      "out"]
    assert arguments("sim search CLAIM --out DIR [--workers K | --scheduler ADDRESS]")[-2:] == ["--workers", "2"]
