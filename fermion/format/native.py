"""The optional compiled kernels of point reads: :data:`KERNELS` is the module
``fermion.format.kernels`` (``fermion/format/kernels.c``) when the install could build it
(a C compiler and the Python headers; ``setup.py``), else None.

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

__all__ = ["KERNELS"]

KERNELS: ModuleType | None
try:
    from fermion.format import kernels as KERNELS  # type: ignore[attr-defined,no-redef]
except ImportError:  # not built here (no compiler or headers), or shipped in a zip
    KERNELS = None
