"""Command line: ``python -m sim figure {1..6} --out DIR``, ``python -m sim bench [--out FILE]`` and
``python -m sim search CLAIM --out DIR [--budget SECONDS] [--seed S]`` (the seeking search, in this process) or
``python -m sim search CLAIM --method random --instances N --out DIR [--workers K | --scheduler ADDRESS]`` (random
sampling in chunks, on Dask) and ``python -m sim replay WITNESS.json`` and ``python -m sim compile``.

``figure`` writes ``figN.png`` and ``figN.json`` (the plotted data and the check of the paper's
observation); ``bench`` runs the solver benchmark (docs/simulation.md) and writes its JSON (and, with
``--section``, the report section), then compares the compiled integrations with diffrax, torchdiffeq and torchode
(``sim.bench.peers``); ``compile`` compiles the Numba code into its on-disk cache ahead of its first use
(``sim.solvers.ahead``; the install step runs it); ``search-bench`` measures a search's integrations against a
``solve_ivp`` loop, and with ``--seek [--claim C] [--budget SECONDS] [--seed S] [--out FILE]`` the certified hits
per CPU-minute of the seeking search against random sampling (``sim.bench.seek``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from foundation.helpformat import (Parser, at_most, command_parser, output_file, parse, positive_integer,
                                   positive_number, seed)


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``python -m sim ARGV``; ``prog``: the command's name as run (``consensus search``)."""
    parser = _parser()
    args = parse(parser, sys.argv[1:] if argv is None else list(argv), prog)
    if args.command == "search":
        return _search(command_parser(parser, "search"), args)
    if args.command == "search-bench":
        return _search_bench(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "compile":
        return _compile()
    from sim.field.products import limit_threads

    with limit_threads(args.blas_threads):
        return _figure(args) if args.command == "figure" else _bench(args)


def _add_json(parser: argparse.ArgumentParser, shape: str) -> None:
    """``--json``: the command's results as one JSON object on stdout (``shape``), instead of text."""
    parser.add_argument("--json", action="store_true", help=f"print the results as one JSON object: {shape}")


def _add_search(commands) -> None:
    """The ``search`` command's arguments."""
    search = commands.add_parser("search", help="the counterexample search of a conjecture (conj.*): seeking, in "
                                                "this process, or --method random, on Dask")
    search.add_argument("claim", help="a conjecture id, e.g. conj.multihead-causal")
    search.add_argument("--method", choices=("seek", "random"), default="seek",
                        help="seek: deflated Newton for equilibria, scored by the tangent spectrum, optimised "
                             "and certified (sim.conjectures.seek), in this process; random: integrated random "
                             "instances and differential evolution in chunks on Dask (sim.conjectures.distributed)")
    search.add_argument("--instances", type=at_most(MAX_INSTANCES), default=None,
                        help=f"random: instances to search (1..{MAX_INSTANCES:.0e}, required; 10^7 is about a month of "
                             "CPU time); seek: at most this many instances")
    search.add_argument("--budget", type=positive_number("seconds"), default=60.0,
                        help="seek: CPU seconds (the instance under way is finished)")
    search.add_argument("--seed", type=seed, default=0,
                        help="seek: the seed, 0..2^63 - 1 (instance k is drawn with [seed, k])")
    search.add_argument("--out", type=Path, required=True, help="folder for summary.json, chunks/ and witnesses/")
    where = search.add_mutually_exclusive_group()
    where.add_argument("--workers", type=at_most(MAX_WORKERS),
                       help=f"random: a local Dask cluster of K processes on 127.0.0.1, dashboard off (at most "
                            f"{MAX_WORKERS}: 4 per core of this machine); other users of this machine can reach it")
    where.add_argument("--scheduler", help="random: address of a running Dask scheduler, tcp://host:8786 or, with the "
                                           "TLS files, tls://host:8786. A scheduler without TLS runs the code of "
                                           "anyone who reaches it (docs/searches.md)")
    search.add_argument("--tls-ca-file", help="with --scheduler tls://...: the certificate authority (PEM) the "
                                              "scheduler's certificate is checked against")
    search.add_argument("--tls-cert", help="with --scheduler tls://...: this client's certificate (PEM)")
    search.add_argument("--tls-key", help="with --scheduler tls://...: this client's private key (PEM)")
    search.add_argument("--chunk-size", type=at_most(MAX_INSTANCES), default=None,
                        help="random: instances per chunk (default: 64, sim.conjectures.distributed.CHUNK_SIZE)")
    search.add_argument("--no-adversarial", action="store_true", help="random: the random stage only")
    search.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_json(search, "claim, method, result, instances, hits, seed, budget_seconds (null for random), summary (the "
                      "path of summary.json), witnesses (their paths)")

def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m sim", description="Simulate the paper's figures 1-6, benchmark the solvers, and "
                    "search the conjectures for certified counterexamples.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    figure = commands.add_parser("figure", help="simulate, check and plot one of the paper's figures 1-6")
    figure.add_argument("number", type=int, choices=range(1, 7), metavar="N", help="the paper's figure, 1..6")
    figure.add_argument("--out", type=Path, required=True, help="folder for figN.png and figN.json")
    figure.add_argument("--size", choices=("full", "fast"), default="full",
                        help="full: the paper's size; fast: fewer trajectories/instances (Figs. 4-6)")
    _add_json(figure, "figure, png, data (the paths written), verdict, detail")
    bench = _add_bench(commands)
    _add_search(commands)
    replay = commands.add_parser("replay", help="re-check a stored witness of a refuted conjecture and print its "
                                                "certificate (exit 0: it refutes its claim; 1: it does not)")
    replay.add_argument("witness", type=Path,
                        help="a witness JSON file, e.g. sim/conjectures/witnesses/conj.value-full/*.json")
    _add_json(replay, "witness (its path), claim, refuted, reason, numbers, certificate {certified, reason, numbers}")
    commands.add_parser("compile", help="compile the Numba code (the compiled integrations, eq. 6's kernels) into its "
                                        "on-disk cache, so that later runs load it (about 40 s once; the install step "
                                        "runs it)")
    search_bench = commands.add_parser("search-bench", help="a search's batched integration vs a solve_ivp loop; "
                                                            "with --seek, certified hits per CPU-minute of the seeking "
                                                            "search vs random sampling")
    search_bench.add_argument("--claim", action="append", default=None,
                              help="whose family (chunk 0's shape; default conj.value-full); with --seek, a claim to "
                                   "measure (repeatable; default every claim with a structured family)")
    search_bench.add_argument("--instances", type=positive_integer, default=200, help="instances integrated")
    search_bench.add_argument("--t1", type=positive_number("time units"), default=20.0,
                              help="the integrations' horizon")
    search_bench.add_argument("--seek", action="store_true",
                              help="measure the seeking search against random sampling (sim.bench.seek)")
    search_bench.add_argument("--budget", type=positive_number("seconds"), default=60.0,
                              help="with --seek: CPU seconds per search and claim")
    search_bench.add_argument("--seed", type=seed, default=0, help="with --seek: the seed of both searches")
    search_bench.add_argument("--sources", type=lambda text: tuple(text.split(",")), default=None,
                              help="with --seek: comma-separated sources of the seeking search, an ablation "
                                   "(default every one that fits the claim: random, pm-identity, commuting, skew, "
                                   "low-rank, planted)")
    search_bench.add_argument("--out", type=output_file, help="write the numbers as JSON to this file")
    for sub in (figure, bench):
        sub.add_argument("--blas-threads", type=positive_integer, default=None,
                         help="limit BLAS threads, numpy's and PyTorch's (default: the libraries' own settings)")
    return parser


def _add_bench(commands) -> argparse.ArgumentParser:
    """``bench``: the solvers against SciPy, the backends, and the peers (on the CPU or a GPU)."""
    bench = commands.add_parser("bench", help="the solver benchmark (docs/simulation.md)")
    bench.add_argument("--out", type=output_file, help="write the results as JSON to this file")
    bench.add_argument("--section", type=output_file, help="write the report section (JSON) to this file")
    bench.add_argument("--quick", action="store_true",
                       help="small sizes, for trying the command (not the benchmark's figures)")
    bench.add_argument("--part", choices=("all", "scipy", "peers", "fields"), default="all",
                       help="scipy: problems (a) and (b) against solve_ivp; peers: the compiled integrations against "
                            "diffrax, torchdiffeq and torchode (the extra .[peers]; a missing one is skipped with a "
                            "note); fields: one evaluation of eq. 6 by each backend (sim.field.backends); all: scipy "
                            "and peers")
    bench.add_argument("--peers-out", type=output_file, help="write the peers' comparison as JSON to this file")
    bench.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                       help="peers: where the peers run (cuda: the PyTorch peers' tensors on the GPU, JAX on its GPU "
                            "backend); ours runs on the CPU either way")
    bench.add_argument("--libraries", type=_libraries, default=None, metavar="NAMES",
                       help="peers: the peers to run, comma-separated, among diffrax, torchdiffeq, torchode "
                            "(default: every one; ours always runs)")
    bench.add_argument("--threads", type=positive_integer, default=1,
                       help="peers: threads of every library (ours: workers of sim.solvers.compiled; diffrax: XLA's "
                            "intra-op threads; the PyTorch peers: torch.set_num_threads)")
    return bench


