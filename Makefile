# deplbench — the README's commands. Each target sets up .venv itself, from
# the lockfile requirements/lock.txt (every dependency pinned), so a new
# release of any dependency cannot change what a fresh machine installs.
# `make lock` refreshes the lock; `make test-latest` tries the newest releases.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LOCK   := requirements/lock.txt
LATEST := .venv-latest

# The lock is compiled with CPython 3.11 and pins releases (numpy 2.4,
# pandas 3) that need Python >= 3.11.
export PYCHECK := import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	"requirements/lock.txt needs Python >= 3.11; run make with PYTHON=python3.11 (or newer)")

.PHONY: setup lint test test-fast test-latest lock bench targets demo reproduce clean measure-setup measure replay

# The venv's own pip (not upgraded: nothing unpinned is downloaded) installs
# the locked set, build backend included; then deplbench itself, editable,
# without dependencies and without build isolation (isolation would fetch the
# newest setuptools). `pip check` fails if the lock no longer satisfies
# pyproject.toml (a dependency added there but not locked: add its exact pin,
# and those of its own dependencies, to the lock by hand, as CONTRIBUTING.md
# says; `make lock` upgrades every pin and is a deliberate step of its own).
$(STAMP): $(LOCK) pyproject.toml
	test -x $(PY) || { $(PYTHON) -c "$$PYCHECK" && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	touch $(STAMP)

setup: $(STAMP)
	@echo "setup: deplbench is in $(VENV); put it on PATH with: . $(VENV)/bin/activate (or call $(VENV)/bin/deplbench)"

# Lint and type checks of the package first (configuration in pyproject.toml):
# ruff (pyflakes, pycodestyle, isort, bugbear) on src/, tests/ and perf/, and
# mypy on src/deplbench.
lint: $(STAMP)
	$(PY) -m ruff check
	$(PY) -m mypy

# The full suite, on every core (pytest-xdist; a test module's tests stay in
# one worker, so module fixtures are built once; at most 4 workers: some
# tests start process pools of their own and may use the 2 GiB memory budget).
# Extra pytest options: PYTEST_ARGS, e.g. PYTEST_ARGS='-x -k milp';
# XDIST='-n 0' runs serially.
XDIST ?= -n auto --maxprocesses=4 --dist loadscope
test: lint
	$(PY) -m pytest tests -q $(XDIST) $(PYTEST_ARGS)
	@echo "test: done; deplbench is in $(VENV): . $(VENV)/bin/activate (or call $(VENV)/bin/deplbench)"

# The quick loop (a minute or less on 2 cores: docs/performance.md): every layer, without the
# tests marked slow or integration (marked where each is defined; see tests/conftest.py).
test-fast: $(STAMP)
	$(PY) -m pytest tests -q $(XDIST) -m "not slow and not integration" $(PYTEST_ARGS)

# The suite against the newest releases of every dependency, in a separate
# venv so that .venv keeps the locked versions. Upgrading is a deliberate
# step: if this passes, `make lock` and commit the new lock.
test-latest:
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install -q -U pip
	$(LATEST)/bin/python -m pip install -q -U -e ".[test,peers,docs]"
	$(LATEST)/bin/python -m pip list --format=freeze | grep -v "^-e\|^deplbench"
	$(LATEST)/bin/python -m pytest tests -q -p no:cacheprovider $(XDIST)

# Refresh the lock to the newest releases allowed by pyproject.toml (lower
# bounds only), test, peers and docs extras and build backend included.
lock: $(STAMP)
	$(PY) -m pip install -q pip-tools
	CUSTOM_COMPILE_COMMAND="make lock" $(PY) -m piptools compile --quiet --upgrade \
		--allow-unsafe --strip-extras --build-deps-for editable --extra test --extra peers --extra docs \
		--no-emit-index-url --no-emit-find-links --output-file $(LOCK) pyproject.toml

# The documentation site (mkdocs.yml) into site/, warnings as errors: the
# user guide from docs/, the CLI and API references generated from the
# parser and the docstrings, the changelog. `make test` checks that it
# builds (tests/test_docs_site.py, marked slow).
.PHONY: docs
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

# pytest-benchmark suites perf/bench_*.py -> results/bench/bench.json
# (read by `deplbench report`). Exit status 5 = no suite collected yet: not
# an error. Pass options with BENCH_ARGS, e.g. BENCH_ARGS='-k depl'.
bench: $(STAMP)
	mkdir -p results/bench
	$(PY) -m pytest perf -q -p no:cacheprovider -o python_files='bench_*.py' \
		-o testpaths=perf --benchmark-json=results/bench/bench.json \
		--benchmark-sort=fullname $(BENCH_ARGS) || [ $$? -eq 5 ]

# The issues' performance targets, each measured side by side in one run
# (MILP vs naive formulation, DepL DAG vs networkx reference, every solver on
# the horizon-100000 instance, Dask vs the local pool on quick.toml, two
# runners vs one on a shared store, milp-exact on the seeded populations, the
# adaptive bracket on nine instances, hostile files): over an hour on 2 free
# cores, each script's own time in docs/performance.md.
targets: $(STAMP)
	mkdir -p results/bench
	$(PY) perf/milp_targets.py --out results/bench/milp_targets.json
	$(PY) perf/depl_targets.py
	$(PY) perf/exact_targets.py --out results/bench/exact_targets.json
	$(PY) perf/population_targets.py --out results/bench/population_targets.json
	$(PY) perf/general_targets.py --out results/bench/general_targets.json
	$(PY) perf/limits_targets.py --out results/bench/limits_targets.json
	$(PY) perf/hostile_files_targets.py --out results/bench/hostile_files_targets.json
	$(PY) perf/runner_targets.py --out results/bench/runner_targets.json
	$(PY) perf/adaptive_targets.py --out results/bench/adaptive_targets.json

# The last line says how to call deplbench yourself: it lives in .venv.
demo: $(STAMP)
	mkdir -p results
	$(VENV)/bin/deplbench run perf/sweeps/quick.toml --db results/demo.sqlite
	$(VENV)/bin/deplbench report results/demo.sqlite --out reports/demo
	@echo "demo: open reports/demo/index.html; to run deplbench yourself: . $(VENV)/bin/activate (or call $(VENV)/bin/deplbench)"

# The full sweeps, benchmarks and report: under an hour on 2 cores (the
# measurement, with its load: docs/performance.md); on a Dask
# cluster, run the sweeps with --dask-scheduler ADDR, then this target.
reproduce: $(STAMP)
	mkdir -p results
	$(VENV)/bin/deplbench run perf/sweeps/paper.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run perf/sweeps/complexity.toml --db results/full.sqlite
	$(VENV)/bin/deplbench run perf/sweeps/knapsack.toml --db results/full.sqlite
	$(MAKE) bench
	$(VENV)/bin/deplbench report results/full.sqlite --out reports/full --bench-json results/bench

# The measured loss model (docs/measured.md). measure-setup installs the
# optional training library (PyTorch CPU, scikit-learn) pinned in
# requirements/measure.txt, apart from the core lock. `make measure` reruns
# the shipped experiment (about 2 min on 2 idle cores), refits it and
# re-analyses it; `make replay` plans on the measured family at ℓmax = 0.3
# (the default) and 0.15 with milp-exact, depl-proven, depl, best-exp,
# one-switch and milp, and trains every plan on 1,000 held-out seeds (about
# 25 minutes on the 2-core machine under load, docs/measured.md).
MEASURED := src/deplbench/instances/data/measured
measure-setup: $(STAMP)
	$(PY) -m pip install -q -r requirements/measure.txt

measure: measure-setup
	$(VENV)/bin/deplbench measure run -o $(MEASURED)/digits-mlp.csv.gz
	$(VENV)/bin/deplbench measure refit $(MEASURED)/digits-mlp.csv.gz -o $(MEASURED)/digits-mlp-fit.json \
	    --eq8-output $(MEASURED)/digits-mlp-eq8.json
	$(VENV)/bin/deplbench measure analyse --json > $(MEASURED)/digits-mlp-analysis.json

replay: measure-setup
	$(VENV)/bin/deplbench measure replay --seeds 1000 -o $(MEASURED)/digits-mlp-replay.json
	$(VENV)/bin/deplbench measure replay --seeds 1000 --loss-max 0.15 -o $(MEASURED)/digits-mlp-replay-tight.json

clean:
	rm -rf $(VENV) $(LATEST) results reports/demo reports/full .pytest_cache .benchmarks .hypothesis
