# make run  : set up (first time), prepare the bundled model (first time), serve the app on :8501
# make test : set up (first time), prepare the bundled model (first time), run every test
# make bench: the benchmark (prints a JSON object as its last line)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: setup model run test test-fast bench clean-model

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.installed

model: setup
	$(PY) -m lib.model.bundled_model

run: model
	$(PY) -m streamlit run app.py --server.port $(PORT)

test: model
	$(PY) -m pytest

test-fast: setup
	$(PY) -m pytest -m "not real_model and not browser"

bench: model
	$(PY) -m bench

clean-model:
	$(PY) -c "import shutil; from lib.model.bundled_model import bundled_folder as f; shutil.rmtree(f(), ignore_errors=True)"