def _figure(args) -> int:
    from foundation.outputs import OutputError

    from sim.figures.plots import make_figure

    try:
        output = make_figure(args.number, args.out, size=args.size)
    except OutputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"figure": args.number, "png": str(output.png), "data": str(output.data_path),
                          "verdict": output.result.verdict, "detail": output.result.detail}, indent=1))
    else:
        print(f"figure {args.number}: {output.result.verdict} ({output.result.detail})\n"
              f"wrote {output.png} and {output.data_path}")
    return 0 if output.result.verdict == "verified" else 1


def _bench(args) -> int:
    if args.part in ("all", "scipy"):
        from sim.bench.solvers import run_benchmark, write_outputs

        results = run_benchmark(quick=args.quick)
        write_outputs(results, out=args.out, section=args.section)
        print(json.dumps(results["summary"], indent=1))
    if args.part in ("all", "peers"):
        from sim.bench.peers import run_peer_benchmark, table

        peers = run_peer_benchmark(quick=args.quick, threads=args.threads, device=args.device,
                                   **({"peers": args.libraries} if args.libraries else {}),
                                   progress=lambda text: print(text, flush=True))
        if args.peers_out:
            _write_json(args.peers_out, peers)
        print(table(peers))
    if args.part == "fields":
        from sim.bench.fields import run_field_benchmark, table as field_table

        fields = run_field_benchmark()
        if args.out:
            _write_json(args.out, fields)
        print(field_table(fields))
    return 0


