# make run  : set up (first time), prepare the bundled model (first time), serve the app on :8501
#             (lib/serving/serve.py: streamlit run app.py, then its background work starts at once)
# make test : install the test browser and PostgreSQL if missing, set up, prepare the model, run
#             every test (two pytest-xdist workers: TEST_WORKERS below)
# make bench: the benchmark (prints a JSON object as its last line)
#
# Python: the machine's own python3 when it is 3.11-3.13 (on this project's machines that is
# 3.11, for which the registry serves torch 2.13.0's CPU wheel), else the first working
# python3.12 (Streamlit Community Cloud's default), python3.13, python3.11; `make PYTHON=/path/to/python3.x ...` chooses another one.
# VENV=.venv-3.12 keeps a second environment beside the first (.ci/run does).
# TORCH_INDEX=https://download.pytorch.org/whl/cpu installs torch's CPU-only build first.
# A candidate must run (a pyenv shim for a version that is not selected does not); pyenv's
# installed versions are tried too.
PYTHON ?= $(shell p=$$(command -v python3) && $$p -c "import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))" 2>/dev/null && { echo $$p; exit 0; }; for v in 3.12 3.13 3.11; do   for p in $$(command -v python$$v) $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v*/bin/python$$v 2>/dev/null); do     $$p -c "" 2>/dev/null && { echo $$p; exit 0; }; done; done)
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501
CHROMIUM     := /usr/bin/chromium
BROWSER_DEBS := chromium fonts-noto-color-emoji
POSTGRES_DEBS := postgresql

.PHONY: setup model run test test-fast test-walk bench browser postgres clean-model

# The interpreter is checked only when the environment is first created.
$(VENV)/.installed: requirements-app.txt requirements-dev.txt
	@if [ ! -x $(PY) ]; then \
	  test -n "$(PYTHON)" || { echo "No working python3.12, python3.13 or python3.11 found. Install one (Debian 12: sudo apt-get install -y python3 python3-venv), or run make PYTHON=/path/to/python3.x"; exit 1; }; \
	  $(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v <= (3, 13) else "$(PYTHON) is Python %d.%d: this project needs 3.11, 3.12 or 3.13" % v)' || exit 1; \
	  $(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || { echo "$(PYTHON) cannot make a virtual environment. Debian/Ubuntu: sudo apt-get install -y python3-venv (or python3.X-venv), then make again"; exit 1; }; \
	  echo "Creating $(VENV) with $$($(PYTHON) --version) ($(PYTHON))"; \
	  $(PYTHON) -m venv $(VENV) || exit 1; \
	fi
	$(if $(TORCH_INDEX),$(PY) -m pip install --disable-pip-version-check -q --index-url $(TORCH_INDEX) torch==2.13.0)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.installed

model: setup
	$(PY) -m lib.model.bundled_model

run: model
	$(PY) -m lib.serving.serve --server.port $(PORT)

# Debian packages the tests need (the browser, PostgreSQL's server binaries) are installed with
# apt-get when running as root or with passwordless sudo; otherwise make stops at once (before
# the long set-up) with the one command to run. $(call apt_install,why,packages)
define apt_install
if ! command -v apt-get >/dev/null; then \
  echo "$(1) and there is no apt-get here: install them or run 'make test-fast'."; exit 1; fi; \
if [ "$$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else \
  echo "$(1). Run this once and then 'make test' again:"; \
  echo "    sudo apt-get install -y $(2)"; exit 1; fi; \
echo "Installing $(2) with apt-get"; \
$$SUDO apt-get update -qq && \
$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null
endef

# Debian's chromium (and its emoji font) for the browser tests.
browser:
	@if [ -x $(CHROMIUM) ] && { ! command -v dpkg >/dev/null || dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; }; then exit 0; fi; \
	$(call apt_install,The browser tests need Debian's chromium at $(CHROMIUM),$(BROWSER_DEBS)) && \
	test -x $(CHROMIUM)

# PostgreSQL's server binaries (initdb, pg_ctl) for the live-class tests, which start a throwaway
# cluster (tests/postgres.py): found on PATH, at `pg_config --bindir` or /usr/lib/postgresql/*/bin.
postgres:
	@if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then exit 0; fi; \
	if command -v pg_config >/dev/null && [ -x "$$(pg_config --bindir)/initdb" ]; then exit 0; fi; \
	if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then exit 0; fi; \
	$(call apt_install,The live-class tests need PostgreSQL's server binaries (initdb and pg_ctl),$(POSTGRES_DEBS)) && \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null

# Two pytest-xdist workers (TEST_WORKERS=1 for one process): one takes the chain of every page's
# cold render, then the browser tests that read those results; the other the rest, module by
# module (tests/conftest.py says how the work is split).
TEST_WORKERS ?= 2
test: browser postgres model
	$(PY) -m pytest $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS))

test-walk: model
	$(PY) -m pytest -m walk tests/model/test_every_value.py

test-fast: setup
	$(PY) -m pytest -m "not real_model and not browser and not postgres and not slow"

bench: model
	$(PY) -m bench

clean-model:
	$(PY) -c "import shutil; from lib.model.bundled_model import bundled_folder as f; shutil.rmtree(f(), ignore_errors=True)"
