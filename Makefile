# crawlcycle: `make demo` sets up and runs the demo, `make test` runs the tests.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export CRAWLCYCLE_CONFIG ?= $(CURDIR)/crawlcycle.toml

.PHONY: install demo celery-demo soak test test-fast lint ui report bench-fetch bench-parse bench-score bench-policies lock clean docs docs-serve reference

# The virtual environment is (re)built from the dev lock (runtime set + test tools) whenever it or pyproject changes.
$(VENV)/.installed: requirements-dev.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.8
	$(BIN)/uv pip sync --quiet --python $(BIN)/python requirements-dev.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $@

# The virtual environment alone, for a crawl of your own (docs/howto/your-own-crawl.md).
install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/crawlcycle demo --cycles 3

# The distributed topology on this machine: CeleryExecutor, PostgreSQL and Redis (apt-get installs them if missing).
celery-demo: $(VENV)/.installed
	$(BIN)/crawlcycle celery-demo

# A fortnight of daily cycles scheduled by Airflow while SIGKILLs hit its components, its tasks and the writer
# mid-transaction; every table compared with a clean crawl (docs/howto/recover.md).
soak: $(VENV)/.installed
	$(BIN)/crawlcycle soak --cycles 14 --kills 30 --seed 1

# The tests that start Airflow, system services or a browser, or kill tasks at random points: the rest run side by
# side, one worker per core (pytest-xdist), each test file on one worker: a module's crawls are built once.
FAST := not airflow and not services and not browser and not faults

# The whole suite: the fast part side by side, then those one at a time (they hold ports and both cores), each
# part ending with its 20 slowest tests; fails if either part failed.
test: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=20 -m "$(FAST)"; fast=$$?; \
	$(BIN)/python -m pytest -q --durations=20 -m "not ($(FAST))"; slow=$$?; \
	exit $$(( fast || slow ))

test-fast: $(VENV)/.installed
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "$(FAST)"

lint: $(VENV)/.installed
	$(BIN)/ruff check include dags plugins tests bench sql docs

ui: $(VENV)/.installed
	$(BIN)/crawlcycle ui

report: $(VENV)/.installed
	$(BIN)/crawlcycle report

# The documentation site (mkdocs.yml, docs/): built with warnings as errors, or served on http://127.0.0.1:8000.
docs: $(VENV)/.installed
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(VENV)/.installed
	$(BIN)/mkdocs serve

# The tables of the documentation written from the code (settings, commands, policies), rewritten in their pages;
# `--check` only tells which pages differ.
reference: $(VENV)/.installed
	$(BIN)/python -m crawlcycle.reference_pages

bench-fetch: $(VENV)/.installed
	$(BIN)/python bench/fetch.py

bench-parse: $(VENV)/.installed
	$(BIN)/python bench/parse.py --rounds 2

bench-score: $(VENV)/.installed
	$(BIN)/python bench/score.py

bench-policies: $(VENV)/.installed
	$(BIN)/python bench/policies.py

# Re-resolve the pinned versions (needs the package index); commit the four files. requirements.lock is the base
# install, what a crawl needs; requirements-celery.lock adds scale-out (the Docker image installs it);
# requirements-semantic.lock adds the optional embedding model (setting semantic_match); requirements-dev.lock is
# every extra (lab, celery, semantic) plus the test and lint tools.
lock:
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 --generate-hashes -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra celery --python-version 3.11 --generate-hashes \
		-c requirements.lock -o requirements-celery.lock
	$(BIN)/uv pip compile pyproject.toml --extra semantic --python-version 3.11 --generate-hashes \
		-c requirements.lock --excludes requirements-excludes.txt -o requirements-semantic.lock
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra lab --extra celery --extra semantic --python-version 3.11 \
		--generate-hashes -c requirements-celery.lock -c requirements-semantic.lock --excludes requirements-excludes.txt \
		-o requirements-dev.lock

clean:
	rm -rf data .airflow