def _search_bench(args) -> int:
    if args.seek:
        from sim.conjectures.families import FAMILIES
        from sim.bench.seek import DEFAULT_CLAIMS, compare

        unknown = [claim for claim in args.claim or () if claim not in FAMILIES]
        if unknown:
            print(f"error: --claim {unknown[0]!r} is not a conjecture with a search; known: {', '.join(FAMILIES)}",
                  file=sys.stderr)
            return 2
        try:
            numbers = compare(tuple(args.claim or DEFAULT_CLAIMS), args.budget, args.seed, args.sources)
        except ValueError as error:  # sources that do not fit a claim
            print(f"error: --sources: {error}", file=sys.stderr)
            return 2
    else:
        from sim.bench.search import measure

        if args.claim and len(args.claim) > 1:
            print("error: --claim: the integration benchmark measures one claim", file=sys.stderr)
            return 2
        numbers = measure((args.claim or ["conj.value-full"])[0], args.instances, args.t1)
    if args.out:
        _write_json(args.out, numbers)
    print(json.dumps(numbers, indent=1))
    return 0


def _write_json(path: Path, data) -> None:
    """``data`` as JSON at ``path`` (a file checked by ``output_file`` as the arguments were parsed; its folder
    created if need be), atomically."""
    from foundation.files import write_json

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, data, default=float)


def _compile() -> int:
    from sim.solvers.ahead import compile_ahead

    for name, seconds in compile_ahead().items():
        print(f"{name}: {seconds:.1f} s", flush=True)
    return 0


#: The most instances a search takes (sim.conjectures.distributed.MAX_INSTANCES; a sane bound, not a budget).
MAX_WORKERS = 4 * (os.cpu_count() or 1)
MAX_INSTANCES = 10**7  # = sim.conjectures.distributed.MAX_INSTANCES (not imported: `--help` stays fast)


def _replay(args) -> int:
    from sim.conjectures.replay import load, replay, strict_numbers

    try:  # load checks the file against the schema and against its claim's family: one line, exit 2, if not
        witness = load(args.witness)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from sim.conjectures.witness_index import INDEX

    outcome = replay(witness)
    checked = (args.witness.parent / INDEX).is_file()
    if args.json:
        certificate = outcome.certificate
        print(json.dumps({"witness": str(args.witness), "claim": outcome.claim, "refuted": outcome.refuted,
                          "float64_evidence_only": outcome.evidence, "reason": outcome.reason,
                          "numbers": strict_numbers(outcome.numbers), "hash_checked": checked,
                          "certificate": {"certified": certificate.certified, "reason": certificate.reason,
                                          "numbers": strict_numbers(certificate.numbers)}},
                         indent=1, default=str, allow_nan=False))  # strict JSON: an unbounded margin is null
    else:
        print(outcome.summary())
        print(f"file: hash-checked against {INDEX} beside it (an accidental change shows; whoever rewrites the file "
              "can rewrite the index: the replay above is what certifies it)" if checked else
              f"file: not hash-checked (no {INDEX} beside it); checked by its schema, and its certificate block "
              "against the replay's")
    return 0 if outcome.refuted else 1


def _libraries(text: str) -> tuple[str, ...]:
    """``--libraries diffrax,torchode``: peers' names, each one the benchmark knows."""
    from sim.bench.peer_fields import PREPARE

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in PREPARE]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: name peers among {', '.join(PREPARE)}, comma-separated")
    return names


