"""Every cell of the conflict ``MATRIX``, end to end on a real table.

Generated from the registry: for each ``(mine, theirs)`` pair of registered operation types
(and an unknown operation as theirs) the test plans ``mine`` on version 2, commits
``theirs`` on version 2, then commits ``mine`` read at version 2 without a planner and
checks the outcome against the cell: OK commits, REBASE merges, RETRY raises
``CommitConflictError`` and the re-planned operation then commits, NO raises
``IncompatibleTransactionError``. Cells that are rules are run once per variant of both
operations (touching a common fragment or not, the same rows or not, the same input or
not). The verdicts seen per cell are also checked against the table in the module
docstring of :mod:`fermion.table.conflicts`, so the documented matrix is the tested one.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fermion
import fermion.table as ft
from fermion.errors import CommitConflictError, IncompatibleTransactionError
from fermion.table import conflicts
from fermion.table.codec import encode_manifest
from fermion.table.column_values import plan_add_columns
from fermion.table.commit import commit_operation
from fermion.table.conflicts import MATRIX, Verdict, check
from fermion.table.fragments import MAX_ROWS_PER_FILE_DEFAULT
from fermion.table.merge_insert import MergeInsertBuilder
from fermion.table.operations import (
    INPUT_KEY_PREFIX,
    REGISTRY,
    Append,
    CreateIndex,
    DropIndex,
    Operation,
    Overwrite,
    Restore,
    Rewrite,
    RewriteGroup,
    SchemaChange,
    UpdateConfig,
)
from fermion.table.proto import manifest_pb2 as pb
from fermion.table.proto import transaction_pb2 as txpb
from fermion.table.storage import TableStorage
from fermion.table.tasks.delete import delete_now
from fermion.table.update import plan_rows
from fermion.table.versions import load_manifest, schema_of, write_transaction
from tests.table.row_id_support import write_moved_rows

READ_VERSION = 2
Maker = Callable[[TableStorage, pb.Manifest, str], Operation]

# rows of each delete variant (x values; fragment 0 holds x 0-1, fragment 2 holds x 4-5)
DELETE_ROWS = {"x0": {0}, "x1": {1}, "frag0": {0, 1}, "x4": {4}}
REWRITE_RANGES = {"g01": range(0, 4), "g45": range(4, 6)}
INDEX_VALUES = {"c0": {0}, "c4": {4}}
# keys a merge updates ("new" updates or inserts x 100) and rows an update rewrites
# ("rw1": replace_where x = 1 by one row x = 1)
MERGE_KEYS = {"x0": {0}, "x1": {1}, "x01": {0, 1}, "new": set()}
UPDATE_ROWS = {"u0": {0}, "u45": {4, 5}, "u4": {4}, "rw1": {1}}
# rows each variant deletes, for the expected outcome of a rebase; WHOLE: empties a fragment
CHANGED_ROWS = {
    **{("delete", v): rows for v, rows in DELETE_ROWS.items()},
    **{("merge_insert", v): rows for v, rows in MERGE_KEYS.items()},
    **{("update", v): rows for v, rows in UPDATE_ROWS.items()},
}
WHOLE = {("delete", "frag0"), ("merge_insert", "x01"), ("update", "u45")}


def _fragment_values(storage: TableStorage, manifest: pb.Manifest) -> dict[int, set[int]]:
    values = {}
    for fragment in manifest.fragments:
        with fermion.FileReader(storage.path(fragment.files[0].path)) as reader:
            values[fragment.id] = set(reader.read(columns=["x"])["x"].to_pylist())
    return values


def _covering(storage: TableStorage, manifest: pb.Manifest, wanted: set[int]) -> list[int]:
    """Fragments holding any of ``wanted``, else the first live one (a re-plan on a table
    that no longer has them)."""
    values = _fragment_values(storage, manifest)
    ids = sorted(i for i, v in values.items() if v & wanted)
    return ids or [manifest.fragments[0].id]


def _append(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    frags = ft.write_fragments(pa.table({"x": pa.array([100], pa.int64())}), storage.uri)
    return Append(tuple(frags), {f"{INPUT_KEY_PREFIX}{variant}": "loaded"})


def _delete(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    live = set(ft.dataset(storage.uri, version=manifest.version).to_table()["x"].to_pylist())
    rows = DELETE_ROWS[variant] & live or {min(live)}  # a re-plan deletes what is left
    op = delete_now(storage, manifest, pc.field("x").isin(sorted(rows)))
    assert op is not None
    return op


def _rewrite(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    ids = _covering(storage, manifest, set(REWRITE_RANGES[variant]))
    values = _fragment_values(storage, manifest)
    schema = schema_of(manifest)
    live = ft.dataset(storage.uri, version=manifest.version).to_table(
        columns=[*schema.arrow.names, "_rowid"]  # the moved rows keep their row ids
    )
    keep = sorted(set().union(*(values[i] for i in ids)))
    rows = live.filter(pc.field("x").isin(keep))
    new = write_moved_rows(rows, storage.uri, schema=schema) if len(rows) else []
    return Rewrite((RewriteGroup(tuple(ids), tuple(new)),))


def _create_index(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    ids = _covering(storage, manifest, INDEX_VALUES[variant])
    index = pb.IndexMetadata(uuid=uuid.uuid4().hex, name=f"idx-{variant}", fragment_ids=ids)
    return CreateIndex(index)


def _schema_change(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    field = pa.field(f"c_{uuid.uuid4().hex[:8]}", pa.int64())
    return SchemaChange(schema_of(manifest).add_columns([field]))


def _overwrite(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    schema = schema_of(manifest)
    data = pa.table({"x": pa.array([100, 101], pa.int64())})
    return Overwrite(tuple(ft.write_fragments(data, storage.uri, schema=schema)), schema)


def _restore(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    return Restore(1)


def _live(storage: TableStorage, manifest: pb.Manifest, wanted: set[int]) -> list[int]:
    """The wanted x values still live, else the smallest live one (a re-plan)."""
    live = set(ft.dataset(storage.uri, version=manifest.version).to_table()["x"].to_pylist())
    return sorted(wanted & live or {min(live)})


def _merge_insert(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    builder = MergeInsertBuilder(storage, manifest, "x").when_matched_update_all()
    live = ft.dataset(storage.uri, version=manifest.version).to_table()
    if variant == "new":  # x 100 (other columns, if a concurrent add_columns made some: null)
        builder.when_not_matched_insert_all()
        source = pa.Table.from_pylist([{"x": 100}], live.schema)
    else:  # the rows themselves, unchanged
        source = live.filter(pc.field("x").isin(_live(storage, manifest, MERGE_KEYS[variant])))
    op = builder.plan(source)
    assert op is not None
    return op


def _update(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    if variant == "rw1":
        new = ft.write_fragments(pa.table({"x": pa.array([1], pa.int64())}), storage.uri)
        op, _ = plan_rows(storage, manifest, "x = 1", None, tuple(new), MAX_ROWS_PER_FILE_DEFAULT)
    else:
        where = pc.field("x").isin(_live(storage, manifest, UPDATE_ROWS[variant]))
        op, _ = plan_rows(storage, manifest, where, {"x": "x"}, (), MAX_ROWS_PER_FILE_DEFAULT)
    assert op is not None
    return op


def _add_columns(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    op, _ = plan_add_columns(storage, manifest, {f"g_{uuid.uuid4().hex[:8]}": "x * 2"})
    assert op is not None
    return op


def _drop_index(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    return DropIndex("idx-c0")


def _update_config(storage: TableStorage, manifest: pb.Manifest, variant: str) -> Operation:
    return UpdateConfig({"fermion.write.compression": variant})


#: name -> (maker, variants); every registered operation type needs an entry
MAKERS: dict[str, tuple[Maker, tuple[str, ...]]] = {
    "append": (_append, ("in-a", "in-b")),
    "delete": (_delete, tuple(DELETE_ROWS)),
    "rewrite": (_rewrite, tuple(REWRITE_RANGES)),
    "create_index": (_create_index, tuple(INDEX_VALUES)),
    "schema_change": (_schema_change, ("add",)),
    "overwrite": (_overwrite, ("all",)),
    "restore": (_restore, ("v1",)),
    "merge_insert": (_merge_insert, tuple(MERGE_KEYS)),
    "update": (_update, tuple(UPDATE_ROWS)),
    "add_columns": (_add_columns, ("g",)),
    "drop_index": (_drop_index, ("idx-c0",)),
    "update_config": (_update_config, ("zstd", "none")),
}
UNKNOWN = "unknown"
PAIRS = [*itertools.product(REGISTRY, REGISTRY), *((mine, UNKNOWN) for mine in REGISTRY)]


def _variants(mine: str, theirs: str) -> list[tuple[str, str]]:
    """Both operations' variants for a rule cell; one combination for a fixed verdict."""
    mine_variants = MAKERS[mine][1]
    theirs_variants = MAKERS[theirs][1] if theirs != UNKNOWN else ("none",)
    if theirs != UNKNOWN and not isinstance(MATRIX[mine][theirs], Verdict):
        return list(itertools.product(mine_variants, theirs_variants))
    return [(mine_variants[0], theirs_variants[0])]


