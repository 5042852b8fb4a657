# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APPS := .venv-apps
hash = $(shell $(PYTHON) -c 'import hashlib,sys;print(hashlib.sha256(open("$(1)","rb").read()).hexdigest()[:12])')
STAMP := $(VENV)/.installed-$(call hash,pyproject.toml)
APPS_STAMP := $(APPS)/.installed-$(call hash,tests/apps/requirements.txt)-$(call hash,pyproject.toml)
FRAMEWORKS := .venv-frameworks
FRAMEWORKS_STAMP := $(FRAMEWORKS)/.installed-$(call hash,tests/frameworks/requirements.txt)-$(call hash,pyproject.toml)
GATEWAY := .venv-gateway
GATEWAY_STAMP := $(GATEWAY)/.installed-$(call hash,tests/gateway/newest.txt)-$(call hash,tests/gateway/requirements.txt)-$(call hash,pyproject.toml)
GATEWAY_LOWEST := .venv-gateway-lowest
GATEWAY_LOWEST_STAMP := $(GATEWAY_LOWEST)/.installed-$(call hash,tests/gateway/lowest.txt)-$(call hash,tests/gateway/requirements.txt)-$(call hash,pyproject.toml)
PIP := --quiet --disable-pip-version-check
# The ai releases `diff --adapter vercel-ai` is tested with, and the Node example app that
# `callgate tape run` replays, each pinned by its lockfile.
NODE_ENVS := tests/node/ai-7 tests/node/ai-6 examples/node
node_stamp = $(1)/node_modules/.installed-$(call hash,$(1)/package-lock.json)
NODE_STAMPS := $(foreach env,$(NODE_ENVS),$(call node_stamp,$(env)))

# mitmproxy 12 needs Python 3.12+: the proxy tests run there too when one is installed.
PYTHON12 ?= $(shell for p in python3.12 python3.13 $$HOME/.pyenv/versions/3.1[23]*/bin/python3; do \
  "$$p" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && echo "$$p" && break; \
  done)
VENV12 := .venv-mitmproxy12
STAMP12 := $(VENV12)/.installed-$(call hash,pyproject.toml)

.PHONY: demo test test-fast test-full test-gateway-lowest test-mitmproxy12 lint bench instructions fuzz mutation-score soak load docs browser node clean

# pytest on both cores: tests that share a server or a built environment carry one
# xdist_group and run on one worker. The 15 slowest are printed at the end (docs/testing.md).
PYTEST = -m pytest -q -n 2 --dist loadgroup --durations=15

# callgate itself, with its test tools.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP) --upgrade pip
	$(BIN)/python -m pip install $(PIP) -e '.[proxy,test,docs]'
	rm -f $(VENV)/.installed-*
	touch $@

# The provider SDKs that play the user's app, in an environment of their own, with callgate
# installed as a user installs it beside them (no proxy extra) for the tape tests.
$(APPS_STAMP): tests/apps/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(APPS)
	$(APPS)/bin/python -m pip install $(PIP) --upgrade pip
	$(APPS)/bin/python -m pip install $(PIP) -r tests/apps/requirements.txt -e .
	rm -f $(APPS)/.installed-*
	touch $@

# The agent frameworks that want openai 2 (CrewAI, strands-agents), for the framework recipes;
# the others are in the apps environment.
$(FRAMEWORKS_STAMP): tests/frameworks/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(FRAMEWORKS)
	$(FRAMEWORKS)/bin/python -m pip install $(PIP) --upgrade pip
	$(FRAMEWORKS)/bin/python -m pip install $(PIP) -r tests/frameworks/requirements.txt -e .
	rm -f $(FRAMEWORKS)/.installed-*
	touch $@

