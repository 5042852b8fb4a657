# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell $(PYTHON) -c 'import hashlib,sys;print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest()[:12])')

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

demo: $(STAMP)
	@$(BIN)/python -m cli.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest -q

docs: $(STAMP)
	$(BIN)/python -m cli.gendocs

bench: $(STAMP)
	$(BIN)/python bench/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
