# fleetcap: `make run` to try it, `make test` to check it. Everything installs into .venv/.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
DEMO_PORT ?= 8100

.PHONY: install init run test lint format browser-deps migrate bench bench-load clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed  ## create .venv and install everything (idempotent)

# var/ (SQLite, static files, the filesystem broker) and var/secret_key: made here, never on import.
init: install  ## create var/ and generate var/secret_key once (idempotent)
	$(PY) manage.py init_local

migrate: init
	$(PY) manage.py migrate --noinput

run: migrate  ## install, migrate, load the catalogue, demo logins and fleet, start web + worker + beat + fake endpoint
	$(PY) manage.py load_catalog
	$(PY) manage.py ensure_demo_users
	$(PY) manage.py ensure_demo_fleet --endpoint http://127.0.0.1:$(DEMO_PORT)
	@echo "Open http://$(HOST):$(PORT)/ and log in with a demo login above."
	$(PY) manage.py runstack --host $(HOST) --port $(PORT) --demo-endpoint-port $(DEMO_PORT)

# Debian's Chromium drives the browser tests (Playwright never downloads a browser here).
browser-deps:
	@test -x /usr/bin/chromium || { command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); } \
	  || echo "warning: could not install Debian's chromium; the browser tests will fail"

test: init browser-deps  ## the whole suite (SQLite and a filesystem broker unless DATABASE_URL / CELERY_BROKER_URL are set)
	$(PY) -m pytest -q -n 2 --dist loadfile

lint: install  ## ruff, and the import contracts in pyproject.toml (layers point one way)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYTHONPATH=. $(VENV)/bin/lint-imports

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) bench/bench_sizing.py
	$(PY) bench/bench_search.py

# Load test: gunicorn + PostgreSQL + Redis + worker + beat on loopback, locust (docs/benchmarks.md "Load").
bench-load: init
	$(PY) bench/bench_load.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis test-artifacts