# The LiteLLM proxy with callgate's guardrail, its clients and the OpenTelemetry SDK, for the
# gateway tests: the proxy's web stack in an environment of its own, twice: the newest LiteLLM
# the extra's range takes and the lowest it accepts (tests/gateway/newest.txt, lowest.txt).
$(GATEWAY_STAMP): tests/gateway/newest.txt tests/gateway/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(GATEWAY)
	$(GATEWAY)/bin/python -m pip install $(PIP) --upgrade pip
	$(GATEWAY)/bin/python -m pip install $(PIP) -r tests/gateway/newest.txt -e '.[litellm]'
	rm -f $(GATEWAY)/.installed-*
	touch $@

$(GATEWAY_LOWEST_STAMP): tests/gateway/lowest.txt tests/gateway/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(GATEWAY_LOWEST)
	$(GATEWAY_LOWEST)/bin/python -m pip install $(PIP) --upgrade pip
	$(GATEWAY_LOWEST)/bin/python -m pip install $(PIP) -r tests/gateway/lowest.txt -e '.[litellm]'
	rm -f $(GATEWAY_LOWEST)/.installed-*
	touch $@

# Debian's Chromium (and an emoji font, so mitmweb's markers show) for the browser tests, and
# tmux for the terminal tests of the mitmproxy console.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium fonts-noto-color-emoji tmux >/dev/null; \
	  else echo "chromium or tmux is missing and this is not root: their tests will skip"; fi; \
	fi

# Node.js and npm from the machine's package manager, for the Vercel AI SDK's diff adapters and
# the Node example; then each pinned folder (npm ci starts node_modules afresh, stamp and all).
node:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      nodejs npm >/dev/null; \
	  else echo "node or npm is missing and this is not root: the Node tests will skip"; fi; \
	fi

define NODE_ENV
$(call node_stamp,$(1)): $(1)/package-lock.json | node
	@if command -v npm >/dev/null 2>&1; then \
	  cd $(1) && npm ci --no-audit --no-fund --loglevel=error >/dev/null && touch node_modules/$$(@F); \
	fi
endef
$(foreach env,$(NODE_ENVS),$(eval $(call NODE_ENV,$(env))))

demo: $(STAMP) $(APPS_STAMP)
	@$(BIN)/python -m tools.demo

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

# Every check that can fail, but the exhaustive sweeps (marked `full`).
test: lint $(APPS_STAMP) $(FRAMEWORKS_STAMP) $(GATEWAY_STAMP) $(GATEWAY_LOWEST_STAMP) browser $(NODE_STAMPS)
	$(BIN)/python $(PYTEST) -m 'not full'
	$(MAKE) --no-print-directory test-gateway-lowest
	$(MAKE) --no-print-directory test-mitmproxy12

# Everything `make test` runs, and the sweeps: run it after a change to packaging, the tap's
# limits or the fuzz targets (docs/testing.md).
test-full: lint $(APPS_STAMP) $(FRAMEWORKS_STAMP) $(GATEWAY_STAMP) $(GATEWAY_LOWEST_STAMP) browser $(NODE_STAMPS)
	$(BIN)/python $(PYTEST)
	$(MAKE) --no-print-directory test-gateway-lowest
	$(MAKE) --no-print-directory test-mitmproxy12 MARKS=proxy

# The gateway tests again, on the lowest LiteLLM release callgate[litellm] accepts.
test-gateway-lowest: $(STAMP) $(GATEWAY_LOWEST_STAMP)
	$(GATEWAY_LOWEST)/bin/python -c 'import importlib.metadata as m; print("litellm", m.version("litellm"))'
	CALLGATE_GATEWAY_VENV=$(GATEWAY_LOWEST) $(BIN)/python $(PYTEST) -p no:cacheprovider -m 'gateway and not full'

# The engine, redaction, reports and CLI: an answer in under a minute. No proxy, browser, SDK,
# gateway, corpus or packaging test (see the markers in pyproject.toml).
# The fast lane: `make test-fast`, and what `make mutation-score` runs against each mutant
# (tools/mutation_score.py reads this line: one definition for both).
FAST_MARKERS := not (slow or sweep or proxy or browser or sdk or gateway or corpus)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m '$(FAST_MARKERS)'

