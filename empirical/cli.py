"""``python -m empirical {prompts,run,plot,suite,bench,audit,gpu-checks}``: the paper's experiments from the command line.

PyTorch and transformers are imported by a command's handler, after parsing (:mod:`empirical.settings` holds what
the parser needs), so that ``--help`` and a bad argument answer at once. Every default is stated once, where the experiment defines it: a run's in :class:`empirical.run.RunSettings`, an
audit's in :class:`empirical.audit.AuditSettings`, the benchmark's in :data:`BENCH_DEFAULTS`; the choices of
device, dtype and weights come from :mod:`empirical.run` and :mod:`empirical.models`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any, Callable

from foundation.files import write_json
from foundation.helpformat import Parser, output_file, parse, positive_integer
from foundation.outputs import (OutputError, check_output_folder, check_writable_folder, claim_output_folder,
                             output_lock, say_rebuilt)

from .prompts import GPT2_VOCAB_SIZE, MAX_LENGTH, MAX_PROMPTS
from .settings import (ALPHA, ATTN_IMPLEMENTATIONS, DEVICES, DTYPE_NAMES, HORIZON, LOOP_VARIANTS, MAX_PASSES, METRICS,
                       SMOLLM2, THRESHOLD, TINY_PASSES, TWINS, WEIGHTS, WINDOW, GPU_PASSES, AuditSettings,
                       RunSettings)

#: The benchmark's defaults (docs/empirical.md): SmolLM2, 16 prompts of 200 tokens, 2 passes, 5 rounds.
BENCH_DEFAULTS = {"model": SMOLLM2, "prompts": 16, "length": 200, "passes": 2, "rounds": 5}
#: The audit's dtypes (weights stored in float32; bfloat16 halves the memory of the largest models).
AUDIT_DTYPES = ("float32", "bfloat16")
SUITE_OUT = Path("build/runs")


def _defaults(settings) -> dict:
    """The default of every field of a settings dataclass that has one."""
    return {f.name: f.default for f in fields(settings) if f.default is not MISSING}


RUN, AUDIT = _defaults(RunSettings), _defaults(AuditSettings)


def _error(error: Exception) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 2


def _prompts(args) -> int:
    from .prompts import MAX_LENGTH, MAX_PROMPTS, authors_prompts, check_count, check_seed

    try:
        check_count("--n", args.n, MAX_PROMPTS)
        check_count("--length", args.length, MAX_LENGTH)
        check_count("--vocab-size", args.vocab_size, 2**31)
        check_seed("--seed", args.seed)
    except ValueError as error:
        return _error(error)
    print(json.dumps(authors_prompts(args.n, args.length, args.vocab_size, args.seed)))
    return 0


def _disk_error(error: OSError, out) -> int:
    """A write that failed (a full disk, a quota, a read-only file system): one line; the folder stays resumable
    (every file is written atomically, the manifest after the checkpoint it describes)."""
    where = f" ({error.filename})" if error.filename else ""
    return _error(ValueError(f"writing to --out {out} failed: {error.strerror or error}{where}; free space (or fix "
                             "the folder) and rerun the same command to resume."))


def _model_errors() -> tuple[type[Exception], ...]:
    """The errors a model command reports in one line (exit 2): imported with the model code, after parsing."""
    from .loading import ModelNotAvailable
    from .loop import NonFiniteActivations

    return ValueError, ModelNotAvailable, NonFiniteActivations


def _run(args) -> int:
    from .decision import CollapseRule
    from .run import run_experiment

    try:
        settings = RunSettings(model=args.model, weights=args.weights, ffn=not args.no_ffn, prompts=args.prompts,
                               length=args.length, passes=args.passes, seed=args.seed, prompt_seed=args.prompt_seed,
                               device=args.device, dtype=args.dtype, attn_implementation=args.attn_implementation,
                               loop_variant=args.loop_variant, metric=args.metric, twin=args.twin,
                               twin_prompts=args.twin_prompts)
        rule = CollapseRule(horizon=args.horizon, window=args.window, threshold=args.threshold, alpha=args.alpha)
        results = run_experiment(settings, args.out, progress=not args.quiet,
                                 until=tuple(rule.grid().values()) if args.until_decided else (), rule=rule)
    except _model_errors() as error:
        return _error(error)
    except OSError as error:
        return _disk_error(error, args.out)
    ends = results["E_pass_end"]
    decision = results["decision"]
    if args.json:
        print(json.dumps(run_summary(results, args.out), indent=1))
        return 0
    print(f"E_mean after the embeddings {ends[0]:.4g}; after each pass: " + " ".join(f"{e:.4g}" for e in ends[1:]))
    if results.get("twin"):
        print(f"float64 twin of {results['twin']['prompts']} prompts: largest |E - E_float64| "
              f"{results['twin']['divergence_max']:.2g}; effective floor {results['effective_floor']:.2g}")
    base = decision["cells"]["base"]
    differ = [f"{name}: {cell['verdict']}" for name, cell in decision["cells"].items()
              if cell["verdict"] != base["verdict"]]
    if results.get("precision"):
        precision = results["precision"]
        print(f"on the twinned prompts: {precision['dtype_verdict']} in this dtype, {precision['float64_verdict']} in "
              f"float64 ({'they agree' if precision['agree'] else 'they differ: precision-limited'})")
    print(f"floor of E in this dtype {results['E_floor']:.2g}; run's verdict: {results['verdict']}; collapse test: "
          f"{decision['verdict']} (base cell: "
          f"{base['verdict']}, {base['reason']}; {'; '.join(differ) or 'every cell agrees'}); "
          f"monotone: {'yes' if decision['monotone'] else 'no'}")
    print(f"wrote {args.out / 'results.json'}, {args.out / 'manifest.json'} and {args.out / 'E.png'}")
    return 0


def run_summary(results: dict, out: Path) -> dict:
    """``run --json``: ``{"results", "manifest", "figure"}`` (the paths written), ``E_pass_end`` (E_mean after the
    embeddings and after each pass), ``E_floor``, ``verdict`` (the run's: the grid's, or ``precision-limited``), ``grid_verdict`` and ``monotone``
    (the collapse test's), ``cells``
    (each cell's verdict) and ``twin`` (null without ``--twin``: prompts, divergence_max, effective_floor)."""
    decision, twin = results["decision"], results.get("twin")
    return {"results": str(out / "results.json"), "manifest": str(out / "manifest.json"), "figure": str(out / "E.png"),
            "E_pass_end": results["E_pass_end"], "E_floor": results["E_floor"], "verdict": results["verdict"],
            "grid_verdict": decision["verdict"],
            "monotone": decision["monotone"],
            "cells": {name: cell["verdict"] for name, cell in decision["cells"].items()},
            "twin": None if not twin else {"prompts": twin["prompts"], "divergence_max": twin["divergence_max"],
                                           "effective_floor": results["effective_floor"],
                                           "dtype_verdict": results["precision"]["dtype_verdict"],
                                           "float64_verdict": results["precision"]["float64_verdict"]}}


#: The figure ``plot --out DIR`` writes when DIR is an existing folder.
OVERLAY = "overlay.png"


def plot_path(out: Path) -> Path:
    """Where ``plot --out OUT`` writes: OUT itself when it names a .png file, ``OUT/overlay.png`` when OUT is an
    existing folder; a ``ValueError`` naming --out otherwise (another suffix, a folder that cannot be written)."""
    path = out / OVERLAY if out.is_dir() else out
    if path.suffix.lower() != ".png":
        raise ValueError(f"--out {out} must end in .png (the figure) or be an existing folder (it then holds "
                         f"{OVERLAY}).")
    check_writable_folder(path.parent, option="--out")
    return path


def _plot(args) -> int:
    from .figures import plot_overlay
    from .run import load_results

    try:
        path = plot_path(args.out)
        runs = [load_results(folder) for folder in args.runs]
    except ValueError as error:  # OutputError too
        return _error(error)
    title = args.title or "Mean E over depth: " + "; ".join(str(folder) for folder in args.runs)
    try:
        print(f"wrote {plot_overlay(runs, path, title)}")
    except OSError as error:
        return _disk_error(error, args.out)
    return 0


def _gpu_checks(args) -> int:
    from .gpu_checks import run_checks

    try:
        run_checks(args.out, tiny=args.tiny, device=args.device, passes=args.passes, work=args.work,
                   report=lambda line: print(line, flush=True))
    except _model_errors() as error:
        return _error(error)
    print(f"wrote {args.out}")
    return 0


def _suite_distributed(args, chosen, folders, status: int) -> int:
    from foundation.dask_tls import tls_config

    from .distributed import VariantOptions, run_suite

    options = VariantOptions(device=args.device, dtype=args.dtype, weights_dirs=folders, decide=args.until_decided)
    try:
        with tls_config(args.tls_ca_file, args.tls_cert, args.tls_key):
            for summary in run_suite(chosen, args.out, scheduler=args.scheduler, workers=args.workers,
                                     options=options, progress=not args.quiet):
                print(f"{summary['key']}: E_mean {summary['E_first']:.4f} -> {summary['E_last']:.4f} "
                      f"({summary['passes']} passes x {summary['layers']} blocks)")
    except (ConnectionError, ValueError) as error:
        return _error(error)
    return status


def _locked(command: str, body: Callable[[Any], int], args) -> int:
    """``body(args)`` with ``args.out`` locked for its whole life (a second ``command`` into it is refused at once)."""
    try:
        with output_lock(args.out, command=command):
            return body(args)
    except OutputError as error:
        return _error(error)


def _suite(args) -> int:
    """``empirical suite``, its --out locked (:func:`_locked`)."""
    return _locked("empirical suite", _suite_locked, args)


def _suite_locked(args) -> int:
    from .sources import parse_weights_dirs
    from .suite import run_variant, split_by_weights, variants

    try:
        check_writable_folder(args.out)
        folders = parse_weights_dirs(args.weights_dir)
        chosen, missing = split_by_weights(variants(args.profile, args.only), folders)
    except ValueError as error:
        return _error(error)
    status = 2 if args.only and missing else 0  # asked for by name: absent weights are an error
    for key, reason in missing.items():
        print(f"{key}: {'error' if args.only else 'skipped'}: {reason}", file=sys.stderr)
    if any((args.tls_ca_file, args.tls_cert, args.tls_key)) and not args.scheduler:
        return _error(ValueError("--tls-ca-file, --tls-cert and --tls-key go with --scheduler tls://HOST:PORT (a "
                                 "--workers cluster listens on 127.0.0.1 only)."))
    if args.scheduler is not None or args.workers is not None:
        return _suite_distributed(args, chosen, folders, status)
    for variant in chosen:
        try:
            _, results = run_variant(variant, args.out, device=args.device, dtype=args.dtype, progress=not args.quiet,
                                     weights_dirs=folders, decide=args.until_decided)
            print(f"{variant.key}: E_mean {results['E_mean'][0]:.4f} -> {results['E_mean'][-1]:.4f} "
                  f"({results['passes']} passes x {results['layers']} blocks)")
        except _model_errors() as error:
            print(f"{variant.key}: error: {error}", file=sys.stderr)
            status = 2
    return status


def _bench(args) -> int:
    from .bench import bench, section

    for name in ("prompts", "length", "passes", "rounds"):
        if getattr(args, name) < 1:
            return _error(ValueError(f"--{name} {getattr(args, name)} must be a positive integer."))
    try:
        result = bench(args.model, args.prompts, args.length, args.passes, args.rounds, args.device)
    except _model_errors()[:2] as error:
        return _error(error)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.out, result)
    else:
        print(json.dumps(result, indent=1))
    if args.section:
        args.section.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.section, section(result))
    r = result["ratios"]
    print(f"measured/bare {r['measured_over_bare_time']:.3f}, bare/plain {r['bare_over_plain_time']:.3f}, "
          f"measured/authors {r['measured_over_authors_time']:.3f}, peak tensor memory measured/plain "
          f"{r['measured_over_plain_peak_memory']:.3f}; from E timed alone: measured/bare "
          f"{r['isolated_measured_over_bare_time']:.4f}, measured/authors "
          f"{r['isolated_measured_over_authors_time']:.4f}",
          file=sys.stderr)
    return 0


