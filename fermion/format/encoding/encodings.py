"""Lightweight encodings: pure, vectorised kernels over buffers, and their selection.

Every kernel is numpy over whole pages (no per-value Python). Integers of any fixed width
(ints, dates, times, timestamps, durations, decimals whose values fit in int64, dictionary
indices) go through one integer codec that picks, per page, the smallest of

- CONSTANT   one value                                  0 bits per value
- FOR        value - min, bit-packed                    cascade: FOR -> bit-packing
- DELTA      first + (delta - min delta), bit-packed    sorted or slowly changing data
- RLE        run values (FOR) + run lengths (packed)    cascade: RLE -> FOR -> bit-packing
- DICTIONARY packed indices + distinct values (FOR)     few distinct values, wide range

and PLAIN when nothing is smaller. Since format 1.2 every packed section is bit-packed
(:mod:`fermion.format.encoding.bitpack`, flag BITS: widths count bits); 1.1 pages carry byte
widths, which are the byte-aligned case of the same bit stream. String OFFSETS pages
store value *lengths* through the same codec; string DATA pages with few distinct values
become DICTIONARY pages (packed indices + the distinct values), their OFFSETS page then
being DERIVED (no payload). Float pages use BYTE_SPLIT when a sample says zstd compresses
it better, or FLOAT_DECIMAL when they are decimals (:mod:`fermion.format.encoding.decimal_floats`,
whose integers go through the integer codec). zstd is applied on top by the page layer
only when it pays.

This module is the map and the one import for all of them; each concern has its module:

- :mod:`~fermion.format.encoding.header`: the EncodingHeader every payload starts with,
  and what the encodings share (bit widths, packed sections, zstd samples);
- :mod:`~fermion.format.encoding.int_codec`: the integer codec (selection, the kernels of
  each encoding, checkpoints, decoding into buffers);
- :mod:`~fermion.format.encoding.byte_split`: BYTE_SPLIT float pages;
- :mod:`~fermion.format.encoding.page_dictionary`: DICTIONARY pages of strings.

What the rest of the format asks of each encoding id is its entry in
:data:`~fermion.format.encoding.registry.ENCODINGS`.

Example:
    >>> import numpy as np
    >>> enc, payload = encode_ints(np.arange(1000, 2000, dtype=np.int64), out_width=8)
    >>> enc.name, len(payload) < 8000
    ('DELTA', True)
    >>> bool((decode_ints(payload, enc) == np.arange(1000, 2000)).all())
    True
"""

from __future__ import annotations

from fermion.format.encoding.byte_split import (
    FLOAT_SAMPLE_BYTES,
    byte_split_sizes,
    decode_byte_split,
    encode_byte_split,
    split_planes,
)
from fermion.format.encoding.header import (
    HEADER_SIZE,
    Header,
    encoding_header,
    has_checkpoints,
    packed_bits,
    read_header,
    sample_size,
)
from fermion.format.encoding.int_codec import (
    CHECKPOINT_INTERVAL,
    INT_CODECS,
    IntCodec,
    check_for_slots,
    checkpoint_layout,
    decode_delta_into,
    decode_for_into,
    decode_int_dictionary_into,
    decode_ints,
    encode_ints,
    int_bounds,
    int_domain,
    int_payload_size,
    ints_from_plain,
    ints_to_plain,
)
from fermion.format.encoding.page_dictionary import (
    decode_dictionary,
    dictionary_page,
    dictionary_parts,
    encode_dictionary,
    few_distinct,
    materialize_dictionaries,
    materialize_dictionary,
)

__all__ = [
    "CHECKPOINT_INTERVAL",
    "FLOAT_SAMPLE_BYTES",
    "HEADER_SIZE",
    "Header",
    "INT_CODECS",
    "IntCodec",
    "byte_split_sizes",
    "check_for_slots",
    "checkpoint_layout",
    "has_checkpoints",
    "decode_byte_split",
    "decode_dictionary",
    "decode_delta_into",
    "decode_for_into",
    "decode_int_dictionary_into",
    "dictionary_parts",
    "materialize_dictionary",
    "materialize_dictionaries",
    "decode_ints",
    "encode_byte_split",
    "dictionary_page",
    "encode_dictionary",
    "encode_ints",
    "encoding_header",
    "few_distinct",
    "ints_from_plain",
    "ints_to_plain",
    "int_domain",
    "int_bounds",
    "int_payload_size",
    "packed_bits",
    "read_header",
    "sample_size",
    "split_planes",
]
