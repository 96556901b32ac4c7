"""``python -m sim compile`` (``sim.solvers.ahead``): after it, a search's and a figure's integrations compile nothing.

Checked in a fresh process, whose Numba dispatchers start empty: the paths' signatures are loaded from the cache
(compiled there first when it has none, about 40 s), then a conjecture search's integration, a figure's compiled
integration and ``solve`` on the causal fields of Figs. 4 and 5 run, and no compiled function may gain a signature.
The control leaves the compiled integrations out of the paths: the search's integration then shows as new.
"""

import json
import subprocess
import sys
from pathlib import Path

from sim.__main__ import main

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, sys
import numpy as np
import sim.field.instances, sim.field.kernels, sim.solvers.compiled, sim.solvers.stepsize
from numba.core.registry import CPUDispatcher
from sim.solvers.ahead import PATHS, compile_ahead
from sim import AdaptiveStepSize, Dopri5, solve
from sim.conjectures.families import chunk_seed, get_family
from sim.conjectures.search import integrate
from sim.figures.scenarios import (causal_random_example, full_attention_example, symmetric_value_example,
                                   uniform_box_tokens)
from sim.solvers.compiled import solve_field

MODULES = (sim.field.instances, sim.field.kernels, sim.solvers.compiled, sim.solvers.stepsize)

def signatures():
    return {f"{module.__name__}.{name}": sorted(map(str, value.signatures)) for module in MODULES
            for name, value in vars(module).items() if isinstance(value, CPUDispatcher)}

left_out = json.loads(sys.argv[1])
compile_ahead({name: path for name, path in PATHS.items() if name not in left_out})
before = signatures()
family = get_family("conj.multihead-causal")
rng = np.random.default_rng(chunk_seed("conj.multihead-causal", 0))
integrate(family, family.draw(rng, 2, family.draw_shape(rng))[1], horizon=0.1)
y0 = uniform_box_tokens(np.random.default_rng(4), (2, 5, 3))
solve_field(full_attention_example(), y0, 0.1, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8))
for field in (causal_random_example(4, dim=3).field, symmetric_value_example()):
    solve(field, Dopri5(), 0.0, 0.1, y0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-9))
after = signatures()
print(json.dumps(sorted(name for name in after if after[name] != before[name])))
"""


def _compiled_anew(left_out: list[str]) -> list[str]:
    """The compiled functions that gained a signature after ``compile_ahead`` without ``left_out``."""
    ran = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(left_out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_after_compiling_ahead_the_suites_runs_compile_nothing():
    assert _compiled_anew([]) == []


def test_control_without_the_compiled_integrations_a_search_compiles_them():
    assert "sim.solvers.compiled._dopri5_instances" in _compiled_anew(["solve_field", "solve_instances"])


def test_the_command_prints_each_path_and_its_seconds(capsys):
    assert main(["compile"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["solve, full field", "solve, causal field", "solve_field",
                                                      "solve_instances", "InstanceField"]
    assert all(line.endswith(" s") for line in lines)
