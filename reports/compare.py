"""Do two reports say the same? ``python -m reports compare OLD/verdicts.json NEW/verdicts.json [--expected FILE]``.

Two reports agree when they hold the same claims, each with the same verdict, and the same records with equal
numbers. The records of a claim are paired by kind (their method, verdict, the names of their numbers and their
seeds), in the order of the run among records of one kind, not in the order the tests ran; a record without a
partner is a difference. A number with a stated tolerance (the record's ``tolerance``) may differ by at most that
tolerance; one without may differ by ``RELATIVE`` of its size only. What a report says about its own run (manifest,
durations, test node ids, the records' prose) is not compared.

A change meant to alter the records (a test that no longer marks a claim, say) lists what it alters in an
expectations file (TOML, one ``[[expected]]`` table per difference, with the difference's ``line`` as printed here
and the ``reason``): those differences are reported as expected, and the two reports agree when every other
difference is absent and every expected one is found.
"""

from __future__ import annotations

import json
import math
import sys
import tomllib
from pathlib import Path
from typing import Any

#: Relative difference allowed between two numbers without a stated tolerance: float64 round-off accumulated over a
#: check (sums over up to ~1e4 terms, BLAS reductions in another order) stays far below it; a changed result does not.
RELATIVE = 1e-9


def load(path: Path | str) -> dict:
    """A ``verdicts.json``; ``ValueError`` naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read as a verdicts.json: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ValueError(f"{path} is not a verdicts.json (it must be an object with a list of 'claims').")
    return data


def differences(old: dict, new: dict) -> list[str]:
    """Every way in which ``new`` says something else than ``old``, one sentence each (empty: they agree)."""
    before = {c["claim"]: c for c in old["claims"]}
    after = {c["claim"]: c for c in new["claims"]}
    found = [f"claim {c} is only in the old report" for c in before if c not in after]
    found += [f"claim {c} is only in the new report" for c in after if c not in before]
    for claim in (c for c in before if c in after):
        if before[claim]["verdict"] != after[claim]["verdict"]:
            found.append(f"{claim}: verdict {before[claim]['verdict']} -> {after[claim]['verdict']}")
        found += [f"{claim}: {d}" for d in _record_differences(before[claim]["records"], after[claim]["records"])]
    return found


def _by_kind(records: list[dict]) -> dict[tuple[str, str, tuple[str, ...], str], list[dict]]:
    """A claim's records grouped by method, verdict, the names of their numbers and their seeds (run order kept)."""
    grouped: dict[tuple[str, str, tuple[str, ...], str], list[dict]] = {}
    for record in records:
        kind = (record["method"], record["verdict"], tuple(sorted(record.get("numbers", {}))),
                json.dumps(record.get("seeds", {}), sort_keys=True))
        grouped.setdefault(kind, []).append(record)
    return grouped


def _record_differences(old: list[dict], new: list[dict]) -> list[str]:
    found = []
    before, after = _by_kind(old), _by_kind(new)
    for kind in sorted(set(before) | set(after)):
        method, verdict, names, seeds = kind
        a, b = before.get(kind, []), after.get(kind, [])
        if len(a) != len(b):
            found.append(f"{method} {verdict} records with numbers {list(names)} and seeds {seeds}: "
                         f"{len(a)} -> {len(b)}")
        seeded = f" with seeds {seeds}" if seeds != "{}" else ""
        for index, (ra, rb) in enumerate(zip(a, b)):
            tolerance = _tolerance(ra, rb)
            found += [f"{method} {verdict} record {index + 1}{seeded}: {d}"
                      for d in _value_differences(ra.get("numbers", {}), rb.get("numbers", {}), tolerance)]
    return found


def _tolerance(a: dict, b: dict) -> float | None:
    stated = [r.get("tolerance") for r in (a, b) if isinstance(r.get("tolerance"), (int, float))]
    return max(stated) if stated else None


def _value_differences(a: Any, b: Any, tolerance: float | None, where: str = "numbers") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where} keys {sorted(set(a) ^ set(b))} differ"]
        return [d for k in a for d in _value_differences(a[k], b[k], tolerance, f"{where}[{k!r}]")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where} has {len(a)} -> {len(b)} entries"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _value_differences(x, y, tolerance, f"{where}[{i}]")]
    if _is_number(a) and _is_number(b):
        if _close(float(a), float(b), tolerance):
            return []
        allowed = f"tolerance {tolerance:g}" if tolerance is not None else f"relative {RELATIVE:g}"
        return [f"{where} {a!r} -> {b!r} (beyond the {allowed})"]
    return [] if a == b else [f"{where} {a!r} -> {b!r}"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _close(a: float, b: float, tolerance: float | None) -> bool:
    if a == b:
        return True
    if tolerance is not None:
        return abs(a - b) <= tolerance
    return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=0.0)


def load_expected(path: Path | str) -> dict[str, str]:
    """An expectations file: each expected difference's line and its reason; ``ValueError`` naming what is wrong."""
    try:
        tables = tomllib.loads(Path(path).read_text()).get("expected", [])
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read as an expectations file: {error}") from error
    if not isinstance(tables, list) or not all(isinstance(t, dict) and isinstance(t.get("line"), str)
                                                and t.get("reason") for t in tables):
        raise ValueError(f"{path}: every [[expected]] table needs a 'line' (the difference as printed) and a "
                         f"'reason'.")
    return {t["line"]: t["reason"] for t in tables}


def main(old_path: Path | str, new_path: Path | str, expected_path: Path | str | None = None,
         as_json: bool = False) -> int:
    """Print what differs between two reports; 0 when they agree (every difference expected and every expected one
    found), 1 when they do not, 2 for an unreadable file. ``as_json``: one object, ``{"same", "claims",
    "differences": [{"line", "expected"}], "missing"}`` (``expected``: the reason of an expected difference, else
    null; ``missing``: expected differences not found)."""
    try:
        old, new = load(old_path), load(new_path)
        expected = load_expected(expected_path) if expected_path is not None else {}
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    found = differences(old, new)
    unexpected = [line for line in found if line not in expected]
    missing = [line for line in expected if line not in found]
    claims = len({c["claim"] for c in old["claims"]} | {c["claim"] for c in new["claims"]})
    agree = not unexpected and not missing
    if as_json:
        print(json.dumps({"same": agree, "claims": claims,
                          "differences": [{"line": line, "expected": expected.get(line)} for line in found],
                          "missing": missing}, indent=1))
        return 0 if agree else 1
    for line in found:
        print(f"expected: {line} ({expected[line]})" if line in expected else line)
    for line in missing:
        print(f"expected but not found: {line}")
    print(f"{'the same' if agree else 'NOT the same'}: {claims} claims, {len(found)} difference(s)"
          + (f", {len(found) - len(unexpected)} of them expected" if expected else "")
          + (f", {len(missing)} expected difference(s) not found" if missing else ""))
    return 0 if agree else 1
