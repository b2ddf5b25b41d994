"""The ``fermion`` command line (console script ``fermion = "fermion.cli:main"``).

Modules: :mod:`~fermion.cli.app` (the parser, ``main`` and the file commands ``inspect``,
``convert``, ``cat``), :mod:`~fermion.cli.table` (the table commands ``log``, ``show``) and
:mod:`~fermion.cli.render` (text rendering). docs/CLI.md describes every command.

Example:
    >>> main(["cat"])  # the usage error line goes to stderr
    2
"""

from __future__ import annotations

from fermion.cli.app import build_parser, conversion_direction, main

__all__ = ["build_parser", "conversion_direction", "main"]
