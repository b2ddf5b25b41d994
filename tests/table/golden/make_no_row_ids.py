"""Writes ``tests/table/golden/no_row_ids/``: a table as Fermion wrote it before row ids.

Run with the package of a commit before row ids existed on the path, e.g.::

    git archive ba3eaae fermion | tar -x -C /tmp/oldf
    PYTHONPATH=/tmp/oldf .venv/bin/python tests/table/golden/make_no_row_ids.py

Version 1 creates two fragments (ids 0..5 and 6..9), version 2 appends ids 10..12,
version 3 deletes id 4. The files are committed; the tests only read (a copy of) them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa

import fermion.table as ft

HERE = Path(__file__).parent / "no_row_ids"


def main() -> None:
    if HERE.exists():
        shutil.rmtree(HERE)
    ds = ft.write_dataset(
        pa.table({"id": list(range(10)), "name": [f"n{i}" for i in range(10)]}),
        str(HERE), max_rows_per_file=6,
    )  # fmt: skip
    ds.append(pa.table({"id": [10, 11, 12], "name": ["n10", "n11", "n12"]}))
    ds.delete("id = 4")
    assert ds.manifest.reader_feature_flags & 4 == 0, "run with a Fermion before row ids"


if __name__ == "__main__":
    main()