$(STAMP12): pyproject.toml
	$(PYTHON12) -m venv $(VENV12)
	$(VENV12)/bin/python -m pip install $(PIP) --upgrade pip
	$(VENV12)/bin/python -m pip install $(PIP) -e '.[proxy,test]'
	rm -f $(VENV12)/.installed-*
	touch $@

# The proxy tests (the addon, record and mitmweb) again, on mitmproxy 12.
MARKS ?= proxy and not full
ifeq ($(PYTHON12),)
test-mitmproxy12:
	@echo "no python3.12 or python3.13 found: the mitmproxy 12 run is left out"
else
test-mitmproxy12: $(STAMP12) $(APPS_STAMP) browser
	$(VENV12)/bin/python -c 'import mitmproxy.version as v; print("mitmproxy", v.VERSION)'
	$(VENV12)/bin/python $(PYTEST) -p no:cacheprovider -m '$(MARKS)'
endif

bench: $(STAMP) $(APPS_STAMP)
	$(BIN)/python bench/bench_engine.py
	$(BIN)/python bench/bench_framing.py
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_replay.py
	$(BIN)/python bench/bench_floor.py
	$(BIN)/python bench/bench_proxy.py
	PYTHONPATH=. $(APPS)/bin/python bench/bench_guard.py

# Instructions counted by callgrind (needs valgrind), which the machine's speed does not move:
# the tap per event, the fixture writer per fixture, replay against its floor, and a turn through
# an SDK with callgate.guard against one without.
instructions: $(STAMP) $(APPS_STAMP)
	$(BIN)/python bench/instructions.py
	PYTHONPATH=. $(APPS)/bin/python bench/bench_guard.py instructions

# The fuzz tests at length (make test runs a slice): FUZZ_EXAMPLES each, from a seed it prints.
FUZZ_EXAMPLES ?= 50000
ifndef FUZZ_SEED
FUZZ_SEED := $(shell $(PYTHON) -c 'import random; print(random.randrange(2**32))')
endif
fuzz: $(STAMP)
	@echo "fuzz: $(FUZZ_EXAMPLES) examples per test, seed $(FUZZ_SEED)"
	CALLGATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q -p no:cacheprovider \
	  --hypothesis-seed=$(FUZZ_SEED) tests/test_fuzz.py

# How strongly the tests pin the engine, the redactor and the gates: MUTANTS sampled mutants of
# reassemble/, redact/ and the code that decides what is released, each run against the fast lane
# (and the guard's against its SDK tests) in a copy of the checkout (tools/mutation_score.py).
MUTANTS ?= 200
mutation-score: $(STAMP) $(APPS_STAMP)
	MUTANTS=$(MUTANTS) $(BIN)/python -m tools.mutation_score

# TURNS turns from CLIENTS clients through one proxy: memory, descriptors and CPU per turn as
# they go, and one fixture per turn (see bench/soak_proxy.py). `make load` has 200 streams open
# at once.
TURNS ?= 10000
CLIENTS ?= 8
soak: $(STAMP)
	TURNS=$(TURNS) CLIENTS=$(CLIENTS) $(BIN)/python bench/soak_proxy.py

load: $(STAMP)
	TURNS=2000 CLIENTS=200 SAMPLE=200 $(BIN)/python bench/soak_proxy.py

# The files generated from code, then the site (site/); a broken link or anchor fails it.
docs: $(STAMP)
	$(BIN)/python -m tools.gendocs
	$(BIN)/zensical build --strict

clean:
	rm -rf $(VENV) $(APPS) $(FRAMEWORKS) $(GATEWAY) $(GATEWAY_LOWEST) $(VENV12) .pytest_cache .mypy_cache .ruff_cache .hypothesis \
	  $(NODE_ENVS:%=%/node_modules)
