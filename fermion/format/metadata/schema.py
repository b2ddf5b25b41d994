"""The schema area: the full Arrow schema plus a POD index that finds one column in O(1).

Layout (offsets relative to the area start; the header sits at the *end* of the area)::

    [full schema: Arrow IPC Schema message]            only read for FileReader.schema
    [heap: UTF-8 names, per-column Arrow IPC field blobs]
    [node field ids: int32 per storage node, all columns, pre-order]
    [ColumnEntry x num_columns]
    [HashSlot x hash_capacity]                          open addressing, linear probing
    [SchemaHeader 48B]

A name lookup touches one hash window, one ColumnEntry and that column's heap bytes, so
opening a 100,000-column file and projecting 10 columns reads O(10) metadata entries.
Flat columns without field metadata are described by a one-byte ``PrimitiveCode``; any
other field is an Arrow IPC schema blob holding just that field (exact round trip of
nested, dictionary, extension types and field metadata).

Example:
    >>> import pyarrow as pa
    >>> area = build_schema_area(pa.schema([("a", pa.int64()), ("b", pa.list_(pa.int8()))]))
    >>> idx = SchemaIndex(lambda ranges: [memoryview(area)[o:o + n] for o, n in ranges],
    ...                   0, len(area), num_columns=2)
    >>> idx.lookup(["b", "zz"])
    [1, None]
    >>> idx.column(1).field.type
    ListType(list<item: int8>)
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from fermion.errors import ChecksumError, InvalidFileError, SchemaMismatchError
from fermion.format import native
from fermion.format.metadata.layout import Node, build_tree
from fermion.format.metadata.structs import (
    COLUMN_ENTRY_DTYPE,
    HASH_SLOT_DTYPE,
    SCHEMA_HEADER_DTYPE,
    PrimitiveCode,
)

__all__ = ["ColumnInfo", "SchemaIndex", "build_schema_area", "default_field_ids", "name_hash"]

Fetch = Callable[[Sequence[tuple[int, int]]], list[memoryview]]

_PRIMITIVES: dict[pa.DataType, PrimitiveCode] = {
    pa.bool_(): PrimitiveCode.BOOL,
    pa.int8(): PrimitiveCode.INT8,
    pa.int16(): PrimitiveCode.INT16,
    pa.int32(): PrimitiveCode.INT32,
    pa.int64(): PrimitiveCode.INT64,
    pa.uint8(): PrimitiveCode.UINT8,
    pa.uint16(): PrimitiveCode.UINT16,
    pa.uint32(): PrimitiveCode.UINT32,
    pa.uint64(): PrimitiveCode.UINT64,
    pa.float16(): PrimitiveCode.FLOAT16,
    pa.float32(): PrimitiveCode.FLOAT32,
    pa.float64(): PrimitiveCode.FLOAT64,
    pa.string(): PrimitiveCode.STRING,
    pa.binary(): PrimitiveCode.BINARY,
    pa.large_string(): PrimitiveCode.LARGE_STRING,
    pa.large_binary(): PrimitiveCode.LARGE_BINARY,
    pa.date32(): PrimitiveCode.DATE32,
}
_FROM_CODE = {int(code): t for t, code in _PRIMITIVES.items()}
# COLUMN_ENTRY_DTYPE and HASH_SLOT_DTYPE as structs: unpacking one record with struct
# costs a fraction of np.frombuffer(...).item(), and lookups unpack one per column
_ENTRY_STRUCT = struct.Struct("<QIIIIIHBBII")
_SLOT_STRUCT = struct.Struct("<II")
_PROBE_WINDOW = 8  # hash slots fetched per probe step
_FLAG_NULLABLE = 1
_FLAG_BLOOM = 2


def name_hash(name: str) -> int:
    """The 64-bit hash of a column name used by the on-disk index (BLAKE2b, 8 bytes)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def default_field_ids(schema: pa.Schema) -> list[int]:
    """Field ids 0..n-1 over every storage node of ``schema`` in pre-order."""
    total = sum(sum(1 for _ in build_tree(f).walk()) for f in schema)
    return list(range(total))


