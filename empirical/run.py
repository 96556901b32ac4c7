"""``python -m empirical run``: one looped-consensus experiment, checkpointed and resumable.

Writes ``DIR/manifest.json`` (what was run: model, weights, FFN, prompts, passes, dtype, device,
seeds, versions, the draw verifications), ``DIR/results.json`` (``E`` per prompt, ``E_mean``,
``E_std``, ``layers``, ``passes``) and ``DIR/checkpoint.pt`` (the hidden state after the last finished
pass). Every file is written atomically after every pass; rerunning the same command resumes from
the last finished pass (and extends a finished run if ``--passes`` grew).
"""

from __future__ import annotations

import json
import pickle
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from reports.files import atomic_write, write_json
from reports.outputs import SCHEMA_VERSIONS, check_output_folder, claim_output_folder, say_rebuilt, unreadable

from .adapters import adapter_class, adapter_for
from .loop import NonFiniteActivations, embed, run_pass
from .models import WEIGHTS, describe_model, fingerprint, load_config, load_model, redraw, verify_draw
from .prompts import PAPER_SEED, authors_prompts
from .sources import locate

DEVICES = ("auto", "cpu", "cuda")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


@dataclass(frozen=True)
class RunSettings:
    """Everything that defines a run (a rerun with the same settings resumes it)."""

    model: str
    weights: str = "trained"
    ffn: bool = True
    prompts: int = 100
    length: int = 200
    passes: int = 10
    seed: int = 0
    prompt_seed: int = PAPER_SEED
    device: str = "auto"
    dtype: str = "auto"
    attn_implementation: str | None = None

    def __post_init__(self) -> None:
        if self.weights not in WEIGHTS:
            raise ValueError(f"--weights {self.weights!r} must be one of {WEIGHTS}.")
        for name in ("prompts", "length", "passes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"--{name} {value!r} must be a positive integer.")
        if self.device not in DEVICES:
            raise ValueError(f"--device {self.device!r} must be one of {DEVICES}.")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ValueError(f"--dtype {self.dtype!r} must be 'auto' or one of {tuple(DTYPES)}.")

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share (all but the number of passes)."""
        return {k: v for k, v in asdict(self).items() if k != "passes"}


def resolve_device(device: str) -> torch.device:
    """``auto`` -> CUDA if available, else CPU; ``cuda`` without CUDA is an error."""
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was requested but CUDA is not available (torch.cuda.is_available() is "
                         "False: no GPU or a CPU-only PyTorch build); use --device cpu or --device auto.")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` -> bfloat16 on GPUs that support it, else float16 on GPU; float32 on CPU."""
    if dtype != "auto":
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def environment() -> dict[str, Any]:
    """Versions, machine and git revision, for the manifest. The revision is the report manifest's
    (``reports.manifest.git_revision``: ``git describe``, ``-dirty`` when the tree has uncommitted changes)."""
    import platform

    import transformers

    from reports.manifest import git_revision

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "machine": platform.machine(), "processor": platform.processor(), "threads": torch.get_num_threads(),
            "cuda": torch.version.cuda, "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
            "git_revision": git_revision(Path(__file__).parent)}


def weights_source(settings: RunSettings, weights_dirs: Mapping[str, Path] | None = None) -> tuple[str, dict | None]:
    """What to load for ``settings`` and where its trained weights come from (for the manifest):
    a named folder or the Hugging Face cache (:func:`empirical.sources.locate`), else the name as given."""
    if settings.weights != "trained":
        return settings.model, None
    source = locate(settings.model, weights_dirs)
    if source is None:
        return settings.model, {"model": settings.model, "origin": "loader",
                                "named_by": "empirical.models.load_model (built-in or embedded package)"}
    return str(source.path), source.to_json()


def check_before_loading(settings: RunSettings) -> None:
    """Refuse, from the model's configuration alone (before any weights are read or anything is written),
    a model of a family without a loop adapter or prompts longer than the model's context."""
    config = load_config(settings.model)
    context = adapter_class(config).context_length_of(config)
    if settings.length > context:
        raise ValueError(f"--length {settings.length} is longer than the model's context of {context} tokens "
                         f"({settings.model}); use --length <= {context}.")


