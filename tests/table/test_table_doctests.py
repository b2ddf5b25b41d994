"""The runnable examples in the table and io modules' docstrings stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import fermion.table

MODULES = sorted(
    [
        name
        for info in pkgutil.iter_modules(fermion.table.__path__, "fermion.table.")
        if not (name := info.name).startswith("fermion.table.proto")
    ]
    + ["fermion.table", "fermion.io.atomic", "fermion.io.store"]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no runnable example"
    assert result.failed == 0
