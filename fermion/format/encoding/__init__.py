"""Encodings: the bytes of one page, both ways (docs/FORMAT.md).

Bit packing, the lightweight integer and float encodings, dictionaries, bloom filters,
compression codecs and page checksums (the CRC-32 itself is
:mod:`fermion.format.checksum`); each module both encodes and decodes. Neutral ground:
the writer and the reader import from here, and nothing here imports either. What the
format asks of each encoding id is one entry of :data:`registry.ENCODINGS
<fermion.format.encoding.registry.ENCODINGS>`; each page body kind has its module
(``zstd_blocks``, ``crc_blocks``), as has the page header (``page_header``).

Example:
    >>> import numpy as np
    >>> from fermion.format.encoding import bitpack
    >>> bitpack.unpack(bitpack.pack(np.array([1, 2, 3], np.uint64), 2), 0, 2, 3).tolist()
    [1, 2, 3]
"""
