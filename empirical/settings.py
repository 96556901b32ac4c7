"""The settings of a run and an audit, and the choices and defaults of their command line: importable without
PyTorch or transformers, so that ``consensus run --help`` and a bad argument answer at once (the modules that use
them, :mod:`empirical.run`, :mod:`empirical.models`, :mod:`empirical.loop`, :mod:`empirical.decision`, import them
from here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .prompts import MAX_PROMPTS, PAPER_SEED, check_count, check_seed

WEIGHTS = ("trained", "random", "redrawn")
ATTN_IMPLEMENTATIONS = ("eager", "sdpa")
SMOLLM2 = "smollm2-135m"
#: The metrics of E: ``signed`` (eq. 9, the default) and ``absolute`` (the authors' older |cos|).
METRICS = ("signed", "absolute")
#: How passes are chained (:mod:`empirical.loop`): ``ours`` = ``authors`` (final norm between passes), ``nanogpt``
#: (none).
LOOP_VARIANTS = ("ours", "authors", "nanogpt")

#: Passes read (the horizon). Reason: SPEC section 7's protocol runs 50 passes (the paper prints no horizon).
HORIZON = 50
#: The window in octaves of depth (1: the last half of the horizon). Reason: a power law's exponent is a slope per
#: octave, the same at every horizon, so a fixed depth ratio keeps the test scale-free; the first half is left to
#: transients.
WINDOW = 1.0
#: The slowest decay called convergence, as an exponent of depth. Reason: depth^-0.1 falls by 1000^0.1 = 2.0 over the
#: authors' default 1000 loops (cyphylab/GPT-Consensus, loop_size): E halves at most once over their longest run.
THRESHOLD = 0.1
#: The level of each one-sided test. Reason: the conventional 5%.
ALPHA = 0.05
#: The least ratio of E's falling part to the level its slowing fall implies, at the end of the window (E = c + a
#: depth^q read off the window's two halves: ``(E - c) / c``). Reason: 1 is where the level is half of E, so E is as
#: much the level as it is a fall: below it the data say "a level" at least as loudly as "E -> 0". Written with the
#: referee's approaches to a level (0.03 + 0.5/k, 1e-2 + 0.5/k) before it met any run.
LEVEL_RATIO = 1.0
DEVICES = ("auto", "cpu", "cuda")
#: A sane bound on passes (the paper's longest protocol runs 50): more is a typo, not a run.
MAX_PASSES = 10_000
#: The dtypes by name (:data:`empirical.run.DTYPES` maps them to PyTorch's).
DTYPE_NAMES = ("float32", "bfloat16", "float16", "float64")
#: ``--twin`` choices: none, or a float64 twin of the first ``twin_prompts`` prompts (:class:`empirical.run._Twin`).
TWINS = (None, "float64")
#: The twin's prompts by default (the first ones; all of them when the run has fewer): a float64 twin costs about
#: ``TWIN_PROMPTS / prompts`` of the run's passes at the float64 rate, and its copy of the model in float64.
TWIN_PROMPTS = 2


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
    loop_variant: str = "ours"
    metric: str = "signed"
    twin: str | None = None
    twin_prompts: int = TWIN_PROMPTS

    def __post_init__(self) -> None:
        if self.weights not in WEIGHTS:
            raise ValueError(f"--weights {self.weights!r} must be one of {WEIGHTS}.")
        for name in ("prompts", "length", "passes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"--{name} {value!r} must be a positive integer.")
        check_count("--prompts", self.prompts, MAX_PROMPTS)
        check_count("--passes", self.passes, MAX_PASSES)
        check_seed("--seed", self.seed)
        check_seed("--prompt-seed", self.prompt_seed)
        if self.device not in DEVICES:
            raise ValueError(f"--device {self.device!r} must be one of {DEVICES}.")
        if self.dtype != "auto" and self.dtype not in DTYPE_NAMES:
            raise ValueError(f"--dtype {self.dtype!r} must be 'auto' or one of {DTYPE_NAMES}.")
        check_variant(self.loop_variant, self.metric)
        if self.twin not in TWINS:
            raise ValueError(f"--twin {self.twin!r} must be one of {tuple(t for t in TWINS if t)} (or none).")
        if self.twin is not None and self.dtype == "float64":
            raise ValueError("--twin float64 with --dtype float64 would compare the run with itself; leave --twin out.")
        if not isinstance(self.twin_prompts, int) or self.twin_prompts < 1:
            raise ValueError(f"--twin-prompts {self.twin_prompts!r} must be a positive integer.")

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share: all but the number of passes; the loop variant, metric and twin
        only where they are not their defaults (so that a run folder written before they existed still resumes),
        and the twin's prompts only with a twin."""
        identity = {k: v for k, v in asdict(self).items() if k != "passes"}
        for name, default in (("loop_variant", "ours"), ("metric", "signed"), ("twin", None)):
            if identity[name] == default:
                del identity[name]
        if self.twin is None:
            del identity["twin_prompts"]
        return identity

#: ``gpu-checks``: passes per run, the collapse test's horizon, SPEC section 7's protocol (:data:`HORIZON`).
GPU_PASSES = 50
#: ``gpu-checks``: passes per run with --tiny (a smoke test).
TINY_PASSES = 3


def check_variant(loop_variant: str, metric: str) -> None:
    """A ``ValueError`` naming the choices if ``loop_variant`` or ``metric`` is not one."""
    if loop_variant not in LOOP_VARIANTS:
        raise ValueError(f"--loop-variant {loop_variant!r} must be one of {LOOP_VARIANTS}.")
    if metric not in METRICS:
        raise ValueError(f"--metric {metric!r} must be one of {METRICS}.")


@dataclass(frozen=True)
class AuditSettings:
    """What an audit runs: ``prompts`` authors' prompts of ``length`` tokens, ``passes`` loops, ``seed`` for random weights."""

    prompts: int = 8
    length: int = 64
    passes: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prompts", "length", "passes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if self.prompts < 2:
            raise ValueError(f"prompts={self.prompts} must be at least 2 (rate intervals are over prompts).")
        from empirical.prompts import SEED_LIMIT

        for name, most in (("prompts", MAX_PROMPTS), ("passes", MAX_PASSES)):
            if getattr(self, name) > most:
                raise ValueError(f"{name}={getattr(self, name)} must be at most {most}.")
        if not isinstance(self.seed, int) or not 0 <= self.seed < SEED_LIMIT:
            raise ValueError(f"seed={self.seed!r} must be an integer in 0..2^63 - 1.")
