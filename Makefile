# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint install browser

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

# Creates the venv, installs, writes a starter groupx.json if there is none, migrates, serves
# 127.0.0.1:4310 (or what groupx.json says). --noreload: a code reload would kill the agents.
run: install
	$(PY) manage.py init_config
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py runserver --noreload

test: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check . || true
