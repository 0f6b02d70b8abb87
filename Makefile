# Set-up and checks. Every target creates or reuses the virtual environment in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-core

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(STAMP)
	$(BIN)/radar stats radar_local/benchmarks/example_helpsteer2.csv --rubric helpsteer2

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python scripts/bench_stats.py

clean:
	rm -rf $(VENV) build *.egg-info
