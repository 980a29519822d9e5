# Every target sets itself up: a virtualenv in .venv with the package and its
# extras installed in editable mode; the VS Code extension's Node packages
# from its package-lock.json.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stamp-install
NPM ?= npm
VSCODE := editors/vscode

.PHONY: setup demo test lint typecheck unit vscode vsix vsix-all code-server slo bench bench-quick bench-long soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all,dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/scopecache demo

lint: setup
	$(BIN)/ruff check lsp_server cache transport tests examples scripts $(VSCODE)/scripts editors/neovim/scripts
	$(BIN)/python $(VSCODE)/scripts/settings_schema.py --check
	$(BIN)/python $(VSCODE)/scripts/editor_languages.py --check
	$(BIN)/python editors/neovim/scripts/helptags.py --check
	$(BIN)/python scripts/settings_doc.py --check
	$(BIN)/python scripts/check_docs.py
	$(BIN)/python scripts/check_layers.py

typecheck: setup
	$(BIN)/mypy

# The VS Code extension: install, compile, lint, unit tests (its end-to-end
# test runs inside the Python suite, against the real server).
vscode: setup
	cd $(VSCODE) && $(NPM) ci --no-audit --no-fund
	cd $(VSCODE) && $(NPM) run compile && $(NPM) run lint && $(NPM) run test:unit

# The platform packages: the extension with the server and every dependency
# as wheels for one platform inside, installed offline on first start
# (scripts/package_vsix.py). `make vsix` packages this machine's target
# (linux-x64 in CI), `make vsix-all` every target the wheels exist for.
vsix: vscode
	$(BIN)/python $(VSCODE)/scripts/package_vsix.py

vsix-all: vscode
	$(BIN)/python $(VSCODE)/scripts/package_vsix.py --all

# code-server and the Node 24 it needs, for the real-VS-Code end-to-end test;
# installed once under $${SCOPECACHE_TOOLS_DIR:-~/.cache/scopecache/tools}.
code-server:
	$(VSCODE)/scripts/install-code-server.sh

unit: setup
	$(BIN)/pytest -q

# A short replay gated by the example SLO file.
slo: setup
	mkdir -p build
	$(BIN)/scopecache trace synth lsp_server/samples/retry.py -o build/slo-trace.jsonl --seed 1
	$(BIN)/scopecache replay build/slo-trace.jsonl --json > build/slo-replay.json
	$(BIN)/scopecache slo check --slo examples/slo.toml --from build/slo-replay.json

# The short SLO gate runs before the long test suite, so a test failure cannot skip it.
test: lint typecheck vscode code-server slo unit

bench: setup
	$(BIN)/python -m tests.bench

bench-quick: setup
	$(BIN)/python -m tests.bench --quick

# make bench plus the long rows (the 100-line replay, every KV-cache window
# with --cache-reuse off and 256, ...): most of an hour on a shared machine.
bench-long: setup
	$(BIN)/python -m tests.bench --long

# Long replays through one real server: RSS over time, latency drift, errors.
SOAK_MINUTES ?= 5
soak: setup
	$(BIN)/python -m tests.soak --minutes $(SOAK_MINUTES)

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache $(VSCODE)/node_modules
