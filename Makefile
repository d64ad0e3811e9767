# aiograd — build and test entry points.
#   make test       create .venv, install -e .[test], type-check (mypy, 0 errors), run the test
#                   suite (warnings are errors) and build the documentation site
#   make demo       install -e .[demo] and run python -m aiograd.demo
#   make bench      install -e .[bench,test] and run python -m benchmarks
#   make docs       install -e .[docs] and build the documentation site into site/ (--strict)
#   make notebooks  install -e .[notebooks] and re-run notebooks/*.ipynb in place (their saved outputs)
#   make typecheck  mypy on aiograd/ and the pytest plugin (its op-method stub: python -m aiograd.ops._stubgen)
#   make clean      remove the venv, caches and build outputs
#
# Only Python >= 3.10 (as $(PYTHON)) is needed on PATH. Each extra is installed
# once and re-installed only when pyproject.toml changes (stamp files in .venv/).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PIP_INSTALL := $(PIP) install --disable-pip-version-check --progress-bar off
PYTEST_ARGS ?=

.DEFAULT_GOAL := test
.PHONY: test typecheck demo bench docs notebooks venv clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --quiet --upgrade pip

venv: $(PY)

$(VENV)/.stamp-test: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[test]'
	@touch $@

$(VENV)/.stamp-demo: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[demo]'
	@touch $@

$(VENV)/.stamp-bench: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[bench,test]'
	@touch $@

$(VENV)/.stamp-notebooks: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[notebooks]'
	@touch $@

$(VENV)/.stamp-docs: pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[docs]'
	@touch $@

# The documentation site: any warning (a broken link, a reference that names
# nothing) fails the build. NO_MKDOCS_2_WARNING quiets mkdocs-material's banner.
MKDOCS_BUILD = NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# Warnings are errors through filterwarnings = ["error"] in pyproject.toml (not -W error
# on the command line: that would override the ini file's targeted ignores).
# One BLAS thread per kernel in tests: aiograd's device executors already run kernels
# in parallel, and BLAS threads on top oversubscribe a 2-core machine (slow, noisy).
# The test extra includes the docs extra: the site is built after the tests.
# mypy first: a type error fails in seconds, before the suite runs.
test: typecheck
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q $(PYTEST_ARGS)
	$(MKDOCS_BUILD)

typecheck: $(VENV)/.stamp-test
	$(PY) -m mypy aiograd _aiograd_pytest_plugin.py

demo: $(VENV)/.stamp-demo
	$(PY) -m aiograd.demo

bench: $(VENV)/.stamp-bench
	$(PY) -m benchmarks

docs: $(VENV)/.stamp-docs
	$(MKDOCS_BUILD)

# The outputs saved in the notebooks come from this run (one BLAS thread, as in the tests).
# Graphviz's `dot` program on PATH makes 01's graph a picture (without it: its DOT source).
notebooks: $(VENV)/.stamp-notebooks
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) notebooks/run_notebooks.py

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .mypy_cache .hypothesis .ruff_cache .cache
	find . -path ./.git -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
