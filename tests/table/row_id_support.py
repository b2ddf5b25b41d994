"""Helpers for the row-id tests: tables as a Fermion before row ids wrote them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import fermion.table as ft
from fermion.table.codec import FLAG_ROW_IDS, decode_manifest, encode_manifest
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.row_ids import ROW_ID, attach_row_ids

#: A table written by Fermion before row ids (tests/table/golden/make_no_row_ids.py).
GOLDEN = Path(__file__).parent / "golden" / "no_row_ids"


def golden_copy(where: Path) -> str:
    """A writable copy of the golden table without row ids."""
    shutil.copytree(GOLDEN, where)
    return str(where)


def strip_row_ids(uri: str | Path) -> None:
    """Rewrite every manifest of a local table as a writer before row ids made it: no
    ``row_ids``, no ``next_row_id``, no ROW_IDS flag (the other fields are what such a
    writer wrote, so the result is an old-format table)."""
    for path in sorted((Path(uri) / "_versions").glob("*.manifest")):
        manifest = decode_manifest(path.read_bytes(), path.name)
        for fragment in manifest.fragments:
            fragment.ClearField("row_ids")
        manifest.ClearField("next_row_id")
        manifest.reader_feature_flags &= ~FLAG_ROW_IDS
        manifest.writer_feature_flags &= ~FLAG_ROW_IDS
        path.write_bytes(encode_manifest(manifest))


def write_table_without_row_ids(where: Path, data: pa.Table, **options: object) -> str:
    """A new local table holding ``data``, in the format before row ids."""
    uri = str(where)
    ft.write_dataset(data, uri, **options)  # type: ignore[arg-type]
    strip_row_ids(uri)
    return uri


def write_moved_rows(rows: pa.Table, uri: str, **options: Any) -> list[pb.Fragment]:
    """New fragments for rows a hand-built ``Rewrite`` moves, read with their ``_rowid``
    column: the rows are written without it and each fragment gets their ids
    (docs/TABLE_FORMAT.md, "Row ids": a rewrite keeps the ids of the rows it moves)."""
    ids = rows.column(ROW_ID).to_numpy().astype(np.int64)
    fragments = ft.write_fragments(rows.drop_columns([ROW_ID]), uri, **options)
    attach_row_ids(fragments, ids)
    return fragments
