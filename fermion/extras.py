"""Optional dependencies: which extra brings which library, and one import helper for them.

``pip install fermion`` is the light core: the file format, tables, the CLI and the Arrow,
DuckDB and Polars paths. Everything else is an extra (``pyproject.toml``):

=============  ======================  =====================================
extra          brings                  needed by
=============  ======================  =====================================
``spark``      pyspark                 ``fermion.spark`` and the Spark jobs
``quality``    great_expectations      ``fermion.quality`` (running suites)
``postgres``   psycopg                 the PostgreSQL manifest store
``s3``         s3fs                    ``s3://`` tables and files
``all``        all of the above
=============  ======================  =====================================

Code that needs one of them imports it through :func:`require`, which raises a one-line
:class:`~fermion.errors.MissingExtraError` naming the ``pip install`` line when it is
missing, instead of a bare ``ModuleNotFoundError`` from deep inside a call.

Example:
    >>> from fermion.extras import install_hint, require
    >>> install_hint("spark")
    "pip install 'fermion[spark]'"
    >>> require("json", "spark").__name__  # any importable module is simply returned
    'json'
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final, Literal

from fermion.errors import InvalidArgumentError, MissingExtraError

__all__ = ["EXTRAS", "Extra", "install_hint", "require"]

Extra = Literal["spark", "quality", "postgres", "s3"]

#: What each extra is for, as the error message says it.
EXTRAS: Final[dict[str, str]] = {
    "spark": "Spark (pyspark)",
    "quality": "data-quality checks (great_expectations)",
    "postgres": "the PostgreSQL manifest store (psycopg)",
    "s3": "S3 storage (s3fs)",
}


def install_hint(extra: Extra) -> str:
    """The ``pip install`` line that brings ``extra``.

    Args:
        extra: One of :data:`EXTRAS`.

    Returns:
        The command, e.g. ``pip install 'fermion[spark]'``.

    Raises:
        InvalidArgumentError: ``extra`` is not one of :data:`EXTRAS`.

    Example:
        >>> install_hint("postgres")
        "pip install 'fermion[postgres]'"
    """
    if extra not in EXTRAS:
        raise InvalidArgumentError(f"unknown extra {extra!r}; expected one of {sorted(EXTRAS)}")
    return f"pip install 'fermion[{extra}]'"


def require(module: str, extra: Extra) -> ModuleType:
    """Import ``module``, which the ``extra`` of the package brings.

    Args:
        module: The dotted module name, e.g. ``"great_expectations"``.
        extra: The extra that installs it (one of :data:`EXTRAS`).

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module (or a library it needs) cannot be imported; the
            one-line message names the ``pip install`` line.

    Example:
        >>> try:
        ...     require("no_such_driver", "postgres")  # as if psycopg were not installed
        ... except MissingExtraError as exc:
        ...     print(exc)
        the PostgreSQL manifest store (psycopg) needs an extra: pip install 'fermion[postgres]' (cannot import no_such_driver)
    """  # noqa: E501 - a doctest's expected output is one line
    hint = install_hint(extra)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise MissingExtraError(
            f"{EXTRAS[extra]} needs an extra: {hint} (cannot import {missing})",
            name=missing,
        ) from None
