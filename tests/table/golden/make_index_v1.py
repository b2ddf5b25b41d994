"""Writes ``tests/table/golden/index_v1/``: a table with scalar indices of layout version 1.

Layout 1 keyed index entries by row address (fragment id and physical offset); layout 2
keys them by row id (docs/TABLE_FORMAT.md, "Scalar indices"). Run with the package of a
commit that wrote layout 1 on the path, e.g.::

    git archive 92c12e7 fermion | tar -x -C /tmp/oldf
    PYTHONPATH=/tmp/oldf .venv/bin/python tests/table/golden/make_index_v1.py

Version 1 writes ids 0..9 in two fragments (``k = id % 4``, ``label = "l{id % 3}"``),
version 2 builds the BTREE index ``k_idx``, version 3 the BITMAP index ``label_idx``,
version 4 deletes id 5, version 5 appends ids 10..12 (not covered by either index). The
files are committed; the tests only read (a copy of) them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

import fermion.table as ft

HERE = Path(__file__).parent / "index_v1"


def _rows(ids: range) -> pa.Table:
    return pa.table({
        "id": list(ids), "k": [i % 4 for i in ids], "label": [f"l{i % 3}" for i in ids],
    })  # fmt: skip


def main() -> None:
    if HERE.exists():
        shutil.rmtree(HERE)
    ds = ft.write_dataset(_rows(range(10)), str(HERE), max_rows_per_file=6)
    ds.create_index("k", "BTREE")
    ds.create_index("label", "BITMAP")
    ds.delete("id = 5")
    ds.append(_rows(range(10, 13)))
    assert {i.index_version for i in ds.manifest.indices} == {1}, "run with layout 1"


if __name__ == "__main__":
    main()
