"""Index files of layout version 1 (tests/table/golden/index_v1, written by an older
Fermion) stay readable: scans through them equal unindexed scans, and they are used."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import fermion.table as ft

GOLDEN = Path(__file__).parent / "golden" / "index_v1"


@pytest.mark.parametrize("text", ["k = 1", "k IN (0, 3)", "label = 'l0'", "k >= 2 AND id < 9"])
def test_layout_1_indices_are_read(tmp_path: Path, text: str) -> None:
    uri = tmp_path / "t"
    shutil.copytree(GOLDEN, uri)
    ds = ft.dataset(str(uri))
    assert {i.index_version for i in ds.manifest.indices} == {1}
    scanner = ds.scanner(None, text)
    indexed = scanner.to_table()
    assert indexed.equals(ds.scanner(None, text, use_indices=False).to_table())
    assert scanner.stats.fragments_indexed >= 1 and scanner.stats.index_files_read == 1
    assert 5 not in indexed["id"].to_pylist()  # deleted after the build
    ds.optimize_indices()  # the appended fragment joins both indices
    ds = ft.dataset(str(uri))
    assert all(len(i.fragment_ids) == 3 for i in ds.indices())
    assert ds.to_table(filter=text).equals(ds.scanner(None, text, use_indices=False).to_table())
