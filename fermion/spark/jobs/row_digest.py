"""Order-sensitive digests of the columns of a stream of record batches.

A file task of ``migrate_parquet``/``ingest`` with ``verify`` checks that the rows read back
from the fragments it wrote are the rows it handed to the writer. Re-reading the Parquet
source for that costs as much as the write itself; instead, the task folds every batch it
hands to the writer into a :class:`RowDigest`, folds the rows read back into another, and
compares the two.

Per column the digest holds the row count, the positions of the nulls, and the values of
the valid rows: fixed-width values by their bytes (floats by their bit pattern, so ``-0.0``
and ``0.0`` or two NaN payloads differ), strings and binaries by their lengths and by the
stream of their bytes. Each 64-bit word ``x`` at position ``i`` adds
``scramble(x) * w(i)`` (mod 2**64) to a sum, where ``scramble`` is a bijection and
``w(i)`` an odd pseudo-random weight (splitmix64 of ``i``). So how the rows are cut into
batches does not matter and their order does; one changed value always changes the
digest (an odd weight times a non-zero difference is non-zero mod 2**64); several changes
leave it equal only if their weighted differences cancel, which for errors unrelated to
the weights is about as likely as a 64-bit hash collision.

Columns of other types (nested, dictionary, views) have no digest
(:func:`digestible` is false); a task with such columns compares the rows themselves.

Example:
    >>> import pyarrow as pa
    >>> schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    >>> one = RowDigest(schema)
    >>> one.add(pa.record_batch([pa.array([1, None, 3]), pa.array(["x", "yz", None])],
    ...     schema=schema))
    >>> two = RowDigest(schema)
    >>> for a, s in ([1], ["x"]), ([None, 3], ["yz", None]):
    ...     two.add(pa.record_batch([pa.array(a, pa.int64()), pa.array(s)], schema=schema))
    >>> one.differences(two)
    []
    >>> three = RowDigest(schema)
    >>> three.add(pa.record_batch([pa.array([1, None, 4]), pa.array(["x", "yz", None])],
    ...     schema=schema))
    >>> one.differences(three)
    ['a']
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["RowDigest", "digestible"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_S32, _S29 = np.uint64(32), np.uint64(29)
_ONE = np.uint64(1)
#: Salts keep the nulls', lengths' and values' sums apart.
_NULLS, _LENGTHS, _VALUES = np.uint64(1), np.uint64(2), np.uint64(3)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a fresh uint64 array (a bijection)."""
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


#: Positions whose weights are kept once computed (8 bytes each): the weights of a
#: position never change, and every column, batch and digest of a process asks for the
#: same ones (a task's source digest, then the digest of what it read back).
_KEPT_WEIGHTS = 1 << 23
_kept = np.zeros(0, dtype=np.uint64)
#: Words folded at a time (512 KiB of them).
_FOLD_BLOCK = 1 << 16


def _computed_weights(start: int, count: int) -> np.ndarray:
    weights = np.arange(start, start + count, dtype=np.uint64)
    weights *= _GOLDEN
    return _mix(weights) | _ONE


def _weights(start: int, count: int) -> np.ndarray:
    """The odd weights of positions ``start .. start + count - 1`` (read-only)."""
    global _kept
    stop = start + count
    if stop > _KEPT_WEIGHTS:
        return _computed_weights(start, count)
    if stop > len(_kept):
        size = min(_KEPT_WEIGHTS, max(stop, 2 * len(_kept), 1 << 16))
        grown = np.concatenate([_kept, _computed_weights(len(_kept), size - len(_kept))])
        grown.flags.writeable = False
        _kept = grown
    return _kept[start:stop]


def _fold(words: np.ndarray, weights: np.ndarray, salt: np.uint64, *, own: bool = False) -> int:
    """The sum of ``scramble(word ^ salt) * weight`` over ``words`` (uint64), where
    ``scramble`` (a xor-shift, an odd multiply, a xor-shift: a bijection) spreads every bit
    of a word over the high and the low half, so that no two flipped bits cancel.
    ``own``: ``words`` is a fresh array the fold may overwrite (no copy is made)."""
    total = 0
    with np.errstate(over="ignore"):
        # a block at a time: the passes below then work in the CPU's cache (a 500,000-row
        # column read back went 2-3x slower than the same rows in 65,536-row batches)
        for start in range(0, len(words), _FOLD_BLOCK):
            block = words[start : start + _FOLD_BLOCK]
            values = block if own else block.copy()
            values ^= salt
            shifted = np.right_shift(values, _S32)
            values ^= shifted
            values *= _M1
            np.right_shift(values, _S29, out=shifted)
            values ^= shifted
            values *= weights[start : start + _FOLD_BLOCK]
            total += int(values.sum(dtype=np.uint64))
    return total


def _is_bytes(type_: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
    )


def _is_fixed(type_: pa.DataType) -> bool:
    if pa.types.is_dictionary(type_) or pa.types.is_nested(type_) or _is_bytes(type_):
        return False
    if pa.types.is_boolean(type_) or pa.types.is_null(type_):
        return True
    try:
        width = type_.bit_width
    except ValueError:
        return False
    return width in (8, 16, 32, 64) or (width % 64 == 0 and width > 0)


def digestible(schema: pa.Schema) -> bool:
    """Whether every column of ``schema`` has a digest (flat fixed-width, boolean, null,
    string or binary types).

    Example:
        >>> digestible(pa.schema([("a", pa.int32()), ("d", pa.decimal128(15, 2))]))
        True
        >>> digestible(pa.schema([("l", pa.list_(pa.int64()))]))
        False
    """
    return all(_is_fixed(f.type) or _is_bytes(f.type) for f in schema)


