"""Where trained weights come from: a folder the user names, or the local Hugging Face cache (offline).

The paper's two models (GPT-2 XL, GPT-Neo 2.7B) are looked up, in this order, in

1. a folder named on the command line (``python -m empirical suite --weights-dir gpt2-xl=DIR``, or
   ``python -m reports build --weights-dir ...``, which hands it to its tests in the environment:
   :func:`report_weights_dirs`), or in the environment variable of the model
   (:data:`WEIGHTS_DIR_ENV`, e.g. ``CONSENSUS_WEIGHTS_GPT2_XL=DIR``): a folder written by
   ``save_pretrained`` (``config.json`` and the weights), or a snapshot folder of the hub's cache;
2. the local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``), under each of the model's hub ids, without the network.

A named folder without weights is an error (never a silent fall-back to the cache). Any other model
id or folder is looked up the same way (a folder given as ``--model``; the cache under the id).
:class:`WeightsSource` says where the weights were found; the run's manifest records it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .models import PAPER_MODEL_ALIASES

GPT2_XL = "gpt2-xl"
GPT_NEO = "EleutherAI/gpt-neo-2.7B"
PAPER_MODELS = (GPT2_XL, GPT_NEO)

#: Short names of the paper models in the suite's variant keys (``gpt2-xl-trained-ffn``).
SHORT_NAMES = {GPT2_XL: "gpt2-xl", GPT_NEO: "gpt-neo-2.7b"}
#: The environment variable naming a folder with each paper model's trained weights.
WEIGHTS_DIR_ENV = {GPT2_XL: "CONSENSUS_WEIGHTS_GPT2_XL", GPT_NEO: "CONSENSUS_WEIGHTS_GPT_NEO_2_7B"}
#: The environment variable in which ``python -m reports build --weights-dir`` names folders to its tests: a JSON
#: object, model name -> absolute folder (:func:`weights_dirs_environment`, read by :func:`report_weights_dirs`).
WEIGHTS_DIRS_ENV = "CONSENSUS_WEIGHTS_DIRS"
#: Hub ids under which the cache may hold each paper model (gpt2-xl moved to openai-community/).
HUB_IDS = {GPT2_XL: ("gpt2-xl", "openai-community/gpt2-xl"), GPT_NEO: ("EleutherAI/gpt-neo-2.7B",)}
#: Files that hold a checkpoint's weights (one of them must be present, next to ``config.json``).
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


class WeightsFolderError(ValueError):
    """A folder named for trained weights holds none (the message says what it must contain)."""


@dataclass(frozen=True)
class WeightsSource:
    """Trained weights found on this machine.

    ``path`` is the folder to load (``config.json`` and the weights); ``origin`` is ``"folder"`` (named
    by ``named_by``: an option, an environment variable or ``--model``) or ``"hf-cache"`` (``repo_id``
    at commit ``revision`` in the cache folder ``named_by``).
    """

    model: str
    path: Path
    origin: str
    named_by: str
    files: tuple[str, ...]
    repo_id: str | None = None
    revision: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "path": str(self.path), "origin": self.origin, "named_by": self.named_by,
                "files": list(self.files), "repo_id": self.repo_id, "revision": self.revision}


def canonical(model: str) -> str:
    """The paper models' canonical ids (``openai-community/gpt2-xl`` -> ``gpt2-xl``); others unchanged."""
    return PAPER_MODEL_ALIASES.get(model, model)


def hub_cache_dir() -> Path:
    """The Hugging Face cache folder, read from the environment now (as huggingface_hub reads it at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def weight_files(folder: Path) -> tuple[str, ...]:
    """The weight files of a checkpoint folder (empty when it lacks ``config.json`` or every weight file)."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        return ()
    return tuple(name for name in WEIGHT_FILES if (folder / name).is_file())


def _named_folder(model: str, folder: Path, named_by: str) -> WeightsSource:
    folder = Path(folder).expanduser()
    files = weight_files(folder)
    if not files:
        what = "does not exist" if not folder.exists() else "is not a folder" if not folder.is_dir() else (
            "has no config.json" if not (folder / "config.json").is_file() else
            f"has none of the weight files {', '.join(WEIGHT_FILES)}")
        raise WeightsFolderError(
            f"{named_by} names {folder} for the trained weights of {model!r}, but it {what}; it must hold the "
            f"output of `AutoModelForCausalLM.from_pretrained({model!r}).save_pretrained(DIR)` (config.json and "
            f"the weights) or a snapshot folder of the Hugging Face cache.")
    return WeightsSource(model, folder.resolve(), "folder", named_by, files)


