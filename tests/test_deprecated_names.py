"""Old public names of renamed functions still work and warn (issue 43, name clashes).

``fermion.table.tasks.open_table`` is now ``open_version`` (the Spark reader's
``open_table`` is ``open_dataset``), ``fermion.table.stats.compute_stats`` is
``compute_field_stats`` (the file format has its own ``compute_stats``) and
``fermion.quality.validate`` is ``validate_dataframe`` (the ``validate`` job keeps its
name). The Spark names are checked in tests/spark/test_spark_deprecated_names.py.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import fermion.quality
import fermion.table as ft
import fermion.table.tasks
from fermion.quality import SuiteError
from fermion.table import stats
from fermion.table.schema import TableSchema


def test_open_table_warns_and_is_open_version(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1, 2]}), uri)
    with pytest.warns(DeprecationWarning, match="open_table is deprecated: use .*open_version"):
        storage, manifest = fermion.table.tasks.open_table(uri)
    assert manifest == fermion.table.tasks.open_version(uri)[1]
    assert storage.uri == fermion.table.tasks.open_version(uri)[0].uri
    from fermion.table.tasks.common import open_table

    with pytest.warns(DeprecationWarning):
        assert open_table(uri, 1)[1].version == 1


def test_compute_stats_warns_and_is_compute_field_stats() -> None:
    table = pa.table({"x": [3, 1, 2], "s": ["b", None, "a"]})
    ids = TableSchema.from_arrow(table.schema).top_level_ids()
    with pytest.warns(DeprecationWarning, match="compute_stats is deprecated"):
        old = stats.compute_stats(table, ids)
    assert old == stats.compute_field_stats(table, ids)
    assert "compute_stats" not in stats.__all__


def test_quality_validate_warns_and_is_validate_dataframe() -> None:
    assert "validate" not in fermion.quality.__all__
    assert "validate_dataframe" in fermion.quality.__all__
    with pytest.warns(DeprecationWarning, match="validate_dataframe"):
        with pytest.raises(SuiteError, match="no/such.yaml"):
            fermion.quality.validate(None, "no/such.yaml", output_dir=".")


def test_the_new_names_do_not_warn(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    ft.write_dataset(pa.table({"x": [1]}), uri)
    # pytest turns warnings into errors (pyproject.toml): these would raise if they warned
    fermion.table.tasks.open_version(uri)
    stats.compute_field_stats(pa.table({"x": [1]}), [0])
    with pytest.raises(SuiteError):
        fermion.quality.validate_dataframe(None, "no/such.yaml", output_dir=".")