def _table(root: Path) -> TableStorage:
    """Version 1: x 0-7 in fragments 0-3 (two rows each); version 2: x 8-9 appended."""
    uri = str(root)
    data = pa.table({"x": pa.array(range(8), pa.int64())})
    ft.write_dataset(data, uri, max_rows_per_file=2)
    ft.write_dataset(pa.table({"x": pa.array([8, 9], pa.int64())}), uri, mode="append")
    storage = TableStorage(uri)
    values = _fragment_values(storage, load_manifest(storage, 2))
    assert values == {0: {0, 1}, 1: {2, 3}, 2: {4, 5}, 3: {6, 7}, 4: {8, 9}}
    return storage


def _commit_unknown(storage: TableStorage) -> None:
    """Version 3 made by an operation this library does not know (an empty operation)."""
    latest = load_manifest(storage, READ_VERSION)
    txn = txpb.Transaction(read_version=READ_VERSION, uuid=uuid.uuid4().hex, timestamp_us=1)
    name = write_transaction(storage, txn)
    manifest = pb.Manifest()
    manifest.CopyFrom(latest)
    manifest.version = READ_VERSION + 1
    manifest.transaction_file = name
    manifest.transaction_uuid = txn.uuid
    storage.put_manifest(READ_VERSION + 1, encode_manifest(manifest))


