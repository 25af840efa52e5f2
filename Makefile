# deplbench — the README's commands. Each target sets up .venv itself.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup test bench targets demo reproduce clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest tests -q

# pytest-benchmark suites benchmarks/bench_*.py -> results/bench/bench.json
# (read by `deplbench report`). Exit status 5 = no suite collected yet: not
# an error. Pass options with BENCH_ARGS, e.g. BENCH_ARGS='-k depl'.
bench: $(STAMP)
	mkdir -p results/bench
	$(PY) -m pytest benchmarks -q -p no:cacheprovider -o python_files='bench_*.py' \
		-o testpaths=benchmarks --benchmark-json=results/bench/bench.json \
		--benchmark-sort=fullname $(BENCH_ARGS) || [ $$? -eq 5 ]

# The issues' performance targets, each measured side by side in one run
# (MILP vs naive formulation, DepL DAG vs networkx reference): ~10 minutes.
targets: $(STAMP)
	mkdir -p results/bench
	$(PY) benchmarks/milp_targets.py --out results/bench/milp_targets.json
	$(PY) benchmarks/depl_targets.py

demo: $(STAMP)
	$(VENV)/bin/deplbench run benchmarks/sweeps/quick.toml --db results/demo.sqlite
	$(VENV)/bin/deplbench report results/demo.sqlite --out reports/demo

reproduce: $(STAMP)
	$(VENV)/bin/deplbench run benchmarks/sweeps/paper.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run benchmarks/sweeps/complexity.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run benchmarks/sweeps/knapsack.toml --db results/full.sqlite
	$(MAKE) bench
	$(VENV)/bin/deplbench report results/full.sqlite --out reports/full --bench-json results/bench

clean:
	rm -rf $(VENV) results reports/demo reports/full .pytest_cache .benchmarks
