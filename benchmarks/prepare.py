"""Each system's copy of each dataset, written once and cached in ``.bench-data/``.

A cached file is named after a fingerprint of the code that wrote it (library version, or a
hash of the Fermion sources), so a changed writer rewrites its files and nothing else.
Files are written under a temporary name and renamed, so an interrupted run never leaves a
half-written file in the cache. Every copy is read back once and compared with the source
table; the outcome is stored beside the file and reported with every result on it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path

import pyarrow as pa

from benchmarks import systems
from benchmarks.config import DATA_VERSION, TAKE_CHECK_ROWS
from benchmarks.datagen import take_indices
from benchmarks.scenarios import Dataset

__all__ = ["cached_check", "dataset_path", "fingerprint", "verify_copy", "write_dataset_copy"]


def _fermion_source_hash() -> str:
    spec = importlib.util.find_spec("fermion")
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    digest = hashlib.sha256()
    for root in spec.submodule_search_locations:
        for path in sorted(Path(root).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def fingerprint(system: str) -> str:
    """A short id of the writer code of ``system`` (part of cached file names)."""
    if system == "fermion":
        code = f"src{_fermion_source_hash()}"
    elif system == "parquet":
        code = f"pa{_version('pyarrow')}"
    else:
        code = f"lance{_version('pylance')}"
    return f"d{DATA_VERSION}-{code}"


def dataset_path(data_dir: Path, dataset: Dataset, system: str, fp: str) -> Path:
    """Where ``system``'s copy of ``dataset`` lives."""
    suffix = systems.get(system).suffix
    return data_dir / "files" / dataset.id / f"{system}-{fp}{suffix}"


def _column_problems(got: pa.Table, expected: pa.Table) -> list[str]:
    if got.num_rows != expected.num_rows:
        return [f"{got.num_rows} rows, expected {expected.num_rows}"]
    if got.column_names != expected.column_names:
        return [f"columns {got.column_names[:5]}..., expected {expected.column_names[:5]}..."]
    problems = []
    for name in expected.column_names:
        a, b = got.column(name), expected.column(name)
        if a.type != b.type:
            problems.append(f"{name}: type {a.type}, expected {b.type}")
        elif not a.equals(b):
            problems.append(f"{name}: values differ")
    return problems


def verify_copy(adapter: systems.System, table: pa.Table, dataset: Dataset, path: Path) -> str:
    """Read back what the benchmark reads and compare with the source: "ok" or the problems.

    Wide tables: the evenly spaced projection; others: every column, plus (lineitem) the
    rows the take benchmark takes. Column nullability is not compared, types and values are.
    """
    columns = dataset.check_columns()
    expected = table if columns is None else table.select(columns)
    problems = [f"read: {p}" for p in _column_problems(adapter.read(path, columns), expected)]
    if dataset.family == "lineitem":
        indices = take_indices(table.num_rows, TAKE_CHECK_ROWS)
        got = adapter.take(path, indices)
        problems += [f"take: {p}" for p in _column_problems(got, table.take(pa.array(indices)))]
    return "ok" if not problems else "; ".join(problems[:3])


def check_path(target: Path) -> Path:
    """The sidecar holding the read-back check of a cached file."""
    return target.with_name(target.name + ".check.json")


def _remove_stale_copies(target: Path, system: str) -> None:
    """Delete ``system``'s copies of the same dataset written by other code versions."""
    own = re.compile(rf"^{re.escape(system)}-d\d+-")
    adapter = systems.get(system)
    for other in target.parent.iterdir():
        if other.name.startswith(target.name) or not own.match(other.name):
            continue
        adapter.remove(other)


def cached_check(target: Path) -> str | None:
    """The stored read-back check of a cached file (``None`` if it was never checked)."""
    sidecar = check_path(target)
    if not sidecar.exists():
        return None
    return str(json.loads(sidecar.read_text())["check"])


def write_dataset_copy(data_dir: Path, dataset: Dataset, system: str, target: Path) -> str:
    """Make sure ``system``'s copy of ``dataset`` exists at ``target`` and is verified.

    Writes it (atomically) if missing, then reads it back and compares with the source.
    Returns the check ("ok" or the problems found), also stored beside the file.
    """
    adapter = systems.get(system)
    table = dataset.build(data_dir)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        adapter.remove(tmp)
        adapter.write(table, tmp)
        tmp.rename(target)
        _remove_stale_copies(target, system)
    check = verify_copy(adapter, table, dataset, target)
    check_path(target).write_text(json.dumps({"check": check}))
    return check
