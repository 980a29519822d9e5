# Every target sets itself up: a virtualenv in .venv with the package and its
# extras installed in editable mode.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stamp-install

.PHONY: setup demo test lint typecheck unit bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/scopecache demo

lint: setup
	$(BIN)/ruff check lsp_server cache transport tests

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest -q

test: lint typecheck unit

bench: setup
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
