# Fermion: one Makefile. Every target bootstraps .venv itself, idempotently.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
BENCH_STAMP := $(VENV)/.bench-installed
PYTEST_ARGS ?=

.PHONY: all venv run test lint bench proto dist clean

all: test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

## make run: a demonstration on generated data (see README)
run: $(STAMP)
	$(PY) -m fermion.demo

## make test: the whole suite (unit, property, corruption/fuzz, golden files)
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

## make lint: ruff + mypy
lint: $(STAMP)
	$(VENV)/bin/ruff check fermion tests benchmarks jobs
	$(VENV)/bin/ruff format --check fermion tests benchmarks jobs
	$(VENV)/bin/mypy fermion

$(BENCH_STAMP): $(STAMP)
	$(PIP) install --quiet -e ".[dev,bench]"
	touch $@

## make bench: Fermion vs pyarrow.parquet vs pylance, results into docs/BENCHMARKS.md
bench: $(BENCH_STAMP)
	$(PY) -m benchmarks.run $(BENCH_ARGS)

## make proto: regenerate fermion/table/proto/*_pb2.py(i) from the .proto sources
## (bump the protobuf pin in pyproject.toml to the "Protobuf Python Version" they name)
PROTOS := $(wildcard fermion/table/proto/*.proto)
proto: $(STAMP)
	$(PIP) install --quiet -e ".[dev,proto]"
	$(PY) -m grpc_tools.protoc -I . --python_out=. --pyi_out=. $(PROTOS)

## make dist: dist/fermion-<version>-py3-none-any.whl (pip install it where the jobs run)
## and dist/fermion.zip, the package alone, for spark-submit --py-files (README)
dist: $(STAMP)
	rm -rf dist build
	$(PIP) wheel --quiet --no-deps -w dist .
	$(PY) -c 'import glob, zipfile; \
	  wheel = zipfile.ZipFile(glob.glob("dist/fermion-*.whl")[0]); \
	  out = zipfile.ZipFile("dist/fermion.zip", "w", zipfile.ZIP_DEFLATED); \
	  [out.writestr(i, wheel.read(i)) for i in wheel.infolist() if i.filename.startswith("fermion/")]; \
	  out.close()'
	rm -rf build
	ls -l dist

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .bench-data dist build