def run_experiment(settings: RunSettings, out: Path, *, progress: bool = True,
                   after_pass: Callable[[int], None] | None = None,
                   weights_dirs: Mapping[str, Path] | None = None) -> dict[str, Any]:
    """Run (or resume) one experiment into ``out``; return the results dict written to ``results.json``.

    ``after_pass(k)`` runs after pass ``k`` (1-based) has been checkpointed. ``weights_dirs`` names
    folders of trained weights (``{"gpt2-xl": DIR}``; see :mod:`empirical.sources`).
    """
    device = resolve_device(settings.device)
    dtype = resolve_dtype(settings.dtype, device)
    name, source = weights_source(settings, weights_dirs)
    check_before_loading(replace(settings, model=name))  # the configuration of the weights that will be loaded
    output = check_output_folder(out, command="empirical run", settings=settings.identity())
    out = output.path
    previous = _previous_manifest(out, settings, source)
    device_map = "auto" if device.type == "cuda" and torch.cuda.device_count() > 1 else None
    model = load_model(name, settings.weights, seed=settings.seed, dtype=dtype, device=device,
                       attn_implementation=settings.attn_implementation, device_map=device_map)
    adapter = adapter_for(model)
    claim_output_folder(output)
    if previous is not None and (reason := unreadable(out / "results.json")):
        say_rebuilt(out / "results.json", f"it could not be read ({reason}); made again from the checkpoint")
    checkpoint = Checkpoint(out, settings)
    state = _start(settings, model, adapter, device, checkpoint if previous is not None else None, previous)
    manifest = {
        "settings": asdict(settings), "settings_identity": settings.identity(),
        "device": str(device), "dtype": str(dtype).replace("torch.", ""), "device_map": device_map,
        "model": describe_model(settings.model, adapter), "weights_source": source, "environment": environment(),
        "seeds": {"prompts": settings.prompt_seed, "weights": settings.seed if settings.weights != "trained" else None,
                  "redraw": "seed + pass index (0-based) before every pass" if settings.weights == "redrawn" else None},
        "prompt_ids_first": state.ids[0][:10], "prompt_ids_excluded": state.excluded, "draws": state.draws,
        "status": "running",
        "started": previous["started"] if previous else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": previous.get("seconds", 0.0) if previous else 0.0,
    }
    write_json(out / "manifest.json", manifest)
    try:
        _run_passes(settings, model, adapter, state, _Writer(out, checkpoint, manifest), progress, after_pass)
    except NonFiniteActivations as error:
        manifest["status"] = f"stopped: {error}"
        write_json(out / "manifest.json", manifest)
        raise
    results = _results(state.E, adapter.num_layers, max(settings.passes, state.resumed_from))
    write_json(out / "results.json", results)
    manifest["status"] = "complete"
    manifest["passes_done"] = results["passes"]
    write_json(out / "manifest.json", manifest)
    return results


def _previous_manifest(out: Path, settings: RunSettings, source: dict | None) -> dict[str, Any] | None:
    """The manifest of an earlier run in ``out`` (``None`` if there is none), which must have the same settings
    and trained weights; else a ``ValueError`` saying what to do."""
    manifest_path = out / "manifest.json"
    previous = read_json(manifest_path, "settings_identity") if manifest_path.exists() else None
    if previous is not None and previous["settings_identity"] != settings.identity():
        raise ValueError(f"{out} holds a run with other settings ({previous['settings_identity']}); "
                         f"use another --out folder, or repeat that run's settings to resume it.")
    if previous is not None and "weights_source" in previous and previous["weights_source"] != source:
        raise ValueError(f"{out} holds a run of other trained weights ({previous.get('weights_source')}, now "
                         f"{source}); use another --out folder.")
    return previous


