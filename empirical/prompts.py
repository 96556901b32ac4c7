"""The paper's prompts, drawn exactly as the authors' published code draws them (SPEC section 4).

The authors (cyphylab/GPT-Consensus, ``GPTConsensus.py``) seed Python's ``random`` module with 42 and
build ``[[random.randint(0, V - 1) for _ in range(L)] for _ in range(N)]``: token after token, prompt
after prompt, from one stream. A private ``random.Random`` reproduces that stream without touching
the global generator.
"""

from __future__ import annotations

import random

#: The authors' seed.
PAPER_SEED = 42
#: GPT-2's (and GPT-Neo's) vocabulary size, the paper's V.
GPT2_VOCAB_SIZE = 50257


def authors_prompts(n: int, length: int, vocab_size: int, seed: int = PAPER_SEED) -> list[list[int]]:
    """``n`` prompts of ``length`` token ids, uniform on ``0..vocab_size-1``, as the authors draw them."""
    for label, value in (("n", n), ("length", length), ("vocab_size", vocab_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{label}={value!r} must be a positive integer.")
    generator = random.Random(seed)
    return [[generator.randint(0, vocab_size - 1) for _ in range(length)] for _ in range(n)]
