# deplbench — the README's commands. Each target sets up .venv itself.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test bench demo reproduce clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest tests -q

bench: $(STAMP)
	mkdir -p results/bench
	$(PY) -m pytest benchmarks -q -o python_files='bench_*.py' --benchmark-json=results/bench/bench.json

demo: $(STAMP)
	$(VENV)/bin/deplbench run benchmarks/sweeps/quick.toml --db results/demo.sqlite
	$(VENV)/bin/deplbench report results/demo.sqlite --out reports/demo

reproduce: $(STAMP)
	$(VENV)/bin/deplbench run benchmarks/sweeps/paper.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run benchmarks/sweeps/complexity.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run benchmarks/sweeps/knapsack.toml --db results/full.sqlite
	$(VENV)/bin/deplbench report results/full.sqlite --out reports/full

clean:
	rm -rf $(VENV) results reports/demo reports/full .pytest_cache .benchmarks
