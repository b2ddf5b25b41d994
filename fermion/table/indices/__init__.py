"""Scalar indices of a table: BTREE, BITMAP and LABEL_LIST indices on one column, under
``_indices/``.

- :mod:`~fermion.table.indices.model`: kinds, row addresses, what ``Dataset.indices()`` lists;
- :mod:`~fermion.table.indices.build`: index files written from fragments (and merged);
- :mod:`~fermion.table.indices.expression_tree`: a filter expression's tree;
- :mod:`~fermion.table.indices.match`: which filter conjuncts an index answers;
- :mod:`~fermion.table.indices.lookup`: the scan through an index;
- :mod:`~fermion.table.indices.cache`: decoded index parts kept between lookups;
- :mod:`~fermion.table.indices.api`: create, drop and optimize (the ``Dataset`` methods);
- :mod:`~fermion.table.indices.tasks`: a build as plan → execute → commit (the job's).

The layout of the files is normative in docs/TABLE_FORMAT.md ("Scalar indices").

Example:
    >>> import tempfile, pyarrow as pa, fermion.table as ft
    >>> ds = ft.write_dataset(pa.table({"k": [1, 2, 2]}), tempfile.mkdtemp())
    >>> ds.create_index("k", "BITMAP")
    >>> [(i.name, i.kind, i.columns) for i in ds.indices()], ds.count_rows("k = 2")
    ([('k_idx', 'BITMAP', ('k',))], 2)
"""

from fermion.table.indices.model import BITMAP, BTREE, KINDS, LABEL_LIST, IndexInfo, IndexKind

__all__ = ["BITMAP", "BTREE", "KINDS", "LABEL_LIST", "IndexInfo", "IndexKind"]
