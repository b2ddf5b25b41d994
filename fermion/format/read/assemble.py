"""Reader side of the DCS model: decoded stream pages -> Arrow arrays.

Decoding is buffer assembly, not a level state machine: each node's VALIDITY, OFFSETS and
DATA pages are concatenated (zero-copy for single pages) and handed to
``pa.Array.from_buffers``. Offsets are validated (start, monotonicity, end) before Arrow
sees them, so corrupt data raises :class:`InvalidFileError` instead of crashing.

Example:
    >>> import pyarrow as pa
    >>> from fermion.format.metadata.layout import build_tree
    >>> tree = build_tree(pa.field("s", pa.struct([("a", pa.int8()), ("b", pa.string())])))
    >>> pruned_type(tree, {tree.index, tree.children[1].index})
    StructType(struct<b: string>)
    >>> dictionary_encoded(pa.array(["x", "y", "x"])).indices.to_pylist()
    [0, 1, 0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fermion.errors import InvalidFileError
from fermion.format.encoding.bitmaps import concat_bitmaps, slice_bitmap, zero_bitmap
from fermion.format.encoding.encoded import from_storage
from fermion.format.encoding.encodings import int_domain, materialize_dictionaries
from fermion.format.encoding.offsets import join_run
from fermion.format.encoding.pages import DERIVED, Decoded, DictionaryPage
from fermion.format.encoding.stripe_dictionary import (
    IndexPage,
    StripeDictionaryPage,
    check_entries,
    is_dictionary_chunk,
)
from fermion.format.metadata.cmb import ColumnMeta, StreamDesc
from fermion.format.metadata.layout import (
    Kind,
    Node,
    is_view,
    storage_type,
    view_storage,
    without_views,
)
from fermion.format.metadata.structs import CHUNK_ALL_NULL, DescType, StreamType
from fermion.format.read.points import binary_values, fixed_values

__all__ = [
    "PageKey",
    "StripeContext",
    "assemble_dictionary",
    "assemble_flat",
    "dictionary_encoded",
    "assemble_node",
    "assemble_points",
    "pruned_type",
    "validity_of",
]

PageKey = tuple[int, int]  # (stream index, page index) within one column and stripe


@dataclass
class StripeContext:
    """Everything assembly needs for one column in one stripe."""

    column: str
    meta: ColumnMeta
    stripe: int
    pages: dict[PageKey, Decoded]  # decoded page payloads
    selected: set[int] | None = None  # node indices to materialise (None: all)
    # (stream, first page) -> (buffer, end page): adjacent pages decoded into one buffer
    merged: dict[PageKey, tuple[Any, int]] = field(default_factory=dict)
    joined: set[PageKey] = field(default_factory=set)  # OFFSETS runs already rebased
    verify: bool = True  # point reads verify the checksums of what they read

    def desc(self, node: Node, stream_type: StreamType) -> tuple[int, StreamDesc] | None:
        spec = node.stream(stream_type)
        if spec is None:
            return None
        return spec.index, self.meta.streams[spec.index]

    def plain(self, key: PageKey) -> bytes | memoryview:
        """A decoded page that must be plain bytes (not a dictionary or derived page)."""
        page = self.pages[key]
        if not isinstance(page, bytes | memoryview):
            raise self.fail(f"a {type(page).__name__} page where plain values belong")
        return page

    def where(self, what: str) -> str:
        """``what``, located in this column and stripe (for error messages)."""
        return f"column {self.column!r}, stripe {self.stripe}: {what}"

    def fail(self, what: str) -> InvalidFileError:
        return InvalidFileError(self.where(what))


def validity_of(ctx: StripeContext, node: Node, n: int) -> tuple[object | None, int]:
    """(bitmap buffer or None, null count or -1 when unknown) for the node's ``n`` values."""
    found = ctx.desc(node, StreamType.VALIDITY)
    if found is None:  # NULL kind
        return None, n
    k, desc = found
    if desc.desc_type == DescType.USE_DEFAULT:
        return None, 0
    if desc.desc_type == DescType.FORCE_NULL:
        return zero_bitmap(n), n
    assert desc.simple is not None
    d = desc.simple[ctx.stripe]
    if int(d["num_values"]) != n:
        raise ctx.fail(f"validity describes {int(d['num_values'])} values, expected {n}")
    length = int(d["length"])
    if length == 0:
        return None, 0
    if length == CHUNK_ALL_NULL:
        return zero_bitmap(n), n
    bitmap = ctx.plain((k, 0))
    if len(bitmap) != (n + 7) // 8:
        raise ctx.fail("validity bitmap has the wrong size")
    return bitmap, -1


