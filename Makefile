# Set-up and checks. `make demo` lints the shipped example project; `make test` runs every check.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin

.PHONY: demo test test-newer lint clean

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

# From Python 3.12 on the per-file pass finds comments with Python's own tokenizer (f-strings
# may hold their own quotes): those tests run again there, when this machine has one.
NEWER_PYTHON ?= $(shell .ci/newer-python)
NEWER_VENV ?= .venv-newer
NEWER_TESTS := tests/test_triggers.py tests/test_parsing.py

test: $(VENV)/.dev-installed lint
	$(BIN)/python -m pytest -q
	@$(MAKE) --no-print-directory test-newer

test-newer:
	@if [ -z "$(NEWER_PYTHON)" ]; then \
		echo "no Python 3.12 or later here: $(NEWER_TESTS) ran on $$($(BIN)/python --version) only"; \
	else \
		set -e; \
		[ -x $(NEWER_VENV)/bin/python ] || $(NEWER_PYTHON) -m venv $(NEWER_VENV); \
		$(NEWER_VENV)/bin/python -m pip install --quiet -e ".[dev]"; \
		$(NEWER_VENV)/bin/python --version; \
		$(NEWER_VENV)/bin/python -m pytest -q -p no:cacheprovider $(NEWER_TESTS); \
	fi

clean:
	rm -rf $(VENV) $(NEWER_VENV) .cache .pytest_cache .mypy_cache .ruff_cache .repro_lint_cache
