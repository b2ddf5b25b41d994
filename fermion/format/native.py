"""The optional compiled kernels of point reads: :data:`KERNELS` is the module
``fermion.format.kernels`` (``fermion/format/kernels.c``) when the install could build it
(a C compiler and the Python headers; ``setup.py``) and has every function of
:data:`FUNCTIONS`, else None.

Each caller keeps the same work in Python and uses it when :data:`KERNELS` is None (no
compiler at install time, or the package shipped as a zip to Spark executors, which cannot
import compiled modules): files read and written are the same either way, only faster
with the kernels. docs/ARCHITECTURE.md lists what they do.

Example:
    >>> KERNELS is None or KERNELS.crc32(b"fermion") == __import__("zlib").crc32(b"fermion")
    True
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["FUNCTIONS", "KERNELS"]

# what the callers use: a module built from an older kernels.c (an in-place build not
# redone after an update) lacks some, and is then not used at all
FUNCTIONS = (
    "crc32",
    "block_crcs",
    "verify_ranges",
    "verify_packed",
    "gather_bits",
    "unpack_bits",
    "pack_bits",
    "take_binary",
    "segment_sums",
    "byte_planes",
    "frames_fit",
    "cmb_scan",
    "schema_find",
    "schema_entries",
    "gather_stream",
    "decimal_trials",
)

KERNELS: ModuleType | None
try:
    from fermion.format import kernels as KERNELS  # type: ignore[attr-defined,no-redef]
except ImportError:  # not built here (no compiler or headers), or shipped in a zip
    KERNELS = None
if KERNELS is not None and not all(hasattr(KERNELS, name) for name in FUNCTIONS):
    KERNELS = None