def _expected(verdict: Verdict, mine: tuple[str, str], theirs: tuple[str, str]) -> str:
    if verdict is Verdict.REBASE:  # deletions in one fragment: merged if the rows are disjoint
        whole = mine in WHOLE or theirs in WHOLE
        disjoint = not CHANGED_ROWS[mine] & CHANGED_ROWS[theirs]
        return "rebased" if disjoint and not whole else "retry"
    return {Verdict.OK: "ok", Verdict.RETRY: "retry", Verdict.INCOMPATIBLE: "incompatible"}[verdict]


def _run_cell(root: Path, mine: str, theirs: str, mine_v: str, theirs_v: str) -> Verdict:
    storage = _table(root)
    read = load_manifest(storage, READ_VERSION)
    my_op = MAKERS[mine][0](storage, read, mine_v)
    if theirs == UNKNOWN:
        _commit_unknown(storage)
        verdict = check(my_op, None)
    else:
        their_op = MAKERS[theirs][0](storage, read, theirs_v)
        commit_operation(storage, their_op, read_version=READ_VERSION)
        verdict = check(my_op, their_op)
    expected = _expected(verdict, (mine, mine_v), (theirs, theirs_v))
    try:
        result = commit_operation(storage, my_op, read_version=READ_VERSION)
        outcome = "rebased" if result.rebased else "ok"
    except CommitConflictError:
        outcome = "retry"
        latest = load_manifest(storage, storage.latest_version() or 0)
        again = MAKERS[mine][0](storage, latest, mine_v)  # re-plan on the newer version
        assert commit_operation(storage, again, read_version=latest.version).attempts == 1
    except IncompatibleTransactionError:
        outcome = "incompatible"
    assert outcome == expected, f"{mine}[{mine_v}] over {theirs}[{theirs_v}]: {verdict}"
    final = ft.dataset(storage.uri)
    assert final.version == READ_VERSION + 1 + (outcome != "incompatible")
    final.to_table()  # whatever committed reads back
    return verdict


def _documented() -> dict[tuple[str, str], set[Verdict]]:
    """The cells of the table in the conflicts module docstring, as sets of verdicts."""
    lines = [line.split() for line in (conflicts.__doc__ or "").splitlines()]
    start = next(i for i, line in enumerate(lines) if line and line[0] == "mine")
    header = lines[start][1:]
    names = {
        "index": "create_index",
        "schema": "schema_change",
        "merge": "merge_insert",
        "addcol": "add_columns",
        "dropidx": "drop_index",
        "cfg": "update_config",
    }
    cells: dict[tuple[str, str], set[Verdict]] = {}
    for line in lines[start + 2 :]:
        if line[0].startswith("="):  # the end of the table
            break
        mine = names.get(line[0], line[0])
        for theirs, text in zip([names.get(h, h) for h in header], line[1:], strict=True):
            base = {"OK": Verdict.OK, "R": Verdict.RETRY, "NO": Verdict.INCOMPATIBLE}
            base["rebase"] = Verdict.REBASE
            word = re.sub(r"\*+$", "", text)
            if text == "OK***":  # NO for the same input
                cells[mine, theirs] = {Verdict.OK, Verdict.INCOMPATIBLE}
            elif text == "R+":  # R by the kinds of the two operations
                cells[mine, theirs] = {Verdict.OK, Verdict.RETRY}
            elif text == "rebase+":  # R by their keys or kinds, else rebase*
                cells[mine, theirs] = {Verdict.OK, Verdict.REBASE, Verdict.RETRY}
            elif text.endswith("*"):  # only when both touch a common fragment
                cells[mine, theirs] = {Verdict.OK, base[word]}
            else:
                cells[mine, theirs] = {base[word]}
    return cells


def test_every_registered_pair_and_the_unknown_operation_is_covered() -> None:
    assert set(MAKERS) == set(REGISTRY), "a new operation type needs a maker here"
    all_pairs = {(m, t) for m, row in MATRIX.items() for t in row}
    assert {p for p in PAIRS if p[1] != UNKNOWN} == all_pairs
    assert {m for m, t in PAIRS if t == UNKNOWN} == set(REGISTRY)
    assert set(_documented()) == all_pairs  # the docstring table has every cell


@pytest.mark.parametrize(("mine", "theirs"), PAIRS, ids=[f"{m}-{t}" for m, t in PAIRS])
def test_matrix_cell(tmp_path: Path, mine: str, theirs: str) -> None:
    seen = {
        _run_cell(tmp_path / f"{mine_v}-{theirs_v}", mine, theirs, mine_v, theirs_v)
        for mine_v, theirs_v in _variants(mine, theirs)
    }
    if theirs == UNKNOWN:
        assert seen == {Verdict.INCOMPATIBLE}
    else:
        assert seen == _documented()[mine, theirs]
