"""The one place the table layer touches data files (TEMPORARY Arrow IPC stand-in).

To be switched to ``fermion.format`` (``write_table`` / ``FileReader``) when it lands.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError

__all__ = ["DataFileReader", "open_data_file", "write_data_file"]

_IDS_KEY = b"fermion.field_ids"


class DataFileReader(Protocol):
    """What the table layer needs from a data file reader."""

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def num_rows(self) -> int: ...

    @property
    def field_ids(self) -> list[int]: ...

    def read(
        self, columns: list[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table: ...


def write_data_file(table: pa.Table, target: Any, field_ids: list[int]) -> None:
    """Write ``table`` as one data file at ``target`` (path or ``(fs, path)``)."""
    meta = dict(table.schema.metadata or {})
    meta[_IDS_KEY] = json.dumps(field_ids).encode()
    table = table.replace_schema_metadata(meta)
    if isinstance(target, tuple):
        fs, path = target
        with fs.open(path, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
    else:
        with pa.OSFile(target, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)


class _IpcReader:
    def __init__(self, target: Any) -> None:
        try:
            if isinstance(target, tuple):
                fs, path = target
                data = pa.py_buffer(fs.cat_file(path))
            else:
                data = pa.memory_map(target, "r").read_buffer()
            self._table = pa.ipc.open_file(data).read_all()
        except pa.ArrowInvalid as exc:
            raise InvalidFileError(f"{target}: {exc}") from exc
        meta = self._table.schema.metadata or {}
        self._ids = json.loads(meta[_IDS_KEY])
        self._table = self._table.replace_schema_metadata(None)

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    @property
    def num_rows(self) -> int:
        return self._table.num_rows

    @property
    def field_ids(self) -> list[int]:
        return list(self._ids)

    def read(
        self, columns: list[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table:
        table = self._table
        if filter is not None:
            table = table.filter(filter)
        return table if columns is None else table.select(columns)


def open_data_file(target: Any) -> DataFileReader:
    """Open a data file for reading."""
    return _IpcReader(target)
