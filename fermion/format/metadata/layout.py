"""From an Arrow type to Fermion's node tree and its Decomposed Columnar Streams.

A column is one top-level field. Its *storage node tree* is walked in pre-order; each node
owns the Arrow buffers of its level as streams (the "DCS" model of docs/FORMAT.md §3)::

    null                      (no streams)
    bool, fixed-width         VALIDITY, DATA
    binary/string (+large)    VALIDITY, OFFSETS, DATA   (string_view/binary_view as large)
    list, large_list, map     VALIDITY, OFFSETS, then the child node
    fixed_size_list           VALIDITY, then the child node
    struct                    VALIDITY, then each child node
    dictionary                VALIDITY, DATA (indices), then the dictionary-values node

A map's child is its (non-null) entries struct; an extension type is stored as its storage
type. Three Arrow layouts without a node kind of their own are stored as another type (the
*encoded* types, docs/FORMAT.md §3.1); the field in the schema area keeps the real type, so
the file alone says how to rebuild them::

    sparse_union, dense_union    struct<type_ids: int8 not null, one nullable child per member>
    run_end_encoded<r, T>        T (the logical values, one per row)
    list_view / large_list_view  list / large_list (values compacted)

The stream list of a column is a pure function of its type, so a reader checks the CMB's
stream directory against it.

Example:
    >>> import pyarrow as pa
    >>> root = build_tree(pa.field("x", pa.list_(pa.int64())))
    >>> [(s.node, s.stream_type.name) for s in root.all_streams()]
    [(0, 'VALIDITY'), (0, 'OFFSETS'), (1, 'VALIDITY'), (1, 'DATA')]
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.types as pat

from fermion.errors import UnsupportedTypeError
from fermion.format.metadata.structs import StreamType

__all__ = [
    "Kind",
    "Node",
    "StreamSpec",
    "build_tree",
    "is_encoded",
    "is_view",
    "is_wrapped",
    "storage_type",
    "view_storage",
    "without_views",
]


class Kind(enum.Enum):
    """How a node's values are laid out."""

    NULL = "null"
    BOOL = "bool"
    FIXED = "fixed"
    BINARY = "binary"
    LIST = "list"
    FIXED_LIST = "fixed_size_list"
    STRUCT = "struct"
    MAP = "map"
    DICTIONARY = "dictionary"


@dataclass(frozen=True)
class StreamSpec:
    """One stream of a column: its position in the column, owner node and type."""

    index: int
    node: int
    stream_type: StreamType


@dataclass(slots=True)
class Node:
    """A storage node: one level of a (possibly nested) Arrow type."""

    index: int  # pre-order within the column
    name: str
    type: pa.DataType  # the logical type at this level (extension types kept)
    kind: Kind
    nullable: bool
    byte_width: int = 0  # FIXED: bytes per value; BINARY/LIST: bytes per offset
    list_size: int = 0  # FIXED_LIST
    # tuples, not lists: a flat column's node shares the empty tuple and one tuple of
    # streams (a lookup builds a node per column it opens)
    children: Sequence[Node] = ()
    streams: Sequence[StreamSpec] = ()
    bloom: StreamSpec | None = None  # root only: the BLOOM stream, last in the column

    def walk(self) -> Iterator[Node]:
        """This node and its descendants, pre-order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def all_streams(self) -> list[StreamSpec]:
        """Every stream of the subtree, in file order (a root's BLOOM stream last)."""
        if not self.children:  # a leaf (most columns): no walk
            out = list(self.streams)
        else:
            out = [s for node in self.walk() for s in node.streams]
        return out + [self.bloom] if self.bloom is not None else out

    def stream(self, stream_type: StreamType) -> StreamSpec | None:
        """This node's own stream of ``stream_type``, if it has one."""
        for s in self.streams:
            if s.stream_type == stream_type:
                return s
        return None

    @property
    def storage(self) -> pa.DataType:
        return storage_type(self.type)

    @property
    def flat(self) -> bool:
        """A column root whose pages readers may select one by one (pruning, point reads):
        BOOL, FIXED or BINARY, not an extension or encoded type. Other columns are read
        stripe by stripe whole."""
        return self.kind in (Kind.FIXED, Kind.BOOL, Kind.BINARY) and not is_wrapped(self.type)

    @property
    def encoded(self) -> bool:
        """Whether this node stores an encoded type (at any extension layer): its subtree
        is read and projected as a whole."""
        t = self.type
        while isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        return is_encoded(t)


def is_view(t: pa.DataType) -> bool:
    """string_view / binary_view: stored as BINARY with i64 offsets, cast back on read."""
    return bool(pat.is_string_view(t) or pat.is_binary_view(t))


def view_storage(t: pa.DataType) -> pa.DataType:
    """The offsets-based type a view type is stored as."""
    return pa.large_string() if pat.is_string_view(t) else pa.large_binary()


def without_views(t: pa.DataType) -> pa.DataType:
    """``t`` with every view type (at any depth) replaced by its offsets-based variant."""
    if is_view(t):
        return view_storage(t)
    if pat.is_struct(t):
        return pa.struct([f.with_type(without_views(f.type)) for f in t])
    if pat.is_map(t):
        return pa.map_(
            t.key_field.with_type(without_views(t.key_type)),
            t.item_field.with_type(without_views(t.item_type)),
        )
    if pat.is_large_list(t):
        return pa.large_list(t.value_field.with_type(without_views(t.value_type)))
    if pat.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(without_views(t.value_type)), t.list_size)
    if pat.is_list(t):
        return pa.list_(t.value_field.with_type(without_views(t.value_type)))
    return t


