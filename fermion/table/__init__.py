"""Fermion tables: versioned datasets of Fermion files with optimistic-concurrency commits.

Layout, messages, protocol and conflict matrix: ``docs/TABLE_FORMAT.md``.

Example:
    >>> import tempfile, pyarrow as pa
    >>> import fermion.table as ft
    >>> uri = tempfile.mkdtemp()
    >>> ds = ft.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    >>> frags = ft.write_fragments(pa.table({"x": [4]}), uri)
    >>> ft.Dataset.commit(uri, ft.Append(frags), read_version=ds.version).version
    2
"""

from __future__ import annotations

from fermion.table.batches import BatchLookup
from fermion.table.commit import CommitConfig, CommitResult
from fermion.table.dataset import Dataset, WriteMode, dataset, write_dataset
from fermion.table.domain import DataFile, Fragment, TableVersion
from fermion.table.fragments import write_fragments
from fermion.table.operations import (
    AddColumns,
    Append,
    CreateIndex,
    Delete,
    FragmentMetadata,
    MergeInsert,
    Operation,
    Overwrite,
    Restore,
    Rewrite,
    RewriteGroup,
    SchemaChange,
    Update,
    UpdateConfig,
)
from fermion.table.ref import TableRef
from fermion.table.scan import Scanner, ScanStats
from fermion.table.schema import TableSchema
from fermion.table.versions import VersionInfo
from fermion.table.write_properties import WriteProperties

__all__ = [
    "AddColumns",
    "Append",
    "BatchLookup",
    "CommitConfig",
    "CommitResult",
    "CreateIndex",
    "DataFile",
    "Dataset",
    "Delete",
    "Fragment",
    "FragmentMetadata",
    "MergeInsert",
    "Operation",
    "Overwrite",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "ScanStats",
    "Scanner",
    "SchemaChange",
    "TableRef",
    "TableSchema",
    "TableVersion",
    "Update",
    "UpdateConfig",
    "VersionInfo",
    "WriteMode",
    "WriteProperties",
    "dataset",
    "write_dataset",
    "write_fragments",
]