@dataclass
class _Progress:
    """Where a run stands: ``x`` the hidden state after ``done`` passes, E so far as ``columns`` (the embeddings'
    E, then one ``(prompts, layers)`` block per pass), the draws' verifications, and the prompts."""

    x: torch.Tensor
    columns: list[torch.Tensor]
    done: int
    draws: list[dict[str, Any]]
    ids: list[list[int]]
    excluded: list[int]
    resumed_from: int = 0

    @property
    def E(self) -> torch.Tensor:
        """E so far, ``(prompts, done * layers + 1)``."""
        return torch.cat(self.columns, dim=1)


def _start(settings: RunSettings, model, adapter, device: torch.device, checkpoint: Checkpoint | None,
           previous: dict[str, Any] | None) -> _Progress:
    """The embedded prompts (pass 0), or the state a ``checkpoint`` of this run holds (resumed)."""
    draws: list[dict[str, Any]] = []
    if settings.weights != "trained":
        draws.append({"pass": 0, "seed": settings.seed, **verify_draw(adapter, None)})
    excluded = adapter.zero_embedding_ids()
    ids = authors_prompts(settings.prompts, settings.length, adapter.vocab_size, settings.prompt_seed, excluded)
    x, e0 = embed(adapter, torch.tensor(ids, device=_input_device(model, device)))
    if checkpoint is None or not checkpoint.exists():
        return _Progress(x, [e0[:, None]], 0, draws, ids, excluded)
    done, E, hidden = checkpoint.load(tuple(x.shape), adapter.num_layers)
    return _Progress(hidden.to(device=x.device, dtype=x.dtype), [E], done, previous.get("draws", draws), ids, excluded,
                     resumed_from=done)


@dataclass
class _Writer:
    """The run folder's files, rewritten after every pass: checkpoint, manifest and results."""

    out: Path
    checkpoint: Checkpoint
    manifest: dict[str, Any]

    def after_pass(self, state: _Progress, seconds: float, layers: int) -> dict[str, Any]:
        """Save pass ``state.done`` (which took ``seconds``); return the results so far."""
        E = state.E
        self.checkpoint.save(state.done, state.x, E)
        self.manifest["seconds"] += seconds
        self.manifest["draws"] = state.draws
        self.manifest["passes_done"] = state.done
        write_json(self.out / "manifest.json", self.manifest)
        results = _results(E, layers, state.done)
        write_json(self.out / "results.json", results)
        return results


def _run_passes(settings: RunSettings, model, adapter, state: _Progress, writer: _Writer, progress: bool,
                after_pass: Callable[[int], None] | None) -> None:
    """The passes from ``state.done`` to ``settings.passes``, each saved by ``writer`` before ``after_pass`` runs."""
    inputs = adapter.block_inputs(settings.length, state.x.device, state.x.dtype)
    bar = _progress_bar(settings, adapter.num_layers, state.done, progress)
    try:
        for k in range(state.done, settings.passes):
            started = time.perf_counter()
            if settings.weights == "redrawn" and k > 0:
                before = fingerprint(model)
                redraw(model, settings.seed + k)
                state.draws.append({"pass": k, "seed": settings.seed + k, **verify_draw(adapter, before)})
            result = run_pass(adapter, state.x, inputs, ffn=settings.ffn, pass_index=k)
            state.x, state.done = result.hidden, k + 1
            state.columns.append(result.E.T)
            results = writer.after_pass(state, time.perf_counter() - started, adapter.num_layers)
            if bar is not None:
                bar.update(adapter.num_layers)
                bar.set_postfix(E_mean=f"{results['E_mean'][-1]:.4f}")
            if after_pass is not None:
                after_pass(k + 1)
    finally:
        if bar is not None:
            bar.close()


def _input_device(model, device: torch.device) -> torch.device:
    """Where the token ids go: the device of the embedding table (the first shard of a sharded model)."""
    return model.get_input_embeddings().weight.device if hasattr(model, "get_input_embeddings") else device


