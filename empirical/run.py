"""``python -m empirical run``: one looped-consensus experiment, checkpointed and resumable.

Writes ``DIR/manifest.json`` (what was run: model, weights, FFN, prompts, passes, dtype, device,
seeds, versions, the draw verifications, the dtype's floor of E (:mod:`empirical.floor`) and the
timings), ``DIR/results.json`` (``E`` per prompt, ``E_mean``, ``E_std``, ``layers``, ``passes``, and each
value's ``pass`` and ``block``, the floor and the collapse decision of :mod:`empirical.decision`),
``DIR/E.png`` (mean E over depth, log scale, pass boundaries, the floor and the threshold) and
``DIR/checkpoint.pt`` (the hidden state after the last finished pass). Every file is written
atomically: the checkpoint and the manifest (which records a digest of itself: :func:`write_manifest`) after every pass, results.json every minute and when the run
ends or stops, the figure when it ends. Rerunning the same command resumes from the last checkpoint
(and extends a finished run if ``--passes`` grew). With ``until`` rules the run stops at the first pass
where every rule has decided (or reached its maximum).
"""

from __future__ import annotations

import copy
import json
import pickle
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import torch

from foundation.files import atomic_write, json_sha256, sha256, write_json
from foundation.outputs import (SCHEMA_VERSIONS, OutputFolder, check_output_folder, claim_output_folder, output_lock,
                             say_rebuilt, unreadable)

from .adapters import BlockInputs, adapter_class, adapter_for
from .decision import (CollapseRule, PrecisionCheck, decide_grid, needs_more_passes, pass_ends,
                       precision_check, run_verdict)
from .figures import plot_run
from .floor import measure_floor
from .loop import NonFiniteActivations, check_variant, embed, run_pass
from .fingerprints import ParameterFingerprint, fingerprint
from .models import WEIGHTS, check_draw, describe_model, import_model_class, load_config, load_model, redraw
from .prompts import MAX_PROMPTS, PAPER_SEED, authors_prompts, check_count, check_seed
from .sources import locate
from .settings import DEVICES, DTYPE_NAMES, MAX_PASSES, TWIN_PROMPTS, TWINS, RunSettings  # noqa: F401 (re-exported)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