def _audit(args) -> int:
    """``empirical audit``, its --out locked (:func:`_locked`)."""
    return _locked("empirical audit", _audit_locked, args)


def _audit_locked(args) -> int:
    from .audit.measure import audit_model
    from .run import DTYPES
    from .audit.report import audit_section
    from .audit.store import write_audit

    from .prompts import MAX_PROMPTS, check_count, check_seed
    from .run import MAX_PASSES

    try:
        check_count("--prompts", args.prompts, MAX_PROMPTS)
        if args.prompts < 2:
            raise ValueError(f"--prompts {args.prompts} must be at least 2 (rate intervals are over prompts).")
        check_count("--length", args.length, 100_000)
        check_count("--passes", args.passes, MAX_PASSES)
        check_seed("--seed", args.seed)
        settings = AuditSettings(prompts=args.prompts, length=args.length, passes=args.passes, seed=args.seed)
        output = check_output_folder(args.out, command="empirical audit", settings={
            "model": args.model, "weights": args.weights, **asdict(settings), "dtype": args.dtype,
            "random_comparison": not args.no_random_comparison, "results": [str(p) for p in args.results]})
        extra = [_results_rates(path) for path in args.results]  # checked before the audit's minutes
    except ValueError as error:  # OutputError too
        return _error(error)
    try:
        result = audit_model(args.model, args.weights, settings, dtype=DTYPES[args.dtype],
                             compare_random=False if args.no_random_comparison else None,
                             progress=lambda message: print(f"audit {args.model}: {message}", file=sys.stderr,
                                                            flush=True))
    except _model_errors()[:2] as error:
        return _error(ValueError(f"--model {args.model}: {error}"))
    for item in extra:
        settings = item["manifest"].get("settings", {})
        if settings:
            item.update(group=f"{settings.get('model')} ({settings.get('weights')})", ffn=settings.get("ffn"))
    result["results_rates"] = extra
    if output.resumed:
        say_rebuilt(output.path / "audit.json", "audited again with the same settings")
    path = write_audit(result, claim_output_folder(output))
    section = audit_section([result], extra)
    write_json(args.out / "audit.section.json", section.to_json())
    for table in section.tables[:1]:
        print(table.title)
        print(" | ".join(table.columns))
        for row in table.rows:
            print(" | ".join(str(cell) for cell in row))
    print(f"audit: {path}")
    return 0