_CRC_OFFSET = 32  # byte offset of ColumnEntry.crc
_CRC_FIELD = slice(_CRC_OFFSET, _CRC_OFFSET + 4)
if COLUMN_ENTRY_DTYPE.fields is None or COLUMN_ENTRY_DTYPE.fields["crc"][1] != _CRC_OFFSET:
    raise RuntimeError("ColumnEntry.crc moved: update _CRC_OFFSET")


def _entry_crc(entry: bytes, name: bytes, blob: object, node_ids: object) -> int:
    """CRC32 of a column entry (its crc field zeroed) followed by the bytes it points at."""
    raw = bytearray(entry)
    raw[_CRC_FIELD] = bytes(4)
    return zlib.crc32(node_ids, zlib.crc32(blob, zlib.crc32(name, zlib.crc32(raw))))  # type: ignore[arg-type]


def _hash_capacity(n: int) -> int:
    cap = 8
    while cap * 3 < (n + 1) * 4:  # load factor <= 0.75
        cap *= 2
    return cap


def build_schema_area(
    schema: pa.Schema,
    field_ids: Sequence[int] | None = None,
    trees: Sequence[Node] | None = None,
) -> bytes:
    """Serialise ``schema`` (with one field id per storage node) into a schema area."""
    trees = list(trees) if trees is not None else [build_tree(f) for f in schema]
    node_counts = [sum(1 for _ in t.walk()) for t in trees]
    total_nodes = sum(node_counts)
    ids = np.asarray(field_ids if field_ids is not None else np.arange(total_nodes), dtype="<i4")
    if ids.shape != (total_nodes,):
        raise SchemaMismatchError(
            f"field_ids has {ids.size} entries but the schema has {total_nodes} storage nodes"
        )
    n = len(schema)
    full = schema.serialize().to_pybytes()
    heap = bytearray()
    # each entry packed with struct (numpy field-by-field assignment cost about 10 us a
    # column under cProfile), then again with its crc (_entry_crc)
    packed: list[bytes] = []
    hashes: list[int] = []
    ids_bytes = ids.tobytes()
    first = 0
    for i, fld in enumerate(schema):
        name = fld.name.encode()
        flat = not fld.metadata and not isinstance(fld.type, pa.BaseExtensionType)  # may not hash
        code = _PRIMITIVES.get(fld.type, PrimitiveCode.IPC) if flat else PrimitiveCode.IPC
        blob = b"" if code else pa.schema([fld]).serialize().to_pybytes()
        count = node_counts[i]
        h = name_hash(fld.name)
        name_offset = len(full) + len(heap)
        heap += name
        blob_offset = len(full) + len(heap)
        heap += blob
        flags = (_FLAG_NULLABLE if fld.nullable else 0) | (
            _FLAG_BLOOM if trees[i].bloom is not None else 0
        )
        fields = [h, name_offset, len(name), blob_offset, len(blob), first, count, code, flags]
        streams = len(trees[i].all_streams())
        try:
            entry = _ENTRY_STRUCT.pack(*fields, 0, streams)
        except struct.error:  # a u16 node count or u32 offset overflowing
            raise SchemaMismatchError(
                f"column {fld.name!r} does not fit a schema area entry: {count} storage "
                f"nodes (at most 65,535), heap offsets up to {blob_offset + len(blob)} bytes"
            ) from None
        crc = _entry_crc(entry, name, blob, ids_bytes[4 * first : 4 * (first + count)])
        packed.append(_ENTRY_STRUCT.pack(*fields, crc, streams))
        hashes.append(h)
        first += count
    entries = b"".join(packed)  # COLUMN_ENTRY_DTYPE[n]
    cap = _hash_capacity(n)
    tags = [0] * cap
    columns = [0] * cap  # column_plus_one
    mask = cap - 1
    for i, h in enumerate(hashes):  # insertion in column order: the first of duplicates wins
        s = h & mask
        while columns[s]:
            s = (s + 1) & mask
        tags[s] = h >> 32
        columns[s] = i + 1
    slots = np.zeros(cap, dtype=HASH_SLOT_DTYPE)
    slots["tag"] = tags
    slots["column_plus_one"] = columns
    header = np.zeros(1, dtype=SCHEMA_HEADER_DTYPE)
    h0 = header[0]
    h0["num_columns"] = n
    h0["hash_capacity"] = cap
    h0["num_nodes"] = total_nodes
    h0["full_schema_offset"] = 0
    h0["full_schema_crc"] = zlib.crc32(full)
    h0["full_schema_size"] = len(full)
    h0["heap_offset"] = len(full)
    h0["heap_size"] = len(heap)
    h0["node_ids_offset"] = len(full) + len(heap)
    h0["columns_offset"] = h0["node_ids_offset"] + ids.nbytes
    h0["hash_offset"] = h0["columns_offset"] + len(entries)
    h0["crc"] = zlib.crc32(header.tobytes()[:44])
    area = b"".join([full, bytes(heap), ids_bytes, entries, slots.tobytes()])
    if len(area) + header.nbytes > 0xFFFFFFFF:
        raise SchemaMismatchError("schema area exceeds 4 GiB")
    return area + header.tobytes()