def resolve_device(device: str) -> torch.device:
    """``auto`` -> CUDA if available, else CPU; ``cuda`` without CUDA is an error."""
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda was requested but CUDA is not available (torch.cuda.is_available() is "
                         "False: no GPU or a CPU-only PyTorch build); use --device cpu or --device auto.")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` -> float32 on every device. Reason: on an H100 the paper's protocol in bfloat16 (once the CUDA
    default) stalled at E = 1e-4 (GPT-Neo 2.7B, redrawn, no FFN) where float32 went below 1e-8; the floor of
    E in bfloat16 sits within a factor 10 of the collapse threshold (:mod:`empirical.decision`). Lower
    precisions stay an explicit ``--dtype``."""
    if dtype != "auto":
        return DTYPES[dtype]
    return torch.float32


def environment() -> dict[str, Any]:
    """Versions, machine and git revision, for the manifest. The revision is the report manifest's
    (``foundation.manifest.git_revision``: ``git describe``, ``-dirty`` when the tree has uncommitted changes)."""
    import platform

    import transformers

    from foundation.manifest import git_revision

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


def check_before_loading(settings: RunSettings):
    """Refuse, from the model's configuration alone (before any weights are read or anything is written),
    a model of a family without a loop adapter or prompts longer than the model's context; return the
    configuration."""
    config = load_config(settings.model)
    context = adapter_class(config).context_length_of(config)
    if settings.length > context:
        raise ValueError(f"--length {settings.length} is longer than the model's context of {context} tokens "
                         f"({settings.model}); use --length <= {context}.")
    return config


def run_experiment(settings: RunSettings, out: Path, *, progress: bool = True,
                   after_pass: Callable[[int], None] | None = None,
                   weights_dirs: Mapping[str, Path] | None = None,
                   until: Sequence[CollapseRule] = (), rule: CollapseRule | None = None) -> dict[str, Any]:
    """Run (or resume) one experiment into ``out``; return the results dict written to ``results.json``.

    ``after_pass(k)`` runs after pass ``k`` (1-based) has been checkpointed. ``weights_dirs`` names
    folders of trained weights (``{"gpt2-xl": DIR}``; see :mod:`empirical.sources`). ``until``: collapse
    rules (:mod:`empirical.decision`); the run stops at the first pass where each has decided or reached its
    horizon (``settings.passes`` stays the run's maximum; ``until`` is usually every cell of a rule's grid).
    Without rules the run does ``settings.passes`` passes. ``results.json`` carries the grid decision of ``rule``
    (default: the first of ``until``, else the stated test, :class:`empirical.decision.CollapseRule`). The run
    holds ``out``'s one-writer lock (:func:`foundation.outputs.output_lock`) from start to end: a second writer is
    refused at once.
    """
    with output_lock(out, command="empirical run"):
        return _run_experiment(settings, out, progress=progress, after_pass=after_pass, weights_dirs=weights_dirs,
                               until=until, rule=rule)


def _run_experiment(settings: RunSettings, out: Path, *, progress: bool, after_pass: Callable[[int], None] | None,
                    weights_dirs: Mapping[str, Path] | None, until: Sequence[CollapseRule],
                    rule: CollapseRule | None) -> dict[str, Any]:
    """:func:`run_experiment`, its folder locked."""
    started = time.perf_counter()
    loaded = _load(settings, out, weights_dirs)
    out, previous, device, model, adapter = loaded.out, loaded.previous, loaded.device, loaded.model, loaded.adapter
    built = time.perf_counter()
    claim_output_folder(loaded.output)
    if previous is not None and (reason := unreadable(out / "results.json")):
        say_rebuilt(out / "results.json", f"it could not be read ({reason}); made again from the checkpoint")
    checkpoint = Checkpoint(out, settings)
    state = _start(settings, model, adapter, device, checkpoint if previous is not None else None, previous)
    prepared = time.perf_counter()
    recorded = (previous or {}).get("floor")
    twin = _Twin.start(settings, model, state, checkpoint if state.resumed_from else None, loaded.device_map,
                       (recorded or {}).get("float64_twin"))
    twinned = time.perf_counter()
    floor = recorded or measure_floor(adapter, state.embeddings, state.inputs, ffn=settings.ffn,
                                      metric=settings.metric)
    floor["float64_twin"] = twin.floor if twin is not None else None
    rule = rule or (until[0] if until else CollapseRule())
    manifest = _manifest(settings, loaded, state, floor, until, {
        "imports_s": loaded.imports_s, "model_build_s": built - started - loaded.imports_s, "start_s": prepared - built,
        "twin_build_s": twinned - prepared})
    floor.update(effective_floor_fields(floor["E_floor"], state.E, twin))
    write_manifest(out, manifest)
    writer = _Writer(out, checkpoint, manifest, floor["E_floor"], rule, twin)
    layers = adapter.num_layers
    stop = (lambda E: len(E) > 1 and not _undecided(E, state, twin, layers, floor["E_floor"], until)) \
        if until else None
    try:
        loop_seconds = _run_passes(settings, model, adapter, state, writer, progress, after_pass, stop)
    except NonFiniteActivations as error:
        writer.wait()  # the checkpoint in flight, and the manifest that describes it, land first
        manifest["status"] = f"stopped: {error}"
        write_manifest(out, manifest)
        raise
    finally:
        results = writer.close(state, adapter.num_layers)
        if twin is not None:
            manifest["timings"]["twin_s"] = twin.seconds
            twin.release()  # its float64 copy of the model goes with the run
    plotting = time.perf_counter()
    figure = plot_run(manifest, results, out / FIGURE)
    manifest["timings"].update(saving_s=writer.seconds, figure_s=time.perf_counter() - plotting)
    manifest["status"] = "complete"
    manifest["passes_done"] = results["passes"]
    manifest["results"] = {"file": "results.json", "sha256": writer.results_sha256}  # what load_results checks
    manifest["figure"] = figure.name
    manifest["timings"].update(floor_s=floor["seconds"] if previous is None or "floor" not in previous else 0.0,
                               loop_s=loop_seconds, end_to_end_s=time.perf_counter() - started)
    write_manifest(out, manifest)
    return results


def _manifest(settings: RunSettings, loaded: "_Loaded", state: "_Progress", floor: dict[str, Any],
              until: Sequence[CollapseRule], timings: dict[str, float]) -> dict[str, Any]:
    """The manifest of a run as it starts its passes (``status: running``)."""
    previous, adapter = loaded.previous, loaded.adapter
    return {
        "settings": asdict(settings), "settings_identity": settings.identity(),
        "device": str(loaded.device), "dtype": loaded.dtype_name, "device_map": loaded.device_map,
        "model": describe_model(settings.model, adapter), "weights_source": loaded.source,
        "environment": environment(),
        "seeds": {"prompts": settings.prompt_seed, "weights": settings.seed if settings.weights != "trained" else None,
                  "redraw": "seed + pass index (0-based) before every pass" if settings.weights == "redrawn" else None,
                  "floor_probe": floor.get("probe_seed")},
        "prompt_ids_first": state.ids[0][:10], "prompt_ids_excluded": state.excluded, "draws": state.draws,
        "passes_done": state.done, "checkpoint": (previous or {}).get("checkpoint") if state.done else None,
        "floor": floor, "until": [asdict(r) for r in until],
        "status": "running",
        "started": previous["started"] if previous else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": previous.get("seconds", 0.0) if previous else 0.0,
        "timings": timings,
    }


class _Loaded(NamedTuple):
    """What ``run_experiment`` starts from: the checked output folder (``output``, its ``out`` path) and the manifest of
    a run there to resume (``previous``, or None), the weights' ``source``, and the model built on ``device`` (in
    ``dtype_name``, over ``device_map``) with its ``adapter``."""

    output: OutputFolder
    out: Path
    previous: dict | None
    source: dict | None
    device: torch.device
    dtype_name: str
    device_map: str | None
    model: Any
    adapter: Any
    imports_s: float


def _load(settings: RunSettings, out: Path, weights_dirs: Mapping[str, Path] | None) -> _Loaded:
    """Check ``settings`` and the output folder ``out`` (a run there must be resumable: the same settings, weights
    and dtype) before the model is built, then build it; the folder is not claimed yet."""
    device = resolve_device(settings.device)
    dtype = resolve_dtype(settings.dtype, device)
    name, source = weights_source(settings, weights_dirs)
    started = time.perf_counter()
    # The configuration of the weights that will be loaded, and its architecture's code imported (seconds, once per
    # process): both timed as the manifest's imports_s, apart from the model's build.
    import_model_class(check_before_loading(replace(settings, model=name)))
    imports_s = time.perf_counter() - started
    output = check_output_folder(out, command="empirical run", settings=settings.identity())
    previous = _previous_manifest(output.path, settings, source)
    dtype_name = str(dtype).replace("torch.", "")
    if previous is not None and previous.get("dtype", dtype_name) != dtype_name:
        raise ValueError(f"{output.path} holds a run in {previous['dtype']}; --dtype {settings.dtype} is now "
                         f"{dtype_name} (auto is float32 on every device): pass --dtype {previous['dtype']} to resume "
                         "it, or use another --out folder.")
    made_on = torch.device(previous.get("device", str(device))).type if previous is not None else device.type
    if made_on != device.type:
        raise ValueError(f"{output.path} holds a run made on {previous['device']}; --device {settings.device} is now "
                         f"{device}: its passes would mix two devices' arithmetic. Resume it on {made_on} (--device "
                         f"{made_on}), or use another --out folder.")
    done = (previous or {}).get("passes_done")
    if isinstance(done, int) and done > settings.passes:
        raise ValueError(f"--passes {settings.passes} is fewer than the {done} passes the run in {output.path} has "
                         f"done: a finished run is never cut back; pass --passes {done} (or more, to extend it), or "
                         "use another --out folder.")
    device_map = "auto" if device.type == "cuda" and torch.cuda.device_count() > 1 else None
    model = load_model(name, settings.weights, seed=settings.seed, dtype=dtype, device=device,
                       attn_implementation=settings.attn_implementation, device_map=device_map)
    synchronise(device)
    return _Loaded(output, output.path, previous, source, device, dtype_name, device_map, model, adapter_for(model),
                   imports_s)


def synchronise(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so that a time read after it is the work's."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _previous_manifest(out: Path, settings: RunSettings, source: dict | None) -> dict[str, Any] | None:
    """The manifest of an earlier run in ``out`` (``None`` if there is none), which must have the same settings
    and trained weights; else a ``ValueError`` saying what to do."""
    previous = read_manifest(out, "settings_identity") if (out / MANIFEST).exists() else None
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
    embeddings: torch.Tensor  # (prompts, tokens, width): pass 0's input, for the floor's probe
    inputs: BlockInputs
    resumed_from: int = 0
    #: The fingerprint of the weights as they are, from the last draw's check: the next draw's ``before``.
    weights: dict[str, ParameterFingerprint] | None = None

    @property
    def E(self) -> torch.Tensor:
        """E so far, ``(prompts, done * layers + 1)``."""
        return torch.cat(self.columns, dim=1)


def _start(settings: RunSettings, model, adapter, device: torch.device, checkpoint: Checkpoint | None,
           previous: dict[str, Any] | None) -> _Progress:
    """The embedded prompts (pass 0), or the state a ``checkpoint`` of this run holds (resumed)."""
    draws: list[dict[str, Any]] = []
    weights = None
    if settings.weights != "trained":
        weights = fingerprint(model)
        draws.append({"pass": 0, "seed": settings.seed, **check_draw(adapter, weights, None)})
    excluded = adapter.zero_embedding_ids()
    ids = authors_prompts(settings.prompts, settings.length, adapter.vocab_size, settings.prompt_seed, excluded)
    x, e0 = embed(adapter, torch.tensor(ids, device=_input_device(model, device)), metric=settings.metric)
    inputs = adapter.block_inputs(settings.length, x.device, x.dtype)
    if checkpoint is None or not checkpoint.exists():
        return _Progress(x, [e0[:, None]], 0, draws, ids, excluded, x, inputs, weights=weights)
    done, E, hidden, saved_draws = checkpoint.load(tuple(x.shape), adapter.num_layers, _recorded_hashes(previous))
    if done > settings.passes:
        raise checkpoint.refuse(f"it holds {done} passes, more than --passes {settings.passes}; pass --passes {done} "
                                "(or more) to resume or extend this run")
    return _Progress(hidden.to(device=x.device, dtype=x.dtype), [E], done, saved_draws, ids, excluded,
                     x, inputs, resumed_from=done, weights=weights)


# -- the float64 twin ------------------------------------------------------------------------------------

def float64_copy(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with every floating parameter and buffer cast to float64, on the same device: the same weights (a
    random or redrawn model: the same draw), nothing drawn or loaded again. Built without a copy in the model's own
    dtype first (the casts are handed to ``deepcopy``), so it costs the float64 copy alone; tied weights stay tied."""
    import copy

    memo: dict[int, Any] = {}
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor.is_floating_point() and id(tensor) not in memo:
            cast = tensor.detach().to(torch.float64)
            memo[id(tensor)] = torch.nn.Parameter(cast, requires_grad=False) \
                if isinstance(tensor, torch.nn.Parameter) else cast
    twin = copy.deepcopy(model, memo)
    twin.eval()
    return twin


@dataclass
class _Twin:
    """The float64 twin of a run (``--twin float64``): the run's model cast to float64 (:func:`float64_copy`)
    looping the run's first ``prompts`` prompts alongside it, pass for pass, with the run's loop variant, metric,
    FFN setting and (redrawn weights) the run's draw of every pass. ``x`` is its hidden state after ``done``
    passes and ``columns`` its float64 E, ``(prompts, ...)`` blocks as the run's."""

    settings: RunSettings
    model: Any
    adapter: Any
    prompts: int
    x: torch.Tensor
    columns: list[torch.Tensor]
    inputs: BlockInputs
    #: The twin's own floor of E, measured as the run's is (:func:`empirical.floor.measure_floor`) on the float64 copy:
    #: the manifest's ``floor["float64_twin"]`` record.
    floor: dict[str, Any]
    seconds: float = 0.0

    @classmethod
    def start(cls, settings: RunSettings, model, state: _Progress, checkpoint: "Checkpoint | None",
              device_map: str | None, floor: dict[str, Any] | None = None) -> "_Twin | None":
        """The twin of a run starting (or resuming from ``checkpoint``) at ``state``; ``None`` without ``--twin``.
        ``floor``: the twin's floor record of the run resumed, else it is measured on the twin's embeddings."""
        if settings.twin is None:
            return None
        if device_map is not None:
            raise ValueError("--twin float64 is not supported for a model sharded over several GPUs; use one GPU "
                             "or leave --twin out.")
        twin_model = float64_copy(model)
        adapter = adapter_for(twin_model)
        prompts = min(settings.twin_prompts, settings.prompts)
        ids = torch.tensor(state.ids[:prompts], device=_input_device(twin_model, state.x.device))
        x, e0 = embed(adapter, ids, metric=settings.metric)
        inputs = adapter.block_inputs(settings.length, x.device, x.dtype)
        floor = floor or measure_floor(adapter, x, inputs, ffn=settings.ffn, metric=settings.metric)
        twin = cls(settings, twin_model, adapter, prompts, x, [e0[:, None].double()], inputs, floor)
        if checkpoint is not None:
            twin._resume(checkpoint, state.done)
        return twin

    def _resume(self, checkpoint: "Checkpoint", done: int) -> None:
        saved = checkpoint.twin_state
        expected = (self.prompts, done * self.adapter.num_layers + 1)
        if not isinstance(saved, dict) or not {"hidden", "E"} <= saved.keys():
            raise checkpoint.refuse("it holds no float64 twin's state ('twin': hidden and E), which this run has")
        hidden, E = saved["hidden"], saved["E"]
        if not isinstance(hidden, torch.Tensor) or tuple(hidden.shape) != tuple(self.x.shape) \
                or hidden.dtype != torch.float64:
            raise checkpoint.refuse(f"its twin's hidden state must be float64 of shape {tuple(self.x.shape)}")
        if not isinstance(E, torch.Tensor) or tuple(E.shape) != expected:
            raise checkpoint.refuse(f"its twin's E must have shape {expected}")
        self.x, self.columns = hidden.to(self.x.device), [E.double()]

    @property
    def E(self) -> torch.Tensor:
        """The twin's E so far, float64, ``(prompts, done * layers + 1)``."""
        return torch.cat(self.columns, dim=1)

    def copy_weights(self, model) -> None:
        """Take the run's weights (a redraw), cast to float64."""
        with torch.no_grad():
            for mine, theirs in zip(self.model.parameters(), model.parameters(), strict=True):
                mine.copy_(theirs)

    def run_pass(self, k: int) -> None:
        """Pass ``k`` (0-based) of the twin, after the run's."""
        started = time.perf_counter()
        result = run_pass(self.adapter, self.x, self.inputs, ffn=self.settings.ffn, pass_index=k,
                          loop_variant=self.settings.loop_variant, metric=self.settings.metric)
        self.x = result.hidden
        self.columns.append(result.E.T.double())
        synchronise(self.x.device)  # its queued work is the twin's time, not the next pass's (a redraw's)
        self.seconds += time.perf_counter() - started

    def checkpoint_state(self) -> dict[str, torch.Tensor]:
        """What the checkpoint keeps of the twin (copies: the twin goes on while the checkpoint thread saves)."""
        return {"hidden": self.x.to("cpu", copy=True), "E": self.E}

    def divergence(self, E: torch.Tensor) -> torch.Tensor:
        """Per measurement (the embeddings, then every block of every pass), the largest ``|E_run - E_float64|``
        over the twinned prompts, float64, for the run's ``E`` ``(prompts, columns)``."""
        mine = self.E
        columns = min(mine.shape[1], E.shape[1])
        return (E[: self.prompts, :columns].double() - mine[:, :columns]).abs().max(dim=0).values

    def record(self, E: torch.Tensor, columns: int) -> dict[str, Any]:
        """results.json's ``twin``: the twin's dtype, prompts, per-measurement divergence from the run's ``E`` and its
        maximum, and the twin's float64 E (per prompt and mean), ``columns`` measurements each."""
        mine = self.E[:, :columns]
        divergence = self.divergence(E[:, :columns])
        return {"dtype": "float64", "prompts": self.prompts, "prompt_indices": list(range(self.prompts)),
                "divergence": divergence.tolist(), "divergence_max": float(divergence.max()),
                "E": mine.tolist(), "E_mean": mine.mean(0).tolist()}

    def precision(self, E: torch.Tensor, layers: int, columns: int, effective_floor: float,
                  rule: CollapseRule) -> PrecisionCheck:
        """The run's ``E`` ``(prompts, ...)`` and the twin decided on the twinned prompts, the first ``columns``
        measurements (:func:`empirical.decision.precision_check`), the twin with its own measured floor."""
        return precision_check(E[: self.prompts, :columns].double().mean(0).tolist(),
                               self.E[:, :columns].mean(0).tolist(), layers, self.prompts, effective_floor,
                               self.floor["E_floor"], rule)

    def release(self) -> None:
        """Drop the float64 model and state (their memory goes back with the run)."""
        self.model = self.adapter = self.inputs = None
        self.x = torch.empty(0)
        import gc

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def effective_floor_fields(E_floor: float, E: torch.Tensor, twin: _Twin | None) -> dict[str, Any]:
    """The manifest floor's effective floor (SPEC section 5): ``effective_floor`` = max(the measured floor
    ``E_floor``, the largest divergence of the run's ``E`` from its float64 twin so far), and the twin's
    per-measurement divergence (``twin_divergence_per_block``: the embeddings, then every block of every pass) and
    maximum; without a twin the effective floor is the measured floor and the twin's fields are ``None``."""
    if twin is None:
        return {"effective_floor": E_floor, "twin_divergence_per_block": None, "twin_divergence_max": None,
                "twin_prompts": None,
                "effective_floor_method": "the measured floor (no float64 twin: run with --twin float64)"}
    divergence = twin.divergence(E)
    largest = float(divergence.max())
    return {"effective_floor": max(E_floor, largest), "twin_divergence_per_block": divergence.tolist(),
            "twin_divergence_max": largest, "twin_prompts": twin.prompts,
            "effective_floor_method": "max(E_floor, the largest |E - E_float64| over the twinned prompts and every "
                                      "measurement so far)"}


def _recorded_hashes(manifest: dict[str, Any] | None) -> set[str]:
    """The sha256 a run's checkpoint may have: the one the manifest records for it, and the one of a checkpoint that
    was about to replace it (``checkpoint_next``: a run stopped between the checkpoint's rename and the manifest's)."""
    recorded = set()
    for key in ("checkpoint", "checkpoint_next"):
        entry = (manifest or {}).get(key)
        if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
            recorded.add(entry["sha256"])
    return recorded


#: results.json is rewritten after a pass only if the last rewrite is at least this old (and always when the run
#: ends or stops). Reason: it holds every value of E as text, so it grows with the passes (100 prompts x 50 passes
#: of GPT-2 XL: 1.1 MB written in 1.4 s here); rewritten every pass it would cost more than the loop of a GPU run.
#: Resuming reads the checkpoint, which is written every pass, so no pass is lost by it.
RESULTS_EVERY_S = 60.0


@dataclass
class _Writer:
    """The run folder's files after every pass: the checkpoint (written by a background thread while the next pass
    runs, at most one in flight: a run stopped mid-pass loses at most the pass before), then, on that thread once the
    checkpoint has landed, the manifest that describes it (its passes, draws and sha256: never a manifest ahead of its
    checkpoint), and results.json (every :data:`RESULTS_EVERY_S` seconds and when the run ends or stops)."""

    out: Path
    checkpoint: Checkpoint
    manifest: dict[str, Any]
    floor: float
    rule: CollapseRule
    twin: "_Twin | None" = None
    pending: Future | None = None
    results_written: float = field(default_factory=time.perf_counter)
    results_sha256: str | None = None  # of the last results.json written (the complete manifest records it)
    seconds: float = 0.0  # spent saving, the checkpoint's wait included (the manifest's timings["saving_s"])
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=1))
    staging: torch.Tensor | None = None  # CUDA runs: the pinned host buffer the checkpoint's hidden state goes to

    def after_pass(self, state: _Progress, seconds: float, layers: int) -> None:
        """Save pass ``state.done`` (which took ``seconds``)."""
        started = time.perf_counter()
        self.wait()
        hidden, copied = self._host_copy(state.x)
        twin = self.twin.checkpoint_state() if self.twin is not None else None
        self.manifest["floor"].update(effective_floor_fields(self.floor, state.E, self.twin))
        before = {key: copy.deepcopy(self.manifest.get(key)) for key in ("checkpoint", "passes_done", "draws")}
        self.manifest["seconds"] += seconds
        self.manifest["draws"] = list(state.draws)
        self.manifest["passes_done"] = state.done
        described = copy.deepcopy(self.manifest)  # what the manifest says once this pass's checkpoint has landed
        self.pending = self.executor.submit(self._save, state.done, hidden, state.E, copied, described, before, twin)
        if time.perf_counter() - self.results_written >= RESULTS_EVERY_S:
            self.write_results(state, layers)
        self.seconds += time.perf_counter() - started

    def _host_copy(self, x: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """``x`` copied to the host for the checkpoint thread, and the CUDA event that thread waits for (``None``
        off CUDA). On CUDA the copy goes asynchronously into a pinned buffer reused every pass (free again: the
        previous checkpoint has landed, :meth:`wait`). Reason: a plain copy to pageable memory ran at about
        1.6 GB/s on an H100 machine, 40-125 ms a pass for 64-196 MB, 2.2-6.2 s of loops of 9-50 s."""
        if x.device.type != "cuda":
            return x.to("cpu", copy=True), None
        if self.staging is None or self.staging.shape != x.shape or self.staging.dtype != x.dtype:
            self.staging = torch.empty(x.shape, dtype=x.dtype, pin_memory=True)
        with torch.cuda.device(x.device):
            self.staging.copy_(x, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record()
        return self.staging, copied

    def _save(self, passes: int, hidden: torch.Tensor, E: torch.Tensor, copied: Any, described: dict,
              before: dict, twin: dict[str, torch.Tensor] | None) -> None:
        """The checkpoint thread: wait for the host copy of ``hidden`` (if asynchronous), save it (with the twin's
        state, if the run has a twin), then write the manifest ``described`` with the checkpoint's sha256. Just
        before the checkpoint replaces the last one the manifest on disk (still describing the last one: ``before``)
        gains ``checkpoint_next``, the new one's hash, so that a run stopped between the two renames resumes."""
        if copied is not None:
            copied.synchronize()
        def announce(digest: str) -> None:
            write_manifest(self.out, {**described, **before, "checkpoint_next": {
                "file": self.checkpoint.path.name, "sha256": digest, "passes": passes}}, durable=False)

        digest = self.checkpoint.save(passes, hidden, E, described["draws"], before_replace=announce, twin=twin)
        record = {"file": self.checkpoint.path.name, "sha256": digest, "passes": passes}
        self.manifest["checkpoint"] = described["checkpoint"] = record
        write_manifest(self.out, described, durable=False)  # every pass: see Checkpoint.save

    def wait(self) -> None:
        """Wait for the checkpoint in flight (its error, if any, is raised here)."""
        if self.pending is not None:
            self.pending.result()
            self.pending = None

    def write_results(self, state: _Progress, layers: int) -> dict[str, Any]:
        """Write and return ``results.json`` after ``state.done`` passes (:func:`results_record`)."""
        results = results_record(state.E, layers, state.done, self.floor, self.rule, self.manifest["dtype"],
                                 self.twin)
        self.results_sha256 = write_json(self.out / "results.json", results)
        self.results_written = time.perf_counter()
        return results

    def close(self, state: _Progress, layers: int) -> dict[str, Any]:
        """The run ends or stops: the checkpoint in flight lands, results.json is written; return the results."""
        started = time.perf_counter()
        try:
            self.wait()
        finally:
            self.executor.shutdown()
        results = self.write_results(state, layers)
        self.seconds += time.perf_counter() - started
        return results


def _run_passes(settings: RunSettings, model, adapter, state: _Progress, writer: _Writer, progress: bool,
                after_pass: Callable[[int], None] | None, stop: Callable[[list[float]], bool] | None) -> float:
    """The passes from ``state.done`` to ``settings.passes``, each saved by ``writer`` before ``after_pass`` runs;
    none after ``stop(mean E after every block so far)`` says the rules have decided. The writer's float64 twin, if
    any, makes each pass after the run's (with the same draw). Returns the seconds the passes took, the twin's
    included."""
    inputs, twin = state.inputs, writer.twin
    bar = _progress_bar(settings, adapter.num_layers, state.done, progress)
    total = 0.0
    try:
        for k in range(state.done, settings.passes):
            if stop is not None and stop(_means(state, adapter.num_layers)):
                break
            started = time.perf_counter()
            if settings.weights == "redrawn" and k > 0:
                before = state.weights  # pass k - 1's check (_start's for pass 0), the weights unchanged since
                redraw(model, settings.seed + k)
                state.weights = fingerprint(model)
                state.draws.append({"pass": k, "seed": settings.seed + k, **check_draw(adapter, state.weights, before)})
                if twin is not None:
                    twin.copy_weights(model)
                synchronise(state.x.device)
                state.draws[-1]["seconds"] = time.perf_counter() - started  # the draw, its check and the twin's copy
            result = run_pass(adapter, state.x, inputs, ffn=settings.ffn, pass_index=k,
                              loop_variant=settings.loop_variant, metric=settings.metric)
            state.x, state.done = result.hidden, k + 1
            state.columns.append(result.E.T)
            if twin is not None:
                twin.run_pass(k)
            seconds = time.perf_counter() - started
            total += seconds
            writer.after_pass(state, seconds, adapter.num_layers)
            if bar is not None:
                bar.update(adapter.num_layers)
                bar.set_postfix(E_mean=f"{float(result.E[-1].double().mean()):.4g}")
            if after_pass is not None:
                after_pass(k + 1)
    finally:
        if bar is not None:
            bar.close()
    return total


def _undecided(E_mean: list[float], state: _Progress, twin: "_Twin | None", layers: int, E_floor: float,
               until: Sequence[CollapseRule]) -> bool:
    """Whether more passes could change a rule of ``until``: on the run's mean E (with its effective floor) or, with a
    twin, on the twin's float64 mean E (with float64's floor), so that the two decide on as many passes."""
    effective = effective_floor_fields(E_floor, state.E, twin)["effective_floor"]
    if any(needs_more_passes(E_mean, layers, effective, rule) for rule in until):
        return True
    if twin is None:
        return False
    twin_mean = twin.E.mean(0).tolist()
    return any(needs_more_passes(twin_mean, layers, twin.floor["E_floor"], rule) for rule in until)


def _means(state: _Progress, layers: int) -> list[float]:
    """The mean E over the prompts of ``state`` so far: the embeddings', then after every block of every pass."""
    return state.E[:, : state.done * layers + 1].double().mean(0).tolist()


def _input_device(model, device: torch.device) -> torch.device:
    """Where the token ids go: the device of the embedding table (the first shard of a sharded model)."""
    return model.get_input_embeddings().weight.device if hasattr(model, "get_input_embeddings") else device


#: The run's figure, beside results.json.
FIGURE = "E.png"
def results_record(E: torch.Tensor, layers: int, passes: int, floor: float, rule: CollapseRule, dtype: str,
                   twin: "_Twin | None" = None) -> dict[str, Any]:
    """``results.json``: per-prompt E ``(prompts, passes * layers + 1)``, its mean and std over prompts, each column's
    ``pass`` (0 for the embeddings) and ``block`` (1..layers within its pass; 0 for the embeddings), the indices of
    the pass ends, the dtype's floor of E, the effective floor (:func:`effective_floor_fields`), the float64
    twin's record (``twin``: ``None`` without one; :meth:`_Twin.record`), ``rule``'s grid decision on every block
    (:func:`decide_grid`), which reads nothing below the effective floor, the twin's precision check (``precision``:
    :meth:`_Twin.precision`) and the run's ``verdict`` in its ``dtype`` (:func:`empirical.decision.run_verdict`)."""
    columns = passes * layers + 1
    twin_record = twin.record(E, columns) if twin is not None else None
    effective = effective_floor_fields(floor, E[:, :columns], twin)["effective_floor"]
    precision = twin.precision(E, layers, columns, effective, rule) if twin is not None and passes else None
    E = E[:, :columns].double()
    mean = E.mean(0).tolist()
    ends = pass_ends(mean, layers, passes)
    grid = decide_grid(mean, layers, effective, rule) if passes else None
    return {"schema_version": SCHEMA_VERSIONS["results"], "E": E.tolist(), "E_mean": mean,
            "E_std": (E.std(0) if E.shape[0] > 1 else torch.zeros(E.shape[1])).tolist(),
            "layers": layers, "passes": passes,
            "pass": [0] + [k for k in range(1, passes + 1) for _ in range(layers)],
            "block": [0] + [b for _ in range(passes) for b in range(1, layers + 1)],
            "pass_end_index": [k * layers for k in range(passes + 1)], "E_pass_end": ends,
            "E_floor": floor, "effective_floor": effective, "twin": twin_record,
            "decision": grid.to_json() if grid else None,
            "precision": precision.to_json() if precision else None,
            "verdict": run_verdict(grid, precision, dtype) if grid else None}


def _progress_bar(settings: RunSettings, layers: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    label = f"{settings.model} {settings.weights}{'' if settings.ffn else ' no-FFN'}"
    return tqdm(total=settings.passes * layers, initial=done * layers, unit="block", desc=label)


MANIFEST = "manifest.json"


def _digest(manifest: dict[str, Any]) -> str:
    """The sha256 of ``manifest`` without its ``digest``, as canonical JSON (sorted keys): what a write records."""
    return json_sha256({key: value for key, value in manifest.items() if key != "digest"})


def write_manifest(out: Path, manifest: dict[str, Any], durable: bool = True) -> None:
    """Write ``out/manifest.json`` atomically with ``digest``, the sha256 of the rest (:func:`_digest`): a manifest
    edited by hand, or with a key removed (the results' sha256, the floor), no longer matches it."""
    write_json(Path(out) / MANIFEST, {**manifest, "digest": _digest(manifest)}, durable=durable)


def read_manifest(out: Path, key: str) -> dict[str, Any]:
    """``out/manifest.json``, which must hold ``key`` and the digest of itself its run wrote (:func:`write_manifest`);
    else a ``ValueError`` naming the file and what to do. A run's resume and every reader of its results trust only a
    manifest that passes (its floor, its start, the results' sha256)."""
    path = Path(out) / MANIFEST
    manifest = read_json(path, key)
    recorded = manifest.get("digest")
    if recorded is None:
        raise ValueError(f"{path} records no digest of itself: written by a version before manifests did, or with the "
                         "key removed; delete the folder to run afresh, or use another --out folder.")
    if recorded != _digest(manifest):
        raise ValueError(f"{path} is not the manifest its run wrote (its digest differs from the one it records: "
                         "edited by hand?); delete the folder to run afresh, or use another --out folder.")
    return manifest


def load_results(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(manifest, results)`` of a run folder; ``ValueError`` naming the file if either is missing or damaged, if the
    manifest is not the one its run wrote (:func:`read_manifest`), or if results.json is not the file whose sha256 a
    complete run's manifest records."""
    out = Path(out)
    if not out.is_dir():
        raise ValueError(f"{out} is not a folder: a run folder is one written by `python -m empirical run --out DIR`.")
    if not (out / MANIFEST).exists():
        raise ValueError(f"{out} has no manifest.json: it is not a run folder (one written by `python -m empirical run "
                         "--out DIR`), or one whose manifest was deleted (run into it again to make it afresh).")
    manifest, results = read_manifest(out, "settings"), read_json(out / "results.json", "E")
    _check_shape(results, out / "results.json")  # what is wrong with a damaged file, before that it differs
    recorded = (manifest.get("results") or {}).get("sha256")
    if recorded is not None and sha256(out / "results.json") != recorded:
        raise ValueError(f"{out / 'results.json'} is not the file its run wrote (its sha256 differs from the one "
                         "manifest.json records): rerun into the folder to make it again from the checkpoint, or "
                         "delete the folder to run afresh.")
    return manifest, results