def _results_rates(folder: Path) -> dict:
    """``audit --results FOLDER``: the rate fit of a run's E (``empirical.audit.store.rates_from_results``); a
    ``ValueError`` naming the folder when it holds no readable run."""
    from .audit.store import rates_from_results

    try:
        return {**rates_from_results(folder), "group": None, "ffn": None}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"--results {folder}: not a folder written by `empirical run` ({type(error).__name__}: "
                         f"{error})") from None


def _device_options(parser: argparse.ArgumentParser, dtype: bool = True) -> None:
    parser.add_argument("--device", choices=DEVICES, default=RUN["device"],
                        help="auto: CUDA when present (several GPUs: sharded), else the CPU")
    if dtype:
        parser.add_argument("--dtype", choices=("auto", *DTYPE_NAMES), default=RUN["dtype"],
                            help="auto: float32 on every device (the floor of E in bfloat16 nears the collapse "
                                 "threshold); bfloat16 and float16 only when named")


def _add_prompts(commands) -> None:
    prompts = commands.add_parser("prompts", help="print the authors' random prompts as JSON")
    prompts.add_argument("--n", type=int, default=RUN["prompts"], help=f"number of prompts (1..{MAX_PROMPTS})")
    prompts.add_argument("--length", type=int, default=RUN["length"], help=f"tokens per prompt (1..{MAX_LENGTH})")
    prompts.add_argument("--vocab-size", type=int, default=GPT2_VOCAB_SIZE, help="token ids drawn from 0..V-1 (GPT-2's V)")
    prompts.add_argument("--seed", type=int, default=RUN["prompt_seed"],
                         help="the seed of Python's random (the authors'), 0..2^63 - 1")
    prompts.add_argument("--json", action="store_true",
                         help="the output, a JSON list of N lists of token ids, as without it (accepted for "
                              "uniformity: every command's results as JSON with --json)")
    prompts.set_defaults(handler=_prompts)


