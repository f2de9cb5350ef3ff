# Two commands set everything up on a fresh machine: `make run` and `make test`.
# The venv's interpreter: the first Python 3.11+ on PATH whose core is linked into its executable
# (Debian's python3, built with PGO and LTO), else python3; ~15 % less CPU per Turn than a shared
# libpython build such as pyenv's (tools/venv_python.sh, docs/DECISIONS.md D77). An existing .venv
# is kept: `rm -r .venv` rebuilds it. `make PYTHON=…` chooses by hand.
PYTHON ?= $(shell sh tools/venv_python.sh)
VENV := .venv
PY := $(VENV)/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run dist test-install test test-plain test-fast test-browser test-faults test-real test-split test-remote test-pg bench bench-compare bench-profile bench-floor lint install browser-deps typecheck messages docs-models

# Two stamps: what the room needs to run (`make run`), and that plus the test extras (pyproject.toml
# [test]: pytest, Playwright, schemathesis, py-spy, uvicorn, ...), which every target that runs tests,
# benches or builds the distribution installs (`make install`; D108).
$(VENV)/.runtime-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed: $(VENV)/.runtime-installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

GROUPX_HINT = echo "groupx is $(CURDIR)/$(VENV)/bin/groupx (stop, restart, doctor, manage): call it by that path, add $(CURDIR)/$(VENV)/bin to PATH, or install it as a tool (README, Set-up)."

# Creates the venv with the room's runtime dependencies only, installs and starts GroupX on the
# address in groupx.json (default 127.0.0.1:4310), applying migrations itself. With no groupx.json
# yet it first writes the starter one (agent CLIs found on PATH, else the bundled demo agents) and
# serves the room at once; the agents change at /setup. A browser opens only where there is one
# (never blocks without). It says where the `groupx` command is, before and after.
run: $(VENV)/.runtime-installed
	@$(GROUPX_HINT)
	@$(PY) -m groupx_site start; status=$$?; $(GROUPX_HINT); exit $$status

