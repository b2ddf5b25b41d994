"""The library's version: defined here once; pyproject.toml reads it (``tool.setuptools.dynamic``),
``fermion.__version__`` re-exports it and table manifests record it as ``writer_version``.

Example:
    >>> import fermion
    >>> fermion.__version__ == __version__
    True
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
