"""One adapter per benchmarked system, and the one place that decides availability.

Each adapter answers the same questions so scenarios stay system-agnostic: write a table,
open a file and get its schema, open and read (a projection of) it, take rows, and probe the
IO an open + read costs. Libraries are imported inside the methods, so a worker process only
pays for (and only counts the memory of) the system it measures.
"""

from __future__ import annotations

import io
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["SYSTEMS", "System", "availability", "get", "path_size"]

#: Attributes of the public API (README.md) the benchmarks call.
_FERMION_API = ("write_table", "read_table", "FileReader")


def _check_available(name: str) -> None:
    if name == "fermion":
        import fermion

        for attr in _FERMION_API:
            getattr(fermion, attr)
    elif name in ("lance", "lance-dataset"):
        import lance  # noqa: F401
        import lance.file  # noqa: F401
    elif name == "parquet":
        import pyarrow.parquet  # noqa: F401
    else:
        raise KeyError(name)


def availability() -> dict[str, str | None]:
    """Map each system name to ``None`` if usable, else the reason it is unavailable."""
    status: dict[str, str | None] = {}
    for name in SYSTEMS:
        try:
            _check_available(name)
        except (ImportError, AttributeError) as exc:
            status[name] = f"{type(exc).__name__}: {exc}"
        else:
            status[name] = None
    return status


def path_size(path: Path) -> int:
    """Size in bytes of a file, or of every file under a directory (a Lance dataset)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


class System(ABC):
    """Base adapter; subclasses implement every operation for one system."""

    name = ""
    suffix = ""
    description = ""

    @abstractmethod
    def write(self, table: pa.Table, path: Path) -> None:
        """Write ``table`` to ``path`` in this system's format."""

    @abstractmethod
    def schema(self, path: Path) -> pa.Schema:
        """Open the file and return its schema (nothing else)."""

    @abstractmethod
    def read(self, path: Path, columns: list[str] | None = None) -> pa.Table:
        """Open the file and read ``columns`` (all if ``None``) to an Arrow table."""

    @abstractmethod
    def take(self, path: Path, indices: np.ndarray) -> pa.Table:
        """Open the file and read the rows at sorted ``indices``, all columns."""

    def io_probe(self, path: Path, columns: list[str] | None, read: bool) -> dict[str, Any]:
        """IO facts of an open + schema and (if ``read``) + a read of ``columns``, if known."""
        return {}

    def take_io(self, path: Path, indices: np.ndarray) -> dict[str, Any]:
        """Requests and bytes of an open + take of ``indices``, if measurable."""
        return {}

    def remove(self, path: Path) -> None:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


class FermionSystem(System):
    name = "fermion"
    suffix = ".fermion"
    description = "fermion.write_table defaults; reads via fermion.FileReader"

    def write(self, table: pa.Table, path: Path) -> None:
        import fermion

        fermion.write_table(table, str(path))

    def schema(self, path: Path) -> pa.Schema:
        import fermion

        with fermion.FileReader(str(path)) as reader:
            return reader.schema

    def read(self, path: Path, columns: list[str] | None = None) -> pa.Table:
        import fermion

        with fermion.FileReader(str(path)) as reader:
            return reader.read(columns=columns)

    def take(self, path: Path, indices: np.ndarray) -> pa.Table:
        import fermion

        with fermion.FileReader(str(path)) as reader:
            return reader.take(indices)

    def io_probe(self, path: Path, columns: list[str] | None, read: bool) -> dict[str, Any]:
        import fermion

        with fermion.FileReader(str(path)) as reader:
            stats: Any = getattr(getattr(reader, "source", None), "stats", None)
            if not (hasattr(stats, "requests") and hasattr(stats, "bytes_read")):
                return {}
            if read:  # open + read: the full schema is never needed (O(k) metadata)
                reader.read(columns=columns)
                return {"read_requests": stats.requests, "read_bytes": stats.bytes_read}
            _ = reader.schema  # open + full schema: parses every column's field (O(n))
            return {"open_requests": stats.requests, "open_bytes": stats.bytes_read}

    def take_io(self, path: Path, indices: np.ndarray) -> dict[str, Any]:
        import fermion

        with fermion.FileReader(str(path)) as reader:
            stats: Any = getattr(getattr(reader, "source", None), "stats", None)
            if not (hasattr(stats, "requests") and hasattr(stats, "bytes_read")):
                return {}
            reader.take(indices)
            return {"take_requests": stats.requests, "take_bytes": stats.bytes_read}