def _add_run(commands) -> None:
    run = commands.add_parser("run", help="loop a model for many passes, measuring E after every block")
    run.add_argument("--model", default=SMOLLM2,
                     help="smollm2-135m or gemma3-270m (embedded), gpt2-xl, EleutherAI/gpt-neo-2.7B, a tiny test model (tiny-llama, "
                          "tiny-gemma3, ...), a folder written by save_pretrained, a .gguf file, or a Hugging Face "
                          "id in the local cache; families: see docs/models.md")
    run.add_argument("--weights", choices=WEIGHTS, default=RUN["weights"],
                     help="trained; random: drawn once from the architecture's initialiser; redrawn: before every pass")
    run.add_argument("--no-ffn", action="store_true", help="remove the feed-forward sub-layers (x + attn(norm_1(x)))")
    run.add_argument("--prompts", type=int, default=RUN["prompts"],
                     help=f"number of prompts N (the paper's; at most {MAX_PROMPTS})")
    run.add_argument("--length", type=int, default=RUN["length"],
                     help="tokens per prompt L (the paper's)")
    run.add_argument("--passes", type=int, default=RUN["passes"],
                     help=f"passes K through all blocks (with --until-decided: the most passes; at most "
                          f"{MAX_PASSES}); fewer than a finished run in --out has done is refused")
    run.add_argument("--seed", type=int, default=RUN["seed"],
                     help="weight-draw seed (random: the draw; redrawn: seed + pass), 0..2^63 - 1")
    run.add_argument("--prompt-seed", type=int, default=RUN["prompt_seed"],
                     help="the prompts' seed (the authors'), 0..2^63 - 1")
    _device_options(run)
    run.add_argument("--attn-implementation", choices=ATTN_IMPLEMENTATIONS, default=RUN["attn_implementation"],
                     help="attention kernel (none given: the model's own default)")
    run.add_argument("--loop-variant", choices=LOOP_VARIANTS, default=RUN["loop_variant"],
                     help="ours (= authors): the final norm between passes, as the authors' GPTConsensus.py; "
                          "nanogpt: none between passes, as their first (nanoGPT) script (empirical/loop.py)")
    run.add_argument("--metric", choices=METRICS, default=RUN["metric"],
                     help="signed: E = 1 - mean cos(y_1, y_i) (eq. 9, the authors' latest script); absolute: "
                          "1 - mean |cos(y_1, y_i)| (their older scripts)")
    run.add_argument("--twin", choices=[t for t in TWINS if t], default=RUN["twin"],
                     help="float64: loop the first --twin-prompts prompts in float64 alongside (the same weights "
                          "cast), record the largest |E - E_float64| per block and the effective floor")
    run.add_argument("--twin-prompts", type=int, default=RUN["twin_prompts"],
                     help="prompts of the float64 twin, the first ones (all when fewer)")
    run.add_argument("--until-decided", action="store_true",
                     help="stop once every cell of the collapse test's grid has decided (empirical/decision.py; up "
                          "to twice the horizon), --passes at most")
    run.add_argument("--horizon", type=int, default=HORIZON,
                     help="the collapse test's horizon in passes")
    run.add_argument("--window", type=float, default=WINDOW,
                     help="the test's window in octaves of depth before the horizon")
    run.add_argument("--threshold", type=float, default=THRESHOLD,
                     help="the slowest decay called convergence, an exponent of depth")
    run.add_argument("--alpha", type=float, default=ALPHA,
                     help="the level of each one-sided test")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--json", action="store_true",
                     help="print the results as one JSON object: results, manifest, figure (the paths written), "
                          "E_pass_end, E_floor, verdict, monotone, cells, twin")
    run.add_argument("--out", type=Path, required=True, help="output folder (rerun the same command to resume)")
    run.set_defaults(handler=_run)