# The wheel and the sdist in dist/ (templates/, static/ and the demo agents inside; setup.py, D106),
# and check-wheel-contents on the wheel (its settings in pyproject.toml).
dist: install
	rm -rf dist build
	$(PY) -m build --sdist --wheel --outdir dist .
	$(VENV)/bin/check-wheel-contents dist/*.whl

# The wheel installed as a tool would be (tests/install/tier.py, D107): a fresh virtualenv outside
# the checkout, `groupx start` in an empty folder, the page, its files, /api/docs and the admin
# answer 200, `@all` gets every demo agent's answer, `groupx stop`. About a minute; `.ci/run` runs it.
test-install: dist
	$(PY) -m tests.install.tier dist

# The browser tests drive Debian's Chromium (no browser download): install it when missing.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's chromium for the browser tests..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is not installed and cannot be installed here: the browser tests will be skipped"; fi; }

# Tests are mostly waiting on real servers and CLI subprocesses, so four workers fit 2 cores.
# `lint-imports` checks the layers' import contracts (pyproject.toml [tool.importlinter], docs/DECISIONS.md D31);
# tools/import_direction.py counts every import against the layers, ignored or not (at most 3, D152).
# The fault tier (tests/faults) and the browser tier (tests/browser) are their own commands, below:
# with Chromium's rendering in it the suite needed more than its 10 minutes of 2 cores (D57).
test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) tools/import_direction.py
	$(MAKE) --no-print-directory typecheck
	$(PY) -m pytest -q -n 4 --dist loadfile --ignore=tests/faults --ignore=tests/browser

# The plain tier (docs/DECISIONS.md D129): `make test`'s end-to-end suite again with every test server
# on `server.speedups: false` (plain Django, daphne, twisted and SQLite; groupx_site/speedups/): what
# the speed seam copies or patches changes how fast, never what (tests/unit runs in-process: not again).
# `.ci/run` runs it after `make test`.
test-plain: install
	GROUPX_TEST_SPEEDUPS=false $(PY) -m pytest -q -n 4 --dist loadfile --ignore=tests/faults --ignore=tests/browser --ignore=tests/unit

# The browser tier (tests/browser, D57): Playwright driving Debian's Chromium against real servers:
# the room page, the setup wizard, the side panel, the API docs. `.ci/run` runs it after `make test`.
test-browser: install browser-deps
	$(PY) -m pytest -q -n 4 --dist loadfile tests/browser

# The fault tier (docs/DECISIONS.md D36, docs/RELIABILITY.md): SIGKILLs at every dispatch phase
# under load, a full, read-only or locked store, hostile input and hostile CLIs. Its store faults
# mount a tmpfs (root; they skip elsewhere). It prints the figures RELIABILITY.md quotes.
test-faults: install
	$(PY) -m pytest -q -n 4 --dist loadfile tests/faults

# The split-mode tier (tests/split, docs/DECISIONS.md D46): the same room as `make test` runs in one
# process, here with daphne web processes and `manage.py runworker groupx-agents` workers over a
# Redis on loopback (Debian's redis-server, installed with apt when missing, as root): streaming,
# cancels, SIGKILL of the worker, a Redis restart, two web processes, the lease's handovers.
test-split: install
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's redis-server for the split-mode tier..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else echo "redis-server is not installed and cannot be installed here: the split-mode tier will be skipped"; fi; }
	GROUPX_SPLIT_TIER=1 $(PY) -m pytest -q -n 2 --dist loadfile tests/split

# The remote-agent tier (tests/remote, docs/DECISIONS.md D52): a throwaway sshd on loopback (Debian's
# openssh-server, installed with apt when missing, as root) with its own keys, known_hosts and
# ssh_config; a room with a local and three remote fake agents: @all, an MCP ask over the forward,
# a dropped connection mid-Turn, the remote working directory.
test-remote: install
	@test -x /usr/sbin/sshd || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's openssh-server for the remote-agent tier..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; \
	  else echo "openssh-server is not installed and cannot be installed here: the remote-agent tier will be skipped"; fi; }
	GROUPX_REMOTE_TIER=1 $(PY) -m pytest -q -p no:xdist tests/remote

# The PostgreSQL tier (tests/pg, docs/DECISIONS.md D53/D54): Debian's postgresql (installed with apt
# when missing, as root) runs a throwaway cluster on loopback as `nobody` (PostgreSQL refuses root);
# the SQL parity test, an end-to-end set of tests/ with every room on PostgreSQL, seq order with two
# web processes posting at once, the SQLite -> PostgreSQL move and the split tier's two-mode tests
# (Redis too) run against it (tests/pg/tier.py).
test-pg: install
	@command -v redis-server >/dev/null 2>&1 && { command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's postgresql and redis-server for the PostgreSQL tier..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null; \
	  else echo "postgresql or redis-server is missing and cannot be installed here"; exit 1; fi; }
	$(PY) -m tests.pg.cluster -- $(PY) -m tests.pg.tier

# The in-process tier alone (tests/unit, docs/DECISIONS.md D29): the commands against the real
# models on a SQLite test database, no server and no CLI; well under a minute. `make test` runs it too.
test-fast: install
	$(PY) -m pytest -q -p no:xdist tests/unit

# Tier 3: the real Codex / Claude Code / Hermes CLIs against the project's mock model
# (docs/CONFORMANCE.md). They install into ~/.cache/groupx-realcli (GROUPX_REALCLI_CACHE), never
# into the repository; the tests share one room, so they run serially.
test-real: install
	$(PY) tests/realcli/install.py
	GROUPX_REAL_CLI=1 $(PY) -m pytest -q -p no:xdist tests/realcli

# Speed and memory, measured against a real server with instant fake agents (docs/PERFORMANCE.md).
bench: install
	$(PY) -m bench.run

# Side by side with the reference implementation (the public TypeScript GroupX;
# docs/PERFORMANCE.md): builds it in a cache outside the repository (ANCHOR_GIT = a local git copy,
# else a clone; GROUPX_REFERENCE_CACHE, default ~/.cache/groupx-reference), runs the same harness
# against it, `groupx start` and `manage.py runserver`, three rounds interleaved (~3 minutes), and
# writes the ratio table into docs/PERFORMANCE.md. Skips (exit 0) when the reference cannot be built.
# Not part of .ci/run: long, and noisy on a shared machine.
bench-compare: install
	$(PY) -m bench.compare

# Where the server CPU of one Turn goes in the embedded default: 500 sequential Turns under py-spy,
# split into the steps of a Turn (docs/PERFORMANCE.md "Where a Turn's milliseconds go", D50).
bench-profile: install
	$(PY) -m bench.profile_turn

# The measured floor of a Turn on daphne + Django + SQLite + pipes, beside the reference's
# (docs/PERFORMANCE.md "The floor of a Turn", D63): ~1.5 minutes; writes its section into docs/PERFORMANCE.md.
bench-floor: install
	$(PY) -m bench.floor

# The pages' and the server's strings (groupx_site/locale, D123): extract them into the .po files,
# translate what is new, then compile; the .mo files are committed, so running GroupX needs no gettext.
# tests/test_translations.py fails while an entry is untranslated or fuzzy or a .mo is stale.
MESSAGE_DIRS := -i .venv -i 'static/vendor' -i tests -i bench -i docs -i build -i dist -i groupx.egg-info -i tools
messages: install
	$(PY) manage.py makemessages -l zh_Hans -d django $(MESSAGE_DIRS) --no-location --no-obsolete --no-wrap
	$(PY) manage.py makemessages -l zh_Hans -d djangojs $(MESSAGE_DIRS) -i 'agents' --no-location --no-obsolete --no-wrap
	$(PY) manage.py compilemessages -l zh_Hans -i .venv

docs-models: install
	$(PY) manage.py docs_models

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) tools/import_direction.py
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# Strict types ([tool.mypy] in pyproject.toml) on the folders that exist: the store and speed
# packages may take files out of groupx_site/core. Incremental: the cache is .mypy_cache.
TYPED := $(wildcard agents/drivers turns groupx_site/core groupx_site/store)
typecheck: install
	$(VENV)/bin/mypy $(TYPED)
