"""Vectorised helpers for Arrow's LSB-first validity/boolean bitmaps.

Example:
    >>> bytes(slice_bitmap(bytes([0b10110100]), 2, 4))
    b'\\r'
"""

from __future__ import annotations

import numpy as np

__all__ = ["concat_bitmaps", "slice_bitmap", "zero_bitmap"]


def slice_bitmap(buf: object, bit_offset: int, length: int) -> bytes | memoryview:
    """Bits ``[bit_offset, bit_offset + length)`` of ``buf`` re-based to bit 0.

    Byte-aligned slices are zero-copy views; others are shifted with numpy.
    """
    nbytes = (length + 7) // 8
    mv = memoryview(buf).cast("B")  # type: ignore[arg-type]
    if bit_offset % 8 == 0:
        start = bit_offset // 8
        return mv[start : start + nbytes]
    first = bit_offset // 8
    last = (bit_offset + length + 7) // 8
    raw = np.frombuffer(mv[first:last], dtype=np.uint8)
    bits = np.unpackbits(raw, bitorder="little")[bit_offset % 8 : bit_offset % 8 + length]
    return np.packbits(bits, bitorder="little").tobytes()


def zero_bitmap(length: int) -> bytes:
    """An all-zero (all-null / all-false) bitmap for ``length`` values."""
    return bytes((length + 7) // 8)


def concat_bitmaps(parts: list[bytes | memoryview], counts: list[int]) -> bytes | memoryview:
    """Concatenate bitmaps of ``counts[i]`` bits each (each starting at bit 0).

    Byte-wise concatenation when every part but the last holds a multiple of 8 bits.

    Example:
        >>> bytes(concat_bitmaps([bytes([0b101]), bytes([0b1])], [3, 1]))
        b'\\r'
    """
    if len(parts) == 1:
        return parts[0]
    if all(c % 8 == 0 for c in counts[:-1]):
        return b"".join(parts)
    bits = [
        np.unpackbits(np.frombuffer(p, dtype=np.uint8), bitorder="little")[:c]
        for p, c in zip(parts, counts, strict=True)
    ]
    return np.packbits(np.concatenate(bits), bitorder="little").tobytes()