def _valid(array: pa.Array) -> np.ndarray | None:
    """The validity of ``array`` as booleans, or None when no row is null."""
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _fixed_words(array: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    """The values of a fixed-width ``array`` as uint64 words (signed integers sign-extended,
    wider values one word per 64 bits), null slots zero: a fresh array, the caller's own."""
    type_ = array.type
    if pa.types.is_null(type_):
        return np.zeros(0, dtype=np.uint64)
    if pa.types.is_boolean(type_):
        array = pc.cast(array, pa.uint8())
        type_ = array.type
    width = type_.bit_width
    buffer = array.buffers()[1]
    if width <= 64:
        signed = pa.types.is_signed_integer(type_)
        kind = ("i" if signed else "u") + str(width // 8)
        raw = np.frombuffer(buffer, dtype=np.dtype(kind), count=len(array) + array.offset)
        raw = raw[array.offset :]
        words = raw.astype(np.int64).view(np.uint64) if signed else raw.astype(np.uint64)
        if valid is not None:
            words[~valid] = 0
        return words
    per = width // 64
    skip = array.offset * per
    words = np.frombuffer(buffer, dtype=np.uint64, count=(len(array) * per) + skip)[skip:].copy()
    if valid is not None:
        words[~np.repeat(valid, per)] = 0
    return words


class _WeightCache:
    """The weights of the position ranges asked for while one batch is folded in (the
    columns of a batch share their row positions)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, start: int, count: int) -> np.ndarray:
        key = (start, count)
        if key not in self._known:
            self._known[key] = _weights(start, count)
        return self._known[key]


class _Column:
    """The running digest of one column."""

    def __init__(self) -> None:
        self.rows = 0
        self.nulls = 0
        self.null_sum = 0
        self.value_sum = 0
        self.length_sum = 0
        self.words = 0  # words of the byte stream folded so far
        self.tail = np.zeros(0, dtype=np.uint8)  # bytes that do not fill a word yet

    def add(self, array: pa.Array, weights: _WeightCache) -> None:
        valid = _valid(array)
        if valid is not None:
            where = np.flatnonzero(~valid).astype(np.uint64)
            where += np.uint64(self.rows)
            # the k-th null of the column (counted from its first row) has weight w(k)
            self.null_sum += _fold(where, _weights(self.nulls, len(where)), _NULLS, own=True)
            self.nulls += len(where)
        if _is_bytes(array.type):
            self._add_bytes(array, valid, weights)
        else:
            words = _fixed_words(array, valid)
            per = len(words) // len(array) if len(array) else 1
            self.value_sum += _fold(words, weights(self.rows * per, len(words)), _VALUES, own=True)
        self.rows += len(array)

    def _add_bytes(self, array: pa.Array, valid: np.ndarray | None, weights: _WeightCache) -> None:
        large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
        kind = np.int64 if large else np.int32
        buffers = array.buffers()
        offsets = np.frombuffer(buffers[1], dtype=kind, count=len(array) + 1 + array.offset)
        offsets = offsets[array.offset :]
        lengths = np.diff(offsets).astype(np.uint64)
        if valid is not None and bool(lengths[~valid].any()):
            # null slots that hold bytes: the canonical form holds none
            empty = (
                ""
                if pa.types.is_string(array.type) or pa.types.is_large_string(array.type)
                else b""
            )
            self._add_bytes(pc.fill_null(array, pa.scalar(empty, array.type)), None, weights)
            return
        self.length_sum += _fold(lengths, weights(self.rows, len(lengths)), _LENGTHS, own=True)
        data = buffers[2]
        if data is None or offsets[-1] == offsets[0]:
            return
        body = np.frombuffer(data, dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
        if len(self.tail):
            body = np.concatenate([self.tail, body])
        whole = len(body) // 8 * 8
        stream = body[:whole].view(np.uint64)
        self.value_sum += _fold(stream, _weights(self.words, len(stream)), _VALUES)
        self.words += whole // 8
        self.tail = body[whole:].copy()

    def value(self) -> tuple[int, ...]:
        tail = 0
        if len(self.tail):
            padded = np.zeros(8, dtype=np.uint8)
            padded[: len(self.tail)] = self.tail
            tail = _fold(padded.view(np.uint64), _weights(self.words, 1), _VALUES)
        mask = (1 << 64) - 1
        return (
            self.rows,
            self.nulls,
            self.null_sum & mask,
            self.length_sum & mask,
            (self.value_sum + tail) & mask,
        )


class RowDigest:
    """The digests of the columns of ``schema``, fed batch by batch (see the module
    docstring). Batches must have the columns of ``schema`` with the same types."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._columns = [_Column() for _ in schema]

    @property
    def rows(self) -> int:
        """The rows folded in so far."""
        return self._columns[0].rows if self._columns else 0

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Fold ``batch``'s rows in, after the rows folded so far."""
        weights = _WeightCache()
        for column, index in zip(self._columns, range(len(self.schema)), strict=True):
            data = batch.column(index)
            chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
            for chunk in chunks:
                column.add(chunk, weights)

    def feed(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches`` unchanged, each one folded in as it passes."""
        for batch in batches:
            self.add(batch)
            yield batch

    def differences(self, other: RowDigest) -> list[str]:
        """The names of the columns whose digests differ from ``other``'s."""
        return [
            field.name
            for field, mine, theirs in zip(self.schema, self._columns, other._columns, strict=True)
            if mine.value() != theirs.value()
        ]