_ENCODED_TYPE_IDS = frozenset(
    (
        pa.lib.Type_SPARSE_UNION,
        pa.lib.Type_DENSE_UNION,
        pa.lib.Type_RUN_END_ENCODED,
        pa.lib.Type_LIST_VIEW,
        pa.lib.Type_LARGE_LIST_VIEW,
    )
)


def is_encoded(t: pa.DataType) -> bool:
    """A union, run-end encoded or list-view type: stored as another type (see above)."""
    return t.id in _ENCODED_TYPE_IDS  # one set lookup: asked for every column of a schema


def is_wrapped(t: pa.DataType) -> bool:
    """An extension or encoded type: its node stores another type and rebuilds ``t``."""
    return isinstance(t, pa.BaseExtensionType) or t.id in _ENCODED_TYPE_IDS


UNION_TYPE_IDS = "type_ids"  # the first child of a union's storage struct


def _unwrap(t: pa.DataType) -> pa.DataType:
    """One layer: the type an extension or encoded type ``t`` is stored as."""
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pat.is_union(t):
        members = [t.field(i).with_nullable(True) for i in range(t.num_fields)]
        return pa.struct([pa.field(UNION_TYPE_IDS, pa.int8(), nullable=False), *members])
    if pat.is_run_end_encoded(t):
        return t.value_type
    if pat.is_list_view(t):
        return pa.list_(t.value_field)
    return pa.large_list(t.value_field)  # large_list_view


def storage_type(t: pa.DataType) -> pa.DataType:
    """The physical type of ``t`` (extension and encoded types unwrapped, every layer).

    Example:
        >>> storage_type(pa.run_end_encoded(pa.int32(), pa.list_view(pa.int8())))
        ListType(list<item: int8>)
    """
    while is_wrapped(t):
        t = _unwrap(t)
    return t


def _kind_of(t: pa.DataType) -> tuple[Kind, int]:
    if pat.is_integer(t) or pat.is_floating(t):  # the usual case first
        return Kind.FIXED, t.bit_width // 8
    if pat.is_null(t):
        return Kind.NULL, 0
    if pat.is_boolean(t):
        return Kind.BOOL, 0
    if pat.is_dictionary(t):
        return Kind.DICTIONARY, t.index_type.bit_width // 8
    if pat.is_string(t) or pat.is_binary(t):
        return Kind.BINARY, 4
    if pat.is_large_string(t) or pat.is_large_binary(t) or is_view(t):
        return Kind.BINARY, 8
    if pat.is_map(t):
        return Kind.MAP, 4
    if pat.is_list(t):
        return Kind.LIST, 4
    if pat.is_large_list(t):
        return Kind.LIST, 8
    if pat.is_fixed_size_list(t):
        return Kind.FIXED_LIST, 0
    if pat.is_struct(t):
        return Kind.STRUCT, 0
    if (
        pat.is_integer(t)
        or pat.is_floating(t)
        or pat.is_decimal(t)
        or pat.is_temporal(t)
        or pat.is_fixed_size_binary(t)
        or pat.is_interval(t)
    ):
        width = t.bit_width
        if width % 8:
            raise UnsupportedTypeError(f"type {t} has a bit width of {width}")
        return Kind.FIXED, width // 8
    raise UnsupportedTypeError(f"Fermion format v1 cannot store Arrow type {t}")


