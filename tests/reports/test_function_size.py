"""No function of the package code longer than 60 lines or with more than 8 parameters (issue #29): options go into
records (a frozen dataclass, a NamedTuple of arrays), not long argument lists. Read from the source with ast, with a
negative control."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("theory", "sim", "empirical", "reports", "consensus")
#: From the ``def`` line to the function's last line, docstring included.
MAX_LINES = 60
#: Every parameter but a method's self or cls; ``*args`` and ``**kwargs`` count one each.
MAX_PARAMETERS = 8


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    arguments = function.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args]
    count = len(positional) + len(arguments.kwonlyargs) + (arguments.vararg is not None) + (
        arguments.kwarg is not None)
    return count - 1 if positional and positional[0] in ("self", "cls") else count


def oversized(source: str, name: str) -> list[str]:
    """``name:line function (lines, parameters)`` for every function (nested ones too) of ``source`` over a limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines, parameters = node.end_lineno - node.lineno + 1, parameter_count(node)
            if lines > MAX_LINES or parameters > MAX_PARAMETERS:
                found.append(f"{name}:{node.lineno} {node.name} ({lines} lines, {parameters} parameters)")
    return found


def test_package_functions_are_short_with_few_parameters():
    sources = sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))
    assert len(sources) > 50  # the packages were found
    found = [entry for path in sources for entry in oversized(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "\n".join(found)


def test_control_a_long_function_and_a_long_argument_list_are_reported():
    long_body = "\n".join(f"    x{i} = {i}" for i in range(60))
    planted = (f"def long_function():\n{long_body}\n\n\n"
               "def many_parameters(a, b, c, d, e, f, g, h, i):\n    return a\n\n\n"
               "def star_parameters(a, b, c, d, e, f, g, *args, **kwargs):\n    return a\n\n\n"
               "class Holder:\n    def method(self, a, b, c, d, e, f, g, h):\n        return a\n\n\n"
               "def at_the_limits(a, b, c, d, e, f, g, h):\n" + "\n".join(f"    y{i} = {i}" for i in range(59)) + "\n")
    assert oversized(planted, "planted") == [
        "planted:1 long_function (61 lines, 0 parameters)",
        "planted:64 many_parameters (2 lines, 9 parameters)",
        "planted:68 star_parameters (2 lines, 9 parameters)",
    ]  # the method's self is not counted; 60 lines and 8 parameters pass
