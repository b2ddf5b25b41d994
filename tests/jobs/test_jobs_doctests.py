"""The runnable examples in the jobs library's docstrings stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import fermion.spark.jobs

MODULES = sorted(
    ["fermion.spark.jobs"]
    + [
        info.name
        for info in pkgutil.iter_modules(fermion.spark.jobs.__path__, "fermion.spark.jobs.")
    ]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
