"""The everyday names of ``theory``, ``sim`` and ``empirical``, imported on first use (PEP 562, by lazy_loader):
importing a package imports nothing heavy, ``dir`` lists every name of ``__all__`` before its first use, and each
name resolves (a name its table gives the wrong module would fail only on first use, so every one is tried).
Negative controls: a planted package whose table names a module without the name, and one that imports its heavy
module eagerly."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Each package and the heavy library its command's --help must not import.
HEAVY = {"theory": "sympy", "sim": "numba", "empirical": "torch"}

#: Prints, as JSON, what importing ``package`` (in a fresh interpreter) imported of ``heavy``, and the names of its
#: ``__all__`` that ``dir`` leaves out, before any name is used.
ON_IMPORT = """
import sys
import {package}
print([{heavy!r} in sys.modules, sorted(set({package}.__all__) - set(dir({package})))])
"""


def on_import(package: str, heavy: str, path: Path = ROOT) -> tuple[bool, list[str]]:
    """(Whether importing ``package`` from ``path`` imports ``heavy``, the names ``dir`` misses)."""
    code = ON_IMPORT.format(package=package, heavy=heavy)
    done = subprocess.run([sys.executable, "-c", code], cwd=path, capture_output=True, text=True, check=True)
    imported, missing = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return imported, missing


def unresolved(package) -> list[str]:
    """The names of ``package.__all__`` that do not resolve on first use."""
    return [name for name in package.__all__ if not hasattr(package, name)]


@pytest.mark.parametrize("package", HEAVY)
def test_importing_a_package_imports_nothing_heavy_and_dir_lists_every_name(package):
    assert on_import(package, HEAVY[package]) == (False, [])


@pytest.mark.parametrize("package", HEAVY)
def test_every_name_of_a_package_resolves_and_an_unknown_one_does_not(package):
    module = __import__(package)
    assert unresolved(module) == []
    assert not hasattr(module, "no_such_name")


def _planted(root: Path, init: str) -> Path:
    (root / "planted").mkdir(parents=True)
    (root / "planted" / "__init__.py").write_text(init)
    (root / "planted" / "parts.py").write_text("import fractions\n\n\ndef present():\n    return fractions\n")
    return root


#: A planted package's ``__init__``, naming the names of its module ``parts`` (``%r``: a list) lazily.
LAZY = ("import lazy_loader\n\n"
        "__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={'parts': %r})\n")
#: A planted package's ``__init__`` importing ``parts`` at once, and hiding its name from ``dir``.
EAGER = "from .parts import present\n\n__all__ = ['present']\n\n\ndef __dir__():\n    return []\n"


def test_negative_control_a_name_its_module_lacks_is_unresolved(tmp_path, monkeypatch):
    _planted(tmp_path, LAZY % ["present", "absent"])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "planted", raising=False)
    import planted

    assert unresolved(planted) == ["absent"]


def test_negative_control_an_eager_import_and_a_hidden_name_are_seen(tmp_path):
    """The planted package imported lazily passes; imported eagerly, with a ``dir`` that hides its name, fails."""
    _planted(tmp_path / "lazy", LAZY % ["present"])
    assert on_import("planted", "fractions", tmp_path / "lazy") == (False, [])
    _planted(tmp_path / "eager", EAGER)
    assert on_import("planted", "fractions", tmp_path / "eager") == (True, ["present"])