def _add_plot(commands) -> None:
    plot = commands.add_parser("plot", help="overlay the E of run folders on one log-scale figure (PNG)")
    plot.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="folders written by `python -m empirical run`")
    plot.add_argument("--out", type=Path, required=True,
                      help=f"the figure: a .png file, or an existing folder, which then holds {OVERLAY} (the path "
                           "written is printed)")
    plot.add_argument("--title", help="the figure's title (default: the folders)")
    plot.set_defaults(handler=_plot)


def _add_gpu_checks(commands) -> None:
    checks = commands.add_parser("gpu-checks", help="every GPU check in one call: build, loop and end-to-end times, "
                                                    "E floor per dtype (JSON)")
    checks.add_argument("--out", type=output_file, required=True, help="the measurements (JSON)")
    checks.add_argument("--tiny", action="store_true",
                        help="tiny GPT-2 / GPT-Neo configurations and prompts instead of the paper's "
                             "(a CPU smoke test)")
    checks.add_argument("--device", choices=DEVICES, default=RUN["device"])
    checks.add_argument("--passes", type=int, help=f"passes per run (default {GPU_PASSES}; with --tiny {TINY_PASSES})")
    checks.add_argument("--work", type=Path, help="folder for the runs (default: a temporary folder, deleted)")
    checks.set_defaults(handler=_gpu_checks)