def _page_ids(desc: StreamDesc, stripe: int) -> range:
    if desc.desc_type != DescType.FULL:
        return range(0)
    assert desc.full is not None
    return range(int(desc.full[stripe]["num_pages"]))


class Piece(NamedTuple):
    """Pages ``[first, end)`` of one stream: a run the decoders wrote end to end into one
    buffer (:func:`~fermion.format.read.stripes.merge_targets`), or one page (``run`` None,
    its payload in :attr:`StripeContext.pages`)."""

    first: int
    end: int
    run: Any | None


def _pieces(ctx: StripeContext, k: int, pages: Sequence[int]) -> list[Piece]:
    """Consecutive ``pages`` of stream ``k`` as pieces, in order: a run counts once (runs
    may start anywhere, as pages that cannot join one, e.g. DICTIONARY pages of a string
    column, break them)."""
    out: list[Piece] = []
    i = 0
    while i < len(pages):
        run = ctx.merged.get((k, pages[i]))
        if run is not None and run[1] <= pages[-1] + 1:
            out.append(Piece(pages[i], run[1], run[0]))
            i += run[1] - pages[i]
        else:
            out.append(Piece(pages[i], pages[i] + 1, None))
            i += 1
    return out


def _page_bytes(ctx: StripeContext, k: int, pages: Sequence[int], binary: bool) -> list[Any]:
    """The decoded bytes of consecutive ``pages`` of stream ``k``, in order."""
    parts: list[Any] = []
    for piece in _pieces(ctx, k, pages):
        if piece.run is not None:
            parts.append(piece.run)
            continue
        raw = ctx.pages[(k, piece.first)]
        if binary and isinstance(raw, DictionaryPage):  # a string DICTIONARY page
            parts.append(raw.data)
        else:
            parts.append(ctx.plain((k, piece.first)))
    return parts


def _data_bytes(ctx: StripeContext, k: int, pages: Sequence[int], binary: bool = False) -> Any:
    parts = _page_bytes(ctx, k, pages, binary)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _offsets(ctx: StripeContext, node: Node, n: int, pages: Sequence[int] | None) -> np.ndarray:
    """Offsets for ``n`` values rebased to 0; from the given OFFSETS pages (or all).

    A run the decoders wrote (each page checked on the way in) only needs its pages
    joined (:func:`~fermion.format.encoding.offsets.join_run`); offsets assembled from separate
    pages are checked to be monotonic here.
    """
    dtype = np.dtype("<i4") if node.byte_width == 4 else np.dtype("<i8")
    found = ctx.desc(node, StreamType.OFFSETS)
    assert found is not None
    k, desc = found
    if pages is None:
        pages = _page_ids(desc, ctx.stripe)
    if desc.desc_type == DescType.USE_DEFAULT or len(pages) == 0:
        return np.zeros(n + 1, dtype=dtype)
    counts = desc.pages(ctx.stripe)["row_count"]
    data_k = node.stream(StreamType.DATA)
    parts = []
    runs = 0
    for piece in _pieces(ctx, k, pages):
        p = piece.first
        if piece.run is not None:
            if (k, p) not in ctx.joined:  # rebased in place: exactly once
                entries = counts[p : piece.end].tolist()
                join_run(piece.run, entries, ctx.where(f"offsets pages {p}..{piece.end - 1}"))
                ctx.joined.add((k, p))
            parts.append(piece.run)
            runs += 1
            continue
        raw = ctx.pages[(k, p)]
        if raw is DERIVED:
            page = ctx.pages.get((data_k.index, p)) if data_k is not None else None
            if not isinstance(page, DictionaryPage):
                raise ctx.fail("a DERIVED offsets page has no dictionary page")
            parts.append(page.offsets)
        elif isinstance(raw, bytes | memoryview):
            parts.append(np.frombuffer(raw, dtype=dtype))
        else:
            raise ctx.fail("unexpected page payload in an offsets stream")
    if sum(len(q) - 1 for q in parts) != n or any(len(q) == 0 for q in parts):
        raise ctx.fail(f"offsets pages hold the wrong number of entries for {n} values")
    if len(parts) == 1:
        offs: np.ndarray = parts[0]
        if runs == 1:  # checked page by page, joined within the offset width
            return offs
        if offs[0] != 0:
            offs = offs - offs[0]
    else:  # re-base each page onto the end of the previous one, in one pass
        offs = np.empty(n + 1, dtype=np.int64)
        offs[0] = at = end = 0
        for q in parts:
            m = len(q) - 1
            shift = np.int64(int(q[0]) - end)  # computed in int64: no int32 overflow
            np.subtract(q[1:], shift, out=offs[at + 1 : at + 1 + m], dtype=np.int64)
            at += m
            end = int(offs[at])
    if offs.dtype != dtype:
        offs = offs.astype(dtype)
    if n and (int(offs[-1]) < 0 or bool(np.any(offs[1:] < offs[:-1]))):
        raise ctx.fail("offsets are not monotonic")
    return offs


