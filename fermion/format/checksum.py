"""CRC-32 of page bytes: ISA-L's implementation when the ``isal`` package is importable,
else zlib's.

Both compute the same CRC-32 (the polynomial of zlib, gzip and PNG, docs/FORMAT.md §5), so
files do not depend on which one wrote or reads them; ISA-L's is about twice as fast on
the 0.5-8 KiB blocks a point read verifies. ``isal`` is a dependency of the package; the
zlib fallback keeps the reader working where its wheel cannot be installed or imported
(e.g. a zip shipped to Spark executors without compiled extensions).

The CRC_BLOCKS checksums of a page (a CRC32 per block, docs/FORMAT.md) are computed and
verified by the compiled kernels when they are built (:mod:`fermion.format.native`): one
call per page for all the blocks a point read touches, where Python would spend more on
each block's call than on its CRC. Without them the callers use :func:`crc32` per block.

Example:
    >>> crc32(b"fermion") == __import__("zlib").crc32(b"fermion")
    True
    >>> crc32(b"ion", crc32(b"ferm")) == crc32(b"fermion")
    True
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

__all__ = ["IMPLEMENTATION", "crc32"]

crc32: Callable[..., int]
try:
    from isal.isal_zlib import crc32 as _isal_crc32
except ImportError:  # no wheel for this platform, or shipped without compiled modules
    crc32 = zlib.crc32
    IMPLEMENTATION = "zlib"
else:
    crc32 = _isal_crc32
    IMPLEMENTATION = "isal"