def _results(E: torch.Tensor, layers: int, passes: int) -> dict[str, Any]:
    """``results.json``: per-prompt E ``(prompts, passes * layers + 1)``, its mean and std over prompts."""
    E = E[:, : passes * layers + 1].double()
    return {"schema_version": SCHEMA_VERSIONS["results"], "E": E.tolist(), "E_mean": E.mean(0).tolist(),
            "E_std": (E.std(0) if E.shape[0] > 1 else torch.zeros(E.shape[1])).tolist(),
            "layers": layers, "passes": passes}


def _progress_bar(settings: RunSettings, layers: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    label = f"{settings.model} {settings.weights}{'' if settings.ffn else ' no-FFN'}"
    return tqdm(total=settings.passes * layers, initial=done * layers, unit="block", desc=label)


def load_results(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(manifest, results)`` of a run folder; ``ValueError`` naming the file if either is missing or damaged."""
    out = Path(out)
    return read_json(out / "manifest.json", "settings"), read_json(out / "results.json", "E")


def read_json(path: Path, key: str) -> dict[str, Any]:
    """A run folder's JSON file, which must be an object holding ``key``; else a ``ValueError`` saying what to do."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read as JSON ({error}); the run folder is damaged: delete it to run "
                         "afresh, or use another --out folder.") from error
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"{path} must be a JSON object with {key!r}; the run folder is damaged or not a run's: "
                         "delete it to run afresh, or use another --out folder.")
    return data


class Checkpoint:
    """``DIR/checkpoint.pt`` of a run: the hidden state after the last finished pass and E so far
    (``{"passes", "hidden", "E", "settings_identity"}``), written atomically after every pass. A checkpoint that
    cannot be read or belongs to another run is refused with a way out, never resumed."""

    def __init__(self, folder: Path, settings: RunSettings) -> None:
        self.path = Path(folder) / "checkpoint.pt"
        self.settings = settings

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, passes: int, hidden: torch.Tensor, E: torch.Tensor) -> None:
        """Keep ``passes`` finished passes: ``hidden`` (the state after the last) and E ``(prompts, passes * layers + 1)``."""
        state = {"passes": passes, "hidden": hidden.cpu(), "E": E, "settings_identity": self.settings.identity()}
        atomic_write(self.path, lambda stream: torch.save(state, stream), binary=True)

    def load(self, hidden_shape: tuple[int, ...], layers: int) -> tuple[int, torch.Tensor, torch.Tensor]:
        """``(passes done, E : (prompts, passes * layers + 1), hidden : hidden_shape)``, checked against the run's
        settings; a ``ValueError`` naming the checkpoint and what to do if it cannot resume this run."""
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
            raise self._refuse(f"it is not a readable checkpoint ({type(error).__name__}: {error})") from error
        if not isinstance(state, dict) or not {"passes", "hidden", "E"} <= state.keys():
            raise self._refuse("it must hold 'passes', 'hidden' and 'E'")
        if state.get("settings_identity", self.settings.identity()) != self.settings.identity():
            raise self._refuse(f"it was written by a run with other settings ({state['settings_identity']})")
        done, E, hidden = state["passes"], state["E"], state["hidden"]
        if not isinstance(done, int) or done < 1:
            raise self._refuse(f"passes={done!r} must be a positive integer")
        if not isinstance(hidden, torch.Tensor) or tuple(hidden.shape) != hidden_shape:
            raise self._refuse(f"its hidden state must have shape {hidden_shape}, got "
                               f"{tuple(hidden.shape) if isinstance(hidden, torch.Tensor) else type(hidden).__name__}")
        expected = (self.settings.prompts, done * layers + 1)
        if not isinstance(E, torch.Tensor) or tuple(E.shape) != expected:
            raise self._refuse(f"its E must have shape {expected} (prompts, passes x layers + 1), got "
                               f"{tuple(E.shape) if isinstance(E, torch.Tensor) else type(E).__name__}")
        if not (torch.isfinite(E).all() and torch.isfinite(hidden).all()):
            raise self._refuse("it holds non-finite values")
        return done, E, hidden

    def _refuse(self, why: str) -> ValueError:
        return ValueError(f"{self.path} cannot resume this run: {why}. Delete it to restart the run from pass 0, or "
                          "use another --out folder.")