def _fixed_data(ctx: StripeContext, node: Node, n: int, pages: Sequence[int] | None) -> object:
    found = ctx.desc(node, StreamType.DATA)
    assert found is not None
    k, desc = found
    nbytes = (n + 7) // 8 if node.kind == Kind.BOOL else n * node.byte_width
    if pages is None:
        pages = _page_ids(desc, ctx.stripe)
    if desc.desc_type == DescType.USE_DEFAULT or len(pages) == 0:
        return bytes(nbytes)
    if node.kind == Kind.BOOL:  # batch-aligned bool pages may hold any number of bits
        counts = desc.pages(ctx.stripe)["row_count"][list(pages)].tolist()
        data = concat_bitmaps([ctx.plain((k, p)) for p in pages], counts)
    else:
        data = _data_bytes(ctx, k, pages, binary=True)
    if len(data) != nbytes:
        raise ctx.fail(f"data has {len(data)} bytes, expected {nbytes}")
    return data


def _binary_data(
    ctx: StripeContext, node: Node, offs: np.ndarray, pages: Sequence[int] | None
) -> object:
    found = ctx.desc(node, StreamType.DATA)
    assert found is not None
    k, desc = found
    expected = int(offs[-1]) if len(offs) else 0
    if pages is None:
        pages = _page_ids(desc, ctx.stripe)
    if desc.desc_type == DescType.USE_DEFAULT or len(pages) == 0:
        data: object = b""
    else:
        data = _data_bytes(ctx, k, pages, binary=True)
    size = data.size if isinstance(data, pa.Buffer) else len(data)  # type: ignore[arg-type]
    if size != expected:
        raise ctx.fail(f"binary data has {size} bytes, offsets say {expected}")
    return data


def _binary_parts(
    ctx: StripeContext, node: Node, n: int, pages: Sequence[int] | None
) -> tuple[np.ndarray, object]:
    """Offsets (rebased to 0) and bytes of ``n`` values of a BINARY node from the given
    pages (or all of the stripe's)."""
    found = _dictionary_pages(ctx, node, pages)
    if found is None:
        offs = _offsets(ctx, node, n, pages)
        return offs, _binary_data(ctx, node, offs, pages)
    dtype = np.dtype("<i4") if node.byte_width == 4 else np.dtype("<i8")
    try:
        offs, data = materialize_dictionaries(found, dtype)
    except InvalidFileError as exc:
        raise ctx.fail(str(exc)) from None
    if len(offs) - 1 != n:
        raise ctx.fail(f"offsets pages hold the wrong number of entries for {n} values")
    return offs, data