_OWN_STREAMS = {
    Kind.NULL: (),
    Kind.BOOL: (StreamType.VALIDITY, StreamType.DATA),
    Kind.FIXED: (StreamType.VALIDITY, StreamType.DATA),
    Kind.BINARY: (StreamType.VALIDITY, StreamType.OFFSETS, StreamType.DATA),
    Kind.LIST: (StreamType.VALIDITY, StreamType.OFFSETS),
    Kind.MAP: (StreamType.VALIDITY, StreamType.OFFSETS),
    Kind.FIXED_LIST: (StreamType.VALIDITY,),
    Kind.STRUCT: (StreamType.VALIDITY,),
    Kind.DICTIONARY: (StreamType.VALIDITY, StreamType.DATA),
}


def _child_fields(t: pa.DataType, kind: Kind) -> list[pa.Field]:
    if kind in (Kind.LIST, Kind.FIXED_LIST):
        return [t.value_field]
    if kind == Kind.STRUCT:
        return [t.field(i) for i in range(t.num_fields)]
    if kind == Kind.MAP:
        entries = pa.struct([t.key_field, t.item_field])
        return [pa.field("entries", entries, nullable=False)]
    if kind == Kind.DICTIONARY:
        return [pa.field("dictionary", t.value_type)]
    return []


FLAT_STREAMS = (StreamSpec(0, 0, StreamType.VALIDITY), StreamSpec(1, 0, StreamType.DATA))


def _build(fld: pa.Field, counter: list[int], column: str) -> Node:
    """The node of ``fld`` and its subtree; ``counter`` holds the next node and stream
    indices of the column (a module function, not a closure: a recursive closure is a
    reference cycle, and every tree built would wait for the garbage collector)."""
    t = storage_type(fld.type)
    kind, width = _kind_of(t)
    node = Node(
        index=counter[0],
        name=fld.name,
        type=fld.type,
        kind=kind,
        nullable=fld.nullable,
        byte_width=width,
        list_size=t.list_size if kind == Kind.FIXED_LIST else 0,
    )
    counter[0] += 1
    if counter[0] > 0xFFFF:
        raise UnsupportedTypeError(f"field {column!r} has more than 65535 nested nodes")
    streams = []
    for st in _OWN_STREAMS[kind]:
        streams.append(StreamSpec(counter[1], node.index, st))
        counter[1] += 1
    node.streams = tuple(streams)
    node.children = tuple(_build(child, counter, column) for child in _child_fields(t, kind))
    if kind == Kind.DICTIONARY and node.children[0].kind in (
        Kind.NULL,  # a NULL node has no stream to record the dictionary length
        Kind.LIST,
        Kind.FIXED_LIST,
        Kind.STRUCT,
        Kind.MAP,
        Kind.DICTIONARY,
    ):
        raise UnsupportedTypeError(f"dictionary values of type {t.value_type} in {fld.name!r}")
    return node


def build_tree(f: pa.Field, *, bloom: bool = False) -> Node:
    """Build the storage node tree of one top-level field, with stream numbering.

    ``bloom`` adds the column's BLOOM stream after all others (flat columns only).
    """
    t = f.type
    if (pat.is_integer(t) or pat.is_floating(t)) and not bloom:  # the usual case, directly
        return Node(
            0, f.name, t, Kind.FIXED, f.nullable, byte_width=t.bit_width // 8, streams=FLAT_STREAMS
        )
    counter = [0, 0]  # next node index, next stream index
    root = _build(f, counter, f.name)
    if bloom:
        if root.kind not in (Kind.FIXED, Kind.BINARY) or root.children:
            raise UnsupportedTypeError(f"bloom filters need a flat column; {f.name!r} is {f.type}")
        root.bloom = StreamSpec(counter[1], 0, StreamType.BLOOM)
    return root
