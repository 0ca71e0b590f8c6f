# Two commands do everything on a fresh machine (Python 3.11, Java 17, Rust):
#   make run    set up .venv if needed, then run the whole pipeline on the sample logs
#   make test   set up .venv if needed, then run the whole test suite (what CI runs)
# and one for every commit:
#   make check  the fast tier: lint, layers, docs, every module's pure logic and one small run
#   make lint   ruff (lint + format check), the import-linter layers, mkdocs build --strict
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.iolake-setup
# The S3-compatible server the tests start (tests/support/services.py): S3Proxy, Apache-2.0
S3PROXY := $(VENV)/services/s3proxy-jar-with-dependencies.jar
S3PROXY_URL := https://repo1.maven.org/maven2/org/gaul/s3proxy/4.1.0/s3proxy-4.1.0-jar-with-dependencies.jar
S3PROXY_SHA256 := a4d025969aaf796616ed4b1e2491d87d455ce84bb28cb9db086b2e6aaa68b48d
NATIVE_SRC := $(wildcard native/Cargo.toml native/Cargo.lock native/pyproject.toml native/src/*.rs native/src/*/*.rs)

.PHONY: setup run test check lint docs cluster bench clean
setup: $(STAMP) $(S3PROXY)

$(STAMP): requirements.lock pyproject.toml $(NATIVE_SRC)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	if [ -f native/Cargo.toml ]; then $(BIN)/pip install --quiet ./native; fi
	touch $(STAMP)

$(S3PROXY):
	mkdir -p $(dir $@)
	curl -fsSL --retry 3 -o $@.part $(S3PROXY_URL)
	echo "$(S3PROXY_SHA256)  $@.part" | sha256sum -c --quiet
	mv $@.part $@

run: setup
	$(BIN)/iolake run $(ARGS)

test: lint
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

check: lint
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $$(mktemp -d)

# The docs site on http://127.0.0.1:8000 (regenerate the reference pages first)
docs: setup
	$(BIN)/python -m iolake.reference
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# The pipeline on a real Spark standalone cluster (master + 2 workers) started and stopped on this machine
cluster: setup
	cluster/standalone.sh $(ARGS)

bench: setup
	$(BIN)/python -m bench --quick

clean:
	rm -rf lake mlruns mlflow.db spark-warehouse