def _dictionary_pages(
    ctx: StripeContext, node: Node, pages: Sequence[int] | None
) -> list[tuple[np.ndarray, pa.Array]] | None:
    """``(indices, dictionary)`` of each of the node's pages when they are string
    DICTIONARY pages (DERIVED offsets), so that the values are materialised for all pages at
    once (:func:`~fermion.format.encoding.encodings.materialize_dictionaries`); else None.

    Plain pages may be among them if they hold at most an eighth of the rows (a writer
    cuts a short page at a stripe's end, and in batch mode at a batch's): each run of
    consecutive plain pages is then its own dictionary, taken in order. A run, not each
    page: the decoders may have joined consecutive plain pages into one piece
    (:func:`_pieces`), whose pages are no longer held one by one.
    """
    data, offsets = ctx.desc(node, StreamType.DATA), ctx.desc(node, StreamType.OFFSETS)
    if data is None or offsets is None or offsets[1].desc_type != DescType.FULL:
        return None
    k, desc = data
    if pages is None:
        pages = _page_ids(desc, ctx.stripe)
    raws = [ctx.pages.get((k, p)) for p in pages]
    counts = offsets[1].pages(ctx.stripe)["row_count"]
    dictionaries = [isinstance(raw, DictionaryPage) for raw in raws]
    plain = sum(int(counts[p]) for p, d in zip(pages, dictionaries, strict=True) if not d)
    if not any(dictionaries) or 8 * plain > sum(int(counts[p]) for p in pages):
        return None
    out = []
    i = 0
    while i < len(pages):
        raw = raws[i]
        if isinstance(raw, DictionaryPage):
            if ctx.pages.get((offsets[0], pages[i])) is not DERIVED:
                return None
            out.append((raw.indices, raw.dictionary))
            i += 1
            continue
        j = i + 1  # plain pages i..j-1, consecutive: their values are their dictionary
        while j < len(pages) and not dictionaries[j] and pages[j] == pages[j - 1] + 1:
            j += 1
        run = list(pages[i:j])
        m = sum(int(counts[p]) for p in run)
        offs = _offsets(ctx, node, m, run)
        values = _buf(_binary_data(ctx, node, offs, run))
        wide = pa.py_buffer(offs.astype(np.int64))
        dictionary = pa.Array.from_buffers(pa.large_binary(), m, [None, wide, values])
        out.append((np.arange(m), dictionary))
        i = j
    return out


def _buf(x: object | None) -> pa.Buffer | None:
    if x is None or isinstance(x, pa.Buffer):
        return x
    return pa.py_buffer(x)


def _finish(node: Node, storage: pa.Array, t: pa.DataType) -> pa.Array:
    return from_storage(t, storage)


def _physical(t: pa.DataType) -> pa.DataType:
    """The type ``from_buffers`` builds: view types are assembled as their large variant."""
    return view_storage(t) if is_view(t) else t


def _from_buffers(
    ctx: StripeContext,
    t: pa.DataType,
    n: int,
    buffers: list[object | None],
    nulls: int,
    children: list[pa.Array] | None = None,
) -> pa.Array:
    try:
        arr = pa.Array.from_buffers(
            t, n, [_buf(b) for b in buffers], null_count=nulls, children=children
        )
        arr.validate()
    except (pa.ArrowInvalid, ValueError, TypeError) as exc:
        raise ctx.fail(f"cannot assemble values: {exc}") from None
    return arr


def pruned_type(node: Node, selected: set[int] | None) -> pa.DataType:
    """The node's type keeping only selected struct children (all when None)."""
    if selected is None or node.encoded:
        return node.type
    t = node.storage
    if node.kind == Kind.STRUCT:
        kept = [
            pa.field(c.name, pruned_type(c, selected), c.nullable, t.field(i).metadata)
            for i, c in enumerate(node.children)
            if c.index in selected
        ]
        return pa.struct(kept)
    if node.kind in (Kind.LIST, Kind.FIXED_LIST) and node.children[0].index in selected:
        child = node.children[0]
        vf = pa.field(
            child.name, pruned_type(child, selected), child.nullable, t.value_field.metadata
        )
        if node.kind == Kind.FIXED_LIST:
            return pa.list_(vf, node.list_size)
        return pa.large_list(vf) if node.byte_width == 8 else pa.list_(vf)
    return node.type


def _dictionary_length(ctx: StripeContext, node: Node) -> int:
    """Values in a dictionary node this stripe: the first stream with descriptors says."""
    for spec in node.streams:
        desc = ctx.meta.streams[spec.index]
        if desc.simple is not None:
            return int(desc.simple[ctx.stripe]["num_values"])
        if desc.full is not None:
            return int(desc.full[ctx.stripe]["num_values"])
    return 0