def _check_shape(results: dict[str, Any], path: Path) -> None:
    """``results`` must hold ``layers`` and ``passes`` and, per prompt, ``passes * layers + 1`` values of E."""
    layers, passes, E = results.get("layers"), results.get("passes"), results["E"]
    if not (isinstance(layers, int) and isinstance(passes, int) and layers > 0 and passes >= 0):
        raise ValueError(f"{path} must hold positive integers 'layers' and 'passes'; the run folder is damaged: delete "
                         "it to run afresh, or use another --out folder.")
    if not (isinstance(E, list) and E and all(isinstance(row, list) and len(row) == passes * layers + 1 for row in E)):
        raise ValueError(f"{path} must hold E with passes x layers + 1 = {passes * layers + 1} values per prompt; the "
                         "run folder is damaged: delete it to run afresh, or use another --out folder.")


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
    """``DIR/checkpoint.pt`` of a run: the hidden state after the last finished pass, E so far and the draws'
    verifications (``{"passes", "hidden", "E", "draws_json", "settings_identity"}``, and ``"twin"``: the float64
    twin's ``{"hidden", "E"}`` for a run with a twin), written atomically after every pass; the manifest records its
    sha256. A checkpoint whose hash is not the manifest's, that does not record its run's settings, cannot be read
    or belongs to another run is refused with a way out, never resumed."""

    def __init__(self, folder: Path, settings: RunSettings) -> None:
        self.path = Path(folder) / "checkpoint.pt"
        self.settings = settings
        self.twin_state: dict[str, torch.Tensor] | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, passes: int, hidden: torch.Tensor, E: torch.Tensor, draws: list | None = None,
             before_replace: Callable[[str], None] | None = None, twin: dict[str, torch.Tensor] | None = None) -> str:
        """Keep ``passes`` finished passes: ``hidden`` (the state after the last), E ``(prompts, passes * layers + 1)``
        and the ``draws``' verifications; ``twin``: the float64 twin's ``{"hidden", "E"}`` after as many passes;
        return the file's sha256 (``before_replace``: see :func:`foundation.files.atomic_write`)."""
        state = {"passes": passes, "hidden": hidden.cpu(), "E": E, "draws_json": json.dumps(draws or []),
                 "settings_identity": self.settings.identity()}
        if twin is not None:
            state["twin"] = twin
        # Not flushed to the disk (fsync) before the rename: a checkpoint is rewritten after every pass and a
        # flush costs more than a GPU pass (foundation.files.atomic_write). A checkpoint a power cut tears is
        # refused on resume with a way out (load).
        try:
            return atomic_write(self.path, lambda stream: torch.save(state, stream), binary=True, durable=False,
                                before_replace=before_replace)
        except RuntimeError as error:  # torch's writer wraps a failed write (a full disk): raise the write's error
            cause = error.__cause__ or error.__context__
            while cause is not None and not isinstance(cause, OSError):
                cause = cause.__cause__ or cause.__context__
            if cause is None:
                raise
            raise cause from None

    def load(self, hidden_shape: tuple[int, ...], layers: int,
             recorded: set[str]) -> tuple[int, torch.Tensor, torch.Tensor, list]:
        """``(passes done, E : (prompts, passes * layers + 1), hidden : hidden_shape, draws)``, checked against the
        sha256 the manifest ``recorded`` and the run's settings; a ``ValueError`` naming the checkpoint and what to do
        if it cannot resume this run."""
        if not recorded:
            raise self.refuse("manifest.json records no sha256 of it (a run of an older version, or a damaged "
                              "manifest), so it cannot be trusted")
        if (digest := sha256(self.path)) not in recorded:
            raise self.refuse(f"its sha256 {digest[:16]}... is not the one manifest.json records "
                              f"({', '.join(sorted(h[:16] + '...' for h in recorded))}): it was changed or damaged "
                              "after it was written")
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
            raise self.refuse(f"it is not a readable checkpoint ({type(error).__name__}: {error})") from error
        if not isinstance(state, dict) or not {"passes", "hidden", "E"} <= state.keys():
            raise self.refuse("it must hold 'passes', 'hidden' and 'E'")
        if "settings_identity" not in state:
            raise self.refuse("it does not record the settings of the run that wrote it ('settings_identity')")
        if state["settings_identity"] != self.settings.identity():
            raise self.refuse(f"it was written by a run with other settings ({state['settings_identity']})")
        done, E, hidden = state["passes"], state["E"], state["hidden"]
        if not isinstance(done, int) or done < 1:
            raise self.refuse(f"passes={done!r} must be a positive integer")
        if not isinstance(hidden, torch.Tensor) or tuple(hidden.shape) != hidden_shape:
            raise self.refuse(f"its hidden state must have shape {hidden_shape}, got "
                               f"{tuple(hidden.shape) if isinstance(hidden, torch.Tensor) else type(hidden).__name__}")
        expected = (self.settings.prompts, done * layers + 1)
        if not isinstance(E, torch.Tensor) or tuple(E.shape) != expected:
            raise self.refuse(f"its E must have shape {expected} (prompts, passes x layers + 1), got "
                               f"{tuple(E.shape) if isinstance(E, torch.Tensor) else type(E).__name__}")
        if not (torch.isfinite(E).all() and torch.isfinite(hidden).all()):
            raise self.refuse("it holds non-finite values")
        try:
            draws = json.loads(state.get("draws_json", "[]"))
        except (TypeError, ValueError):
            draws = None
        if not isinstance(draws, list):
            raise self.refuse("its 'draws_json' must be a JSON list")
        self.twin_state = state.get("twin")  # checked by the twin that resumes from it (_Twin.start)
        return done, E, hidden, draws

    def refuse(self, why: str) -> ValueError:
        return ValueError(f"{self.path} cannot resume this run: {why}. Delete it to restart the run from pass 0, or "
                          "use another --out folder.")
