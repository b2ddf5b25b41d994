"""Each system's copy of each dataset, written once and cached in ``.bench-data/``.

A cached file is named after a fingerprint of the code that wrote it (library version, or a
hash of the Fermion sources), so a changed writer rewrites its files and nothing else.
Files are written under a temporary name and renamed, so an interrupted run never leaves a
half-written file in the cache.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

from benchmarks import systems
from benchmarks.config import DATA_VERSION
from benchmarks.scenarios import Dataset

__all__ = ["dataset_path", "fingerprint", "write_dataset_copy"]


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


def write_dataset_copy(data_dir: Path, dataset: Dataset, system: str, target: Path) -> None:
    """Generate ``dataset`` and write it with ``system`` to ``target`` (atomically)."""
    adapter = systems.get(system)
    table = dataset.build(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    adapter.remove(tmp)
    adapter.write(table, tmp)
    tmp.rename(target)
