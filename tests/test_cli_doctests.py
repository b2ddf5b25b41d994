"""The runnable examples in the docstrings of the CLI, converter and demo modules."""

from __future__ import annotations

import doctest
import types

import pytest

import fermion.cli
import fermion.cli.app
import fermion.cli.render
import fermion.cli.table
import fermion.demo
import fermion.format.convert

MODULES = [
    fermion.cli,
    fermion.cli.app,
    fermion.cli.render,
    fermion.cli.table,
    fermion.demo,
    fermion.format.convert,
]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