def from_cache(model: str, cache: Path | None = None) -> WeightsSource | None:
    """The cached snapshot of ``model`` (any of its hub ids, revision ``main``), or ``None``; offline."""
    from huggingface_hub import try_to_load_from_cache

    cache = hub_cache_dir() if cache is None else Path(cache)
    for repo_id in HUB_IDS.get(model, (model,)):
        try:
            config = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache)
        except ValueError:  # not a valid repo id (e.g. a path)
            return None
        if not isinstance(config, str):
            continue
        snapshot = Path(config).parent
        files = weight_files(snapshot)
        if files:
            return WeightsSource(model, snapshot, "hf-cache", str(cache), files, repo_id, snapshot.name)
    return None


def locate(model: str, folders: Mapping[str, Path] | None = None) -> WeightsSource | None:
    """Where the trained weights of ``model`` are on this machine, or ``None`` (see the module docstring).

    ``folders`` maps model ids (any alias) to folders named on the command line; they take precedence
    over those the report build named (:func:`report_weights_dirs`), which take precedence over the environment
    variables of :data:`WEIGHTS_DIR_ENV`. Raises :class:`WeightsFolderError` when
    a named folder holds no weights.
    """
    name = canonical(model)
    for key, folder in (folders or {}).items():
        if canonical(key) == name:
            return _named_folder(name, folder, f"--weights-dir {key}={folder}")
    reported = report_weights_dirs()
    if name in reported:
        return _named_folder(name, reported[name], f"python -m reports build --weights-dir {name}={reported[name]}")
    variable = WEIGHTS_DIR_ENV.get(name)
    if variable and os.environ.get(variable):
        return _named_folder(name, Path(os.environ[variable]), f"the environment variable {variable}")
    if name not in PAPER_MODELS and Path(model).expanduser().is_dir():
        return _named_folder(model, Path(model), "--model")
    return from_cache(name)


def parse_weights_dirs(items: Sequence[str]) -> dict[str, Path]:
    """``["gpt2-xl=DIR", ...]`` (``--weights-dir``) -> ``{"gpt2-xl": DIR}`` under canonical model ids, each folder
    made absolute (the tests of a report build run in the project folder, not necessarily the caller's), with a
    clear error for an item without ``=``."""
    folders = {}
    for item in items:
        model, separator, folder = item.partition("=")
        if not separator or not model or not folder:
            raise ValueError(f"--weights-dir {item!r} must be MODEL=DIR, e.g. gpt2-xl=/data/gpt2-xl.")
        folders[canonical(model)] = Path(folder).expanduser().resolve()
    return folders


def weights_dirs_environment(folders: Mapping[str, Path]) -> dict[str, str]:
    """The environment that names ``folders`` to a report build's test process (empty when there are none)."""
    if not folders:
        return {}
    return {WEIGHTS_DIRS_ENV: json.dumps({model: str(folder) for model, folder in folders.items()})}


def report_weights_dirs(environ: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """The folders that ``python -m reports build --weights-dir`` named to this process (:data:`WEIGHTS_DIRS_ENV`
    in ``environ``; empty when it is unset), under canonical model ids; a model the report does not run trained,
    or a value that is not a JSON object of model name -> folder, is an error."""
    text = environ.get(WEIGHTS_DIRS_ENV, "")
    if not text:
        return {}
    try:
        folders = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{WEIGHTS_DIRS_ENV}={text!r} must be a JSON object of model name -> folder.") from error
    if not isinstance(folders, dict) or not all(isinstance(v, str) for v in folders.values()):
        raise ValueError(f"{WEIGHTS_DIRS_ENV}={text!r} must be a JSON object of model name -> folder.")
    unknown = [model for model in folders if canonical(model) not in WEIGHTS_DIR_ENV]
    if unknown:
        raise ValueError(f"--weights-dir names {unknown}; the report runs trained weights of {list(PAPER_MODELS)} "
                         "only.")
    return {canonical(model): Path(folder) for model, folder in folders.items()}


def get_command(model: str) -> str:
    """The exact commands that give the report (or the paper's protocol) the trained weights of ``model``."""
    name = canonical(model)
    variable = WEIGHTS_DIR_ENV.get(name, "CONSENSUS_WEIGHTS_<MODEL>")
    return (f"get the weights with `hf download {HUB_IDS.get(name, (name,))[0]}` (into the Hugging Face "
            f"cache; everything after is offline) or save them to a folder DIR with save_pretrained; then "
            f"`make report` (cache) or `{variable}=DIR make report` (folder) runs them in the CPU budget, and on a GPU "
            f"`python -m empirical suite --profile gpu --only {_trained_keys(name)} [--weights-dir {name}=DIR] "
            f"--out runs` runs the paper's protocol")


def _trained_keys(model: str) -> str:
    short = SHORT_NAMES.get(model, model.replace("/", "_"))
    return f"{short}-trained-no-ffn {short}-trained-ffn"
