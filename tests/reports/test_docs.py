"""The README (read in five minutes) and the documentation (MkDocs, built offline with warnings as errors)."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: mkdocs-material prints a notice about its successor on every build; it is not a warning of ours. The hook
#: (devtools/docs_hooks.py) and the API pages import this checkout's packages, wherever the config lies.
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}


def build_docs(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, env=QUIET, capture_output=True, text=True)


def pages() -> list[str]:
    """Every page of the documentation, as its path under docs/ without ``.md``."""
    return sorted(p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md"))


def copied_docs(tmp_path: Path) -> Path:
    """A copy of docs/ under ``tmp_path`` and a config building it with this checkout's hook and packages."""
    shutil.copytree(DOCS, tmp_path / "docs")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["docs_dir"] = str(tmp_path / "docs")
    config["hooks"] = [str(ROOT / hook) for hook in config["hooks"]]
    for plugin in config["plugins"]:
        if isinstance(plugin, dict) and "mkdocstrings" in plugin:
            plugin["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path / "mkdocs.yml"


def test_docs_build_with_warnings_as_errors(tmp_path):
    site = tmp_path / "site"
    built = build_docs(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stderr
    assert [p for p in pages() if not (site / ("" if p == "index" else p) / "index.html").exists()] == []
    # the formulas typeset offline: the MathJax bundle is in the site, and no page loads a script or style from
    # elsewhere (no CDN, no web fonts)
    assert (site / "javascripts" / "mathjax" / "tex-svg-full.js").stat().st_size > 1_000_000
    html = {p: p.read_text() for p in site.rglob("*.html")}
    assert [p for p, text in html.items() if re.search(r'<(script|link)[^>]*(src|href)="(https?:)?//', text)] == []
    assert 'class="arithmatex"' in (site / "theory" / "index.html").read_text()


def test_every_product_package_has_an_api_page_built_from_its_docstrings(tmp_path):
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = sorted(name.rstrip("*") for name in include["include"])
    assert packages == ["consensus", "empirical", "foundation", "reports", "sim", "theory"]
    for package in packages:
        assert f"\n::: {package}\n" in (DOCS / "api" / f"{package}.md").read_text()


def test_the_nav_lists_every_page_and_the_index_links_every_page():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def leaves(entries):
        for entry in entries:
            value = entry if isinstance(entry, str) else next(iter(entry.values()))
            yield from ([value] if isinstance(value, str) else leaves(value))

    assert sorted(page.removesuffix(".md") for page in leaves(nav)) == pages()
    index = (DOCS / "index.md").read_text()
    assert [p for p in pages() if p != "index" and f"]({p}.md)" not in index] == []


def test_a_broken_link_fails_the_docs_build(tmp_path):
    """Control: the strict build fails on a link to a page that does not exist."""
    config = copied_docs(tmp_path)
    (tmp_path / "docs" / "theory.md").write_text("# Theory\n\nSee [the missing page](missing.md).\n")
    built = build_docs(config, tmp_path / "site")
    assert built.returncode != 0 and "missing.md" in built.stderr


def test_a_page_left_out_of_the_nav_fails_the_docs_build(tmp_path):
    """Control: a page that the nav does not list is a warning, so an error of the strict build."""
    config = copied_docs(tmp_path)
    (tmp_path / "docs" / "extra.md").write_text("# Extra\n")
    built = build_docs(config, tmp_path / "site")
    assert built.returncode != 0 and "extra.md" in built.stderr


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
    texts = [README.read_text(), *(p.read_text() for p in DOCS.rglob("*.md"))]
    assert [t[:40] for t in texts if re.search(r"\b(SPEC|STYLE)(\.md| section)", t)] == []


def test_the_time_of_make_report_is_the_same_wherever_it_is_given():
    """The README's first screen states it; the docs' index and command table, and `consensus --help`, repeat it."""
    from consensus.cli import COMMANDS

    stated = re.search(r"make report +# [^:]*: (about \d+ minutes on \d+ cores)", README.read_text()).group(1)
    for text in ((DOCS / "index.md").read_text(), (DOCS / "cli.md").read_text(), COMMANDS["report"][2]):
        assert stated in " ".join(text.split()) and "an hour" not in text