def _add_suite(commands) -> None:
    suite = commands.add_parser("suite", help="run every variant of figures 7-10 in a budget profile (resumable)")
    suite.add_argument("--profile", choices=("cpu", "gpu"), default="cpu",
                       help="cpu: the report's budget on this machine; gpu: the paper's full protocol")
    suite.add_argument("--only", nargs="*", help="variant keys to run (default: all of the profile)")
    _device_options(suite)
    suite.add_argument("--weights-dir", action="append", default=[], metavar="MODEL=DIR",
                       help="a folder with the trained weights of gpt2-xl or EleutherAI/gpt-neo-2.7B (save_pretrained "
                            "output or a hub snapshot; repeatable). Without it: CONSENSUS_WEIGHTS_GPT2_XL / "
                            "CONSENSUS_WEIGHTS_GPT_NEO_2_7B, then the Hugging Face cache (offline)")
    suite.add_argument("--until-decided", action="store_true",
                       help="run each variant until every cell of the collapse test's grid decides (at most "
                            "twice the profile's passes)")
    suite.add_argument("--quiet", action="store_true", help="no progress bar")
    suite.add_argument("--out", type=Path, default=SUITE_OUT, help="one folder per variant under this")
    cluster = suite.add_mutually_exclusive_group()  # one variant per Dask task (empirical/distributed.py)
    cluster.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:8786 or, with the TLS files, "
                                             "tls://host:8786); --out must be shared storage. A scheduler without TLS "
                                             "runs the code of anyone who reaches it (docs/searches.md)")
    cluster.add_argument("--workers", type=positive_integer,
                         help="a local Dask cluster of this many processes on 127.0.0.1")
    suite.add_argument("--tls-ca-file", help="with --scheduler tls://...: the certificate authority (PEM) the "
                                             "scheduler's certificate is checked against")
    suite.add_argument("--tls-cert", help="with --scheduler tls://...: this client's certificate (PEM)")
    suite.add_argument("--tls-key", help="with --scheduler tls://...: this client's private key (PEM)")
    suite.set_defaults(handler=_suite)


def _add_bench(commands) -> None:
    bench = commands.add_parser("bench", help="the benchmark of the cost of measuring E after every block (docs/empirical.md)",
                                description="The cost of measuring E after every block (empirical/bench.py).")
    bench.add_argument("--model", default=BENCH_DEFAULTS["model"],
                       help="smollm2-135m or gemma3-270m (embedded), or any model with trained weights (see "
                            "python -m empirical run --help)")
    for name, text in (("prompts", "number of prompts"), ("length", "tokens per prompt"),
                       ("passes", "passes through all blocks"), ("rounds", "timed rounds of the four variants")):
        bench.add_argument(f"--{name}", type=int, default=BENCH_DEFAULTS[name], help=text)
    _device_options(bench, dtype=False)
    bench.add_argument("--out", type=output_file, help="benchmark JSON")
    bench.add_argument("--section", type=output_file, help="report section JSON")
    bench.set_defaults(handler=_bench)


def _add_audit(commands) -> None:
    audit = commands.add_parser("audit", help="theory meets practice: which theorem hypotheses hold, and rates of E")
    audit.add_argument("--model", required=True, help="a built-in id (smollm2-135m, gemma3-270m, gpt2-xl, "
                                                      "EleutherAI/gpt-neo-2.7B, tiny-*), a local path or a cached "
                                                      "Hugging Face id")
    audit.add_argument("--weights", choices=("trained", "random"), default="trained", help="the weights audited")
    audit.add_argument("--out", type=Path, required=True, help="folder for audit.json and audit.section.json")
    audit.add_argument("--prompts", type=int, default=AUDIT["prompts"], help="number of prompts")
    audit.add_argument("--length", type=int, default=AUDIT["length"], help="tokens per prompt")
    audit.add_argument("--passes", type=int, default=AUDIT["passes"], help="passes of the looped forward")
    audit.add_argument("--seed", type=int, default=AUDIT["seed"], help="seed of the random weights")
    audit.add_argument("--dtype", choices=AUDIT_DTYPES, default=AUDIT_DTYPES[0],
                       help="bfloat16 halves the memory of the largest models")
    audit.add_argument("--no-random-comparison", action="store_true",
                       help="with trained weights, skip auditing the same architecture with random weights")
    audit.add_argument("--results", type=Path, nargs="*", default=[],
                       help="folders written by `python -m empirical run` whose E to fit as well")
    audit.set_defaults(handler=_audit)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m empirical", description="Loop real transformers for many passes and measure "
                    "token consensus: the paper's experiments (figures 7-10), their benchmark and the hypothesis audit.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in (_add_prompts, _add_run, _add_plot, _add_suite, _add_bench, _add_audit, _add_gpu_checks):
        add(commands)
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``python -m empirical ARGV``; ``prog``: the command's name as run (``consensus run``)."""
    args = parse(build_parser(), sys.argv[1:] if argv is None else list(argv), prog)
    return args.handler(args)
