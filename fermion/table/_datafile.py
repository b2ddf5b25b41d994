"""The one place the table layer touches data files: Fermion files via ``fermion.format``.

Example:
    >>> import os, tempfile, pyarrow as pa
    >>> path = os.path.join(tempfile.mkdtemp(), "d.fermion")
    >>> write_data_file(pa.table({"a": [1, 2]}), path, [7])
    >>> with open_data_file(path) as reader:
    ...     reader.field_ids, reader.read().to_pydict()
    ([7], {'a': [1, 2]})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from fermion.format import FileReader, FileWriter, write_table
from fermion.table.write_properties import WriteProperties

__all__ = ["open_data_file", "open_data_writer", "write_data_file"]


def write_data_file(
    table: pa.Table,
    target: Any,
    field_ids: Sequence[int],
    properties: WriteProperties | None = None,
) -> None:
    """Write ``table`` as one Fermion file at ``target`` (path or ``(fs, path)``), with
    the table's write ``properties`` (``None``: the format's defaults)."""
    options = (properties or WriteProperties()).file_options(table.schema)
    write_table(table, target, field_ids=list(field_ids), **options)


def open_data_writer(
    target: Any,
    schema: pa.Schema,
    field_ids: Sequence[int],
    properties: WriteProperties | None = None,
) -> FileWriter:
    """A writer for one data file (batch mode: ``append_batch``); close it to finish.

    Every data file a table writer makes is opened here, with the table's write
    ``properties`` (bloom filter columns, compression, page and stripe sizes;
    :mod:`fermion.table.write_properties`; ``None``: the format's defaults).
    """
    options = (properties or WriteProperties()).file_options(schema)
    return FileWriter(target, schema, field_ids=list(field_ids), **options)


def open_data_file(target: Any) -> FileReader:
    """Open a data file (close it, or use it as a context manager)."""
    return FileReader(target)