def assemble_node(ctx: StripeContext, node: Node, n: int) -> pa.Array:
    """Materialise ``n`` values of ``node`` (whole stripe) from decoded pages."""
    t = pruned_type(node, ctx.selected)
    storage_t = storage_type(t)
    kind = node.kind
    if kind == Kind.NULL:
        return _finish(node, pa.nulls(n), t)
    validity, nulls = validity_of(ctx, node, n)
    if kind in (Kind.FIXED, Kind.BOOL):
        data = _fixed_data(ctx, node, n, None)
        return _finish(node, _from_buffers(ctx, storage_t, n, [validity, data], nulls), t)
    if kind == Kind.BINARY:
        offs, data = _binary_parts(ctx, node, n, None)
        arr = _from_buffers(ctx, _physical(storage_t), n, [validity, offs, data], nulls)
        return _finish(node, arr, t)
    if kind == Kind.DICTIONARY:
        indices = _fixed_data(ctx, node, n, None)
        values_node = node.children[0]
        dictionary = assemble_node(ctx, values_node, _dictionary_length(ctx, values_node))
        try:
            arr = pa.DictionaryArray.from_buffers(
                storage_t, n, [_buf(validity), _buf(indices)], dictionary, null_count=nulls
            )
            arr.validate(full=True)
        except (pa.ArrowInvalid, ValueError, TypeError) as exc:
            raise ctx.fail(f"cannot assemble dictionary values: {exc}") from None
        return _finish(node, arr, t)
    if kind in (Kind.LIST, Kind.MAP):
        offs = _offsets(ctx, node, n, None)
        child = assemble_node(ctx, node.children[0], int(offs[-1]) if n else 0)
        arr = _from_buffers(ctx, storage_t, n, [validity, offs], nulls, [child])
        return _finish(node, arr, t)
    if kind == Kind.FIXED_LIST:
        child = assemble_node(ctx, node.children[0], n * node.list_size)
        return _finish(node, _from_buffers(ctx, storage_t, n, [validity], nulls, [child]), t)
    if kind == Kind.STRUCT:
        children = [
            assemble_node(ctx, c, n)
            for c in node.children
            if ctx.selected is None or c.index in ctx.selected
        ]
        arr = _from_buffers(ctx, storage_t, n, [validity], nulls, children)
        if nulls and any(c.null_count for c in children):
            arr = _non_nullable_children_valid(ctx, arr, storage_t, validity, nulls)
        return _finish(node, arr, t)
    raise ctx.fail(f"unknown node kind {kind}")


def _non_nullable_children_valid(
    ctx: StripeContext, arr: pa.StructArray, t: pa.DataType, validity: object, nulls: int
) -> pa.StructArray:
    """A non-nullable child holding nulls only under null parents (as some Parquet writers
    leave it) gets no validity: the slots under null parents read as the default value (0,
    "", an empty list), so the array is valid and writes back to Parquet. A null under a
    valid parent is left alone (the data breaks its own schema)."""
    parent_valid = arr.is_valid()
    children = []
    for i in range(t.num_fields):
        child = arr.field(i)
        if not t.field(i).nullable and child.null_count:
            exposed = pc.any(pc.and_(child.is_null(), parent_valid)).as_py()
            if not exposed:
                child = _without_validity(child)
        children.append(child)
    return _from_buffers(ctx, t, len(arr), [validity], nulls, children)


