"""Fermion: a columnar file format with decoupled per-column metadata.

Example:
    >>> import pyarrow as pa, fermion, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.fermion")
    >>> fermion.write_table(pa.table({"x": [1, 2, 3]}), path)
    >>> fermion.read_table(path).to_pydict()
    {'x': [1, 2, 3]}
"""

from __future__ import annotations

from fermion.errors import (
    BatchModeError,
    ChecksumError,
    ColumnNotFoundError,
    CommitConflictError,
    CommitError,
    DatasetError,
    FermionError,
    IncompatibleTransactionError,
    InvalidArgumentError,
    InvalidFileError,
    SchemaMismatchError,
    SourceNotFoundError,
    TruncatedFileError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)
from fermion.format import (
    FileMetadata,
    FileReader,
    FileWriter,
    ReadOptions,
    WriteOptions,
    read_table,
    write_table,
)
from fermion.format.convert import ConversionSummary, fermion_to_parquet, parquet_to_fermion

__version__ = "0.1.0"

__all__ = [
    "BatchModeError",
    "ChecksumError",
    "ColumnNotFoundError",
    "CommitConflictError",
    "CommitError",
    "ConversionSummary",
    "DatasetError",
    "FermionError",
    "FileMetadata",
    "FileReader",
    "FileWriter",
    "IncompatibleTransactionError",
    "InvalidArgumentError",
    "InvalidFileError",
    "ReadOptions",
    "SchemaMismatchError",
    "SourceNotFoundError",
    "TruncatedFileError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
    "WriteOptions",
    "fermion_to_parquet",
    "parquet_to_fermion",
    "read_table",
    "write_table",
]
