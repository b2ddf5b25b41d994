# Fermion: one Makefile. Every target bootstraps .venv itself, idempotently.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
BENCH_STAMP := $(VENV)/.bench-installed
# The Airflow environment is separate from the jobs' one (docs/ORCHESTRATION.md): Airflow
# parses the DAGs and runs dag.test(); its tasks call .venv/bin/spark-submit.
AIRFLOW_VENV  ?= .venv-airflow
AIRFLOW_REQS  := airflow_dags/requirements.txt airflow_dags/constraints.txt
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed-$(shell cat $(AIRFLOW_REQS) | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=
# Two pytest-xdist workers (2 cores; a file's tests stay in one worker, in collection order:
# tests/conftest.py puts the Spark and Airflow files first). TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: all venv airflow-venv run test test-fast lint bench proto dist clean

all: test

$(STAMP): pyproject.toml setup.py fermion/format/kernels.c fermion/io/preads.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip "setuptools>=77"
	$(PIP) install --quiet -e ".[all,dev]"
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

$(AIRFLOW_STAMP): $(AIRFLOW_REQS)
	test -x $(AIRFLOW_VENV)/bin/python || $(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet -r airflow_dags/requirements.txt \
		-c airflow_dags/constraints.txt
	rm -f $(AIRFLOW_VENV)/.installed-*
	touch $@

airflow-venv: $(AIRFLOW_STAMP)

## make run: the main job: the ingest DAG for a few days of an embedded sample, then the
## maintenance DAG (dag.test() in .venv-airflow, local Spark), and a report (see README)
run: $(STAMP) $(AIRFLOW_STAMP)
	$(PY) -m scripts.main_job $(RUN_ARGS)

# The class archive the suite's Spark drivers start from (tests/support/spark_cds.py),
# built once per venv
SPARK_CDS := $(VENV)/spark-classes.jsa
$(SPARK_CDS): $(STAMP) tests/support/spark_cds.py
	$(PY) -m tests.support.spark_cds $@

## make test: the whole suite (unit, property, corruption/fuzz, golden files)
test: $(STAMP) $(AIRFLOW_STAMP) $(SPARK_CDS)
	FERMION_TEST_SPARK_CDS=$(SPARK_CDS) $(PY) -m pytest -q -p no:cacheprovider $(XDIST) \
		$(PYTEST_ARGS)

## make test-fast: the loop to run while working: everything but the tests marked spark,
## airflow, cluster or slow (tests/conftest.py marks them), with the dev hypothesis profile
FAST_MARKERS := not spark and not airflow and not cluster and not slow
test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=dev $(PY) -m pytest -q -p no:cacheprovider $(XDIST) -m "$(FAST_MARKERS)" \
		$(PYTEST_ARGS)

## make lint: ruff + mypy
lint: $(STAMP)
	$(VENV)/bin/ruff check fermion fermion_spark_daemon.py tests benchmarks jobs airflow_dags scripts
	$(VENV)/bin/ruff format --check fermion fermion_spark_daemon.py tests benchmarks jobs airflow_dags scripts
	$(VENV)/bin/mypy fermion fermion_spark_daemon.py

$(BENCH_STAMP): $(STAMP)
	$(PIP) install --quiet -e ".[all,dev,bench]"
	touch $@

## make bench: Fermion vs pyarrow.parquet vs pylance, results into docs/BENCHMARKS.md
bench: $(BENCH_STAMP)
	$(PY) -m benchmarks.run $(BENCH_ARGS)

## make proto: regenerate fermion/table/proto/*_pb2.py(i) from the .proto sources
## (bump the protobuf pin in pyproject.toml to the "Protobuf Python Version" they name)
PROTOS := $(wildcard fermion/table/proto/*.proto)
proto: $(STAMP)
	$(PIP) install --quiet -e ".[all,dev,proto]"
	$(PY) -m grpc_tools.protoc -I . --python_out=. --pyi_out=. $(PROTOS)

## make dist: dist/fermion-<version>-<python>-<platform>.whl, with the compiled kernels when
## a compiler is here (pip install it where the jobs run), and dist/fermion.zip, the
## package's Python files alone, for spark-submit --py-files (README; a zip cannot hold
## an importable compiled module: code run from it uses the Python paths)
dist: $(STAMP)
	rm -rf dist build
	$(PIP) wheel --quiet --no-deps -w dist .
	$(PY) -c 'import glob, zipfile; \
	  wheel = zipfile.ZipFile(glob.glob("dist/fermion-*.whl")[0]); \
	  out = zipfile.ZipFile("dist/fermion.zip", "w", zipfile.ZIP_DEFLATED); \
	  [out.writestr(i, wheel.read(i)) for i in wheel.infolist() if i.filename.startswith("fermion/") and not i.filename.endswith((".so", ".pyd"))]; \
	  out.close()'
	rm -rf build
	ls -l dist

clean:
	rm -rf $(VENV) $(AIRFLOW_VENV) .run .pytest_cache .mypy_cache .ruff_cache .bench-data dist build