def _without_validity(child: pa.Array) -> pa.Array:
    """``child`` with its validity bitmap dropped (top level only; built at offset 0)."""
    t = child.type
    own = child.buffers()[: t.num_buffers]
    if pa.types.is_struct(t):
        grandchildren = [child.field(j) for j in range(t.num_fields)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        grandchildren = [child.values]
    elif t.num_fields:
        return child  # maps, unions, ...: left as they are
    else:
        grandchildren = None
    return pa.Array.from_buffers(t, len(child), [None, *own[1:]], 0, children=grandchildren)


def null_column(n: int, t: pa.DataType) -> pa.Array:
    """``n`` nulls of type ``t`` for a column with no data (every value null, no CMB).

    Unlike ``pa.nulls``, a non-nullable child of a struct or fixed-size list holds default
    values (0, "", an empty list) with no validity, so the array keeps its own schema and
    writes back to Parquet (docs/FORMAT.md: a column whose values are all null stores none).

    Example:
        >>> t = pa.struct([pa.field("x", pa.int32(), nullable=False)])
        >>> arr = null_column(2, t)
        >>> arr.null_count, arr.field(0).null_count, arr.field(0).to_pylist()
        (2, 0, [0, 0])
    """
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, null_column(n, t.storage_type))
    if pa.types.is_struct(t) or pa.types.is_fixed_size_list(t):
        bitmap = pa.py_buffer(bytes((n + 7) // 8))
        return _with_children(t, n, [bitmap], n)
    return pa.nulls(n, t)


def _defaults(n: int, t: pa.DataType) -> pa.Array:
    """``n`` valid default values of ``t`` (zeros, empty strings and lists), no validity."""
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, _defaults(n, t.storage_type))
    if pa.types.is_struct(t) or pa.types.is_fixed_size_list(t):
        return _with_children(t, n, [None], 0)
    if (
        pa.types.is_string(t) or pa.types.is_binary(t)
        or pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    ):  # fmt: skip
        width = 8 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else 4
        return pa.Array.from_buffers(
            t, n, [None, pa.py_buffer(bytes((n + 1) * width)), pa.py_buffer(b"")]
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        width = 8 if pa.types.is_large_list(t) else 4
        offsets = pa.py_buffer(bytes((n + 1) * width))
        entries = pa.struct([t.key_field, t.item_field]) if pa.types.is_map(t) else t.value_type
        child = pa.nulls(0, entries)
        return pa.Array.from_buffers(t, n, [None, offsets], children=[child])
    try:
        bits = t.bit_width
    except ValueError:  # no fixed width (unions, dictionaries, ...): nulls are all there is
        return pa.nulls(n, t)
    return pa.Array.from_buffers(t, n, [None, pa.py_buffer(bytes((n * bits + 7) // 8))])


def _with_children(t: pa.DataType, n: int, own: list[Any], nulls: int) -> pa.Array:
    """A struct or fixed-size list of ``n`` slots (validity ``own``) whose children are
    defaults where the child field is non-nullable and all-null columns otherwise."""
    if pa.types.is_fixed_size_list(t):
        fields, size = [t.value_field], t.list_size
    else:
        fields, size = [t.field(i) for i in range(t.num_fields)], 1
    children = [
        _defaults(n * size, f.type) if not f.nullable else null_column(n * size, f.type)
        for f in fields
    ]
    return pa.Array.from_buffers(t, n, own, null_count=nulls, children=children)


def _rows_validity(
    ctx: StripeContext,
    node: Node,
    stripe_rows: int,
    rows: tuple[int, int],
    full_validity: Callable[[], tuple[object | None, int]] | None,
) -> tuple[object | None, int]:
    """(bitmap or None, null count or -1) of rows ``[a, b)`` of the stripe's column."""
    a, b = rows
    validity, nulls = (full_validity or (lambda: validity_of(ctx, node, stripe_rows)))()
    if validity is not None and (a or b - a != stripe_rows):
        validity = slice_bitmap(validity, a, b - a)
        nulls = -1 if nulls != stripe_rows else b - a
    return validity, nulls


def _stripe_dictionary(ctx: StripeContext, node: Node) -> StripeDictionaryPage | None:
    """The decoded stripe dictionary of a BINARY node's DATA chunk in this stripe (1.4),
    None when the chunk has none (its first page holds rows, §5.4)."""
    found = ctx.desc(node, StreamType.DATA)
    assert found is not None
    k, desc = found
    if desc.desc_type != DescType.FULL or not is_dictionary_chunk(
        desc.pages(ctx.stripe)["row_count"]
    ):
        return None
    page = ctx.pages.get((k, 0))
    check_entries(None, page, ctx.where("DATA page 0"))
    assert isinstance(page, StripeDictionaryPage)
    return page


def _dictionary_indices(
    ctx: StripeContext,
    node: Node,
    dictionary: StripeDictionaryPage,
    pages: Sequence[int],
    stripe_rows: int,
    rows: tuple[int, int],
    full_validity: Callable[[], tuple[object | None, int]] | None,
) -> pa.Array:
    """The int32 indices (nulls from the validity) of rows ``rows`` held by DATA pages
    ``pages`` of a stripe-dictionary chunk, each page checked against the dictionary."""
    k = ctx.desc(node, StreamType.DATA)[0]  # type: ignore[index]
    offsets_k = ctx.desc(node, StreamType.OFFSETS)[0]  # type: ignore[index]
    parts = []
    for p in pages:
        raw = ctx.pages.get((k, p))
        where = ctx.where(f"DATA page {p}")
        if not isinstance(raw, IndexPage):
            raise InvalidFileError(f"{where}: not DICTIONARY_INDICES in a stripe-dictionary chunk")
        if ctx.pages.get((offsets_k, p)) is not DERIVED:
            raise ctx.fail(f"OFFSETS page {p} of a stripe-dictionary chunk is not DERIVED")
        check_entries(raw, dictionary, where)
        parts.append(raw.indices)
    a, b = rows
    indices = np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, np.int32)
    if len(indices) != b - a:
        raise ctx.fail(f"pages hold {len(indices)} values, expected {b - a}")
    validity, nulls = _rows_validity(ctx, node, stripe_rows, rows, full_validity)
    return _from_buffers(ctx, pa.int32(), b - a, [validity, indices], nulls)


def assemble_flat(
    ctx: StripeContext,
    node: Node,
    stripe_rows: int,
    run: tuple[int, int],
    rows: tuple[int, int],
    full_validity: Callable[[], tuple[object | None, int]] | None = None,
) -> pa.Array:
    """Rows ``rows`` of a flat column from its DATA (and OFFSETS) pages ``run = [p, q)``."""
    a, b = rows
    n = b - a
    validity, nulls = _rows_validity(ctx, node, stripe_rows, rows, full_validity)
    pages = range(*run)
    t = node.type
    storage_t = node.storage
    dictionary = _stripe_dictionary(ctx, node) if node.kind == Kind.BINARY and n else None
    if dictionary is not None:  # 1.4: the values are the stripe dictionary's, taken
        indices = _dictionary_indices(
            ctx, node, dictionary, pages, stripe_rows, rows, full_validity
        )
        values = dictionary.typed(_physical(storage_t), ctx.where("stripe dictionary"))
        return _finish(node, _take(ctx, values, indices), t)
    if node.kind == Kind.BINARY:
        offs, data = _binary_parts(ctx, node, n, pages)
        arr = _from_buffers(ctx, _physical(storage_t), n, [validity, offs, data], nulls)
        return _finish(node, arr, t)
    data = _fixed_data(ctx, node, n, pages)
    return _finish(node, _from_buffers(ctx, storage_t, n, [validity, data], nulls), t)


def _take(ctx: StripeContext, values: pa.Array, indices: pa.Array) -> pa.Array:
    try:
        return values.take(indices)
    except (pa.ArrowException, MemoryError) as exc:  # e.g. more than 32-bit offsets hold
        raise ctx.fail(f"cannot take from the stripe dictionary: {exc}") from None


def dictionary_encoded(arr: pa.Array) -> pa.DictionaryArray:
    """``arr`` (string or binary, views allowed) as ``dictionary<int32, value type>``."""
    plain = without_views(arr.type)
    if plain != arr.type:
        arr = arr.cast(plain)
    encoded = pc.dictionary_encode(arr)
    if encoded.type.index_type != pa.int32():
        encoded = encoded.cast(pa.dictionary(pa.int32(), plain))
    return encoded


def assemble_dictionary(
    ctx: StripeContext,
    node: Node,
    stripe_rows: int,
    run: tuple[int, int],
    rows: tuple[int, int],
    full_validity: Callable[[], tuple[object | None, int]] | None = None,
) -> pa.Array:
    """:func:`assemble_flat` of a BINARY column, dictionary-encoded (``read_dictionary``).

    DICTIONARY pages give their indices and distinct values as they are; other pages are
    assembled and encoded on read. The pages' dictionaries are merged into one per call
    (distinct values, first-seen order) and every page's indices remapped onto it.
    """
    if run[0] == run[1]:  # no DATA pages: empty strings, or nulls
        return dictionary_encoded(assemble_flat(ctx, node, stripe_rows, run, rows, full_validity))
    value_type = without_views(node.type)
    stripe_dictionary = _stripe_dictionary(ctx, node)
    if stripe_dictionary is not None:  # 1.4: the stripe's dictionary, as it is
        indices = _dictionary_indices(
            ctx, node, stripe_dictionary, range(*run), stripe_rows, rows, full_validity
        )
        values = stripe_dictionary.typed(value_type, ctx.where("stripe dictionary"))
        return pa.DictionaryArray.from_arrays(indices, values)
    found = ctx.desc(node, StreamType.DATA)
    assert found is not None
    k, desc = found
    layout = desc.layout(ctx.stripe)  # FULL: it has pages
    counts, first_row = layout.counts, int(layout.starts[run[0]])
    a, b = rows
    pieces: list[tuple[np.ndarray, pa.Array]] = []  # (indices, dictionary) per page
    for p in range(*run):
        start = first_row
        first_row += int(counts[p])
        raw = ctx.pages.get((k, p))
        if isinstance(raw, DictionaryPage):
            if len(raw.indices) != int(counts[p]):
                raise ctx.fail(f"dictionary page {p} holds {len(raw.indices)} values")
            pieces.append((raw.indices, raw.dictionary))
            continue
        arr = dictionary_encoded(
            assemble_flat(ctx, node, stripe_rows, (p, p + 1), (start, first_row), full_validity)
        )
        indices = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        pieces.append((indices, arr.dictionary))
    validity, nulls = _rows_validity(ctx, node, stripe_rows, rows, full_validity)
    dicts = [d.cast(value_type) if d.type != value_type else d for _, d in pieces]
    merged = pa.concat_arrays(dicts) if len(dicts) > 1 else dicts[0]
    dictionary = pc.unique(merged)
    remaps = [pc.index_in(d, value_set=dictionary).to_numpy(zero_copy_only=False) for d in dicts]
    indices = np.concatenate([r[i] for r, (i, _) in zip(remaps, pieces, strict=True)])
    indices = indices.astype(np.int32)
    if len(indices) != b - a:
        raise ctx.fail(f"pages hold {len(indices)} values, expected {b - a}")
    arr = _from_buffers(ctx, pa.int32(), b - a, [validity, pa.py_buffer(indices)], nulls)
    return pa.DictionaryArray.from_arrays(arr, dictionary)


def _select_validity(
    validity: tuple[object | None, int], points: np.ndarray
) -> tuple[bytes | None, int]:
    bitmap, nulls = validity
    if bitmap is None:
        return None, 0
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")[points]  # type: ignore[call-overload]
    return np.packbits(bits, bitorder="little").tobytes(), len(points) - int(bits.sum())


def assemble_points(
    ctx: StripeContext,
    node: Node,
    points: dict[int, np.ndarray],
    wanted: np.ndarray,
    validity: tuple[object | None, int],
) -> pa.Array:
    """The values at rows ``wanted`` (sorted, unique) of a flat column, decoded value by
    value from the undecoded DATA (and OFFSETS) pages in ``ctx.pages`` (see
    :mod:`fermion.format.read.points`).

    ``points`` maps each DATA page to the wanted rows within it, in page order.
    """
    found = ctx.desc(node, StreamType.DATA)
    assert found is not None
    k, desc = found
    counts = desc.pages(ctx.stripe)["row_count"]
    offsets_k = node.stream(StreamType.OFFSETS)
    domain = int_domain(node.storage)
    dictionary = _stripe_dictionary(ctx, node) if offsets_k is not None else None
    lengths: list[np.ndarray] = []
    parts: list[bytes] = []
    for page in sorted(points):
        rows, values = points[page], int(counts[page])
        where = ctx.where(f"page {page}")
        if offsets_k is not None:
            got, data = binary_values(
                ctx.pages[(offsets_k.index, page)],  # type: ignore[arg-type]
                ctx.pages[(k, page)],  # type: ignore[arg-type]
                rows,
                values,
                node.byte_width,
                where,
                dictionary,
                ctx.verify,
            )
            lengths.append(got)
        else:
            data = fixed_values(
                ctx.pages[(k, page)],  # type: ignore[arg-type]
                rows,
                values,
                node.byte_width,
                domain,
                where,
                ctx.verify,
            )
        parts.append(data)
    count = len(wanted)
    vbuf, nulls = _select_validity(validity, wanted)
    data_buf = b"".join(parts)
    storage_t = node.storage
    if offsets_k is None:
        arr = _from_buffers(ctx, storage_t, count, [vbuf, data_buf], nulls)
        return _finish(node, arr, node.type)
    dtype = np.dtype("<i4") if node.byte_width == 4 else np.dtype("<i8")
    offs = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths) if lengths else offs[:0], out=offs[1:])
    if int(offs[-1]) > np.iinfo(dtype).max:
        raise ctx.fail("selected values exceed the offset width")
    buffers = [vbuf, offs.astype(dtype), data_buf]
    arr = _from_buffers(ctx, _physical(storage_t), count, buffers, nulls)  # type: ignore[arg-type]
    return _finish(node, arr, node.type)