#: The options of ``search --method random`` alone (their names in ``args``, and as typed).
RANDOM_ONLY = {"workers": "--workers", "scheduler": "--scheduler", "chunk_size": "--chunk-size",
               "no_adversarial": "--no-adversarial", "tls_ca_file": "--tls-ca-file", "tls_cert": "--tls-cert",
               "tls_key": "--tls-key"}


def check_search_arguments(parser: argparse.ArgumentParser, args) -> None:
    """What ``search``'s arguments must meet together, checked before anything runs (``parser.error``, exit 2, one
    line, otherwise): a conjecture with a search; the options of the random search only with ``--method random``;
    ``--method random`` with ``--instances``."""
    from sim.conjectures.families import FAMILIES

    if args.claim not in FAMILIES:
        parser.error(f"argument claim: {args.claim!r} is not a conjecture with a search; known: {', '.join(FAMILIES)}")
    given = [option for name, option in RANDOM_ONLY.items() if getattr(args, name) not in (None, False)]
    if args.method == "seek" and given:
        parser.error(f"{', '.join(given)} belong{'s' if len(given) == 1 else ''} to the random search on Dask: add "
                     "--method random (the default, --method seek, runs in this process)")
    if args.method == "random" and args.instances is None:
        parser.error("--method random needs --instances N")


def _search(parser: argparse.ArgumentParser, args) -> int:
    from foundation.dask_tls import tls_config
    from sim.conjectures.distributed import CHUNK_SIZE, run_search

    check_search_arguments(parser, args)
    if args.method == "seek":
        return _seek(args)
    try:
        tls = (args.tls_ca_file, args.tls_cert, args.tls_key)
        if any(tls) and not args.scheduler:
            raise ValueError("--tls-ca-file, --tls-cert and --tls-key go with --scheduler tls://HOST:PORT (a local "
                             "--workers cluster listens on 127.0.0.1 only).")
        with tls_config(*tls):
            summary = run_search(args.claim, args.instances, args.out, workers=args.workers,
                                 scheduler=args.scheduler, chunk_size=args.chunk_size or CHUNK_SIZE,
                                 adversarial=not args.no_adversarial, progress=not args.quiet)
    except (ConnectionError, ValueError) as error:  # OutputError is a ValueError
        print(f"error: {error}", file=sys.stderr)
        return 2
    witnesses = args.out / "witnesses" / args.claim
    witnesses_found = len(summary["witnesses"])
    result = (f"refuted by {witnesses_found} witnesses" if witnesses_found else
              f"no certified counterexample in {summary['instances']} instances (random sampling"
              f"{'' if args.no_adversarial else ' and differential evolution'}, {summary['instances_integrated']} "
              f"integrated; family: {summary['family']})")
    reasons: dict[str, int] = {}
    for hit in summary["rejected_hits"]:
        from sim.conjectures.seeking import reason_class

        key = reason_class(hit["reason"] if isinstance(hit, dict) else str(hit))
        reasons[key] = reasons.get(key, 0) + 1
    _print_search(args, {"claim": args.claim, "method": "random", "result": result, "instances": summary["instances"],
                         "hits": summary["hits"], "seed": None, "budget_seconds": None,
                         "summary": str(args.out / "summary.json"),
                         "witnesses": [str(witnesses / f"{name}.json") for name in summary["witnesses"]]}, reasons)
    return 0


def _print_search(args, printed: dict, rejected: dict[str, int]) -> None:
    """A search's result: with ``--json`` the object on stdout and the text on stderr; else the text on stdout."""
    text = sys.stderr if args.json else sys.stdout
    print(f"{args.claim}: {printed['result']}", file=text)
    for reason, count in rejected.items():
        print(f"  rejected {count} x: {reason}", file=text)
    if args.json:
        print(json.dumps(printed, indent=1))
    else:
        print(f"summary: {printed['summary']}" + "".join(f"\nwitness: {path}" for path in printed["witnesses"]))


def _seek(args) -> int:
    from foundation.outputs import OutputError
    from sim.conjectures.seeking import run_seek

    try:
        summary = run_seek(args.claim, args.out, args.budget, args.seed, args.instances)
    except OutputError as error:  # the folder, refused before the search started
        print(f"error: {error}", file=sys.stderr)
        return 2
    witnesses = args.out / "witnesses" / args.claim
    _print_search(args, {"claim": args.claim, "method": "seek", "result": summary["result"],
                         "instances": summary["instances"], "hits": summary["hits"], "seed": args.seed,
                         "budget_seconds": args.budget, "summary": str(args.out / "summary.json"),
                         "witnesses": [str(witnesses / f"{name}.json") for name in summary["witnesses"]]},
                  summary["rejected"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
