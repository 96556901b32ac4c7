"""``python -m empirical {prompts,run,suite,bench}``: the paper's experiments from the command line (SPEC section 6)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .prompts import PAPER_SEED, authors_prompts


def _prompts(args) -> int:
    print(json.dumps(authors_prompts(args.n, args.length, args.vocab_size, args.seed)))
    return 0


def _run(args) -> int:
    from .loop import NonFiniteActivations
    from .models import ModelNotAvailable
    from .run import RunSettings, run_experiment

    try:
        settings = RunSettings(model=args.model, weights=args.weights, ffn=not args.no_ffn, prompts=args.prompts,
                               length=args.length, passes=args.passes, seed=args.seed, prompt_seed=args.prompt_seed,
                               device=args.device, dtype=args.dtype, attn_implementation=args.attn_implementation)
        results = run_experiment(settings, args.out, progress=not args.quiet)
    except (ValueError, ModelNotAvailable, NonFiniteActivations) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    mean = results["E_mean"]
    layers = results["layers"]
    print(f"E_mean after the embeddings {mean[0]:.4f}; after each pass: "
          + " ".join(f"{mean[k * layers]:.4f}" for k in range(1, results["passes"] + 1)))
    print(f"wrote {args.out / 'results.json'} and {args.out / 'manifest.json'}")
    return 0


def _suite(args) -> int:
    from .loop import NonFiniteActivations
    from .models import ModelNotAvailable
    from .sources import parse_weights_dirs
    from .suite import run_variant, split_by_weights, variants

    try:
        folders = parse_weights_dirs(args.weights_dir)
        chosen, missing = split_by_weights(variants(args.profile, args.only), folders)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    status = 2 if args.only and missing else 0  # asked for by name: absent weights are an error
    for key, reason in missing.items():
        print(f"{key}: {'error' if args.only else 'skipped'}: {reason}", file=sys.stderr)
    if args.scheduler or args.workers:
        from .distributed import run_suite

        try:
            for summary in run_suite(chosen, args.out, scheduler=args.scheduler, workers=args.workers,
                                     device=args.device, dtype=args.dtype, progress=not args.quiet,
                                     weights_dirs=folders):
                print(f"{summary['key']}: E_mean {summary['E_first']:.4f} -> {summary['E_last']:.4f} "
                      f"({summary['passes']} passes x {summary['layers']} blocks)")
        except ConnectionError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        return status
    for variant in chosen:
        try:
            _, results = run_variant(variant, args.out, device=args.device, dtype=args.dtype, progress=not args.quiet,
                                     weights_dirs=folders)
            print(f"{variant.key}: E_mean {results['E_mean'][0]:.4f} -> {results['E_mean'][-1]:.4f} "
                  f"({results['passes']} passes x {results['layers']} blocks)")
        except (ValueError, ModelNotAvailable, NonFiniteActivations) as error:
            print(f"{variant.key}: error: {error}", file=sys.stderr)
            status = 2
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m empirical", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prompts = commands.add_parser("prompts", help="print the authors' random prompts as JSON")
    prompts.add_argument("--n", type=int, default=100)
    prompts.add_argument("--length", type=int, default=200)
    prompts.add_argument("--vocab-size", type=int, default=50257)
    prompts.add_argument("--seed", type=int, default=PAPER_SEED)
    prompts.set_defaults(handler=_prompts)

    run = commands.add_parser("run", help="loop a model for many passes, measuring E after every block")
    run.add_argument("--model", default="smollm2-135m",
                     help="smollm2-135m or gemma3-270m (embedded), gpt2-xl, EleutherAI/gpt-neo-2.7B, a tiny test model (tiny-llama, "
                          "tiny-gemma3, ...), a folder written by save_pretrained, a .gguf file, or a Hugging Face "
                          "id in the local cache; families: see README")
    run.add_argument("--weights", choices=("trained", "random", "redrawn"), default="trained")
    run.add_argument("--no-ffn", action="store_true", help="remove the feed-forward sub-layers (x + attn(norm_1(x)))")
    run.add_argument("--prompts", type=int, default=100, help="number of prompts N (default 100, as the paper)")
    run.add_argument("--length", type=int, default=200, help="tokens per prompt L (default 200, as the paper)")
    run.add_argument("--passes", type=int, default=10, help="passes K through all blocks")
    run.add_argument("--seed", type=int, default=0, help="weight-draw seed (random: the draw; redrawn: seed + pass)")
    run.add_argument("--prompt-seed", type=int, default=PAPER_SEED, help="the prompts' seed (42, as the authors)")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    run.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16", "float64"), default="auto")
    run.add_argument("--attn-implementation", choices=("eager", "sdpa"), default=None,
                     help="attention kernel (default: the model's own default)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--out", type=Path, required=True, help="output folder (rerun the same command to resume)")
    run.set_defaults(handler=_run)

    suite = commands.add_parser("suite", help="run every variant of figures 7-10 in a budget profile (resumable)")
    suite.add_argument("--profile", choices=("cpu", "gpu"), default="cpu",
                       help="cpu: the report's budget on this machine; gpu: the paper's full protocol")
    suite.add_argument("--only", nargs="*", help="variant keys to run (default: all of the profile)")
    suite.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    suite.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16", "float64"), default="auto")
    suite.add_argument("--weights-dir", action="append", default=[], metavar="MODEL=DIR",
                       help="a folder with the trained weights of gpt2-xl or EleutherAI/gpt-neo-2.7B (save_pretrained "
                            "output or a hub snapshot; repeatable). Without it: CONSENSUS_WEIGHTS_GPT2_XL / "
                            "CONSENSUS_WEIGHTS_GPT_NEO_2_7B, then the Hugging Face cache (offline)")
    suite.add_argument("--quiet", action="store_true", help="no progress bar")
    suite.add_argument("--out", type=Path, default=Path("build/runs"), help="one folder per variant under this")
    cluster = suite.add_mutually_exclusive_group()  # one variant per Dask task (empirical/distributed.py)
    cluster.add_argument("--scheduler", help="a running Dask scheduler (tcp://host:8786); --out must be shared storage")
    cluster.add_argument("--workers", type=int, help="a local Dask cluster of this many processes")
    suite.set_defaults(handler=_suite)
    commands.add_parser("bench", add_help=False,
                        help="the section-7 benchmark (python -m empirical bench --help for its options)")
    from .audit.report import add_audit_parser  # `audit`: the hypothesis audit (empirical/audit/)
    add_audit_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from .bench import main as bench_main

        return bench_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