class _CountingFile(io.RawIOBase):
    """A read-only file that counts read calls and bytes (to see Parquet's IO)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.requests = 0
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def read(self, size: int | None = -1) -> bytes:
        data = self._f.read(size)
        self.requests += 1
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._f.close()
        super().close()


class ParquetSystem(System):
    name = "parquet"
    suffix = ".parquet"
    description = "pyarrow.parquet, compression='zstd' (default level), default row groups"

    def write(self, table: pa.Table, path: Path) -> None:
        import pyarrow.parquet as pq

        pq.write_table(table, path, compression="zstd")

    def schema(self, path: Path) -> pa.Schema:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).schema_arrow

    def read(self, path: Path, columns: list[str] | None = None) -> pa.Table:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).read(columns=columns)

    def take(self, path: Path, indices: np.ndarray) -> pa.Table:
        """Row-group aware: read only the row groups holding a wanted row, then take."""
        import pyarrow.parquet as pq

        return self._take(pq.ParquetFile(path), indices)

    def take_io(self, path: Path, indices: np.ndarray) -> dict[str, Any]:
        import pyarrow.parquet as pq

        with _CountingFile(path) as f:
            self._take(pq.ParquetFile(f), indices)
            return {"take_requests": f.requests, "take_bytes": f.bytes_read}

    @staticmethod
    def _take(pf: Any, indices: np.ndarray) -> pa.Table:
        md = pf.metadata
        counts = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)])
        ends = np.cumsum(counts)
        starts = ends - counts
        group_of = np.searchsorted(ends, indices, side="right")
        groups = np.unique(group_of)
        # Row number of each selected group's first row inside the concatenated read.
        base = np.zeros(md.num_row_groups, dtype=np.int64)
        base[groups] = np.concatenate(([0], np.cumsum(counts[groups])[:-1]))
        local = indices - starts[group_of] + base[group_of]
        return pf.read_row_groups(groups.tolist()).take(pa.array(local))

    def io_probe(self, path: Path, columns: list[str] | None, read: bool) -> dict[str, Any]:
        import pyarrow.parquet as pq

        with _CountingFile(path) as f:
            pf = pq.ParquetFile(f)
            _ = pf.schema_arrow
            facts = {"open_requests": f.requests, "open_bytes": f.bytes_read}
            facts["footer_bytes"] = pf.metadata.serialized_size
            if read:
                pf.read(columns=columns)
                facts.update(read_requests=f.requests, read_bytes=f.bytes_read)
        return facts


class LanceFileSystem(System):
    name = "lance"
    suffix = ".lance"
    description = "pylance file API (LanceFileWriter / LanceFileReader), default file version"

    def write(self, table: pa.Table, path: Path) -> None:
        from lance.file import LanceFileWriter

        with LanceFileWriter(str(path), table.schema) as writer:
            writer.write_batch(table)

    def schema(self, path: Path) -> pa.Schema:
        from lance.file import LanceFileReader

        return LanceFileReader(str(path)).metadata().schema

    def read(self, path: Path, columns: list[str] | None = None) -> pa.Table:
        from lance.file import LanceFileReader

        return LanceFileReader(str(path), columns=columns).read_all().to_table()

    def take(self, path: Path, indices: np.ndarray) -> pa.Table:
        from lance.file import LanceFileReader

        return LanceFileReader(str(path)).take_rows(indices.tolist()).to_table()

    def io_probe(self, path: Path, columns: list[str] | None, read: bool) -> dict[str, Any]:
        from lance.file import LanceFileReader

        meta = LanceFileReader(str(path)).metadata()
        return {
            "metadata_bytes_in_file": meta.num_column_metadata_bytes + meta.num_global_buffer_bytes,
            "file_version": f"{getattr(meta, 'major_version', '?')}."
            f"{getattr(meta, 'minor_version', '?')}",
        }


class LanceDatasetSystem(System):
    name = "lance-dataset"
    suffix = ".lance.d"
    description = "pylance dataset API (lance.write_dataset / lance.dataset)"

    def write(self, table: pa.Table, path: Path) -> None:
        import lance

        lance.write_dataset(table, str(path))

    def schema(self, path: Path) -> pa.Schema:
        import lance

        return lance.dataset(str(path)).schema

    def read(self, path: Path, columns: list[str] | None = None) -> pa.Table:
        import lance

        return lance.dataset(str(path)).to_table(columns=columns)

    def take(self, path: Path, indices: np.ndarray) -> pa.Table:
        import lance

        return lance.dataset(str(path)).take(indices.tolist())


SYSTEMS: dict[str, System] = {
    s.name: s for s in (FermionSystem(), ParquetSystem(), LanceFileSystem(), LanceDatasetSystem())
}


def get(name: str) -> System:
    """The adapter of system ``name``."""
    return SYSTEMS[name]
