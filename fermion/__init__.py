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
    ManifestStoreError,
    MissingExtraError,
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

# --- tables (fermion.table; branch `table`) ---------------------------------------------
from fermion.table import (
    AddColumns,
    Append,
    CommitConfig,
    CreateIndex,
    DataFile,
    Dataset,
    Delete,
    Fragment,
    MergeInsert,
    Overwrite,
    Restore,
    Rewrite,
    RewriteGroup,
    SchemaChange,
    TableRef,
    TableSchema,
    TableVersion,
    Update,
    dataset,
    write_dataset,
    write_fragments,
)

# --- end tables ---------------------------------------------------------------------------
from fermion.version import __version__ as __version__

__all__ = [
    "AddColumns",
    "Append",
    "BatchModeError",
    "ChecksumError",
    "ColumnNotFoundError",
    "CommitConfig",
    "CommitConflictError",
    "CommitError",
    "ConversionSummary",
    "CreateIndex",
    "DataFile",
    "Dataset",
    "DatasetError",
    "Delete",
    "FermionError",
    "FileMetadata",
    "FileReader",
    "FileWriter",
    "Fragment",
    "IncompatibleTransactionError",
    "InvalidArgumentError",
    "InvalidFileError",
    "ManifestStoreError",
    "MergeInsert",
    "MissingExtraError",
    "Overwrite",
    "ReadOptions",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "SchemaChange",
    "SchemaMismatchError",
    "SourceNotFoundError",
    "TableRef",
    "TableSchema",
    "TableVersion",
    "TruncatedFileError",
    "UnsupportedTypeError",
    "UnsupportedVersionError",
    "Update",
    "WriteOptions",
    "dataset",
    "fermion_to_parquet",
    "parquet_to_fermion",
    "read_table",
    "write_dataset",
    "write_fragments",
    "write_table",
]
