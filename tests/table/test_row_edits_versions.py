"""The row edits (merge_insert, update, replace_where, add_columns) plan on a
``TableVersion`` and ``Fragment`` values, and still accept the manifest message their
callers passed before (docs/ARCHITECTURE.md, "Domain model and wire format")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import fermion.table as ft
from fermion.table.codec import has_deletion_file
from fermion.table.column_join import add_joined_columns
from fermion.table.column_values import add_column_values
from fermion.table.domain import Fragment
from fermion.table.merge_insert import MergeInsertBuilder
from fermion.table.row_edits import kept_row_ids, mark_deleted, write_new_rows
from fermion.table.row_ids import UNASSIGNED, fragment_row_ids
from fermion.table.update import replace_where, update_rows
from fermion.table.write_properties import WriteProperties


def _ids(fragment: Fragment) -> list[int]:
    ids = fragment_row_ids(fragment)
    assert ids is not None
    return [int(i) for i in ids]


def _table(tmp_path: Path, name: str) -> ft.Dataset:
    rows = pa.table({"id": pa.array(range(6), pa.int64()), "v": [0, 1, 2, 3, 4, 5]})
    return ft.write_dataset(rows, str(tmp_path / name), max_rows_per_file=4)


def _merge(ds: ft.Dataset, read: Any) -> None:
    builder = MergeInsertBuilder(ds.storage, read, "id").when_matched_update_all()
    builder.when_not_matched_insert_all().execute(pa.table({"id": [1, 9], "v": [10, 90]}))


def _update(ds: ft.Dataset, read: Any) -> None:
    update_rows(ds.storage, read, "id < 2", {"v": "v + 100"}, max_rows_per_file=4)


def _replace(ds: ft.Dataset, read: Any) -> None:
    new = pa.table({"id": pa.array([4], pa.int64()), "v": [44]})
    replace_where(ds.storage, read, new, "id >= 4", max_rows_per_file=4)


def _add_values(ds: ft.Dataset, read: Any) -> None:
    add_column_values(ds.storage, read, {"w": "v * 2"})


def _add_joined(ds: ft.Dataset, read: Any) -> None:
    values = pa.table({"id": pa.array([0, 3], pa.int64()), "w": ["a", "b"]})
    add_joined_columns(ds.storage, read, values, on="id")


EDITS: dict[str, Callable[[ft.Dataset, Any], None]] = {
    "merge_insert": _merge,
    "update": _update,
    "replace_where": _replace,
    "add_column_values": _add_values,
    "add_joined_columns": _add_joined,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_planned_on_a_version_equals_one_planned_on_its_manifest(
    tmp_path: Path, edit: str
) -> None:
    by_version, by_manifest = _table(tmp_path, "a"), _table(tmp_path, "b")
    by_version.delete("id = 5")
    by_manifest.delete("id = 5")
    EDITS[edit](by_version, ft.dataset(by_version.uri).table_version)
    EDITS[edit](by_manifest, ft.dataset(by_manifest.uri).manifest)
    got = ft.dataset(by_version.uri).to_table().sort_by("id")
    assert got == ft.dataset(by_manifest.uri).to_table().sort_by("id")
    assert ft.dataset(by_version.uri).version == 3
    assert 5 not in got["id"].to_pylist()


def test_mark_deleted_answers_a_fragment_value(tmp_path: Path) -> None:
    ds = _table(tmp_path, "t")
    first = ds.fragments[0]
    update, emptied = mark_deleted(ds.storage, first, np.array([1, 2]), ds.version)
    assert isinstance(update, Fragment) and not emptied
    assert (update.id, update.deleted_rows, has_deletion_file(update)) == (first.id, 2, True)
    again, _ = mark_deleted(ds.storage, ds.manifest.fragments[0], np.array([1]), ds.version)
    assert isinstance(again, Fragment) and again.deleted_rows == 1
    # the second call adds to the deletion set the fragment already has
    more, _ = mark_deleted(ds.storage, update, np.array([3]), ds.version)
    assert more is not None and more.deleted_rows == 3
    assert mark_deleted(ds.storage, update, np.array([0, 3]), ds.version) == (None, True)


def test_kept_row_ids_sets_the_ids_of_written_rows_or_leaves_them(tmp_path: Path) -> None:
    ds = _table(tmp_path, "t")
    schema = ds.table_version.schema
    tables = [pa.table({"id": [7, 8], "v": [7, 8]}), pa.table({"id": [9], "v": [9]})]
    written = write_new_rows(ds.storage, schema, tables, 2, WriteProperties())
    assert [f.physical_rows for f in written] == [2, 1]
    ids = [np.array([4, 2]), np.array([6])]
    kept = kept_row_ids(written, ids)
    assert [_ids(f) for f in kept] == [[4, 2], [6]]
    inserted = kept_row_ids(written, [ids[0], np.full(1, UNASSIGNED, dtype=np.int64)])
    assert _ids(inserted[0]) == [4, 2]
    assert kept_row_ids(written, [ids[0], None]) == written
    assert kept_row_ids(written, []) == written
