# cosnotify: the two commands.  `make demo` runs the end-to-end job, `make test` the suite.
# Both create .venv and install what is missing; a second run reinstalls nothing.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.cosnotify-installed
DEBS_STAMP := $(VENV)/.debian-packages
# pytest-xdist workers: CI has 2 cores.
WORKERS ?= auto

.PHONY: demo test test-fast venv debian-packages check-stubs bench clean

demo: $(STAMP) java
	SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$(abspath $(PY)) $(PY) examples/demo.py

test: $(STAMP) debian-packages
	$(PY) -m cosnotify.corba.stubgen --check
	SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$(abspath $(PY)) \
	    $(PY) -m pytest -n $(WORKERS) --dist loadgroup -q -p no:cacheprovider

# The suite without the real-peer and Spark tests (quick local loop).
test-fast: $(STAMP)
	$(PY) -m pytest -n $(WORKERS) -q -m "not interop and not spark"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@./.ci/ensure-python-venv "$(PYTHON)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,spark,dev]'
	@touch $(STAMP)

# Debian's omniORB peers for the interop tests (only as root; skipped otherwise).
debian-packages:
	@./.ci/install-debian-packages

java:
	@./.ci/install-debian-packages --java-only

check-stubs: $(STAMP)
	$(PY) -m cosnotify.corba.stubgen --check

bench: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[bench]'
	for b in benchmarks/*_bench.py; do $(PY) $$b; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