class _Entry(NamedTuple):
    """A column entry's fields (COLUMN_ENTRY_DTYPE order) and its bytes (for the CRC)."""

    name_hash: int
    name_offset: int
    name_size: int
    blob_offset: int
    blob_size: int
    first_node: int
    num_nodes: int
    primitive_code: int
    flags: int
    crc: int
    num_streams: int
    raw: bytes


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """What the schema area says about one column."""

    index: int
    field: pa.Field
    field_ids: np.ndarray  # int32 per storage node, pre-order
    num_streams: int
    has_bloom: bool = False


class SchemaIndex:
    """Lazy, O(k) access to the schema area through a range-fetch function.

    ``resident``: the whole area's bytes, when the caller holds them already (a reader's
    tail read usually covers the metadata): the compiled name lookups and entry checks
    (``kernels.schema_find``, ``schema_entries``) then run on them; the Python path, and
    every read without the kernels, fetches ranges.
    """

    def __init__(
        self,
        fetch: Fetch,
        offset: int,
        size: int,
        *,
        num_columns: int,
        resident: memoryview | None = None,
    ) -> None:
        self._fetch = fetch
        self._offset = offset
        self._size = size
        self._mem = resident if resident is not None and len(resident) == size else None
        hsize = SCHEMA_HEADER_DTYPE.itemsize
        if size < hsize:
            raise InvalidFileError(f"schema area of {size} bytes is smaller than its header")
        (raw,) = fetch([(offset + size - hsize, hsize)])
        header = np.frombuffer(raw, dtype=SCHEMA_HEADER_DTYPE, count=1)[0]
        if zlib.crc32(bytes(raw[:44])) != int(header["crc"]):
            raise ChecksumError("schema header CRC32 mismatch")
        self._h: dict[str, int] = dict(
            zip(SCHEMA_HEADER_DTYPE.names or (), header.item(), strict=True)
        )
        self.num_columns = int(header["num_columns"])
        if self.num_columns != num_columns:
            raise InvalidFileError(
                f"schema has {self.num_columns} columns, footer says {num_columns}"
            )
        cap = int(header["hash_capacity"])
        end = size - hsize
        checks = [
            (int(header["full_schema_offset"]), int(header["full_schema_size"])),
            (int(header["heap_offset"]), int(header["heap_size"])),
            (int(header["node_ids_offset"]), int(header["num_nodes"]) * 4),
            (int(header["columns_offset"]), self.num_columns * COLUMN_ENTRY_DTYPE.itemsize),
            (int(header["hash_offset"]), cap * HASH_SLOT_DTYPE.itemsize),
        ]
        if cap & (cap - 1) or cap <= self.num_columns or any(o + n > end for o, n in checks):
            raise InvalidFileError("schema area sections are out of bounds")
        self._cap = cap
        self._columns: dict[int, ColumnInfo] = {}
        self._entry_cache: dict[int, _Entry] = {}
        self._name_cache: dict[int, bytes] = {}

    def node_field_ids(self) -> list[int]:
        """Field id of every storage node, pre-order over all columns (one read)."""
        (raw,) = self._fetch(
            [(self._abs(int(self._h["node_ids_offset"])), 4 * int(self._h["num_nodes"]))]
        )
        return np.frombuffer(raw, dtype="<i4").tolist()

    def _abs(self, rel: int) -> int:
        return self._offset + rel

    def release(self) -> None:
        """Drop the resident bytes (a view that may hold a memory map open); ranges are
        fetched from then on."""
        self._mem = None

    def _read(self, ranges: Sequence[tuple[int, int]]) -> Sequence[memoryview]:
        """Ranges of the area, offsets relative to its start, fetched (a reader's fetch
        serves those inside its tail read from it)."""
        base = self._offset
        return self._fetch([(base + o, n) for o, n in ranges])

    def full_schema(self) -> pa.Schema:
        """The whole Arrow schema (reads and parses the full IPC message: O(columns))."""
        (raw,) = self._fetch(
            [(self._abs(int(self._h["full_schema_offset"])), int(self._h["full_schema_size"]))]
        )
        if zlib.crc32(raw) != int(self._h["full_schema_crc"]):
            raise ChecksumError("full schema CRC32 mismatch")
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(raw))
        except (pa.ArrowInvalid, pa.ArrowIOError, pa.ArrowNotImplementedError) as exc:
            raise InvalidFileError(f"corrupt schema message: {exc}") from None
        if len(schema) != self.num_columns:
            raise InvalidFileError("full schema and column index disagree on the column count")
        return schema

    def _entries(self, cols: Sequence[int]) -> list[_Entry]:
        size = COLUMN_ENTRY_DTYPE.itemsize
        base = self._h["columns_offset"]
        missing = [c for c in dict.fromkeys(cols) if c not in self._entry_cache]
        if missing:
            raws = self._read([(base + c * size, size) for c in missing])
            for c, r in zip(missing, raws, strict=True):
                fields = _ENTRY_STRUCT.unpack_from(r)
                self._entry_cache[c] = _Entry._make((*fields, bytes(r)))
        return [self._entry_cache[c] for c in cols]

    def lookup(self, names: Sequence[str]) -> list[int | None]:
        """Column index of each name (None where absent); duplicates resolve to the first."""
        mem, kernels = self._mem, native.KERNELS
        if mem is not None and kernels is not None:  # in C, on the area held whole
            found = kernels.schema_find(
                mem,
                [name_hash(n) for n in names],
                [n.encode() for n in names],
                self._h["hash_offset"],
                self._cap,
                self._h["columns_offset"],
                self.num_columns,
            )
            if found is not None:  # (None: something is off; Python says what)
                return [c if c >= 0 else None for c in found]
        mask = self._cap - 1
        base = int(self._h["hash_offset"])
        ssize = HASH_SLOT_DTYPE.itemsize
        hashes = [name_hash(n) for n in names]
        result: list[int | None] = [None] * len(names)
        pending = list(range(len(names)))
        start = [h & mask for h in hashes]
        probed = [0] * len(names)
        while pending:
            ranges = []
            for i in pending:
                first = (start[i] + probed[i]) & mask
                count = min(_PROBE_WINDOW, self._cap - first)
                ranges.append((base + first * ssize, count * ssize))
            windows = self._read(ranges)
            candidates: list[tuple[int, int]] = []  # (name index, column)
            still: list[int] = []
            for i, raw in zip(pending, windows, strict=True):
                tag = hashes[i] >> 32
                done = False
                for slot_tag, col in _SLOT_STRUCT.iter_unpack(raw):
                    probed[i] += 1
                    if col == 0:
                        done = True
                        break
                    if slot_tag == tag:
                        candidates.append((i, col - 1))
                if not done and probed[i] < self._cap:
                    still.append(i)
            if candidates:
                bad = [c for _, c in candidates if c >= self.num_columns]
                if bad:
                    raise InvalidFileError(f"name index points at column {bad[0]}")
                entries = self._entries([c for _, c in candidates])
                name_raws = self._read([(e.name_offset, e.name_size) for e in entries])
                for (i, col), e, raw in zip(candidates, entries, name_raws, strict=True):
                    self._name_cache[col] = bytes(raw)
                    if e.name_hash == hashes[i] and bytes(raw) == names[i].encode():
                        if result[i] is None or col < result[i]:  # type: ignore[operator]
                            result[i] = col
            pending = [i for i in still if result[i] is None]
        return result

    def column(self, index: int) -> ColumnInfo:
        """Field, field ids and stream count of column ``index`` (cached)."""
        return self.columns([index])[0]

    def columns(self, indices: Sequence[int]) -> list[ColumnInfo]:
        """Like :meth:`column` for many columns, with one batched fetch per step."""
        missing = [i for i in dict.fromkeys(indices) if i not in self._columns]
        if missing:
            for i in missing:
                if not 0 <= i < self.num_columns:
                    raise InvalidFileError(f"column {i} is out of range")
            heap_end = self._h["heap_offset"] + self._h["heap_size"]
            num_nodes, node_ids = self._h["num_nodes"], self._h["node_ids_offset"]
            mem, kernels = self._mem, native.KERNELS
            if mem is not None and kernels is not None:  # in C, on the area held whole
                got = kernels.schema_entries(
                    mem, missing, self._h["columns_offset"], heap_end, num_nodes, node_ids
                )
                if got is not None:  # (None: a check failed; Python says which)
                    for i, (name_raw, code, flags, streams, at, size, ids) in zip(
                        missing, got, strict=True
                    ):
                        self._columns[i] = ColumnInfo(
                            index=i,
                            field=self._field(name_raw, code, flags, mem[at : at + size]),
                            field_ids=np.frombuffer(ids, dtype="<i4"),
                            num_streams=streams,
                            has_bloom=bool(flags & _FLAG_BLOOM),
                        )
                        self._entry_cache.pop(i, None)
                    return [self._columns[i] for i in indices]
            entries = self._entries(missing)
            ranges: list[tuple[int, int]] = []
            for i, e in zip(missing, entries, strict=True):
                no, ns = e.name_offset, e.name_size
                bo, bs = e.blob_offset, e.blob_size
                if (
                    no + ns > heap_end
                    or bo + bs > heap_end
                    or e.first_node + e.num_nodes > num_nodes
                ):
                    raise InvalidFileError("column entry points outside the schema area")
                if i not in self._name_cache:
                    ranges.append((no, ns))
                ranges += [(bo, bs), (node_ids + 4 * e.first_node, 4 * e.num_nodes)]
            raws = iter(self._read(ranges))
            for i, e in zip(missing, entries, strict=True):
                name_raw = self._name_cache.get(i)
                if name_raw is None:
                    name_raw = bytes(next(raws))
                blob_raw, ids_raw = next(raws), next(raws)
                crc = _entry_crc(e.raw, name_raw, blob_raw, ids_raw)
                if crc != e.crc:
                    raise ChecksumError(f"schema entry of column {i}: CRC32 mismatch")
                self._columns[i] = ColumnInfo(
                    index=i,
                    field=self._field(name_raw, e.primitive_code, e.flags, blob_raw),
                    field_ids=np.frombuffer(bytes(ids_raw), dtype="<i4"),  # outlives close
                    num_streams=e.num_streams,
                    has_bloom=bool(e.flags & _FLAG_BLOOM),
                )
                self._entry_cache.pop(i, None)  # the ColumnInfo holds what is needed
        return [self._columns[i] for i in indices]

    @staticmethod
    def _field(name_raw: bytes, code: int, flags: int, blob_raw: memoryview) -> pa.Field:
        """The field of a column entry: from its primitive code, else its IPC blob."""
        try:
            name = name_raw.decode()
        except UnicodeDecodeError:
            raise InvalidFileError("column name is not valid UTF-8") from None
        if code:
            t = _FROM_CODE.get(code)
            if t is None:
                raise InvalidFileError(f"unknown primitive type code {code}")
            return pa.field(name, t, nullable=bool(flags & _FLAG_NULLABLE))
        try:
            schema = pa.ipc.read_schema(pa.py_buffer(blob_raw))
        except (pa.ArrowInvalid, pa.ArrowIOError, pa.ArrowNotImplementedError) as exc:
            raise InvalidFileError(f"corrupt field blob for {name!r}: {exc}") from None
        if len(schema) != 1 or schema[0].name != name:
            raise InvalidFileError(f"field blob for {name!r} does not describe it")
        return schema[0]
