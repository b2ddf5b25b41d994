"""Table schemas with field ids, schema evolution, and reading old files through a new schema.

Every schema node (a top-level field, then its children recursively: depth-first pre-order)
carries an integer field id. Ids are assigned once and never reused, so data files keep
being read correctly after columns are renamed, dropped, re-added or widened: a file's
column belongs to the table column with the same *id*, whatever its name is today.

Evolution works on top-level columns: add (nullable; old fragments read it as nulls), drop,
rename, and widen (signed/unsigned integers to a wider integer, ``float32`` to ``float64``).

Example:
    >>> import pyarrow as pa
    >>> s = TableSchema.from_arrow(pa.schema([("a", pa.int32()), ("b", pa.string())]))
    >>> s.field_ids, s.max_field_id
    ((0, 1), 1)
    >>> s2 = s.rename_columns({"a": "alpha"}).widen_columns({"alpha": pa.int64()})
    >>> s2.arrow.names, s2.field_ids, str(s2.arrow.field("alpha").type)
    (['alpha', 'b'], (0, 1), 'int64')
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from fermion.errors import InvalidArgumentError, InvalidFileError, SchemaMismatchError
from fermion.format.metadata.layout import build_tree, is_wrapped
from fermion.table.proto import manifest_pb2 as pb

__all__ = ["TableSchema", "count_nodes", "project_file_table", "top_level_field_ids"]

_WIDENINGS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int8(): (pa.int16(), pa.int32(), pa.int64()),
    pa.int16(): (pa.int32(), pa.int64()),
    pa.int32(): (pa.int64(),),
    pa.uint8(): (pa.uint16(), pa.uint32(), pa.uint64(), pa.int16(), pa.int32(), pa.int64()),
    pa.uint16(): (pa.uint32(), pa.uint64(), pa.int32(), pa.int64()),
    pa.uint32(): (pa.uint64(), pa.int64()),
    pa.float32(): (pa.float64(),),
}


def count_nodes(field: pa.Field) -> int:
    """Number of schema nodes of ``field``: itself plus all descendants, counted as the file
    format stores them (a dictionary has a value node, an extension type its storage's).

    Raises:
        UnsupportedTypeError: the format cannot store ``field``'s type.

    Example:
        >>> count_nodes(pa.field("s", pa.struct([("x", pa.int8()), ("y", pa.list_(pa.int8()))])))
        4
        >>> count_nodes(pa.field("c", pa.dictionary(pa.int8(), pa.string())))
        2
    """
    kind = field.type
    if kind.num_fields == 0 and not (isinstance(kind, pa.DictionaryType) or is_wrapped(kind)):
        return 1  # the common flat case, without building the storage tree
    return sum(1 for _ in build_tree(field).walk())


#: Ids of Arrow types that are always one schema node: no children, neither dictionary,
#: extension nor encoded (what :func:`count_nodes` counts as 1 without building a tree).
_ONE_NODE_TYPE_IDS = frozenset(
    t.id
    for t in (
        pa.null(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(),
        pa.uint16(), pa.uint32(), pa.uint64(), pa.float16(), pa.float32(), pa.float64(),
        pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.binary(1),
        pa.date32(), pa.date64(), pa.time32("s"), pa.time64("us"), pa.timestamp("us"),
        pa.duration("us"), pa.month_day_nano_interval(), pa.decimal128(1), pa.decimal256(1),
    )
)  # fmt: skip


def top_level_field_ids(schema: pa.Schema, field_ids: Sequence[int]) -> list[int]:
    """The id of each top-level field, given the DFS pre-order ids of every node.

    Raises:
        InvalidFileError: ``field_ids`` does not have one id per node.

    Example:
        >>> s = pa.struct([("x", pa.int8())])
        >>> sch = pa.schema([("a", pa.int8()), ("s", s), ("b", pa.int8())])
        >>> top_level_field_ids(sch, [10, 11, 12, 13])
        [10, 11, 13]
    """
    types = schema.types
    if len(field_ids) == len(types) and {t.id for t in types} <= _ONE_NODE_TYPE_IDS:
        return [int(i) for i in field_ids]  # one node per column (a wide flat table's case)
    out: list[int] = []
    position = 0
    for field in schema:
        if position >= len(field_ids):
            raise InvalidFileError(f"{len(field_ids)} field ids for a schema with more nodes")
        out.append(int(field_ids[position]))
        position += count_nodes(field)
    if position != len(field_ids):
        raise InvalidFileError(f"{len(field_ids)} field ids for a schema of {position} nodes")
    return out


@dataclass(frozen=True)
class TableSchema:
    """An Arrow schema plus one field id per node (DFS pre-order) and the id high-water mark.

    Attributes:
        arrow: The Arrow schema readers see.
        field_ids: One id per schema node in depth-first pre-order.
        max_field_id: The highest id ever assigned (ids are never reused), -1 if none.
    """

    arrow: pa.Schema
    field_ids: tuple[int, ...]
    max_field_id: int
    _top_ids: tuple[int, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        top = tuple(top_level_field_ids(self.arrow, self.field_ids))  # validates the node count
        object.__setattr__(self, "_top_ids", top)  # computed once: readers ask per fragment
        if len(set(self.field_ids)) != len(self.field_ids):
            raise InvalidFileError("duplicate field ids in a table schema")
        if self.field_ids and max(self.field_ids) > self.max_field_id:
            raise InvalidFileError("a field id exceeds the schema's max_field_id")

    @classmethod
    def from_arrow(cls, schema: pa.Schema, *, first_id: int = 0) -> TableSchema:
        """Assign fresh ids ``first_id, first_id + 1, ...`` to every node.

        Example:
            >>> TableSchema.from_arrow(pa.schema([("a", pa.int8())]), first_id=5).field_ids
            (5,)
        """
        total = sum(count_nodes(f) for f in schema)
        ids = tuple(range(first_id, first_id + total))
        return cls(schema, ids, first_id + total - 1 if total else first_id - 1)

    @classmethod
    def from_proto(cls, message: pb.Schema, max_field_id: int) -> TableSchema:
        """Decode a protobuf schema (raises ``InvalidFileError`` on bad bytes).

        The same bytes give the same (immutable) object: a process opening a table again
        (a Spark worker planning each query) does not decode its schema again.
        """
        return _decoded(message.arrow_schema, tuple(message.field_ids), max_field_id)

    def to_proto(self) -> pb.Schema:
        """Encode as the protobuf ``Schema`` message."""
        return pb.Schema(
            arrow_schema=self.arrow.serialize().to_pybytes(), field_ids=list(self.field_ids)
        )

    def top_level_ids(self) -> list[int]:
        """Field id of each top-level column, in schema order (a new list each call)."""
        return list(self._top_ids)

    def id_of(self, name: str) -> int:
        """The field id of top-level column ``name``."""
        index = self.arrow.get_field_index(name)
        if index < 0:
            raise InvalidArgumentError(f"no column named {name!r}")
        return self.top_level_ids()[index]

    def select_columns(self, names: Sequence[str]) -> TableSchema:
        """Only the top-level columns ``names``, in that order, with their field ids: a
        schema to read those columns through (``max_field_id`` is kept).

        Raises:
            InvalidArgumentError: A name is not a column.

        Example:
            >>> s = TableSchema.from_arrow(pa.schema([("a", pa.int8()), ("b", pa.int8())]))
            >>> p = s.select_columns(["b"])
            >>> p.arrow.names, p.field_ids, p.max_field_id
            (['b'], (1,), 1)
        """
        flat = len(self.field_ids) == len(self.arrow)  # one node per column
        ranges = None if flat else self._node_ranges()
        fields: list[pa.Field] = []
        ids: list[int] = []
        for name in names:
            index = self.arrow.get_field_index(name)
            if index < 0:
                raise InvalidArgumentError(f"no column named {name!r}")
            lo, hi = (index, index + 1) if ranges is None else ranges[index]
            fields.append(self.arrow.field(index))
            ids.extend(self.field_ids[lo:hi])
        return TableSchema(pa.schema(fields, self.arrow.metadata), tuple(ids), self.max_field_id)

    def _node_ranges(self) -> list[tuple[int, int]]:
        out = []
        position = 0
        for field in self.arrow:
            n = count_nodes(field)
            out.append((position, position + n))
            position += n
        return out

    def check_data(self, schema: pa.Schema) -> pa.Schema:
        """Check that appended data has exactly this schema's columns and types.

        Column order may differ and nullability may be stricter; returns the table's Arrow
        schema to cast the data to.

        Raises:
            SchemaMismatchError: A column is missing, extra, or has another type.
        """
        names, expected = set(schema.names), set(self.arrow.names)
        if len(schema.names) != len(names):
            raise SchemaMismatchError(f"duplicate column names in {schema.names}")
        if names != expected:
            raise SchemaMismatchError(
                f"columns differ: missing {sorted(expected - names)}, "
                f"unexpected {sorted(names - expected)}"
            )
        for field in self.arrow:
            theirs = schema.field(field.name)
            if not theirs.type.equals(field.type):
                raise SchemaMismatchError(
                    f"column {field.name!r} has type {theirs.type}, the table has {field.type}"
                )
            if theirs.nullable and not field.nullable:
                raise SchemaMismatchError(f"column {field.name!r} is nullable in the data")
        return self.arrow

    # -- evolution ------------------------------------------------------------------------

    def add_columns(self, fields: Iterable[pa.Field]) -> TableSchema:
        """Append nullable columns with fresh ids (old fragments read them as nulls)."""
        arrow, ids, next_id = self.arrow, list(self.field_ids), self.max_field_id + 1
        for field in fields:
            if arrow.get_field_index(field.name) >= 0:
                raise InvalidArgumentError(f"column {field.name!r} already exists")
            if not field.nullable:
                raise InvalidArgumentError(f"added column {field.name!r} must be nullable")
            n = count_nodes(field)
            arrow = arrow.append(field)
            ids.extend(range(next_id, next_id + n))
            next_id += n
        return TableSchema(arrow, tuple(ids), next_id - 1)

    def drop_columns(self, names: Iterable[str]) -> TableSchema:
        """Remove columns; their ids stay retired."""
        drop = set(names)
        missing = drop - set(self.arrow.names)
        if missing:
            raise InvalidArgumentError(f"no such columns: {sorted(missing)}")
        if drop == set(self.arrow.names):
            raise InvalidArgumentError("cannot drop every column")
        fields: list[pa.Field] = []
        ids: list[int] = []
        for field, (lo, hi) in zip(self.arrow, self._node_ranges(), strict=True):
            if field.name not in drop:
                fields.append(field)
                ids.extend(self.field_ids[lo:hi])
        return TableSchema(pa.schema(fields, self.arrow.metadata), tuple(ids), self.max_field_id)

    def rename_columns(self, mapping: Mapping[str, str]) -> TableSchema:
        """Rename top-level columns; ids are unchanged."""
        missing = set(mapping) - set(self.arrow.names)
        if missing:
            raise InvalidArgumentError(f"no such columns: {sorted(missing)}")
        names = [mapping.get(n, n) for n in self.arrow.names]
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"renaming gives duplicate names: {names}")
        fields = [f.with_name(n) for f, n in zip(self.arrow, names, strict=True)]
        return TableSchema(
            pa.schema(fields, self.arrow.metadata), self.field_ids, self.max_field_id
        )

    def widen_columns(self, mapping: Mapping[str, pa.DataType]) -> TableSchema:
        """Widen column types (int -> long, float -> double, ...); ids are unchanged."""
        fields = list(self.arrow)
        for name, new_type in mapping.items():
            index = self.arrow.get_field_index(name)
            if index < 0:
                raise InvalidArgumentError(f"no column named {name!r}")
            old = fields[index].type
            if not old.equals(new_type) and new_type not in _WIDENINGS.get(old, ()):
                raise InvalidArgumentError(f"cannot widen {name!r} from {old} to {new_type}")
            fields[index] = fields[index].with_type(new_type)
        return TableSchema(
            pa.schema(fields, self.arrow.metadata), self.field_ids, self.max_field_id
        )


@functools.lru_cache(maxsize=16)
def _decoded(arrow_bytes: bytes, field_ids: tuple[int, ...], max_field_id: int) -> TableSchema:
    try:
        arrow = pa.ipc.read_schema(pa.py_buffer(arrow_bytes))
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError) as exc:
        raise InvalidFileError(f"unreadable table schema: {exc}") from exc
    return TableSchema(arrow, field_ids, max_field_id)


def project_file_table(
    file_table: pa.Table,
    file_top_ids: Sequence[int],
    schema: TableSchema,
    columns: Sequence[str],
) -> pa.Table:
    """Read a data file's columns through the table schema, by field id.

    Args:
        file_table: Columns read from the file (a subset is fine).
        file_top_ids: Field id of each top-level column of ``file_table``.
        schema: The table schema to read through.
        columns: Table column names wanted, in output order.

    Returns:
        A table with exactly ``columns``: renamed, widened, and null-filled where the file
        predates the column.

    Example:
        >>> s = TableSchema.from_arrow(pa.schema([("a", pa.int32())]))
        >>> s = s.rename_columns({"a": "z"}).widen_columns({"z": pa.int64()})
        >>> s = s.add_columns([pa.field("new", pa.string())])
        >>> old = pa.table({"a": pa.array([1, 2], pa.int32())})
        >>> project_file_table(old, [0], s, ["z", "new"]).to_pydict()
        {'z': [1, 2], 'new': [None, None]}
    """
    by_id = dict(zip(file_top_ids, range(len(file_top_ids)), strict=True))
    top_ids = schema.top_level_ids()
    arrays = []
    fields = []
    for name in columns:
        index = schema.arrow.get_field_index(name)
        if index < 0:
            raise InvalidArgumentError(f"no column named {name!r}")
        field = schema.arrow.field(index)
        source = by_id.get(top_ids[index])
        if source is None:
            column = pa.nulls(file_table.num_rows, field.type)
        else:
            column = file_table.column(source)
            if not column.type.equals(field.type):
                column = column.cast(field.type)
        arrays.append(column)
        fields.append(field.with_nullable(True) if source is None else field)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
