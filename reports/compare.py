"""Do two reports say the same? ``python -m reports compare OLD/verdicts.json NEW/verdicts.json``.

Two reports agree when they hold the same claims, each with the same verdict, and the same records: per claim and
method, the same verdicts in the same order, and equal numbers. A number with a stated tolerance (the record's
``tolerance``) may differ by at most that tolerance; one without may differ by ``RELATIVE`` of its size only.
What a report says about its own run (manifest, durations, test node ids, the records' prose) is not compared.
"""

from __future__ import annotations

import json
import math
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


def _by_method(records: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for record in records:
        grouped.setdefault(record["method"], []).append(record)
    return grouped


def _record_differences(old: list[dict], new: list[dict]) -> list[str]:
    found = []
    before, after = _by_method(old), _by_method(new)
    for method in sorted(set(before) | set(after)):
        a, b = before.get(method, []), after.get(method, [])
        verdicts_a, verdicts_b = [r["verdict"] for r in a], [r["verdict"] for r in b]
        if verdicts_a != verdicts_b:
            found.append(f"{method} records' verdicts {verdicts_a} -> {verdicts_b}")
            continue
        for index, (ra, rb) in enumerate(zip(a, b)):
            tolerance = _tolerance(ra, rb)
            found += [f"{method} record {index + 1}: {d}" for d in _value_differences(ra.get("numbers", {}),
                                                                                     rb.get("numbers", {}), tolerance)]
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


def main(old_path: Path | str, new_path: Path | str) -> int:
    """Print what differs between two reports; 0 when they agree, 1 when they do not, 2 for an unreadable file."""
    try:
        old, new = load(old_path), load(new_path)
    except ValueError as error:
        print(f"error: {error}")
        return 2
    found = differences(old, new)
    for line in found:
        print(line)
    claims = len({c["claim"] for c in old["claims"]} | {c["claim"] for c in new["claims"]})
    print(f"{'the same' if not found else 'NOT the same'}: {claims} claims, {len(found)} difference(s)")
    return 0 if not found else 1
