# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APPS := .venv-apps
hash = $(shell $(PYTHON) -c 'import hashlib,sys;print(hashlib.sha256(open("$(1)","rb").read()).hexdigest()[:12])')
STAMP := $(VENV)/.installed-$(call hash,pyproject.toml)
APPS_STAMP := $(APPS)/.installed-$(call hash,tests/apps/requirements.txt)
PIP := --quiet --disable-pip-version-check

.PHONY: demo test lint bench docs browser clean

# callgate itself, with its test tools.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP) --upgrade pip
	$(BIN)/python -m pip install $(PIP) -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

# The provider SDKs that play the user's app, in an environment of their own.
$(APPS_STAMP): tests/apps/requirements.txt
	$(PYTHON) -m venv $(APPS)
	$(APPS)/bin/python -m pip install $(PIP) --upgrade pip
	$(APPS)/bin/python -m pip install $(PIP) -r tests/apps/requirements.txt
	rm -f $(APPS)/.installed-*
	touch $@

# Debian's Chromium (and an emoji font, so mitmweb's markers show) for the browser tests.
browser:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium fonts-noto-color-emoji >/dev/null; \
	  else echo "chromium is missing and this is not root: the browser test will skip"; fi; \
	fi

demo: $(STAMP) $(APPS_STAMP)
	@$(BIN)/python -m cli.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: lint $(APPS_STAMP) browser
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/bench_engine.py

docs: $(STAMP)
	$(BIN)/python -m cli.gendocs

clean:
	rm -rf $(VENV) $(APPS) .pytest_cache .mypy_cache .ruff_cache .hypothesis
