"""An audit on disk: ``audit.json`` written atomically, read back as numpy arrays, and reused when the same audit
(same model, settings and audit code) was written before; rate fits of ``python -m empirical run`` outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from foundation.files import atomic_write, sha256, write_json
from foundation.outputs import say_rebuilt
from foundation.records import jsonable

from ..run import load_results
from .measure import AuditSettings, audit_model, rate_summary
from .rates import E_FLOOR


def rates_from_results(directory: Path) -> dict[str, Any]:
    """Rate fit of a ``python -m empirical run`` output (its ``E``: prompts x blocks), read as every reader of a run's
    results reads them (:func:`empirical.run.load_results`): the manifest its run wrote and the results.json whose
    sha256 that manifest records, else a ``ValueError`` naming the file. The fit ignores E below the run's recorded
    floor (float32's evaluation floor for a manifest that records none)."""
    manifest, results = load_results(Path(directory))
    values = np.asarray(results["E"], dtype=np.float64)
    floor = (manifest.get("floor") or {}).get("E_floor", E_FLOOR)
    return {"source": str(directory), "manifest": manifest, "rate": rate_summary(values, floor)}


#: The per-variant arrays of :func:`audit_states` (restored as numpy arrays by :func:`read_audit`).
STATE_ARRAYS = ("E", "inside_residual", "margin_residual", "inside_normalised", "margin_normalised",
                "first_token_drift_block", "first_token_drift_pass", "surface_radial", "surface_hyperplane",
                "qk_scale_spread", "update_distance", "update_within_rounding")
BOOLEAN_ARRAYS = ("inside_residual", "inside_normalised", "update_within_rounding")
#: Modules whose source defines an audit's numbers (relative to the ``empirical`` package): a cached audit is
#: reused only if none changed.
AUDIT_SOURCES = ("audit/measure.py", "audit/weights.py", "audit/states.py", "audit/grading.py", "audit/checklist.py",
                 "audit/heads.py", "audit/hypotheses.py", "audit/geometry.py", "audit/rates.py", "adapters.py",
                 "models.py", "embedded.py", "floor.py", "loop.py")


def _restore(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def read_audit(path: Path) -> dict[str, Any]:
    """An ``audit.json`` back as :func:`audit_model` returned it (numpy arrays, non-finite floats)."""
    result = _restore(json.loads(Path(path).read_text()))
    for run in result["runs"].values():
        for variant in run["variants"].values():
            for key in STATE_ARRAYS:
                variant[key] = np.asarray(variant[key], dtype=bool if key in BOOLEAN_ARRAYS else np.float64)
            variant["rate"]["per_prompt"] = np.asarray(variant["rate"]["per_prompt"], dtype=np.float64)
    return result


def audit_fingerprint(model: str, weights: str, settings: AuditSettings, dtype: torch.dtype) -> str:
    """A hash of what defines an audit: model, weights, settings, dtype and the audit's source code."""
    import hashlib

    digest = hashlib.sha256(json.dumps([model, weights, settings.__dict__, str(dtype)]).encode())
    for name in AUDIT_SOURCES:
        digest.update((Path(__file__).parent.parent / name).read_bytes())
    return digest.hexdigest()[:16]


def cached_audit(model: str, weights: str, settings: AuditSettings, folder: Path, *,
                 dtype: torch.dtype = torch.float32, progress: Callable[[str], None] | None = None,
                 isolate: bool = False) -> dict[str, Any]:
    """:func:`audit_model`, reused from ``folder/<fingerprint>/audit.json`` when the same audit (same
    settings and audit code) was written there before. ``isolate``: audit in a child process of its own
    (:func:`empirical.isolation.in_child`, which takes no ``progress``), so that the models it loads do not outlive
    it here."""
    target = Path(folder) / f"{model.replace('/', '_')}-{weights}-{audit_fingerprint(model, weights, settings, dtype)}"
    if (target / "audit.json").is_file():
        if _unchanged(target):
            return read_audit(target / "audit.json")
        say_rebuilt(target / "audit.json", f"its sha256 is not the one {DIGEST} beside it records (edited, or written "
                                           "before audits recorded one); audited again")
    if isolate:
        from ..isolation import in_child

        in_child(f"audit {model} ({weights})", _audit_into, model, weights, settings, dtype, target)
    else:
        write_audit(audit_model(model, weights, settings, dtype=dtype, progress=progress), target)
    return read_audit(target / "audit.json")


def _audit_into(model: str, weights: str, settings: AuditSettings, dtype: torch.dtype, target: Path) -> None:
    """:func:`audit_model` written to ``target`` (what a child process of :func:`cached_audit` does)."""
    write_audit(audit_model(model, weights, settings, dtype=dtype), target)


#: Beside a cached ``audit.json``: its sha256, written after it (a crash between the two leaves an audit that is
#: done again, never one reused unchecked).
DIGEST = "audit.sha256"


def write_audit(result: dict[str, Any], out: Path) -> Path:
    """Write ``out/audit.json`` atomically, then its sha256 to ``out/audit.sha256``; return the audit's path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.json"
    digest = write_json(path, jsonable(result))
    atomic_write(out / DIGEST, lambda stream: stream.write(digest))
    return path


def _unchanged(target: Path) -> bool:
    """Whether ``target/audit.json`` is the file whose sha256 ``target/audit.sha256`` records."""
    try:
        return (target / DIGEST).read_text().strip() == sha256(target / "audit.json")
    except OSError:
        return False
