"""The public API: a sorted ``__all__`` that names exactly the public, importable objects."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from pathlib import Path

import pyarrow as pa
import pytest

import fermion


def test_all_is_sorted_and_complete() -> None:
    assert fermion.__all__ == sorted(fermion.__all__)
    public = {n for n in vars(fermion) if not n.startswith("_")}
    modules = {n for n, v in vars(fermion).items() if type(v).__name__ == "module"}
    assert set(fermion.__all__) == public - modules - {"annotations"}
    for name in fermion.__all__:
        assert getattr(fermion, name) is not None


def test_contract_names_exist(tmp_path: Path) -> None:
    """The public names README.md and docs/FORMAT.md document."""
    for name in (
        "write_table",
        "read_table",
        "FileReader",
        "FileWriter",
        "parquet_to_fermion",
        "fermion_to_parquet",
        "FermionError",
        "InvalidFileError",
        "TruncatedFileError",
        "ChecksumError",
        "UnsupportedVersionError",
        "SchemaMismatchError",
        "CommitConflictError",
        "IncompatibleTransactionError",
    ):
        assert name in fermion.__all__, name
    reader_api = ("schema", "num_rows", "metadata", "read", "iter_batches", "take", "describe")
    path = tmp_path / "api.fermion"
    fermion.write_table(pa.table({"x": [1, 2]}), path)
    with fermion.FileReader(path) as reader:
        for attr in reader_api:
            assert getattr(reader, attr) is not None, attr
        assert reader.num_rows == 2


def test_domain_model_names() -> None:
    """The table's domain model is public at the top level and in ``fermion.table``; the
    version a ``Dataset`` reads (``Dataset.table_version``) is public too; the
    names plans used before still work: ``DataFileInfo`` is ``DataFile``, ``FragmentInfo``
    a deprecated subclass of ``Fragment``."""
    import fermion.table
    from fermion.table.tasks import DataFileInfo, FragmentInfo

    for name in ("Fragment", "DataFile", "TableVersion"):
        assert name in fermion.__all__ and name in fermion.table.__all__, name
        assert getattr(fermion, name) is getattr(fermion.table, name)
    assert issubclass(FragmentInfo, fermion.Fragment) and DataFileInfo is fermion.DataFile


def test_errors_subclass_builtins() -> None:
    assert issubclass(fermion.InvalidFileError, ValueError)
    assert issubclass(fermion.TruncatedFileError, EOFError)
    assert issubclass(fermion.ColumnNotFoundError, KeyError)
    assert issubclass(fermion.SourceNotFoundError, FileNotFoundError)
    assert issubclass(fermion.UnsupportedTypeError, TypeError)
    for name in fermion.__all__:
        obj = getattr(fermion, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, fermion.FermionError), name


_MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(fermion.__path__, "fermion.")
    if not m.name.endswith("_pb2")
)
# Every module's docstring examples run here, once (no other test module repeats them).
# Modules with nothing to demonstrate: generated protobuf code, the ``python -m`` entry.
_WITHOUT_EXAMPLES = {"fermion.table.proto", "fermion.cli.__main__"}


@pytest.mark.parametrize("module", _MODULES)
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module(module)
    failures, attempted = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert failures == 0
    assert (attempted > 0) is (module not in _WITHOUT_EXAMPLES), "a module without examples"


def _public_members(cls: type) -> dict[str, object]:
    """Public attributes ``cls`` defines itself or inherits from a Fermion class."""
    members: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] != "fermion":
            continue
        members.update({k: v for k, v in vars(klass).items() if not k.startswith("_")})
    return members


def test_every_public_class_and_method_has_a_docstring() -> None:
    """Everything ``fermion.__all__`` names, and every public method and property of its
    classes, is documented (``help()`` and IDEs show it)."""
    missing = []
    for name in fermion.__all__:
        obj = getattr(fermion, name)
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        for attr, value in _public_members(obj).items():
            target = value.fget if isinstance(value, property) else value
            target = getattr(target, "__func__", target)  # classmethod / staticmethod
            if not callable(target) or inspect.isclass(target):
                continue  # constants, dataclass defaults, nested types
            if not (getattr(target, "__doc__", None) or "").strip():
                missing.append(f"{name}.{attr}")
    assert missing == []
