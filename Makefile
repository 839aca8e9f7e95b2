# Set-up and checks. `make demo` lints the shipped example project; `make test` runs every check.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: demo test lint clean

$(BIN)/repro-lint: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# torch is pinned: an unpinned torch pulls a multi-GB CUDA build; 2.13.0 installs a CPU build.
$(VENV)/.dev-installed: pyproject.toml $(BIN)/repro-lint
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[dev,verify,lsp]"
	touch $@

demo: $(BIN)/repro-lint
	@$(BIN)/repro-lint examples/ || echo "(exit status $$?: hazards found, as expected in the demo project)"

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check repro_lint tests benchmarks
	$(BIN)/ruff format --check repro_lint tests benchmarks
	$(BIN)/mypy

test: $(VENV)/.dev-installed lint
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache .repro_lint_cache
